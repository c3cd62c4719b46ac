"""Log space at the edges: huge epsilon never overflows, finite answers are returned exactly (against
50-digit mpmath), math.inf only when the answer itself exceeds the float range, exact zeros are zeros."""

from __future__ import annotations

import math
import sys

import mpmath as mp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mp_reference
from dpaudit.accountant.closed_form import _advanced_epsilon
from dpaudit.accountant import advanced, amplify, optimal, optimal_delta, per_step_epsilon

FLOAT_MAX = mp.mpf(sys.float_info.max)


def mp_amplify(epsilon, q):
    with mp.workdps(60):
        return mp.log1p(mp.mpf(q) * mp.expm1(mp.mpf(epsilon)))


def mp_advanced(epsilon, k, slack):
    with mp.workdps(60):
        e = mp.mpf(epsilon)
        return mp.sqrt(2 * k * mp.log(1 / mp.mpf(slack))) * e + k * e * mp.expm1(e)


def assert_upper_and_exact(got, exact, rel):
    assert mp.mpf(got) >= exact
    assert abs(mp.mpf(got) - exact) <= rel * abs(exact)


def test_amplify_at_huge_epsilon_is_finite_and_exact():
    got = amplify(1000, 0, 0.5).epsilon
    assert got == pytest.approx(999.3068528194400, rel=1e-14)  # 1000 + ln(1/2), no OverflowError
    for epsilon, q in ((1000, 0.5), (709.0, 1e-3), (710.0, 1e-3), (1e4, 1e-300), (1e4, 0.999), (5e3, 1e-9), (800, 1.0)):
        assert_upper_and_exact(amplify(epsilon, 0.0, q).epsilon, mp_amplify(epsilon, q), 1e-12)


def test_advanced_returns_every_finite_answer_and_inf_only_beyond_the_float_range():
    for epsilon, k, slack in ((700.0, 1, 1e-5), (702.0, 1, 1e-5), (650.0, 10**6, 1e-10), (1.0, 10**12, 1e-300), (20.0, 10**12, 1e-5)):
        exact = mp_advanced(epsilon, k, slack)
        assert exact < FLOAT_MAX
        assert_upper_and_exact(_advanced_epsilon(epsilon, k, slack), exact, 1e-12)
        # the public theorem is the smaller of advanced and basic composition
        assert_upper_and_exact(advanced(epsilon, k, slack).epsilon, min(exact, mp.mpf(epsilon) * k), 1e-12)
    for epsilon, k in ((1000.0, 1), (704.0, 1), (700.0, 10**4)):
        assert mp_advanced(epsilon, k, 1e-5) > FLOAT_MAX
        assert _advanced_epsilon(epsilon, k, 1e-5) == math.inf  # the answer itself is beyond float
        assert advanced(epsilon, k, 1e-5).epsilon == epsilon * k  # basic composition bounds it


@pytest.mark.parametrize(("eps0", "k", "delta"), [
    (1e4, 3, 1e-5), (1e4, 1, 1e-5), (5e3, 4, 1e-12), (700.0, 10, 0.3), (30.0, 50, 1e-200), (100.0, 7, 1e-3),
])
def test_optimal_at_epsilon_up_to_1e4_is_exact(eps0, k, delta):
    exact = mp_reference.optimal_epsilon(eps0, k, delta)
    assert_upper_and_exact(optimal(eps0, k, delta).epsilon, exact, 1e-12)


@pytest.mark.parametrize(("eps0", "k", "epsilon_total"), [(1e4, 3, 29999.0), (1e4, 2, 19999.0), (50.0, 20, 999.0), (800.0, 5, 3999.5)])
def test_optimal_delta_at_huge_epsilon(eps0, k, epsilon_total):
    exact = mp_reference.optimal_delta_pure(eps0, k, epsilon_total)
    got = optimal_delta(eps0, k, epsilon_total)
    assert mp.mpf(got) >= exact
    assert got == pytest.approx(float(exact), rel=1e-9)


def test_unamplifying_a_huge_budget_is_finite_and_safe():
    for target, q in ((2000.0, 0.5), (800.0, 1e-3), (1e4, 1e-100)):
        base = per_step_epsilon(target, 1e-5, 1, "basic", sampling_probability=q)
        assert math.isfinite(base)
        assert amplify(base, 0.0, q).epsilon <= target < amplify(base * (1 + 1e-12), 0.0, q).epsilon


def test_exact_zeros_are_zeros():
    assert amplify(0.0, 0.0, 0.3) == amplify(0.0, 0.0, 1.0)
    assert amplify(0.0, 0.0, 0.3).epsilon == 0.0
    assert advanced(0.0, 10**6, 1e-5).epsilon == 0.0
    assert optimal(0.0, 10**9, 1e-5).epsilon == 0.0
    assert optimal(1.0, 3, 0.999).epsilon == 0.0  # target above the total variation distance
    assert optimal(1e-9, 10**6, 0.5).epsilon == 0.0
    assert optimal_delta(0.0, 10, 0.0) == 0.0 and optimal_delta(1.0, 10, 10.0) == 0.0
    # ...and a positive delta below the float range is not a zero: the smallest floats bound it.
    assert 0.0 < optimal_delta(1.0, 10**12, 5e11) < 1e-320
    for theorem in ("basic", "advanced", "optimal"):
        assert per_step_epsilon(0.0, 1e-5, 10, theorem if theorem != "advanced" else "advanced") == pytest.approx(0.0, abs=1e-4)
    assert per_step_epsilon(0.0, 1e-5, 10, "basic") == 0.0
    assert per_step_epsilon(0.0, 1e-5, 10, "advanced") == 0.0
    assert per_step_epsilon(0.0, 0.0, 10, "optimal") == 0.0


