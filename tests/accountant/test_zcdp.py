"""ZCDPAccountant (rho adds up, Canonne-Kamath-Steinke conversion) and the Opacus-style accountant."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.accountant import (
    OpacusAccountant,
    PLDAccountant,
    RDPAccountant,
    ZCDPAccountant,
    gaussian_delta,
    gaussian_epsilon,
    zcdp_delta,
    zcdp_epsilon,
)
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import (
    BoundedRange,
    Composed,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    PoissonSampled,
    PureDP,
    SelfComposed,
    ZCDP,
)

mp.mp.dps = 30


def _cks_epsilon_mp(rho: float, delta: float) -> float:
    """min over alpha of the CKS Prop. 12 bound, by mpmath on the derivative's root."""
    rho, log_delta = mp.mpf(rho), mp.log(delta)

    def eps(a):
        return a * rho + mp.log(1 - 1 / a) - (log_delta + mp.log(a)) / (a - 1)

    start = 1 + mp.sqrt(-log_delta / rho)
    best = mp.findroot(lambda a: mp.diff(eps, a), start)
    return float(eps(best))


@pytest.mark.parametrize("rho, delta", [(0.01, 1e-5), (0.5, 1e-6), (1.0, 1e-5), (10.0, 1e-9)])
def test_epsilon_is_the_cks_minimum_rounded_up(rho, delta):
    exact = _cks_epsilon_mp(rho, delta)
    ours = zcdp_epsilon(rho, delta)
    assert exact <= ours <= exact * (1 + 1e-9)
    assert ours <= rho + 2 * math.sqrt(rho * math.log(1 / delta))  # never worse than the classic bound


@given(rho=st.floats(1e-4, 20.0), eps=st.floats(0.0, 30.0))
def test_the_conversion_is_sound_for_the_gaussian_mechanism_that_attains_rho(rho, eps):
    mu = math.sqrt(2 * rho)  # the Gaussian with mu^2/2 = rho is exactly rho-zCDP
    assert zcdp_delta(rho, eps) >= gaussian_delta(eps, mu)


def test_delta_and_epsilon_are_consistent_and_monotone():
    acct = ZCDPAccountant().compose(SelfComposed(ZCDP(0.02), 50))
    eps = acct.epsilon(1e-6)
    assert acct.delta(eps) <= 1e-6 * (1 + 1e-6)
    deltas = acct.profile(np.linspace(0, 10, 21))
    assert np.all(np.diff(deltas) <= 0) and deltas[0] <= 1
    assert eps >= gaussian_epsilon(1e-6, math.sqrt(2 * 1.0))


def test_rho_adds_up_over_every_event_type():
    tree = Composed([SelfComposed(Gaussian(2.0), 4), Laplace(10.0), PureDP(0.2), DiscreteLaplace(5.0, 2),
                     BoundedRange(0.4), ZCDP(0.05)])
    expected = 4 / 8 + 0.1**2 / 2 + 0.2**2 / 2 + 0.4**2 / 2 + 0.4**2 / 8 + 0.05
    acct = ZCDPAccountant().compose(tree)
    assert acct.rho() == pytest.approx(expected, rel=1e-12) and acct.rho() >= expected
    assert np.allclose(acct.rdp([2.0, 8.0]), np.array([2.0, 8.0]) * acct.rho())
    replace = ZCDPAccountant("replace_one").compose(Gaussian(2.0))
    assert replace.rho() == pytest.approx(0.5)  # sensitivity doubles under replace-one
    # the RDP accountant's conversion of the same linear curve on its order grid is never tighter
    assert acct.epsilon(1e-5) <= RDPAccountant().compose(ZCDP(acct.rho())).epsilon(1e-5) * (1 + 1e-9)


