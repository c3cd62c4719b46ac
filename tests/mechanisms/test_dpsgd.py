"""DP-SGD (vectorised over runs): its declared event, the exact white-box view, and its buggy twins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accountant import PLDAccountant
from dpaudit.auditor.scores import audit_scores
from dpaudit.errors import InvalidArgument, InvalidArgumentType
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
from dpaudit.mechanisms.dpsgd import (
    DPSGD,
    DPSGDClippingAfterAveraging,
    DPSGDNoiseNotScaledByClip,
    DPSGDShuffledBatches,
    DPSGDWithoutClipping,
    dirac_canary_data,
    logistic_canary_data,
    lr_score_poisson,
    shuffle_canary_data,
)

OUT, IN, CANARY = dirac_canary_data(40, 4, seed=1)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_declared_event_and_privacy_come_from_the_pld_accountant():
    m = DPSGD(1.0, 0.1, 20, canary=CANARY, observe="dirac")
    event = SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 20)
    assert m.event == event and m.mu is None
    assert m.privacy.epsilon == PLDAccountant().compose(event).epsilon(1e-5) and m.privacy.delta == 1e-5
    full = DPSGD(2.0, 1.0, 16, canary=CANARY, observe="dirac_sum")
    assert full.mu == 2.0


def test_full_batch_white_box_view_is_exactly_the_gaussian_shift():
    """q = 1: the summed Dirac projection is N(T C, T sigma^2 C^2) with the canary, N(0, .) without."""
    sigma, steps, clip = 2.0, 9, 1.5
    m = DPSGD(sigma, 1.0, steps, clip, canary=CANARY, observe="dirac_sum")
    n = 4000
    a, b = m(IN, n, rng(1)), m(OUT, n, rng(2))
    sd = math.sqrt(steps) * sigma * clip
    assert abs(a.mean() - steps * clip) < 5 * sd / math.sqrt(n) and abs(b.mean()) < 5 * sd / math.sqrt(n)
    assert abs(a.std() / sd - 1) < 0.06 and abs(b.std() / sd - 1) < 0.06


def test_poisson_steps_sample_the_canary_with_probability_q():
    m = DPSGD(0.05, 0.3, 10, canary=CANARY, observe="dirac")
    steps = m(IN, 2000, rng(3))
    assert steps.shape == (2000, 10)
    hits = (steps > 0.5).mean()  # projection C + tiny noise when sampled, tiny noise when not
    assert abs(hits - 0.3) < 0.02
    assert not (m(OUT, 500, rng(4)) > 0.5).any()


def test_observations_shapes_reproducibility_and_chunking():
    for observe, shape in (("parameters", (7, 4)), ("loss", (7,)), ("dirac", (7, 5)), ("dirac_sum", (7,))):
        m = DPSGD(1.0, 0.5, 5, canary=CANARY, observe=observe)
        out = m(IN, 7, rng(5))
        assert out.shape == shape and np.array_equal(out, m(IN, 7, rng(5)))
    m = DPSGD(1.0, 0.5, 3, canary=CANARY, observe="dirac_sum")
    big = m(IN, 9000, rng(6))  # several chunks
    assert big.shape == (9000,) and np.isfinite(big).all()


def test_logistic_model_learns_and_loss_observation_separates():
    out, inn, canary = logistic_canary_data(100, 3, seed=0)
    m = DPSGD(0.5, 0.5, 20, canary=canary, model="logistic", observe="loss", learning_rate=0.5)
    with_canary, without = m(inn, 2000, rng(7)), m(out, 2000, rng(8))
    assert with_canary.mean() < without.mean()  # training on the canary lowers its loss


def test_correct_full_batch_is_not_flagged_and_its_mu_is_nearly_reached():
    m = DPSGD(5.0, 1.0, 25, canary=CANARY, observe="dirac_sum")
    r = audit_scores(m(IN, 4000, rng(9)), m(OUT, 4000, rng(10)), epsilon=m.privacy.epsilon, seed=1, sequential=False)
    assert not r.violated and 0.8 * m.mu < r.mu_lower <= m.mu  # the estimator's tightness: the whole budget


@pytest.mark.parametrize("twin", [DPSGDWithoutClipping, DPSGDClippingAfterAveraging, DPSGDNoiseNotScaledByClip])
def test_buggy_twins_are_flagged(twin):
    buggy = twin(2.0, 0.2, 10, 3.0, canary=CANARY, observe="dirac")
    correct = DPSGD(2.0, 0.2, 10, 3.0, canary=CANARY, observe="dirac")
    assert buggy.event == correct.event and buggy.privacy == correct.privacy and buggy.bug
    score = lambda z: lr_score_poisson(z, 2.0, 0.2, 3.0)  # noqa: E731 - the correct twin's optimal score
    a, b = score(buggy(IN, 3000, rng(11))), score(buggy(OUT, 3000, rng(12)))
    assert audit_scores(a, b, epsilon=buggy.privacy.epsilon, seed=2).violated
    a, b = score(correct(IN, 3000, rng(11))), score(correct(OUT, 3000, rng(12)))
    assert not audit_scores(a, b, epsilon=correct.privacy.epsilon, seed=2).violated


def test_noise_not_scaled_twin_knows_its_true_event():
    twin = DPSGDNoiseNotScaledByClip(2.0, 0.2, 10, 4.0, canary=CANARY, observe="dirac")
    assert twin.true_event == SelfComposed(PoissonSampled(0.2, Gaussian(0.5)), 10)
    assert twin.true_epsilon > twin.privacy.epsilon


def test_shuffled_batches_use_every_record_once_per_epoch():
    twin = DPSGDShuffledBatches(1.0, 0.25, 8, canary=CANARY, observe="dirac")
    masks = list(twin._batches(12, 50, rng(13)))
    assert len(masks) == 8 and all(mask.sum(axis=1).tolist() == [3] * 50 for mask in masks)
    for epoch in (masks[:4], masks[4:]):
        assert (np.sum(epoch, axis=0) == 1).all()  # a partition of the records
    out, inn, canary = shuffle_canary_data(19, 2)  # 20 records with the canary: batches of 5
    m = DPSGDShuffledBatches(0.05, 0.25, 4, canary=canary, observe="dirac")
    steps = m(inn, 200, rng(14))
    assert ((steps > -4.5).sum(axis=1) <= 1).all()  # the canary's batch sums to -3C instead of -5C
    assert (m(out, 200, rng(15)) < -4.5).all()


def test_bad_arguments_and_data_name_the_argument():
    with pytest.raises(InvalidArgument, match="canary"):
        DPSGD(1.0, 0.1, 5, observe="loss")
    with pytest.raises(InvalidArgument, match="observe"):
        DPSGD(1.0, 0.1, 5, canary=CANARY, observe="gradients")
    with pytest.raises(InvalidArgument, match="noise_multiplier"):
        DPSGD(-1.0, 0.1, 5)
    with pytest.raises(InvalidArgument, match="sampling_probability"):
        DPSGD(1.0, 0.0, 5)
    with pytest.raises(InvalidArgument, match="canary"):
        DPSGD(1.0, 0.1, 5, canary=[1.0, 0.0, 0.5], model="logistic", observe="loss")
    m = DPSGD(1.0, 0.1, 5, canary=CANARY, observe="dirac")
    with pytest.raises(InvalidArgument, match="columns"):
        m(IN[:, 1:], 2, rng(0))
    bad = IN.copy()
    bad[3, 1] = np.inf
    with pytest.raises(InvalidArgument, match=r"data\[3, 1\]"):
        m(bad, 2, rng(0))
    with pytest.raises(InvalidArgumentType, match="data"):
        m("records", 2, rng(0))
    out, inn, canary = logistic_canary_data(10, 3)
    labels = inn.copy()
    labels[2, -1] = 0.5
    with pytest.raises(InvalidArgument, match=r"data\[2, -1\]"):
        DPSGD(1.0, 0.1, 5, canary=canary, model="logistic", observe="loss")(labels, 2, rng(0))
