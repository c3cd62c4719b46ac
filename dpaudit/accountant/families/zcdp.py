"""The zCDP family: ``ZCDP(rho)``, any rho-zCDP mechanism (a guarantee under the accountant's relation).

* Normal form: ("zcdp", rho). Unsampled zCDP steps compose exactly: rho adds up (Bun & Steinke 2016,
  Lemma 2.3), so their dominating pair is built once from the total (in parts of at most
  :data:`PLD_MAX_RHO`).
* PLD pair: from the profile bound delta(e) <= min_alpha e^{(alpha-1)(alpha rho - e)} (1 - 1/alpha)^alpha / (alpha - 1)
  (Canonne, Kamath & Steinke 2020, Prop. 12), minimised over alpha by Newton's method at every grid loss
  (:func:`zcdp_profile`), turned into a pair by :mod:`..pld_core.profiles`.
* Lower side (optimistic PLDs, ``epsilon_interval``): a mechanism with the guarantee, with the same sampling.
  By default the Gaussian with mu = sqrt(2 rho); within :func:`lower_target` (a delta the PLD accountant sets)
  the worse mixture of :func:`lower_mixture` (a Gaussian of smaller rho1, or with probability w binary
  randomized response, the component revealed), proven rho-zCDP at every order (:func:`is_zcdp_mixture`).
  At small delta it comes within about 0.5% of the Canonne-Kamath-Steinke bound, where the Gaussian stays
  5-6% below it: that bound is nearly attained, and the Gaussian is not the worst rho-zCDP mechanism.
* RDP: alpha rho (Bun & Steinke 2016, Def. 1.1); zCDP rho. No pure-DP level. Sampled, its profile pair is
  looser than the RDP accountant's sampling bound (``sampled_pld_loose``: the PLD accountant takes both).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

import numpy as np

from ..._numeric import round_up
from ...events import ZCDP
from ..leaf import Leaf
from ..leaf_plds import build_leaf
from ..pld_core.grid import GridPLD
from ..pld_core.profiles import profile_pair
from ..registry import Family

__all__ = ["FAMILY", "zcdp_profile", "PLD_MAX_RHO", "lower_mixture", "lower_target", "is_zcdp_mixture"]

#: Largest zCDP rho (per merged leaf) the PLD accountant builds a pair for: its privacy-loss grid would
#: otherwise need losses beyond e^600.
PLD_MAX_RHO = 400.0
_PROFILE_TAIL = 1e-18  # zCDP grid ends where the profile bound is below this (the rest goes to +inf)


def zcdp_profile(rho: float, e: np.ndarray) -> np.ndarray:
    """Upper bound on delta(e), e >= 0, of any rho-zCDP mechanism (Canonne, Kamath & Steinke 2020, Prop. 12):
    min over alpha > 1 of exp(f(alpha)), f(alpha) = (alpha - 1)(alpha rho - e) + (alpha - 1) ln(1 - 1/alpha) - ln alpha.
    f is strictly convex (f'' = 2 rho + 1/(alpha (alpha - 1)) > 0); its derivative, in d = alpha - 1,
    g(d) = (1 + 2 d) rho - e + ln d - ln(1 + d), is increasing and concave, so Newton's method on g started left of
    its root (d = (e - rho) / (2 rho) when that exceeds 0, where g = ln(1 - 1/alpha) < 0; else d = e^{e - 3 rho - 1},
    where g < -1) increases monotonically to the minimiser. Every alpha gives a valid bound, so the root's accuracy
    only costs tightness. Linear in the number of points (a few vector passes)."""
    e = np.asarray(e, dtype=float)
    d = (e - rho) / (2.0 * rho)
    d = np.where(d > 0.0, d, np.maximum(np.exp(np.minimum(e - 3.0 * rho - 1.0, 0.0)), 1e-300))
    for _ in range(100):
        g = (1.0 + 2.0 * d) * rho - e + np.log(d) - np.log1p(d)
        move = -g / (2.0 * rho + 1.0 / (d * (1.0 + d)))
        d = d + np.maximum(move, 0.0)
        if not np.any(move > 1e-12 * d):
            break
    log_delta = d * ((1.0 + d) * rho - e) + d * (np.log(d) - np.log1p(d)) - np.log1p(d)
    return np.minimum(1.0, np.exp(log_delta) * (1.0 + 1e-12))


_LOWER_DELTA: ContextVar[float | None] = ContextVar("zcdp_lower_delta", default=None)


@contextmanager
def lower_target(delta: float | None) -> Iterator[None]:
    """Within the block, the lower side of zCDP leaves is the mixture of :func:`lower_mixture` chosen for
    ``delta`` (None: the Gaussian with the same rho)."""
    token = _LOWER_DELTA.set(delta)
    try:
        yield
    finally:
        _LOWER_DELTA.reset(token)


def _log_rr_moment(eps: float, t: np.ndarray) -> np.ndarray:
    """ln E_Q[(P/Q)^alpha], alpha = t + 1, of binary randomized response at ``eps`` (symmetric pair)."""
    log_p, log_1p = -float(np.logaddexp(0.0, -eps)), -float(np.logaddexp(0.0, eps))
    a = t + 1.0
    return np.logaddexp(a * log_p - t * log_1p, a * log_1p - t * log_p)


_T_GRID = np.geomspace(1e-4, 1e7, 6001)  # orders alpha = 1 + t checked by is_zcdp_mixture (ratio 1.0042)


def is_zcdp_mixture(rho: float, w: float, eps: float, rho1: float) -> bool:
    """Whether the mechanism that runs, with probability 1 - w, a Gaussian mechanism of zCDP parameter rho1
    (mu = sqrt(2 rho1)) and otherwise binary randomized response at ``eps``, revealing which, is rho-zCDP;
    a proof, not a sampled check (True only when it holds at every order alpha > 1).

    Its Renyi moment at alpha = t + 1 is (1 - w) e^{u rho1} + w E(t), u = t(t + 1), E(t) = e^{t D_alpha(RR)}
    (the pair is symmetric, so one direction suffices), so it is rho-zCDP iff, for every t > 0,
    w (E(t) e^{-u rho} - 1) <= (1 - w)(1 - e^{-u (rho - rho1)}). The right side increases with t and E(t)
    does too (Renyi divergences grow with the order), so on each interval [t_i, t_{i+1}] of a geometric grid
    it suffices that w expm1(ln E(t_{i+1}) - u_i rho) <= (1 - w)(-expm1(-u_i (rho - rho1))). Below the grid,
    t in (0, t_0]: E(t) <= e^{u eps^2 / 2} (pure eps-DP is eps^2/2-zCDP, Bun & Steinke 2016, Prop. 1.4) and
    expm1(u c) <= u c e^{u_0 c}, 1 - e^{-x} >= x e^{-x}, so w c e^{u_0 c} <= (1 - w) Delta e^{-u_0 Delta}
    suffices (c = eps^2/2 - rho, Delta = rho - rho1). Above it, t >= t_N >= (eps - rho) / (2 rho):
    E(t) <= e^{t eps} and t eps - u rho decreases there, so the check at t_N covers the rest. Every
    comparison keeps a relative margin of 1e-6 for the float evaluation."""
    if not (0.0 < w < 1.0 and eps > 0.0 and 0.0 <= rho1 < rho):
        return False
    gap = rho - rho1
    t = _T_GRID
    if t[-1] < (eps - rho) / (2.0 * rho):
        return False
    u = t * (t + 1.0)
    with np.errstate(over="ignore"):  # an overflow to inf fails the check, as it should
        lhs = w * np.expm1(_log_rr_moment(eps, t[1:]) - u[:-1] * rho)
    rhs = (1.0 - w) * -np.expm1(-u[:-1] * gap)
    if not np.all(lhs <= rhs * (1.0 - 1e-6)):
        return False
    c = eps * eps / 2.0 - rho
    if c > 0 and not w * c * math.exp(u[0] * c) <= (1.0 - w) * gap * math.exp(-u[0] * gap) * (1.0 - 1e-6):
        return False
    tail = w * math.expm1(min(700.0, t[-1] * eps - u[-1] * rho))
    return tail <= (1.0 - w) * -math.expm1(-u[-1] * gap) * (1.0 - 1e-6)


def _mixture_delta(rho1: float, w: float, eps2: float, e: float) -> float:
    """delta(e) of the mixture (Gaussian of rho1 w.p. 1 - w, binary randomized response at eps2 w.p. w)."""
    from scipy.special import log_ndtr, ndtr  # local: scipy.special only for the choice of the lower mixture

    mu = math.sqrt(2.0 * rho1)
    gauss = 0.0
    if mu > 0:
        gauss = float(ndtr(-e / mu + mu / 2) - math.exp(min(700.0, e + float(log_ndtr(-e / mu - mu / 2)))))
    rr = 0.0 if e >= eps2 else -math.expm1(e - eps2) / (1.0 + math.exp(-eps2))
    return (1.0 - w) * max(gauss, 0.0) + w * max(0.0, rr)


@lru_cache(maxsize=256)
def lower_mixture(rho: float, delta: float) -> tuple[float, float, float] | None:
    """(w, eps, rho1) of a mixture verified rho-zCDP by :func:`is_zcdp_mixture` whose epsilon at ``delta``
    (alone) is larger than the Gaussian's, or None. The Gaussian with mu = sqrt(2 rho) is not the worst
    rho-zCDP mechanism at small delta: a Gaussian of smaller rho1 mixed, with probability w (about 100 delta),
    with randomized response at an eps just above the target epsilon reaches within about 0.1% of the
    Canonne-Kamath-Steinke upper bound at delta 1e-8 (where the Gaussian is 6% below). Searched over a small
    grid of w and rho1 with the largest verified eps for each (bisection); only tightness depends on it."""
    from scipy.optimize import brentq  # local: only for the choice of the lower mixture

    if not (0.0 < delta < 0.1 and 0.0 < rho <= PLD_MAX_RHO):
        return None

    def epsilon(rho1: float, w: float, eps2: float) -> float:
        if _mixture_delta(rho1, w, eps2, 0.0) <= delta:
            return 0.0
        hi = 1.0
        while _mixture_delta(rho1, w, eps2, hi) > delta and hi < 1e4:
            hi *= 2.0
        return brentq(lambda e: _mixture_delta(rho1, w, eps2, e) - delta, 0.0, hi, xtol=1e-12)

    best, best_eps = None, epsilon(rho, 1e-300, 0.0) if rho > 0 else 0.0
    for w in np.minimum(delta * np.geomspace(10.0, 1000.0, 5), 0.5 * np.geomspace(0.01, 1.0, 5)):
        for frac in (0.6, 0.8, 0.95):
            rho1 = rho * (1.0 - frac)
            lo, hi = 0.0, max(1.0, 4.0 * (rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))))
            if not is_zcdp_mixture(rho, float(w), 1e-9, rho1):
                continue
            for _ in range(24):
                mid = 0.5 * (lo + hi)
                lo, hi = (mid, hi) if is_zcdp_mixture(rho, float(w), mid, rho1) else (lo, mid)
            if lo <= 0.0:
                continue
            value = epsilon(rho1, float(w), lo)
            if value > best_eps:
                best, best_eps = (float(w), lo, rho1), value
    return best


def _profile_top(leaf: Leaf) -> float:
    """A loss beyond which the profile (after any sampling) is negligible (below _PROFILE_TAIL)."""
    rho = leaf.param
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / _PROFILE_TAIL)) + 1.0


@lru_cache(maxsize=64)
def _profile_pair(leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """The pessimistic pair of a zCDP leaf (cached: leaves are immutable and GridPLDs are never mutated)."""
    return profile_pair(leaf, relation, step, lambda e: zcdp_profile(leaf.param, e), _profile_top(leaf))


def _normal_form(event: ZCDP) -> Leaf:
    return Leaf("zcdp", event.rho)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    if not pessimistic:  # an actual mechanism with the guarantee: a lower bound on the worst case
        target = _LOWER_DELTA.get()
        mixture = None if target is None else lower_mixture(leaf.param, target)
        rho = leaf.param if mixture is None else mixture[2]
        mu = math.sqrt(2.0 * rho) / (2.0 if relation == "replace_one" else 1.0)
        gauss = build_leaf(Leaf("gaussian", mu, 2, leaf.sampling, leaf.q), relation, step, pessimistic)
        if mixture is None:
            return gauss
        # the component revealed: each direction's PLD is the mixture of the components' PLDs
        w, eps = mixture[0], mixture[1]
        rr = build_leaf(Leaf("rr", eps, 2, leaf.sampling, leaf.q), relation, step, pessimistic)
        remove = gauss[0].mixture(rr[0], 1.0 - w)
        add = remove if gauss[1] is gauss[0] and rr[1] is rr[0] else gauss[1].mixture(rr[1], 1.0 - w)
        return remove, add
    return _profile_pair(leaf, relation, step)


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    if leaf.param > PLD_MAX_RHO:
        return f"rho={leaf.param!r} > {PLD_MAX_RHO} is beyond the PLD grid; use ZCDPAccountant or RDPAccountant"
    return None


def _rdp_curve(leaf: Leaf, scale: float):
    return lambda a: np.asarray(a, dtype=float) * leaf.param


def _rho(leaf: Leaf, scale: float) -> float:
    return leaf.param


def _merge(leaves: list[tuple[Leaf, int]]) -> list[tuple[Leaf, int]]:
    rho = [count * leaf.param for leaf, count in leaves]
    total = round_up(math.fsum(rho), ulps=4 + len(rho))
    parts = max(1, math.ceil(total / PLD_MAX_RHO))  # each part within the grid (see _pld_check)
    return [(Leaf("zcdp", round_up(total / parts)), parts)]


FAMILY = Family(
    name="zcdp", events=(ZCDP,), kinds=("zcdp",), normal_form=_normal_form, pld_pair=_pld_pair,
    rdp_curve=_rdp_curve, rho=_rho, guarantee=True, pld_check=_pld_check, merge_unsampled=_merge,
    sampled_pld_loose=True,
    sampled_lower_side=True,  # its lower side is a Gaussian mechanism with the guarantee, which one record attains
)