def test_refusals_and_bad_input_leave_no_half_composed_state():
    acct = ZCDPAccountant().compose(ZCDP(0.1))
    with pytest.raises(UnsupportedEventError, match="subsampled"):
        acct.compose(Composed([ZCDP(1.0), PoissonSampled(0.1, Gaussian(1.0))]))
    assert acct.rho() == pytest.approx(0.1)
    with pytest.raises(InvalidArgument):
        acct.epsilon(float("nan"))
    with pytest.raises(InvalidArgument):
        acct.delta(-1.0)
    with pytest.raises(InvalidArgument):
        acct.rdp([0.5])
    with pytest.raises(InvalidArgument):
        ZCDPAccountant("neither")
    assert ZCDPAccountant().epsilon(1e-5) == 0.0 and ZCDPAccountant().delta(0.0) == 0.0
    assert acct.epsilon(0.0) == math.inf


def test_tradeoff_is_a_lower_bound_on_the_gaussian_tradeoff():
    from scipy.stats import norm

    acct = ZCDPAccountant().compose(ZCDP(0.125))  # attained by the Gaussian with mu = 0.5
    alphas = np.array([0.01, 0.1, 0.3, 0.6])
    gaussian = norm.cdf(norm.ppf(1 - alphas) - 0.5)
    assert np.all(acct.tradeoff(alphas) <= gaussian + 1e-12)


# ----------------------------------------------------------------------------- Opacus-style accountant
def test_opacus_accountant_matches_the_event_accountant_and_merges_history():
    acct = OpacusAccountant()
    for _ in range(300):
        acct.step(noise_multiplier=1.1, sample_rate=0.01)
    for _ in range(200):
        acct.step(noise_multiplier=0.9, sample_rate=0.02)
    assert acct.history == [(1.1, 0.01, 300), (0.9, 0.02, 200)] and len(acct) == 500
    expected = PLDAccountant().compose(Composed([SelfComposed(PoissonSampled(0.01, Gaussian(1.1)), 300),
                                                 SelfComposed(PoissonSampled(0.02, Gaussian(0.9)), 200)])).epsilon(1e-5)
    assert acct.get_epsilon(delta=1e-5) == expected
    rdp = OpacusAccountant(mechanism="rdp")
    rdp.load_state_dict(acct.state_dict() | {"mechanism": "rdp"})
    assert rdp.history == acct.history and rdp.get_epsilon(1e-5) >= expected


def test_opacus_accountant_validates_before_changing_history():
    acct = OpacusAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.1)
    for bad in ({"noise_multiplier": -1.0, "sample_rate": 0.1}, {"noise_multiplier": 1.0, "sample_rate": 0.0},
                {"noise_multiplier": float("nan"), "sample_rate": 0.1}):
        with pytest.raises(InvalidArgument):
            acct.step(**bad)
    assert acct.history == [(1.0, 0.1, 1)]
    with pytest.raises(UnsupportedEventError):
        OpacusAccountant(mechanism="zcdp").step(noise_multiplier=1.0, sample_rate=0.5)
    assert OpacusAccountant().get_epsilon(1e-5) == 0.0


def test_pld_merges_zcdp_events_into_one_dominating_pair():
    pld = PLDAccountant().compose(SelfComposed(ZCDP(0.01), 100)).epsilon(1e-6)
    cks = zcdp_epsilon(1.0, 1e-6)
    assert gaussian_epsilon(1e-6, math.sqrt(2.0)) <= pld <= cks * (1 + 1e-3)


# ----------------------------------------------------------------------------- one interface on every accountant
_INTERFACE = ("compose", "supports", "epsilon", "delta", "profile", "tradeoff", "rdp", "rho")


