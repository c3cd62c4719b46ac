"""Certified TPR-at-FPR intervals from the PLD bracket, against exact trade-off curves in closed form."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import ndtr, ndtri
from scipy.stats import binom

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.accountant.risk import risk_tradeoff, tpr_interval
from dpaudit.errors import InvalidArgument
from dpaudit.events import Gaussian, Laplace, MixtureOfGaussians, PoissonSampled, PureDP, SelfComposed

FPRS = np.array([0.0, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.7, 0.9, 1.0])


def _contains(interval, exact, slack=1e-12):
    assert (interval.lower <= exact + slack).all(), (interval.lower - exact)
    assert (exact <= interval.upper + slack).all(), (exact - interval.upper)


def test_gaussian_on_the_grid_brackets_the_closed_form():
    """A Gaussian read through a grid (the mixture family with one component): TPR = Phi(Phi^-1(FPR) + mu)."""
    acct = PLDAccountant().compose(SelfComposed(MixtureOfGaussians(2.0, [1.0], [1.0]), 4))  # mu = 1
    with np.errstate(divide="ignore"):
        exact = ndtr(ndtri(FPRS) + 1.0)
    interval = acct.tpr_interval(FPRS)
    _contains(interval, exact)
    assert interval.method.startswith("PLD bracket") and float(np.max(interval.width)) < 1e-4


def test_composed_gaussians_read_the_closed_form_both_ways():
    interval = PLDAccountant().compose(SelfComposed(Gaussian(2.0), 4)).tpr_interval(FPRS)
    with np.errstate(divide="ignore"):
        exact = ndtr(ndtri(FPRS) + 1.0)
    _contains(interval, exact)
    assert float(np.max(interval.width)) < 1e-12


@pytest.mark.parametrize("mu", [0.5, 1.0, 2.0])
def test_laplace_brackets_its_closed_form(mu):
    """T(Lap(0, 1), Lap(mu, 1)): 1 - e^mu a below e^-mu / 2, e^-mu / (4 a) up to 1/2, e^-mu (1 - a) above
    (Dong, Roth & Su 2022); both orderings agree."""
    a = FPRS
    with np.errstate(divide="ignore"):
        f = np.where(a < math.exp(-mu) / 2, 1 - math.exp(mu) * a,
                     np.where(a <= 0.5, math.exp(-mu) / (4 * np.maximum(a, 1e-300)), math.exp(-mu) * (1 - a)))
    interval = PLDAccountant().compose(Laplace(1.0 / mu)).tpr_interval(a)
    _contains(interval, 1 - f)
    assert float(np.max(interval.width)) < 1e-4


def _rr_exact(eps: float, k: int, alphas: np.ndarray) -> np.ndarray:
    """Best TPR of k-fold binary randomized response: Neyman-Pearson over the number of truthful answers."""
    p = math.exp(eps) / (1 + math.exp(eps))
    j = np.arange(k + 1)[::-1]  # most truthful first: the likelihood ratio decreases
    xs = np.concatenate([[0.0], np.cumsum(binom.pmf(j, k, 1 - p))])
    ys = np.concatenate([[0.0], np.cumsum(binom.pmf(j, k, p))])
    return np.interp(alphas, xs, ys)


@pytest.mark.parametrize("eps, k", [(1.0, 1), (0.5, 3), (2.0, 2)])
def test_randomized_response_brackets_its_exact_curve(eps, k):
    interval = PLDAccountant().compose(SelfComposed(PureDP(eps), k)).tpr_interval(FPRS)
    _contains(interval, _rr_exact(eps, k, FPRS), slack=1e-9)
    assert float(np.max(interval.width)) < 1e-4


@settings(max_examples=15, deadline=None)
@given(st.floats(0.05, 3.0), st.integers(1, 4), st.lists(st.floats(0.0, 1.0), min_size=1, max_size=5))
def test_randomized_response_property(eps, k, fprs):
    alphas = np.array(fprs)
    interval = PLDAccountant().compose(SelfComposed(PureDP(eps), k)).tpr_interval(alphas)
    _contains(interval, _rr_exact(eps, k, alphas), slack=1e-9)


def _sampled_gaussian_exact(q: float, mu: float, alpha: float) -> float:
    """One Poisson-sampled Gaussian step, A = (1 - q) N(0, 1) + q N(mu, 1), B = N(0, 1); the likelihood ratio
    is monotone in x, so the best tests are half-lines: the larger TPR of the two orderings."""
    if alpha in (0.0, 1.0):
        return alpha
    t = -ndtri(alpha)  # A in: reject B for x > t
    in_a = (1 - q) * ndtr(-t) + q * ndtr(mu - t)
    s = brentq(lambda s: (1 - q) * ndtr(s) + q * ndtr(s - mu) - alpha, -40, 40, xtol=1e-15)  # B in: x < s
    return max(in_a, float(ndtr(s)))


def _concave_hull(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs, ys):
        while len(hull) >= 2 and (hull[-1][1] - hull[-2][1]) * (x - hull[-2][0]) <= (y - hull[-2][1]) * (hull[-1][0] - hull[-2][0]):
            hull.pop()
        hull.append((x, y))
    return np.interp(at, [h[0] for h in hull], [h[1] for h in hull])


def test_one_sampled_gaussian_step_brackets_its_exact_symmetrised_curve():
    """The larger TPR of the two orderings is not concave for one asymmetric step; the risk bound covers every
    attack, mixtures of the two orderings' tests too (Dong, Roth & Su 2022, Def. F.1): its concave hull."""
    q, sigma = 0.3, 0.8
    interval = PLDAccountant().compose(PoissonSampled(q, Gaussian(sigma))).tpr_interval(FPRS)
    xs = np.unique(np.concatenate([np.linspace(0.0, 1.0, 4001), FPRS]))
    pointwise = np.array([_sampled_gaussian_exact(q, 1 / sigma, float(a)) for a in xs])
    exact = _concave_hull(xs, pointwise, FPRS)  # within ~1e-8 below the exact hull (a sampled hull)
    _contains(interval, exact, slack=1e-7)
    assert float(np.max(interval.width[FPRS >= 1e-4])) <= 1e-4
    assert (exact[6:8] > np.interp(FPRS[6:8], xs, pointwise) + 1e-4).all()  # the hull matters here (0.3, 0.5)


