"""A training stack as an auditor mechanism: audit_curve (and audit) take Opacus runs unchanged."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("opacus")

import dpaudit  # noqa: E402
from dpaudit import training  # noqa: E402
from dpaudit.events import Gaussian, SelfComposed  # noqa: E402

from . import tiny_stack  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def mechanism(noise_multiplier, **kwargs):
    target = training.opacus_target(dataset=tiny_stack.dataset(), make_model=tiny_stack.make_model,
                                    make_optimizer=tiny_stack.make_optimizer, make_data_loader=tiny_stack.full_batch,
                                    noise_multiplier=noise_multiplier, max_grad_norm=1.0, epochs=2)
    return training.TrainingMechanism(target, **kwargs)


def test_outputs_are_runs_scored_and_reproducible_from_the_rng():
    m = mechanism(0.5)
    inside = m([1], 4, np.random.default_rng(0))
    assert inside.shape == (4,) and np.array_equal(inside, m([1], 4, np.random.default_rng(0)))
    outside = m([0], 4, np.random.default_rng(0))
    assert np.all(inside > outside)  # the canary adds C in each of 2 steps; the noise sd is 0.5 * sqrt(2)
    assert m.event == dpaudit.events.Composed([SelfComposed(Gaussian(0.5), 2)])  # full batch: rate 1


def test_audit_curve_takes_training_runs_and_certifies_below_the_engines_claim():
    m = mechanism(2.0)
    result = dpaudit.audit_curve(m, [1], [0],
                                 samples=200, seed=0, workers=1)
    mu = np.sqrt(2) / 2.0  # T = 2 full-batch steps at sigma 2: mu = sqrt(T) / sigma
    assert not result.violated and 0.0 <= result.mu_lower <= mu


def test_a_claim_below_the_truth_is_violated_by_the_curve():
    result = dpaudit.audit_curve(mechanism(0.5), [1], [0], claim=0.5, samples=200, seed=0, workers=1)
    assert result.violated and result.mu_lower > 0.5  # the truth: mu = sqrt(2) / 0.5 = 2.8


@pytest.mark.parametrize("data", [[2], [0, 1], [0.5]])
def test_data_other_than_in_or_out_is_named(data):
    with pytest.raises(ValueError, match="data"):
        mechanism(1.0)(data, 1, np.random.default_rng(0))


def test_one_canary_and_an_event_claim_are_required():
    target = training.opacus_target(dataset=tiny_stack.dataset(), make_model=tiny_stack.make_model,
                                    make_optimizer=tiny_stack.make_optimizer, make_data_loader=tiny_stack.full_batch,
                                    noise_multiplier=1.0, max_grad_norm=1.0, canaries=2)
    with pytest.raises(ValueError, match="target"):
        training.TrainingMechanism(target)
    with pytest.raises(TypeError, match="claim"):
        mechanism(1.0, claim=2.0)
