"""The zCDP family's privacy profile (Newton's method on the Canonne-Kamath-Steinke exponent) and its lower side:
a Gaussian / randomized-response mixture proven rho-zCDP at every order, worse than the Gaussian at small delta."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.stats import norm

from dpaudit.accountant import PLDAccountant
from dpaudit.accountant.families.zcdp import is_zcdp_mixture, lower_mixture, zcdp_profile
from dpaudit.accountant.zcdp import zcdp_epsilon
from dpaudit.events import ZCDP

_ALPHAS = 1.0 + np.geomspace(1e-6, 1e6, 40001)


def _dense_profile(rho: float, e: float) -> float:
    a = _ALPHAS
    return float(np.exp(np.min((a - 1) * (a * rho - e) + (a - 1) * np.log1p(-1 / a) - np.log(a))))


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.floats(1e-5, 300.0), st.floats(0.0, 60.0))
def test_profile_is_the_minimum_over_orders(rho, e):
    value = float(zcdp_profile(rho, np.array([e]))[0])
    dense = min(1.0, _dense_profile(rho, e))
    assert value <= dense * (1 + 1e-9) + 1e-300  # never above a grid of orders (Newton finds the minimiser)
    assert value >= dense * (1 - 1e-3) - 1e-300  # every order's value is an upper bound: not below the minimum


def _log_moment(rho1: float, w: float, eps: float, t: np.ndarray) -> np.ndarray:
    """ln E_Q[(P/Q)^(t+1)] of the mixture (Gaussian of rho1 w.p. 1 - w, binary RR at eps w.p. w)."""
    p = 1 / (1 + math.exp(-eps))
    a = t + 1
    rr = np.logaddexp(a * math.log(p) - t * math.log1p(-p), a * math.log1p(-p) - t * math.log(p))
    return np.logaddexp(math.log1p(-w) + t * a * rho1, math.log(w) + rr)


@pytest.mark.parametrize("rho,delta", [(0.004772, 1e-8), (0.05, 1e-10), (1.0, 1e-5)])
def test_the_lower_mixture_is_zcdp_at_every_order_and_the_proof_has_power(rho, delta):
    w, eps, rho1 = lower_mixture(rho, delta)
    t = np.geomspace(1e-7, 1e7, 200001)
    assert np.all(_log_moment(rho1, w, eps, t) <= t * (t + 1) * rho + 1e-12)
    # a randomized response 20% wider breaks the guarantee at some order, and the proof says so
    wider = eps * 1.2
    assert np.any(_log_moment(rho1, w, wider, t) > t * (t + 1) * rho)
    assert not is_zcdp_mixture(rho, w, wider, rho1)


def test_the_proof_refuses_what_violates_the_guarantee_near_order_one():
    rho = 0.01  # a mixture whose first-order term (KL) exceeds rho: w (eps^2/2) > rho - rho1 with little room
    assert not is_zcdp_mixture(rho, 0.5, 1.0, 0.0099)
    assert is_zcdp_mixture(rho, 1e-9, 0.05, 0.005)


def _gaussian_epsilon(rho: float, delta: float) -> float:
    mu = math.sqrt(2 * rho)
    return brentq(lambda e: norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2) - delta, 0, 50)


@pytest.mark.parametrize("delta", [1e-8, 1e-10])
def test_zcdp_interval_is_tight_at_small_delta(delta):
    rho = 0.004772
    lower, upper = PLDAccountant().compose(ZCDP(rho)).epsilon_interval(delta)
    assert _gaussian_epsilon(rho, delta) < lower  # a worse mechanism than the Gaussian with the guarantee
    assert lower <= zcdp_epsilon(rho, delta)  # below the Canonne-Kamath-Steinke upper bound (sound)
    assert lower <= upper
    assert upper - lower <= 0.015 * upper


def test_lower_mixtures_are_tried_for_the_delta_a_zcdp_step_sees_and_only_where_it_matters():
    from dpaudit.events import Composed, Gaussian, Laplace, PoissonSampled

    q = 0.01 * 0.02
    nested = PLDAccountant().compose(PoissonSampled(0.01, PoissonSampled(0.02, Composed([ZCDP(0.01), Laplace(7.0)]))))
    assert nested._lower_targets(1e-8) == pytest.approx(sorted([1e-8 / q, 1e-8 / math.sqrt(q)]))
    # a zCDP step carrying under 5% of the rho: its lower side barely moves the lower end; none tried
    small = PLDAccountant().compose(PoissonSampled(0.01, Composed([ZCDP(0.001), Gaussian(0.7)])))
    assert small._lower_targets(1e-8) == []
    assert PLDAccountant().compose(Gaussian(1.0))._lower_targets(1e-8) == []