def test_zero_total_epsilon_with_delta_buys_the_largest_step_whose_composition_is_exactly_zero():
    # optimal composition is 0 while the total variation distance is <= delta: the per-step answer is
    # the largest such step, found exactly (not a placeholder like 2e-300).
    # Deciding "exactly 0" means bounding A - B (both ~ 0.5) against delta = 1e-5 rigorously, so the step
    # is tight only to ~1e-8 relative here (the float error of A and B, amplified 0.5 / 1e-5 times).
    step = per_step_epsilon(0.0, 1e-5, 10, "optimal")
    assert optimal(step, 10, 1e-5).epsilon == 0.0
    assert optimal(step * (1 + 1e-9), 10, 1e-5).epsilon > 0.0
    assert mp_reference.optimal_delta_pure(step, 10, 0.0) <= 1e-5 < mp_reference.optimal_delta_pure(step * (1 + 1e-7), 10, 0.0)


# ---- property tests over large ranges ---------------------------------------------------------------

epsilons = st.floats(min_value=0.0, max_value=1e4, allow_nan=False)
probabilities = st.floats(min_value=1e-12, max_value=1.0, allow_nan=False)


@settings(max_examples=150, deadline=None)
@given(epsilons, probabilities)
def test_amplify_is_an_exact_upper_bound_everywhere(epsilon, q):
    got = amplify(epsilon, 0.0, q).epsilon
    exact = mp_amplify(epsilon, q)
    assert mp.mpf(got) >= exact
    assert abs(mp.mpf(got) - exact) <= 1e-12 * exact + 1e-300


@settings(max_examples=150, deadline=None)
@given(epsilons, epsilons, probabilities, probabilities)
def test_amplify_is_monotone(e1, e2, q1, q2):
    (e1, e2), (q1, q2) = sorted((e1, e2)), sorted((q1, q2))
    assert amplify(e1, 0.0, q1).epsilon <= amplify(e2, 0.0, q1).epsilon
    assert amplify(e1, 0.0, q1).epsilon <= amplify(e1, 0.0, q2).epsilon


@settings(max_examples=150, deadline=None)
@given(epsilons, st.integers(1, 10**12), st.floats(min_value=1e-300, max_value=0.5))
def test_advanced_is_an_upper_bound_and_overflows_only_with_its_answer(epsilon, k, slack):
    got = advanced(epsilon, k, slack).epsilon
    exact = min(mp_advanced(epsilon, k, slack), mp.mpf(epsilon) * k)  # advanced or basic composition
    if exact > FLOAT_MAX:
        assert got == math.inf
    else:
        assert mp.mpf(got) >= exact
        assert got == math.inf or abs(mp.mpf(got) - exact) <= 1e-12 * exact + 1e-300


@settings(max_examples=100, deadline=None)
@given(epsilons, epsilons, st.integers(1, 10**12), st.integers(1, 10**12))
def test_advanced_is_monotone(e1, e2, k1, k2):
    (e1, e2), (k1, k2) = sorted((e1, e2)), sorted((k1, k2))
    assert advanced(e1, k1, 1e-6).epsilon <= advanced(e2, k1, 1e-6).epsilon
    assert advanced(e1, k1, 1e-6).epsilon <= advanced(e1, k2, 1e-6).epsilon


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=1e-2, max_value=1e4), st.integers(1, 8), st.floats(min_value=1e-30, max_value=0.5))
def test_optimal_is_an_upper_bound_against_mpmath_over_large_epsilon(eps0, k, delta):
    got = optimal(eps0, k, delta).epsilon
    exact = mp_reference.optimal_epsilon(eps0, k, delta)
    assert mp.mpf(got) >= exact
    assert abs(mp.mpf(got) - exact) <= 1e-9 * exact + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=1e-4, max_value=1e3), st.floats(min_value=1e-4, max_value=1e3),
       st.integers(1, 10**6), st.floats(min_value=1e-30, max_value=0.5), st.floats(min_value=1e-30, max_value=0.5))
def test_optimal_is_monotone(e1, e2, k, d1, d2):
    (e1, e2), (d1, d2) = sorted((e1, e2)), sorted((d1, d2))
    assert optimal(e1, k, d1).epsilon <= optimal(e2, k, d1).epsilon
    assert optimal(e1, k, d2).epsilon <= optimal(e1, k, d1).epsilon
    assert optimal(e1, k, d1).epsilon <= optimal(e1, k + 1, d1).epsilon