def test_dpsgd_interval_is_narrow_and_within_the_contract():
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 200))
    interval = acct.tpr_interval(FPRS)
    assert (interval.upper <= acct.tpr_at_fpr(FPRS)).all()
    assert float(np.max(interval.width[FPRS >= 1e-4])) <= 1e-4
    assert (interval.lower >= FPRS).all() and (interval.lower <= interval.upper).all()
    old = np.maximum(1.0 - risk_tradeoff(acct, 1e-4)(FPRS), FPRS)  # the profile read on an epsilon grid
    assert (interval.upper <= old + 1e-12).all()


def test_accountants_without_a_lower_curve_give_the_fpr_as_the_lower_end():
    acct = RDPAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 50))
    interval = tpr_interval(acct, FPRS)
    assert (interval.lower == FPRS).all() and (interval.upper == acct.tpr_at_fpr(FPRS)).all()
    assert "upper bound only" in interval.method and interval.to_dict()["tpr_at_fpr"][0]["fpr"] == 0.0


@pytest.mark.parametrize("bad", [-0.1, 1.5, [0.1, 2.0], float("nan")])
def test_fprs_outside_zero_one_are_refused(bad):
    acct = PLDAccountant().compose(PoissonSampled(0.1, Gaussian(1.0)))
    with pytest.raises(InvalidArgument, match="fprs"):
        acct.tpr_interval(bad)
    with pytest.raises(InvalidArgument, match="fprs"):
        acct.tpr_at_fpr(bad)
