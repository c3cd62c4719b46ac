"""Whole privacy curves: GDP conversions, profiles and trade-off functions of accountants and guarantees."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant, gaussian_delta, gaussian_epsilon, gdp_delta, gdp_epsilon
from dpaudit.accountant.curves import gdp_mu_lower, gdp_tradeoff, profile_grid, tradeoff_from_profile
from dpaudit.events import Gaussian, Laplace, PoissonSampled, PureDP, SelfComposed
from dpaudit.guarantee import Guarantee
from dpaudit.symbolic import SYMBOLS, gdp_epsilon_equation, symbolic

ALPHAS = np.unique(np.concatenate([[0.0], np.logspace(-7, -1, 13), np.linspace(0.05, 1.0, 20)]))


def mp_gdp_delta(mu: float, epsilon: float) -> mp.mpf:
    with mp.workdps(60):
        m, e = mp.mpf(mu), mp.mpf(epsilon)
        return max(mp.mpf(0), mp.ncdf(-e / m + m / 2) - mp.exp(e) * mp.ncdf(-e / m - m / 2))


def mp_tradeoff(mu: float, alpha: float) -> mp.mpf:
    with mp.workdps(60):
        if alpha == 0:
            return mp.mpf(1)
        if alpha == 1:
            return mp.mpf(0)
        z = -mp.sqrt(2) * mp.erfinv(2 * mp.mpf(alpha) - 1)  # Phi^-1(1 - alpha)
        return mp.ncdf(z - mu)


# ------------------------------------------------------------------------------------------- GDP
@given(st.floats(1e-3, 30.0), st.floats(0.0, 60.0))
def test_gdp_delta_is_an_upper_bound_close_to_mpmath(mu, epsilon):
    exact = mp_gdp_delta(mu, epsilon)
    value = gdp_delta(mu, epsilon)
    assert isinstance(value, float)
    assert value >= exact
    assert value <= exact * (1 + 1e-7) + 1e-300


def test_gdp_delta_agrees_with_the_exact_gaussian_curve():
    # the same curve as Balle & Wang's (60-digit mpmath in dpaudit.accountant.gaussian_delta)
    for mu in (0.05, 0.268, 1.0, 4.0):
        for epsilon in (0.0, 0.3, 1.0, 5.0):
            assert gdp_delta(mu, epsilon) == pytest.approx(gaussian_delta(epsilon, mu), rel=1e-8)


def test_gdp_delta_is_vectorised_and_handles_extremes():
    mus = np.array([0.5, 1.0, 2.0])
    values = gdp_delta(mus[:, None], np.array([0.0, 1.0, 800.0])[None, :])
    assert values.shape == (3, 3)
    assert np.all(np.diff(values, axis=1) <= 0)  # delta decreases in epsilon
    assert np.all(np.diff(values[:, 0]) >= 0)  # and increases in mu
    assert np.all(values[:, 2] >= 0) and np.all(values[:, 2] < 1e-300)  # e^800 never overflows
    assert gdp_delta(0.0, 1.0) == 0.0 and gdp_delta(1.0, math.inf) == 0.0
    assert gdp_delta(60.0, 0.5) == pytest.approx(1.0)


@given(st.floats(1e-2, 20.0), st.floats(1e-12, 0.5))
def test_gdp_epsilon_inverts_gdp_delta_from_above(mu, delta):
    epsilon = gdp_epsilon(mu, delta)
    assert mp_gdp_delta(mu, epsilon) <= delta
    if epsilon > 0:  # tight: slightly less epsilon breaks the target
        assert mp_gdp_delta(mu, epsilon * (1 - 1e-7) - 1e-12) > delta


def test_gdp_epsilon_matches_gaussian_epsilon_and_is_vectorised():
    mus = np.array([0.1, 0.268, 1.0, 3.0])
    values = gdp_epsilon(mus, 1e-5)
    assert values.shape == (4,)
    for mu, value in zip(mus, values):
        assert value == pytest.approx(gaussian_epsilon(1e-5, float(mu)), rel=1e-9)
    assert gdp_epsilon(1.0, 0.0) == math.inf
    assert gdp_epsilon(0.0, 1e-5) == 0.0
    assert gdp_epsilon(0.01, 0.5) == 0.0  # delta(0) below the target


@pytest.mark.parametrize("call,name", [(lambda: gdp_delta(-1.0, 1.0), "mu"), (lambda: gdp_delta(float("nan"), 1.0), "mu"),
                                       (lambda: gdp_delta(1.0, -0.5), "epsilon"), (lambda: gdp_epsilon(1.0, 1.5), "delta"),
                                       (lambda: gdp_epsilon(float("nan"), 1e-5), "mu"), (lambda: gdp_delta("a", 1.0), "mu"),
                                       (lambda: gdp_epsilon(1.0, float("nan")), "delta")])
def test_gdp_bad_arguments(call, name):
    with pytest.raises((ValueError, TypeError), match=name):
        call()


def test_gdp_tradeoff_is_a_lower_bound_close_to_mpmath():
    for mu in (0.1, 0.268, 1.0, 3.0):
        values = gdp_tradeoff(mu, ALPHAS)
        for alpha, value in zip(ALPHAS, values):
            exact = mp_tradeoff(mu, float(alpha))
            assert value <= exact
            assert value >= exact - 1e-12


def test_gdp_mu_lower_inverts_the_gdp_curve():
    mu = 0.7
    alphas = np.array([1e-4, 0.01, 0.3, 0.8])
    betas = gdp_tradeoff(mu, alphas)
    assert np.all(gdp_mu_lower(alphas, betas) <= mu + 1e-9)
    assert np.all(gdp_mu_lower(alphas, betas) >= mu - 1e-6)


def test_symbolic_forms_agree_with_the_float_functions():
    delta_expr = symbolic("gdp_delta")
    assert delta_expr.free_symbols == {SYMBOLS["mu"], SYMBOLS["epsilon"]}
    f = sp.lambdify([SYMBOLS["mu"], SYMBOLS["epsilon"]], delta_expr, modules="mpmath")
    for mu, epsilon in ((0.3, 0.5), (1.0, 1.0), (2.0, 4.0)):
        with mp.workdps(50):
            assert gdp_delta(mu, epsilon) == pytest.approx(float(f(mp.mpf(mu), mp.mpf(epsilon))), rel=1e-10)
    g = sp.lambdify([SYMBOLS["mu"], SYMBOLS["alpha"]], symbolic("gdp_tradeoff"), modules="mpmath")
    for mu, alpha in ((0.3, 0.2), (1.0, 0.5), (2.0, 1e-3)):
        assert float(gdp_tradeoff(mu, [alpha])[0]) == pytest.approx(float(g(mu, alpha)), rel=1e-10)
    equation = gdp_epsilon_equation()
    epsilon = gdp_epsilon(1.0, 1e-5)
    assert float(equation.lhs.subs({SYMBOLS["mu"]: 1, SYMBOLS["epsilon"]: epsilon}).evalf(40)) <= 1e-5


# ----------------------------------------------------------------------------------- Guarantee
def test_guarantee_tradeoff_and_profile():
    g = Guarantee(1.0, 1e-5)
    f = g.tradeoff(ALPHAS)
    expected = np.maximum.reduce([np.zeros_like(ALPHAS), 1 - 1e-5 - math.e * ALPHAS, (1 - 1e-5 - ALPHAS) / math.e])
    assert np.all(f <= expected) and np.allclose(f, expected, atol=1e-14)
    profile = g.profile([0.0, 0.5, 1.0, 3.0])
    assert profile[2] == profile[3] == 1e-5
    # delta(0) of the dominating pair: delta + (1 - delta)(e - 1)/(e + 1) (total variation)
    assert profile[0] == pytest.approx(1e-5 + (1 - 1e-5) * (math.e - 1) / (math.e + 1), rel=1e-12)
    assert profile[0] >= 1e-5 + (1 - 1e-5) * (math.e - 1) / (math.e + 1)
    assert np.all(np.diff(g.profile(np.linspace(0, 2, 50))) <= 0)
    # the (eps, delta) trade-off of a pure claim is randomized response's: f(alpha) at the kink
    kink = 1 / (1 + math.e)
    assert float(Guarantee(1.0).tradeoff([kink])[0]) == pytest.approx(kink, rel=1e-12)


# ------------------------------------------------------------------------------------ accountants
def test_pld_gaussian_is_exact_gdp():
    acct = PLDAccountant().compose(SelfComposed(Gaussian(2.0), 4))
    assert acct.gaussian_mu() == pytest.approx(1.0)
    assert np.array_equal(acct.tradeoff(ALPHAS), gdp_tradeoff(1.0, ALPHAS))
    assert acct.profile([1.0])[0] == gdp_delta(1.0, 1.0)
    replace = PLDAccountant(neighbouring="replace_one").compose(Gaussian(2.0))
    assert replace.gaussian_mu() == pytest.approx(1.0)  # sensitivity doubles under replace-one


def test_pld_grid_tradeoff_is_a_tight_lower_bound_for_a_gaussian():
    # force the generic grid path (profile -> trade-off) on a Gaussian and compare with the exact G_mu
    acct = PLDAccountant().compose(Gaussian(3.0))
    grid, deltas = profile_grid(acct)
    generic = tradeoff_from_profile(ALPHAS, grid, deltas)
    exact = np.array([float(mp_tradeoff(1 / 3.0, float(a))) for a in ALPHAS])
    assert np.all(generic <= exact)
    assert np.all(generic >= exact - 2e-4)


def test_pld_laplace_tradeoff_is_exact_at_the_pure_epsilon_and_beats_the_guarantee():
    acct = PLDAccountant().compose(Laplace(1.0))
    f = acct.tradeoff(ALPHAS)
    pure = Guarantee(1.0).tradeoff(ALPHAS)
    assert np.all(f >= pure - 1e-12)  # the Laplace curve lies above randomized response's
    # exact Laplace trade-off (b = 1, shift 1): reject when y > t, t in [0, 1]: alpha = e^{-t}/2, beta = e^{t-1}/2
    t = np.linspace(0.0, 1.0, 11)
    alpha, beta = np.exp(-t) / 2, np.exp(t - 1) / 2
    assert np.all(acct.tradeoff(alpha) <= beta + 1e-12)
    assert np.all(acct.tradeoff(alpha) >= beta - 2e-3)


def test_subsampled_tradeoff_is_valid_and_both_accountants_agree_in_direction():
    event = SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 10)
    pld, rdp = PLDAccountant().compose(event), RDPAccountant().compose(event)
    f_pld, f_rdp = pld.tradeoff(ALPHAS), rdp.tradeoff(ALPHAS)
    assert np.all(np.diff(f_pld) <= 1e-12) and np.all(f_pld <= 1 - ALPHAS + 1e-12) and np.all(f_pld >= 0)
    assert np.all(f_pld >= f_rdp - 1e-9)  # PLD is tighter than RDP: a larger guaranteed f
    # the profile is the accountant's delta, and consistent with the trade-off (f(alpha) >= 1 - delta - e^eps alpha)
    eps = np.array([0.5, 1.0, 2.0])
    profile = pld.profile(eps)
    assert np.allclose(profile, [pld.delta(e) for e in eps])
    for e, dl in zip(eps, profile):
        assert np.all(f_pld >= 1 - dl - np.exp(e) * ALPHAS - 1e-12)
    assert rdp.profile([1.0])[0] == rdp.delta(1.0)


def test_profile_and_tradeoff_validate_inputs():
    acct = PLDAccountant().compose(PureDP(1.0))
    with pytest.raises(ValueError, match="alphas"):
        acct.tradeoff([0.5, 1.5])
    with pytest.raises(ValueError, match="alphas"):
        acct.tradeoff([float("nan")])
    with pytest.raises(ValueError, match="epsilons"):
        acct.profile([-1.0])
    with pytest.raises(TypeError, match="alphas"):
        Guarantee(1.0).tradeoff("a")
    assert PLDAccountant().tradeoff([0.25]).tolist() == pytest.approx([0.75])  # nothing composed: no leak


@given(st.lists(st.tuples(st.floats(0.0, 8.0), st.floats(0.0, 0.5)), min_size=1, max_size=40),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_the_envelope_is_the_maximum_of_the_profile_lines(profile, alphas):
    eps = np.array([e for e, _ in profile])
    dels = np.array([d for _, d in profile])
    x = np.array(alphas)
    brute = np.maximum.reduce([np.zeros_like(x),
                               (1 - dels[None, :] - np.exp(eps)[None, :] * x[:, None]).max(axis=1),
                               (np.exp(-eps)[None, :] * (1 - dels[None, :] - x[:, None])).max(axis=1)])
    fast = tradeoff_from_profile(x, eps, dels)
    assert np.all(fast <= brute + 1e-15)  # a lower bound (rounded down) ...
    assert np.all(fast >= brute - 1e-12)  # ... of the exact maximum