@pytest.mark.parametrize("kind", [PLDAccountant, RDPAccountant, ZCDPAccountant, OpacusAccountant])
def test_every_accountant_has_the_shared_interface_and_agrees_on_a_gaussian(kind):
    """Two Gaussian steps compose to mu = sqrt(1/4 + 1/16): exact RDP alpha mu^2/2, rho mu^2/2, and the exact
    GDP profile and trade-off curve bound every accountant's answers from the right side."""
    from scipy.stats import norm

    acct = kind()
    assert all(callable(getattr(acct, name)) for name in _INTERFACE)
    event = Composed([Gaussian(2.0), Gaussian(4.0)])
    assert acct.supports(event) and not acct.supports(PureDP(1.0)) == (kind is OpacusAccountant)
    acct.compose(event)
    mu = math.sqrt(1 / 4 + 1 / 16)
    orders = np.array([1.5, 2.0, 10.0])
    assert np.allclose(acct.rdp(orders), orders * mu**2 / 2, rtol=1e-12)
    assert acct.rho() == pytest.approx(mu**2 / 2, rel=1e-12) and acct.rho() >= mu**2 / 2 * (1 - 1e-15)
    eps = np.array([0.0, 0.5, 1.5])
    profile = acct.profile(eps)
    assert np.all(profile <= np.array([acct.delta(float(e)) for e in eps]))  # PLD: the exact GDP curve here
    assert np.all(profile >= np.array([gaussian_delta(float(e), mu) for e in eps]) * (1 - 1e-12))
    alphas = np.array([0.01, 0.2, 0.5])
    assert np.all(acct.tradeoff(alphas) <= norm.cdf(norm.ppf(1 - alphas) - mu) + 1e-12)
    assert acct.epsilon(1e-5) >= gaussian_epsilon(1e-5, mu) * (1 - 1e-12)


def test_pld_rdp_is_the_sum_of_leaf_curves_and_infinite_without_one():
    event = Composed([SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100), DiscreteLaplace(3.0), BoundedRange(0.3)])
    orders = [1.5, 2.0, 32.0]
    assert np.array_equal(PLDAccountant().compose(event).rdp(orders), RDPAccountant().compose(event).rdp(orders))
    from dpaudit.events import ApproxDP

    assert np.all(PLDAccountant().compose(ApproxDP(1.0, 1e-6)).rdp(orders) == math.inf)
    assert np.all(PLDAccountant("replace_one").compose(PoissonSampled(0.1, PureDP(1.0))).rdp(orders) == math.inf)
    replaced = PoissonSampled(0.1, Gaussian(1.0))  # replace-one Poisson Gaussian: an RDP bound exists (issue 19)
    assert np.array_equal(PLDAccountant("replace_one").compose(replaced).rdp(orders),
                          RDPAccountant("replace_one").compose(replaced).rdp(orders))
    with pytest.raises(InvalidArgument, match="orders"):
        PLDAccountant().rdp([1.0])


def test_opacus_accountant_composes_step_trees_and_refuses_anything_else_unchanged():
    acct = OpacusAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01)
    acct.compose(SelfComposed(Composed([PoissonSampled(0.01, Gaussian(1.0)), PoissonSampled(0.5, PoissonSampled(0.1, Gaussian(2.0)))]), 10))
    assert acct.history == [(1.0, 0.01, 11), (2.0, 0.05, 10)] and len(acct) == 21
    for bad in (Composed([Gaussian(1.0), PureDP(1.0)]), PoissonSampled(0.1, Laplace(1.0))):
        assert not acct.supports(bad)
        with pytest.raises(UnsupportedEventError, match="OpacusAccountant"):
            acct.compose(bad)
    assert acct.history == [(1.0, 0.01, 11), (2.0, 0.05, 10)]
    assert acct.rho() == math.inf
    expected = RDPAccountant().compose(acct.event())
    assert np.allclose(acct.rdp([2.0, 8.0]), expected.rdp([2.0, 8.0]), rtol=1e-12)
    assert acct.epsilon(1e-5) == acct.get_epsilon(1e-5) <= expected.epsilon(1e-5)
    assert acct.delta(1.0) == acct.get_delta(1.0)
    zcdp = OpacusAccountant(mechanism="zcdp").compose(SelfComposed(Gaussian(2.0), 3))
    assert zcdp.rho() == pytest.approx(3 / 8) and not zcdp.supports(PoissonSampled(0.1, Gaussian(1.0)))
    with pytest.raises(InvalidArgument, match="num_steps"):
        acct.load_state_dict({"history": [(1.0, 0.1, 0)]})
    with pytest.raises(InvalidArgument, match="state"):
        acct.load_state_dict({"steps": []})
    assert len(acct) == 21
    big = OpacusAccountant()
    big.load_state_dict({"history": [(1.0, 0.01, 10**9)]})  # restored in O(history), not O(steps)
    assert big.history == [(1.0, 0.01, 10**9)]
