"""Exact optimal adaptive composition of bounded-range mechanisms (dpaudit.accountant.bounded_range)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant, optimal
from dpaudit.accountant.bounded_range import MAX_WORK, bounded_range_composition
from dpaudit.events import BoundedRange, Composed, Gaussian, SelfComposed


def _p(t, eps):
    return -np.expm1(-t * eps) / -math.expm1(-eps)


def _one_step(eps, x, ts):
    """V_1(x) by brute force over the t grid ``ts`` (a lower bound, tight for a fine grid)."""
    p = _p(ts, eps)
    return float(np.max(p * np.maximum(0, -np.expm1(x - (1 - ts) * eps)) + (1 - p) * np.maximum(0, -np.expm1(x + ts * eps))))


def _two_steps(eps, x, inner, outer):
    """V_2(x) by brute force: the adversary's second t chosen after seeing the first loss."""
    best = 0.0
    for t in outer:
        p = float(_p(t, eps))
        best = max(best, p * _one_step(eps, x - (1 - t) * eps, inner) + (1 - p) * _one_step(eps, x + t * eps, inner))
    return best


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_one_and_two_adaptive_steps_are_bracketed_by_a_brute_force_game(eps):
    inner, outer = np.linspace(0, 1, 4001), np.linspace(0, 1, 401)
    one, two = bounded_range_composition(eps, 1, cells=32), bounded_range_composition(eps, 2, cells=32)
    for x in (0.0, 0.13 * eps, 0.5 * eps, 0.91 * eps):
        brute = _one_step(eps, x, inner)
        assert one.delta_lower(x) <= brute * (1 + 1e-12) and brute <= one.delta(x)
    for x in (0.0, 0.3 * eps, 1.1 * eps, 1.7 * eps):
        brute = _two_steps(eps, x, inner, outer)
        assert two.delta_lower(x) <= brute * (1 + 1e-9) + 1e-15
        assert brute <= two.delta(x)
    assert np.max(two.upper - two.lower) <= 2e-3 * two.upper[0]  # second-order terms only (h = eps / 32)


def test_an_adaptive_adversary_beats_no_fixed_choice_but_stays_below_the_bound():
    """A concrete adaptive strategy (t of the second step depends on the first output), evaluated exactly."""
    eps = 1.0
    comp = bounded_range_composition(eps, 2, cells=32)

    def atoms(t):
        p = float(_p(t, eps))
        return [((1 - t) * eps, p), (-t * eps, 1 - p)]

    for first, after_high, after_low in [(0.5, 0.2, 0.8), (0.3, 0.9, 0.1), (0.7, 0.5, 0.5)]:
        law = []
        for (l1, m1), t2 in zip(atoms(first), (after_high, after_low)):
            law += [(l1 + l2, m1 * m2) for l2, m2 in atoms(t2)]
        for e in (0.0, 0.4, 1.2):
            exact = sum(m * max(0.0, -math.expm1(e - l)) for l, m in law)
            assert exact <= comp.delta(e)


def test_hundred_exponential_mechanisms_sit_between_randomized_response_and_every_other_bound():
    eps0, k, delta = 0.1, 100, 1e-6
    acct = PLDAccountant().compose(SelfComposed(BoundedRange(eps0), k))
    lower, upper = acct.epsilon_interval(delta)
    assert upper == acct.epsilon(delta)
    rr_half = optimal(eps0 / 2, k, delta).epsilon  # RR at eps/2 is eps-BR: an actual mechanism (a floor)
    assert rr_half <= lower <= upper
    assert upper - lower <= 1e-3 * upper  # the bracket of the optimum itself
    assert upper < RDPAccountant().compose(SelfComposed(BoundedRange(eps0), k)).epsilon(delta)
    assert upper < optimal(eps0, k, delta).epsilon  # strictly below PureDP's optimal composition
    assert acct.delta(upper) <= delta * (1 + 1e-9)
    assert acct.delta_interval(upper)[0] <= acct.delta(upper)


@settings(max_examples=25, deadline=None)
@given(eps=st.floats(0.05, 3.0), k=st.integers(1, 6), cells=st.sampled_from([4, 8, 16]))
def test_bracket_is_ordered_monotone_and_above_fixed_choices(eps, k, cells):
    comp = bounded_range_composition(eps, k, cells=cells)
    assert np.all(comp.lower <= comp.upper)
    assert np.all(np.diff(comp.upper) <= 1e-15)
    assert comp.upper[-1] == 0.0  # k eps-BR mechanisms are (k eps)-DP
    for e in (0.0, 0.37 * eps, 0.8 * k * eps):
        for t in (0.25, 0.5, 0.9):  # k copies of RR_t (non-adaptive): an actual composition
            p = float(_p(t, eps))
            j = np.arange(k + 1)
            log_mass = (np.array([math.lgamma(k + 1) - math.lgamma(i + 1) - math.lgamma(k - i + 1) for i in j])
                        + j * math.log(max(p, 1e-300)) + (k - j) * math.log1p(-p))
            loss = j * (1 - t) * eps - (k - j) * t * eps
            exact = float(np.sum(np.exp(log_mass) * np.maximum(0, -np.expm1(e - loss))))
            assert exact <= comp.delta(e) * (1 + 1e-12) + 1e-300
        assert comp.delta_lower(e) <= comp.delta(e)
    assert comp.epsilon_lower(1e-3) <= comp.epsilon(1e-3)


def test_refused_when_too_large_and_mixed_trees_use_the_dominating_pair():
    with pytest.raises(ValueError, match="count"):
        bounded_range_composition(0.1, int(math.sqrt(MAX_WORK)))
    with pytest.raises(ValueError, match="count"):
        bounded_range_composition(0.1, 100, cells=10**4)
    with pytest.raises(ValueError, match="epsilon"):
        bounded_range_composition(0.0, 3)
    big = PLDAccountant().compose(SelfComposed(BoundedRange(0.01), 5000))  # beyond the game: dominating pair
    assert big._bounded_range() is None and math.isfinite(big.epsilon(1e-6))
    mixed = PLDAccountant().compose(Composed([SelfComposed(BoundedRange(0.1), 10), Gaussian(5.0)]))
    assert mixed._bounded_range() is None
    alone = PLDAccountant().compose(SelfComposed(BoundedRange(0.1), 10))
    assert alone.epsilon(1e-6) <= mixed.epsilon(1e-6)
