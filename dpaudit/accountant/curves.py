"""Whole privacy curves: privacy profiles delta(epsilon), trade-off functions f(alpha) and Gaussian DP.

A mechanism's privacy on an adjacent pair (P, Q) = (M(d), M(d')) is fully described by either of
two dual curves (Dong, Roth & Su 2022, "Gaussian differential privacy", JRSS-B):

* the **privacy profile** delta(eps) = sup_S P(S) - e^eps Q(S) (the smallest delta for each epsilon);
* the **trade-off function** f(alpha) = inf {beta_phi : alpha_phi <= alpha} over tests phi of P against
  Q, alpha_phi = E_P[phi] (type I), beta_phi = 1 - E_Q[phi] (type II).

A claim that holds for both orderings of every adjacent pair converts profile -> trade-off by
(Dong-Roth-Su 2022, Prop. 2.12, both orderings; every term is a valid lower bound on its own)

    f(alpha) >= sup_{eps >= 0} max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha)),

so a profile that is an upper bound, read on any finite grid of epsilons, gives a **lower bound** on the
true trade-off function: an auditor that finds a test below it has found a violation.

Gaussian DP: mu-GDP means f >= G_mu, G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (the trade-off of
N(0, 1) against N(mu, 1)); its profile is (Dong-Roth-Su 2022, Cor. 2.13)

    delta(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

The Gaussian mechanism with sensitivity Delta and noise sigma is exactly (Delta/sigma)-GDP, and GDP
composes exactly: mu^2 add up.

Directions of rounding: profiles and epsilons are upper bounds (rounded up), trade-off values lower
bounds (rounded down).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._numeric import round_up
from .._validation import check_real
from ..errors import InvalidArgument
from ..tradeoff import ProfileTradeoff, _array, guarantee_profile, guarantee_tradeoff, tradeoff_from_profile

__all__ = [
    "gdp_delta",
    "gdp_epsilon",
    "gdp_epsilon_lower",
    "gdp_delta_lower",
    "gdp_tradeoff",
    "gdp_mu_lower",
    "guarantee_profile",
    "guarantee_tradeoff",
    "tradeoff_from_profile",
    "accountant_profile",
    "accountant_tradeoff",
    "profile_grid",
    "gaussian_mu",
    "PROFILE_GRID_POINTS",
    "as_tradeoff",
    "ProfileTradeoff",
]

_U = 2.0**-53
#: Epsilon grid points on which a numeric accountant's profile is read to build its trade-off curve.
PROFILE_GRID_POINTS = 600
_TINY = 5e-324


def _out(values: np.ndarray, scalar: bool) -> Any:
    return float(values) if scalar else values


# ------------------------------------------------------------------------------------------- GDP
def _gdp_delta_up(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Upper bound on Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2) for mu > 0, finite eps >= 0.

    Evaluated as e^la (1 - e^x), la = log Phi(a), x = eps + log Phi(b) - la <= 0 (no overflow of e^eps,
    no catastrophic cancellation beyond the error of x), and moved up by a bound on the float error of
    x and la: 16 u (1 + a^2 + b^2 + |eps| + |la| + |lb|) (d/da log Phi(a) <= |a| + 1).
    """
    return _gdp_delta_bound(mu, eps, upper=True)


