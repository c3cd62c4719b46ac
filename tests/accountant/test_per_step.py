"""Inverse budgeting: per-step epsilons meet their target and match the references."""

from __future__ import annotations

import math

import pytest

import mp_reference

from dpaudit.accountant import advanced, amplify, optimal, per_step_epsilon
from dpaudit.accountant.per_step import simplified_per_step_limit


@pytest.mark.parametrize("k", [1, 10, 100, 1000])
@pytest.mark.parametrize("theorem", ["basic", "advanced", "advanced_simplified", "optimal"])
def test_composing_the_answer_meets_the_target_and_a_bit_more_does_not(k, theorem):
    target_epsilon, target_delta = 1.0, 1e-5
    step = per_step_epsilon(target_epsilon, target_delta, k, theorem)
    forward = {
        "basic": lambda e: e * k,
        "advanced": lambda e: advanced(e, k, target_delta).epsilon,
        "advanced_simplified": lambda e: advanced(e, k, target_delta).epsilon,
        "optimal": lambda e: optimal(e, k, target_delta).epsilon,
    }[theorem]
    assert forward(step) <= target_epsilon
    if theorem != "advanced_simplified":  # the others are tight inverses
        assert forward(step * (1 + 1e-9)) > target_epsilon


def test_reference_inverse_budgets(reference):
    for row in reference["calibration"]["inverse_budget_pure"]:
        args = (row["total_eps"], row["delta"], row["k"])
        assert per_step_epsilon(*args, "basic") == pytest.approx(row["basic"], rel=1e-9)
        best = max(row["advanced_drv"], row["basic"])  # advanced() is never looser than basic composition
        assert per_step_epsilon(*args, "advanced") == pytest.approx(best, rel=1e-9)
        assert per_step_epsilon(*args, "optimal") == pytest.approx(row["optimal_exact"], rel=1e-6)



@pytest.mark.parametrize("k", [1, 3, 10, 40])
def test_optimal_inverse_is_safe_against_independent_mpmath(k):
    step = per_step_epsilon(1.0, 1e-5, k, "optimal")
    assert mp_reference.optimal_epsilon(step, k, 1e-5) <= 1.0
    assert mp_reference.optimal_epsilon(step * (1 + 1e-9), k, 1e-5) > 1.0


def test_pinned_inverse_values():
    # 50-digit reference (Kairouz-Oh-Viswanath inverse, continuous axis) for (1, 1e-5), k = 1000.
    assert per_step_epsilon(1.0, 1e-5, 1000, "optimal") == pytest.approx(0.008487078249175283, rel=1e-8)
    assert per_step_epsilon(1.0, 1e-5, 1000, "advanced_simplified") == pytest.approx(1 / math.sqrt(8000 * math.log(1e5)), rel=1e-14)


def test_lecture_simplification_is_valid_exactly_up_to_its_limit():
    for delta, k in ((0.1, 50), (1e-5, 1), (1e-12, 3)):
        limit = simplified_per_step_limit(delta, k)
        step = per_step_epsilon(limit * 0.999, delta, k, "advanced_simplified")
        assert advanced(step, k, delta).epsilon <= limit * 0.999
        with pytest.raises(ValueError, match="target_epsilon"):
            per_step_epsilon(limit * 1.001, delta, k, "advanced_simplified")
    # Beyond the lecture's own sufficient condition epsilon <= 2 ln(1/delta) when k is large enough...
    assert simplified_per_step_limit(0.1, 50) > 2 * math.log(10)
    # ...and below it for one step with a tiny delta (the simplified budget exceeds 1 there).
    assert simplified_per_step_limit(1e-5, 1) < 2 * math.log(1e5)


def test_sampled_per_step_inverts_amplification():
    q = 0.01
    base = per_step_epsilon(1.0, 1e-5, 1000, "optimal", sampling_probability=q)
    amplified = amplify(base, 0.0, q).epsilon
    assert optimal(amplified, 1000, 1e-5).epsilon <= 1.0
    assert base > per_step_epsilon(1.0, 1e-5, 1000, "optimal")


def test_zero_target_delta_with_optimal_is_pure_composition():
    assert per_step_epsilon(1.0, 0.0, 10, "optimal") == pytest.approx(0.1, rel=1e-12)
