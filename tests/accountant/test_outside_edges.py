"""Edges of the accountants found by outside checks: every theorem that applies bounds the answer, and the
tightest bound includes every path an accountant takes."""

from __future__ import annotations

import math

import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant, basic, epsilon_upper
from dpaudit.events import ApproxDP, BoundedRange, Composed, Gaussian, Laplace, PoissonSampled, SelfComposed


@pytest.mark.parametrize(("event", "target", "expected"), [
    (ApproxDP(1.0, 1e-6), 1e-6, 1.0),
    (SelfComposed(ApproxDP(0.5, 1e-7), 10), 1e-6, 5.0),
    (Composed([ApproxDP(1.0, 1e-6), Laplace(2.0)]), 1e-6, 1.5),
])
def test_approx_dp_at_its_own_delta_is_basic_composition(event, target, expected):
    acct = PLDAccountant().compose(event)
    assert acct.epsilon(target) == pytest.approx(expected, rel=1e-12)
    assert acct.epsilon(target) >= expected  # the exact value (the pair's +inf mass is the whole delta)
    lower, upper = acct.epsilon_interval(target)
    assert lower <= upper and upper == acct.epsilon(target)
    assert acct.delta(expected) <= target * (1 + 1e-12)


def test_approx_dp_below_its_delta_stays_infinite():
    # three (1, 1e-6) steps put 1 - (1 - 1e-6)^3 > 1e-6 at loss +inf: no epsilon reaches delta = 1e-6
    assert PLDAccountant().compose(SelfComposed(ApproxDP(1.0, 1e-6), 3)).epsilon(1e-6) == math.inf
    assert PLDAccountant().compose(ApproxDP(1.0, 1e-6)).epsilon(5e-7) == math.inf


def test_approx_dp_delta_is_basic_composition_where_it_applies():
    acct = PLDAccountant().compose(SelfComposed(ApproxDP(1.0, 1e-6), 3))
    assert acct.delta(3.0) == basic(1.0, 1e-6, k=3).delta
    assert acct.delta(1.5) > 3e-6  # not covered by basic composition: the PLD's own value


@pytest.mark.parametrize("event", [
    SelfComposed(BoundedRange(0.02451), 21),
    ApproxDP(1.0, 1e-6),
    SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100),
    Composed([Laplace(3.0), Gaussian(2.0)]),
])
def test_epsilon_upper_is_at_most_every_accountant(event):
    best = epsilon_upper(event, 1e-5)
    assert best.epsilon <= PLDAccountant().compose(event).epsilon(1e-5)
    try:
        assert best.epsilon <= RDPAccountant().compose(event).epsilon(1e-5)
    except ValueError:
        pass
    assert best.epsilon == min(best.candidates.values())


def test_epsilon_upper_takes_the_exact_bounded_range_optimum():
    best = epsilon_upper(SelfComposed(BoundedRange(0.02451), 21), 1e-5)
    assert best.method == "pld"
    assert best.epsilon == pytest.approx(0.18224, rel=1e-4)
    assert best.candidates["rdp"] > 0.2