def _gdp_delta_down(mu: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """Lower bound on the mu-GDP delta(eps): :func:`_gdp_delta_up` with the float errors moved down."""
    return _gdp_delta_bound(mu, eps, upper=False)


def _gdp_delta_bound(mu: np.ndarray, eps: np.ndarray, upper: bool) -> np.ndarray:
    from scipy.special import log_ndtr

    sign = 1.0 if upper else -1.0
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = -eps / mu + mu / 2.0
        b = -eps / mu - mu / 2.0
        la, lb = log_ndtr(a), log_ndtr(b)
        x = np.minimum(eps + lb - la, 0.0)
        err = 16.0 * _U * (1.0 + a * a + b * b + np.abs(eps) + np.abs(la) + np.abs(lb))
        x_moved = np.minimum(x - sign * err, 0.0)
        value = np.exp(la + sign * err) * -np.expm1(x_moved) * (1.0 + sign * 16.0 * _U)
    if upper:
        value = np.where(np.isfinite(value), value, 1.0)
        return np.clip(np.maximum(value, _TINY), 0.0, 1.0)
    return np.clip(np.where(np.isfinite(value), value, 0.0), 0.0, 1.0)


def gdp_delta(mu: Any, epsilon: Any) -> Any:
    """delta(epsilon) of mu-GDP: Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2), rounded up.

    Dong, Roth & Su 2022, Cor. 2.13 (the Gaussian mechanism's exact curve, Balle & Wang 2018, Thm 8).
    Vectorised (numpy broadcasting over ``mu`` and ``epsilon``); computed in log space, so e^eps never
    overflows. ``mu = 0`` (no information) gives 0; ``epsilon = inf`` gives 0.

    Example:
        >>> round(gdp_delta(1.0, 1.0), 6)
        0.126937
    """
    scalar = np.ndim(mu) == 0 and np.ndim(epsilon) == 0
    mu_arr = _array(mu, "mu", low=0.0)
    eps_arr = _array(epsilon, "epsilon", low=0.0, allow_inf=True)
    mu_b, eps_b = np.broadcast_arrays(mu_arr, eps_arr)
    live = (mu_b > 0) & np.isfinite(eps_b)
    result = np.zeros(mu_b.shape)
    if live.any():
        result[live] = _gdp_delta_up(mu_b[live], eps_b[live])
    return _out(result, scalar)


def gdp_epsilon(mu: Any, delta: Any) -> Any:
    """Smallest epsilon >= 0 with mu-GDP implying (epsilon, delta)-DP (the inverse of :func:`gdp_delta`),
    rounded up: the result is an epsilon whose rounded-up delta is within ``delta``.

    Vectorised bisection on the outward-rounded curve. ``delta = 0`` gives inf (GDP is never pure DP
    for mu > 0); ``mu = 0`` gives 0.

    Example:
        >>> round(gdp_epsilon(1.0, 1e-5), 4)
        4.3772
    """
    scalar = np.ndim(mu) == 0 and np.ndim(delta) == 0
    mu_arr = _array(mu, "mu", low=0.0)
    delta_arr = _array(delta, "delta", low=0.0, high=1.0)
    mu_b, delta_b = np.broadcast_arrays(mu_arr, delta_arr)
    mu_b, delta_b = mu_b.astype(float).ravel(), delta_b.astype(float).ravel()
    result = np.zeros(mu_b.shape)
    result[(delta_b == 0) & (mu_b > 0)] = math.inf
    live = (delta_b > 0) & (mu_b > 0)
    live &= _gdp_delta_up(np.where(live, mu_b, 1.0), np.zeros_like(mu_b)) > delta_b
    if live.any():
        m, t = mu_b[live], delta_b[live]
        lo = np.zeros_like(m)
        hi = m * m / 2.0 + m * np.sqrt(2.0 * np.log(1.0 / t)) + 1.0
        for _ in range(2000):
            high_ok = _gdp_delta_up(m, hi) <= t
            if high_ok.all():
                break
            lo = np.where(high_ok, lo, hi)
            hi = np.where(high_ok, hi, 2.0 * hi)
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            ok = _gdp_delta_up(m, mid) <= t
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
            if np.all(hi - lo <= 4 * np.spacing(hi)):
                break
        result[live] = hi
    return _out(result.reshape(np.broadcast(mu_arr, delta_arr).shape), scalar)


def gdp_epsilon_lower(mu: float, delta: float) -> float:
    """A lower bound on the smallest epsilon with mu-GDP implying (epsilon, delta)-DP (the exact inverse
    of the Gaussian curve, Dong, Roth & Su 2022, Cor. 2.13): the largest epsilon found whose rounded-down
    delta still exceeds ``delta`` (bisection), 0 if none; the largest float when mu^2 overflows (the
    exact value, about mu^2 / 2, is beyond the float range)."""
    if mu <= 0.0 or delta >= 1.0:
        return 0.0
    if not math.isfinite(mu * mu):
        return sys.float_info.max
    m = np.array([mu])
    if delta <= 0.0:
        return math.inf
    if _gdp_delta_down(m, np.zeros(1))[0] <= delta:
        return 0.0
    lo, hi = 0.0, mu * mu / 2.0 + mu * math.sqrt(2.0 * math.log(1.0 / delta)) + 1.0
    while _gdp_delta_down(m, np.array([hi]))[0] > delta and math.isfinite(hi):
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if _gdp_delta_down(m, np.array([mid]))[0] > delta:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 4 * math.ulp(hi):
            break
    return lo


def gdp_delta_lower(mu: float, epsilon: float) -> float:
    """A lower bound on delta(epsilon) of mu-GDP (rounded down)."""
    if mu <= 0.0 or not math.isfinite(epsilon):
        return 0.0
    return float(_gdp_delta_down(np.array([mu]), np.array([float(epsilon)]))[0])


def gdp_tradeoff(mu: float, alphas: Any) -> np.ndarray:
    """G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu), the trade-off function of mu-GDP, rounded down.

    Dong, Roth & Su 2022, Def. 2.6 (the trade-off of N(0, 1) against N(mu, 1)).

    Example:
        >>> round(float(gdp_tradeoff(1.0, [0.5])[0]), 6)
        0.158655
    """
    from scipy.special import ndtr, ndtri

    mu = check_real(mu, "mu")
    if mu < 0:
        raise InvalidArgument("mu", f"mu={mu!r} must be >= 0")
    alphas = _array(alphas, "alphas", low=0.0, high=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = ndtr(-ndtri(alphas) - mu)
    # ndtri/ndtr carry a few ulps of relative error (ndtr' <= 0.4): step below it
    value = value * (1.0 - 64.0 * _U) - 1e-15 * (1.0 + mu)
    value = np.where(alphas <= 0.0, 1.0, value)
    return np.clip(value, 0.0, 1.0)


def gdp_mu_lower(alpha_upper: Any, beta_upper: Any) -> np.ndarray:
    """Phi^-1(1 - alpha_u) - Phi^-1(beta_u), rounded down: a test with type-I error <= alpha_u and type-II
    error <= beta_u rules out mu'-GDP for every mu' below it (since G_mu' is decreasing in mu')."""
    from scipy.special import ndtri

    a = _array(alpha_upper, "alpha_upper", low=0.0, high=1.0)
    b = _array(beta_upper, "beta_upper", low=0.0, high=1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = -ndtri(a) - ndtri(b)
    value = value - 1e-12 * (1.0 + np.abs(ndtri(np.clip(a, 1e-300, 1.0))) + np.abs(ndtri(np.clip(b, 1e-300, 1.0))))
    return np.where(np.isnan(value), -np.inf, value)


# -------------------------------------------------------------------------------- event accountants
def gaussian_mu(leaves: dict, neighbouring: str) -> float | None:
    """mu of a composition of unsampled Gaussian leaves (exactly mu-GDP: mu^2 add up, Dong-Roth-Su 2022
    Cor. 3.3), or None when some leaf is not an unsampled Gaussian. Under replace-one the sensitivity
    is doubled."""
    if not leaves:
        return None
    scale = 2.0 if neighbouring == "replace_one" else 1.0
    for leaf in leaves:
        if getattr(leaf, "kind", None) != "gaussian" or getattr(leaf, "sampling", None) is not None:
            return None
    total = 0.0
    for leaf, count in leaves.items():
        total += count * (scale * leaf.param) ** 2 if scale * leaf.param < 1e150 else math.inf
    if math.isfinite(total):
        return math.sqrt(total)
    largest = max(scale * leaf.param for leaf in leaves)  # normalised: mu^2 beyond the float range
    total = math.fsum(count * (scale * leaf.param / largest) ** 2 for leaf, count in leaves.items())
    return round_up(largest * math.sqrt(total), ulps=4 + len(leaves))


#: The profile grid ends where delta falls to this value: beyond it the lines 1 - delta - e^eps alpha only
#: matter for alpha below ~1e-8 (no audit reaches them), and reading delta there costs more (small-delta
#: read-outs); dropping lines keeps the trade-off a valid lower bound.
PROFILE_GRID_DELTA = 1e-8


def _epsilon_top(accountant: Any) -> float:
    """An epsilon beyond which the accountant's delta is negligible (PROFILE_GRID_DELTA if reachable)."""
    for target in (PROFILE_GRID_DELTA, 1e-6, 1e-4):
        value = accountant.epsilon(target)
        if math.isfinite(value):
            return max(value, 1e-3)
    return 50.0


def profile_grid(accountant: Any, points: int = PROFILE_GRID_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(epsilons, deltas): the accountant's profile (upper bounds, from its public ``delta``) on a uniform
    grid from 0 to the epsilon where delta falls to PROFILE_GRID_DELTA, plus its pure epsilon (where
    delta = 0) if finite. Cached on the accountant until its composition changes."""
    leaves = getattr(accountant, "leaves", None)
    if not isinstance(leaves, dict):
        leaves = getattr(accountant, "_leaves", None)
    key = (points, tuple(sorted((repr(k), v) for k, v in leaves.items())) if isinstance(leaves, dict) else None)
    cache = getattr(accountant, "_curve_grid", None)
    if cache is not None and key[1] is not None and cache[0] == key:
        return cache[1]
    top = _epsilon_top(accountant)
    grid = np.linspace(0.0, top, points)
    pure = getattr(accountant, "_pure_epsilon", getattr(accountant, "_pure", None))
    value = pure() if callable(pure) else pure
    extra = [float(value)] if isinstance(value, (int, float)) and math.isfinite(value) else []
    grid = np.unique(np.concatenate([grid, extra]))
    deltas = np.array([accountant.delta(float(e)) for e in grid])
    result = (grid, deltas)
    try:
        accountant._curve_grid = (key, result)
    except AttributeError:  # pragma: no cover - accountants with __slots__
        pass
    return result


def accountant_profile(accountant: Any, epsilons: Any, mu: float | None = None) -> np.ndarray:
    """delta(epsilon) at each epsilon (upper bounds): exact GDP when ``mu`` is given, else the
    accountant's ``delta``; vectorised over any array shape."""
    eps = _array(epsilons, "epsilons", low=0.0, allow_inf=True)
    if mu is not None:
        return np.asarray(gdp_delta(mu, eps), dtype=np.float64).reshape(eps.shape)
    flat = eps.ravel()
    values = np.array([0.0 if math.isinf(e) else accountant.delta(float(e)) for e in flat])
    return values.reshape(eps.shape)


def accountant_tradeoff(accountant: Any, alphas: Any, mu: float | None = None) -> np.ndarray:
    """f(alpha) the accountant's composition guarantees (lower bounds on the true trade-off function):
    exact G_mu when ``mu`` is given, else the profile-to-trade-off conversion on :func:`profile_grid`."""
    alphas = _array(alphas, "alphas", low=0.0, high=1.0)
    if mu is not None:
        return gdp_tradeoff(mu, alphas)
    if not (getattr(accountant, "leaves", None) or getattr(accountant, "_leaves", None)):
        return np.clip(1.0 - alphas, 0.0, 1.0) * (1.0 - 8 * _U)
    grid, deltas = profile_grid(accountant)
    return tradeoff_from_profile(alphas, grid, deltas)


def as_tradeoff(function: Callable[[np.ndarray], Any], alphas: np.ndarray) -> np.ndarray:
    """Evaluate a user trade-off function on an array: vectorised if it accepts arrays, else pointwise."""
    try:
        values = np.asarray(function(alphas), dtype=np.float64)
        if values.shape == alphas.shape:
            return values
    except Exception:  # noqa: BLE001 - fall back to scalar calls; their errors propagate
        pass
    return np.array([float(function(float(a))) for a in alphas.ravel()], dtype=np.float64).reshape(alphas.shape)
