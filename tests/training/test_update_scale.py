"""The update-scale check: exact validity on declared noise, power against a divisor that follows the
realised batch size or noise of another scale, and the Opacus corpus case it is meant for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.training.update_scale import check_update_scale


def steps(seed, n=1500, q=0.1, count=900, steps=100, divisor=None, noise=1.0):
    """Rows (B_t, m_t, s_t): Poisson batch sizes; the noise after the declared divisor q n is N(0, noise^2),
    or, with divisor="actual", rescaled by q n / B_t (averaged over the batch actually drawn)."""
    rng = np.random.default_rng(seed)
    batch = rng.binomial(n, q, steps)
    factor = (q * n / batch) if divisor == "actual" else np.ones(steps)
    squares = np.array([np.sum((noise * f * rng.standard_normal(count)) ** 2) for f in factor])
    return np.stack([batch, np.full(steps, count), squares], axis=1)


def test_declared_noise_is_flagged_at_most_at_the_false_alarm_rate():
    flagged = [check_update_scale(steps(seed), 0.05, seed, draws=999).violated for seed in range(100)]
    assert sum(flagged) <= 11  # 5 expected; P(Binomial(100, 0.05) >= 12) < 0.005


def test_a_divisor_following_the_realised_batch_size_is_flagged():
    for seed in range(5):
        result = check_update_scale(steps(seed, divisor="actual"), 0.001, seed)
        assert result.violated
        assert {t.name: t.rejected for t in result.tests}["batch_size_dependence"]
        assert result.tests[0].statistic < 0  # larger batches, smaller noise


def test_noise_of_another_scale_is_flagged_by_the_level_test():
    result = check_update_scale(steps(0, noise=0.9), 0.001, 0)
    assert result.violated and {t.name: t.rejected for t in result.tests} == {"batch_size_dependence": False,
                                                                              "noise_level": True}
    assert result.noise_scale == pytest.approx(0.9, rel=0.01)


def test_full_batch_steps_cannot_depend_on_the_batch_size():
    table = steps(0)
    table[:, 0] = 150
    dependence = check_update_scale(table, 0.05, 0).tests[0]
    assert dependence.statistic == 0.0 and dependence.p_value == 1.0


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_reproducible_and_p_values_are_probabilities(seed):
    table = steps(seed, steps=20, count=50)
    first, again = check_update_scale(table, 0.05, seed, draws=199), check_update_scale(table, 0.05, seed, draws=199)
    assert first == again and 0.0 < first.p_value <= 1.0
    assert all(0.0 < t.p_value <= 1.0 and t.adjusted_p_value >= t.p_value for t in first.tests)


@pytest.mark.parametrize("table, name", [(np.zeros((3, 2)), "steps"), (np.zeros((3, 3)), "steps"),
                                         (np.array([[10, 5, -1.0]]), "steps")])
def test_bad_steps_are_named(table, name):
    with pytest.raises(ValueError, match=name):
        check_update_scale(table)


def test_bad_rate_is_named():
    with pytest.raises(ValueError, match="false_alarm_rate"):
        check_update_scale(steps(0), false_alarm_rate=1.5)


@pytest.mark.filterwarnings("ignore")
def test_opacus_normalising_by_the_actual_batch_size_is_caught_and_the_correct_stack_is_not():
    pytest.importorskip("opacus")
    from dpaudit.training.corpus import check_case

    buggy = check_case("actual_batch_size", seed=0, canaries=300, records=300)
    assert buggy.flagged and buggy.update_scale.violated and not buggy.white_box.violated  # the Dirac score misses it
    correct = check_case("correct", seed=0, canaries=300, records=300)
    assert not correct.flagged and not correct.update_scale.violated
    assert correct.update_scale.noise_scale == pytest.approx(1.0, rel=0.02)
    assert "update_scale" in correct.white_box.to_dict() and "update-scale check" in correct.white_box.summary()
