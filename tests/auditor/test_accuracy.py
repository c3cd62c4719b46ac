"""check_accuracy: exact binomial test, power, validity, intervals, preconditions, Holm correction."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom

import dpaudit
from dpaudit.auditor import check_accuracies, holm_adjust
from dpaudit.errors import MechanismError
from dpaudit.stats import clopper_pearson_interval

K, EPSILON, BETA = 10, 1.0, 0.05
ALPHA = K / EPSILON * math.log(K / BETA)  # Theorem 3 (pure form), Delta = 1
EXACT_RATE = 1 - (1 - BETA / K) ** K  # P[max_i |Lap(k/eps)| > alpha] = 0.0489


def laplace_k(data, size, rng):
    return np.asarray(data, float)[None, :] + rng.laplace(0.0, K / EPSILON, (size, len(data)))


def max_error(data, outputs):
    return np.max(np.abs(outputs - np.asarray(data, float)[None, :]), axis=1)


class LaplaceWithTheorem:
    """A mechanism object carrying its own theorem, as the library's mechanisms do."""

    name = "laplace-k"

    def __call__(self, data, size, rng):
        return laplace_k(data, size, rng)

    def accuracy(self, beta):
        return K / EPSILON * math.log(K / beta)

    def error(self, data, outputs):
        return max_error(data, outputs)


def test_exact_rate_is_what_the_issue_says():
    assert EXACT_RATE == pytest.approx(0.0489, abs=1e-4)


def test_power_a_theorem_made_20_percent_too_strong_is_rejected_and_the_true_one_kept():
    data = np.zeros(K)
    true = dpaudit.check_accuracy(laplace_k, data, alpha=ALPHA, beta=BETA, error=max_error, samples=100_000, seed=0)
    wrong = dpaudit.check_accuracy(laplace_k, data, alpha=0.8 * ALPHA, beta=BETA, error=max_error, samples=100_000, seed=0)
    assert true.holds and not wrong.holds
    assert wrong.p_value < 1e-6
    low, high = clopper_pearson_interval(true.failures, true.samples, 0.999)  # 99.9%: never flakes
    assert low <= EXACT_RATE <= high and true.rate_lower < true.failure_rate < true.rate_upper
    assert 0.95 < true.slack < 1.1  # the theorem is nearly tight
    assert true.quantile_lower <= true.quantile <= true.quantile_upper


def test_validity_over_seeds():
    rejected = sum(not dpaudit.check_accuracy(laplace_k, np.zeros(K), alpha=ALPHA, beta=EXACT_RATE, error=max_error,
                                              samples=5_000, seed=seed).holds for seed in range(100))
    assert rejected <= binom.isf(1e-4, 100, 0.05)


def test_defaults_come_from_the_mechanism():
    result = dpaudit.check_accuracy(LaplaceWithTheorem(), np.zeros(K), beta=BETA, samples=20_000)
    assert result.alpha == pytest.approx(ALPHA) and result.name == "laplace-k" and result.holds


def test_precondition_failure_is_reported_not_tested():
    result = dpaudit.check_accuracy(laplace_k, np.zeros(K), alpha=ALPHA, beta=BETA, error=max_error,
                                    precondition=lambda data, alpha: (False, "queries too close to the threshold"))
    assert not result.applicable and result.holds is None and "threshold" in result.reason
    assert "not tested" in result.summary()


def test_reproducible_and_json():
    first = dpaudit.check_accuracy(laplace_k, np.zeros(K), alpha=ALPHA, beta=BETA, error=max_error, samples=10_000, seed=4)
    again = dpaudit.check_accuracy(laplace_k, np.zeros(K), alpha=ALPHA, beta=BETA, error=max_error, samples=10_000, seed=4)
    assert first.failures == again.failures
    assert first.to_dict()["holds"] is True


def test_holm_controls_several_checks():
    assert holm_adjust([0.01, 0.04, 0.03]) == [0.03, 0.06, 0.06]
    specs = [dict(mechanism=laplace_k, data=np.zeros(K), alpha=ALPHA, beta=BETA, error=max_error, samples=20_000),
             dict(mechanism=laplace_k, data=np.zeros(K), alpha=0.8 * ALPHA, beta=BETA, error=max_error, samples=20_000)]
    results = check_accuracies(specs)
    assert results[0].holds and not results[1].holds
    assert results[0].seed != results[1].seed


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(beta=0.0), "beta"), (dict(beta=1.0), "beta"), (dict(samples=0), "samples"), (dict(alpha=-1.0), "alpha"),
    (dict(confidence_level=1.5), "confidence_level"),
])
def test_bad_arguments(kwargs, match):
    arguments = dict(alpha=ALPHA, beta=BETA, error=max_error, samples=1000) | kwargs
    with pytest.raises(ValueError, match=match):
        dpaudit.check_accuracy(laplace_k, np.zeros(K), **arguments)


def test_missing_theorem_and_bad_error_function():
    with pytest.raises(ValueError, match="alpha"):
        dpaudit.check_accuracy(laplace_k, np.zeros(K), beta=BETA, error=max_error)
    with pytest.raises(MechanismError, match="one per output"):
        dpaudit.check_accuracy(laplace_k, np.zeros(K), alpha=ALPHA, beta=BETA, error=lambda d, y: np.zeros(3), samples=1000)


@given(st.lists(st.floats(1e-12, 1.0), min_size=1, max_size=8))
def test_holm_adjusted_p_values_are_never_below_the_raw_ones(p_values):
    adjusted = holm_adjust(p_values)
    assert all(p <= a <= 1.0 for p, a in zip(p_values, adjusted))
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    assert all(adjusted[i] <= adjusted[j] for i, j in zip(order, order[1:]))  # monotone in the raw p-values
