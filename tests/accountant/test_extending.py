"""A user-defined event family, registered in the one table, composes through every accountant.

The family below is the example of ``docs/guides/extending.md``: a two-point mechanism (binary randomized
response at epsilon, written as its own event) with exact atoms, an RDP curve, a pure level and a zCDP
parameter. Registering it is the only change: no accountant file is edited. Its numbers must agree with
the built-in ``PureDP`` (the same mechanism), exactly where both use the same formula and within the
grid's discretisation elsewhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest

from dpaudit._validation import check_epsilon
from dpaudit.accountant import PLDAccountant, RDPAccountant, ZCDPAccountant, epsilon_upper
from dpaudit.accountant._rdp_formulas import rr_rdp
from dpaudit.accountant.leaf import Leaf
from dpaudit.accountant.pld_core.atoms import atom_pair
from dpaudit.accountant.registry import FAMILIES, Family
from dpaudit.errors import UnsupportedEventError
from dpaudit.events import Composed, Gaussian, PoissonSampled, PrivacyEvent, PureDP, SelfComposed


@dataclass(frozen=True)
class TwoPoint(PrivacyEvent):
    """Outputs the true bit with probability e^eps / (1 + e^eps)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))


def _atoms(leaf: Leaf, scale: float):
    eps = leaf.param
    log_hi, log_lo = -math.log1p(math.exp(-eps)), -math.log1p(math.exp(eps))
    return np.array([eps, -eps]), np.array([log_hi, log_lo]), np.array([log_lo, log_hi]), 0.0


TWO_POINT = Family(
    name="two_point", events=(TwoPoint,), kinds=("two_point",),
    normal_form=lambda event: Leaf("two_point", event.epsilon),
    pld_pair=lambda leaf, relation, step, pessimistic, lam=None, only=None: atom_pair(
        leaf, relation, step, pessimistic, _atoms, additive=False, attained_replace_one=True),
    rdp_curve=lambda leaf, scale: (lambda a: rr_rdp(a, leaf.param, 2)),
    pure_epsilon=lambda leaf, scale: leaf.param,
    rho=lambda leaf, scale: leaf.param**2 / 2.0,
    guarantee=True,
)


@pytest.fixture
def two_point():
    FAMILIES.register(TWO_POINT)
    try:
        yield TwoPoint
    finally:
        FAMILIES.unregister("two_point")


def test_an_unregistered_event_is_refused_by_every_accountant():
    for accountant in (PLDAccountant(), RDPAccountant(), ZCDPAccountant()):
        assert not accountant.supports(TwoPoint(0.5))
        with pytest.raises(UnsupportedEventError, match="TwoPoint"):
            accountant.compose(TwoPoint(0.5))


def test_a_registered_family_composes_through_every_accountant(two_point):
    ours, builtin = SelfComposed(two_point(0.5), 10), SelfComposed(PureDP(0.5), 10)
    rdp_ours, rdp_builtin = RDPAccountant().compose(ours), RDPAccountant().compose(builtin)
    assert rdp_ours.epsilon(1e-5) == rdp_builtin.epsilon(1e-5)  # the same curve and pure level
    assert rdp_ours.epsilon(0.0) == rdp_builtin.epsilon(0.0) == pytest.approx(5.0)  # rounded up
    assert ZCDPAccountant().compose(ours).rho() == ZCDPAccountant().compose(builtin).rho()
    pld_ours, pld_builtin = PLDAccountant().compose(ours), PLDAccountant().compose(builtin)
    assert pld_ours.epsilon(0.0) == PLDAccountant().compose(builtin).epsilon(0.0)  # basic composition
    lower, upper = pld_ours.epsilon_interval(1e-5)
    exact = pld_builtin.epsilon(1e-5)  # exact binomial for the built-in binary randomized response
    assert lower <= exact * (1 + 1e-9) and upper >= exact * (1 - 1e-9)
    assert upper == pytest.approx(exact, rel=2e-2)
    assert epsilon_upper(ours, 1e-5).epsilon <= upper


def test_a_registered_family_is_sampled_and_mixed_with_built_in_events(two_point):
    ours = SelfComposed(PoissonSampled(0.1, Composed([two_point(1.0), Gaussian(2.0)])), 20)
    builtin = SelfComposed(PoissonSampled(0.1, Composed([PureDP(1.0), Gaussian(2.0)])), 20)
    for make in (PLDAccountant, RDPAccountant):
        mine, theirs = make().compose(ours).epsilon(1e-6), make().compose(builtin).epsilon(1e-6)
        assert mine == pytest.approx(theirs, rel=2e-2)
    sampled = SelfComposed(PoissonSampled(0.05, two_point(1.0)), 50)
    reference = SelfComposed(PoissonSampled(0.05, PureDP(1.0)), 50)
    assert PLDAccountant().compose(sampled).epsilon(1e-6) == pytest.approx(
        PLDAccountant().compose(reference).epsilon(1e-6), rel=1e-2)


def test_a_family_cannot_take_a_registered_event_or_kind():
    with pytest.raises(ValueError, match="already registered"):
        FAMILIES.register(Family(name="clash", events=(PureDP,), kinds=("rr",), normal_form=lambda e: None,
                                 pld_pair=TWO_POINT.pld_pair))
