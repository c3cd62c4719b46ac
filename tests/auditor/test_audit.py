"""The auditor: reproducibility, validation, power on known bugs, tightness, soundness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binom

import dpaudit
from dpaudit.errors import MechanismError

from . import mechanisms_for_tests as m


def test_reproducible_regardless_of_workers(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)  # every map of two blocks to the workers
    one = dpaudit.audit(m.laplace_unit, [0.0], [1.0], samples=300_000, seed=5, workers=1)
    two = dpaudit.audit(m.laplace_unit, [0.0], [1.0], samples=300_000, seed=5, workers=2)
    assert one.epsilon_lower == two.epsilon_lower and one.event == two.event
    assert (one.count_p, one.count_q) == (two.count_p, two.count_q)
    other = dpaudit.audit(m.laplace_unit, [0.0], [1.0], samples=300_000, seed=6, workers=1)
    assert other.count_p != one.count_p


def test_result_reports_counts_event_seed_ceiling_and_json():
    result = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=100_000, seed=3, workers=1)
    data = result.to_dict()
    for key in ("epsilon_lower", "violated", "event", "samples", "confidence_level", "seed", "ceiling", "count_p", "count_q"):
        assert key in data
    assert data["bound"] == "lower"
    assert result.samples == 100_000 and result.selection_samples + result.certification_per_input == result.samples_used
    assert result.samples_used <= 100_000 and result.stopped in ("violation", "futility", "budget")
    assert result.ceiling > 5 and result.epsilon_lower <= result.ceiling
    assert "y" in result.event


def test_tightness_laplace_at_one_million():
    result = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=1_000_000, seed=0, workers=1,
                           sequential=False)
    assert 0.98 <= result.epsilon_lower <= 1.0
    assert not result.violated


def test_tightness_exponential_noisy_max_index():
    result = dpaudit.audit(m.exponential_noisy_max, [1] * 5, [0, 2, 2, 2, 2], epsilon=1.0, samples=1_000_000, seed=0, workers=1)
    assert 0.95 <= result.epsilon_lower <= 1.0
    assert "output in {0}" in result.event


@pytest.mark.parametrize(("mechanism", "d", "d_prime", "at_least"), [
    (m.noisy_max_value, [0] * 5, [1] * 5, 2.0),
    (m.svt_without_query_noise, [1] * 10, [2] * 5 + [0] * 5, 8.0),
])
def test_known_bugs_are_flagged(mechanism, d, d_prime, at_least):
    result = dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=300_000, seed=1, workers=1, sequential=False)
    assert result.violated and result.epsilon_lower >= at_least


def test_one_sided_support_without_an_oracle_stays_finite_and_below_the_ceiling():
    result = dpaudit.audit(m.svt_without_query_noise, [1] * 10, [2] * 5 + [0] * 5, epsilon=1.0, samples=300_000, seed=2, workers=1)
    assert result.one_sided_support and result.count_q == 0
    assert math.isfinite(result.epsilon_lower) and result.epsilon_lower <= result.ceiling


def test_delta_is_honoured_gaussian_with_half_sigma():
    claimed = dict(epsilon=1.0, delta=1e-5)
    bad = dpaudit.audit(m.gaussian_half_sigma, [0.0], [1.0], **claimed, samples=1_000_000, seed=0, workers=1)
    assert bad.violated


def test_vector_and_mixed_outputs():
    vector = dpaudit.audit(m.histogram, [1] * 5, [2, 1, 1, 1, 1], samples=300_000, seed=0, workers=1)
    assert 0.9 <= vector.epsilon_lower <= 1.0
    mixed = dpaudit.audit(m.sentinel_or_value, [0.0], [1.0], samples=300_000, seed=0, workers=1)
    assert 0.8 <= mixed.epsilon_lower <= 1.0


@pytest.mark.parametrize(("mechanism", "message"), [
    (m.crashes, "ZeroDivisionError"),
    (m.wrong_length, "shape"),
    (m.strings, "real numbers"),
])
def test_broken_mechanisms_give_clear_errors(mechanism, message):
    with pytest.raises(MechanismError, match=message):
        dpaudit.audit(mechanism, [0.0], [1.0], samples=1000, workers=1)


def test_output_width_depending_on_the_input_is_part_of_the_outcome():
    # issue 18: the shape of an output is an outcome (padded rows carry their width), not a refusal
    result = dpaudit.audit(m.width_depends_on_data, [0.0], [1.0, 2.0], samples=1000, workers=1)
    assert result.violated and result.count_q == 0 and result.epsilon_lower > 5


@pytest.mark.parametrize(("kwargs", "argument"), [
    (dict(epsilon=-1), "epsilon"), (dict(delta=1.0), "delta"), (dict(samples=10), "samples"),
    (dict(confidence_level=1.0), "confidence_level"), (dict(seed=-1), "seed"), (dict(samples=2.5), "samples"),
])
def test_bad_arguments(kwargs, argument):
    with pytest.raises(ValueError, match=argument):
        dpaudit.audit(m.laplace_unit, [0.0], [1.0], **kwargs)


def test_mechanism_must_be_callable():
    with pytest.raises(TypeError, match="mechanism"):
        dpaudit.audit("not a mechanism", [0.0], [1.0])


def _allowed_exceedances(repetitions: int, rate: float) -> int:
    """Largest count of exceedances compatible with the nominal rate (binomial tail 1e-4)."""
    return int(binom.isf(1e-4, repetitions, rate))


@pytest.mark.parametrize(("mechanism", "d", "d_prime", "true_epsilon"), [
    (m.laplace_unit, [0.0], [1.0], 1.0),
    (m.randomized_response_1, [0], [1], 1.0),
])
def test_soundness_over_repetitions(mechanism, d, d_prime, true_epsilon):
    repetitions, confidence = 200, 0.95
    bounds = np.array([dpaudit.audit(mechanism, d, d_prime, epsilon=true_epsilon, samples=10_000,
                                     confidence_level=confidence, seed=seed, workers=1).epsilon_lower
                       for seed in range(repetitions)])
    exceed = int(np.sum(bounds > true_epsilon))
    assert exceed <= _allowed_exceedances(repetitions, 1 - confidence)
    assert np.median(bounds) > 0.5 * true_epsilon  # and the bounds are not trivially zero


def test_exact_support_oracle_proves_infinite_epsilon():
    from dpaudit.mechanisms.buggy import SparseVectorWithoutQueryNoise

    mechanism = SparseVectorWithoutQueryNoise(1.0)
    d, d_prime = [1.0] * 10, [2.0] * 5 + [0.0] * 5
    assert not mechanism.support(d, [[1] * 5 + [0] * 5])[0]  # equal queries: all-or-nothing patterns only
    assert mechanism.support(d_prime, [[1] * 5 + [0] * 5])[0]
    result = dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=100_000, seed=0, workers=1)
    assert result.epsilon_lower == math.inf and result.violated and result.support_proof
    assert result.to_dict()["epsilon_lower"] == "inf"


class _RandomizedResponseWithSupport:
    """Correct 1-DP randomized response that also declares its (full) support: never infinite."""

    def __call__(self, data, size, rng):
        return m.randomized_response_1(data, size, rng)

    def support(self, data, outputs):
        return np.isin(np.asarray(outputs), (0, 1))


def test_a_full_support_oracle_never_yields_infinity():
    result = dpaudit.audit(_RandomizedResponseWithSupport(), [0], [1], epsilon=1.0, samples=50_000, seed=0, workers=1)
    assert math.isfinite(result.epsilon_lower) and not result.support_proof and not result.violated
