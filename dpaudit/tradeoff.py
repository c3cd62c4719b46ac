"""Privacy profiles and trade-off functions of (epsilon, delta) claims, and the trade-off lower bound of a
profile read on a grid (Dong, Roth & Su 2022, Prop. 2.5 and 2.12; Kairouz, Oh & Viswanath 2015).

Below the accountants: :class:`~dpaudit.guarantee.Guarantee` and :mod:`dpaudit.accountant.curves` both use
it. Profiles are rounded up, trade-off values down.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .errors import InvalidArgument, InvalidArgumentType

__all__ = ["guarantee_profile", "guarantee_tradeoff", "tradeoff_from_profile", "ProfileTradeoff"]

_U = 2.0**-53


def _array(values: Any, name: str, *, low: float | None = None, high: float | None = None,
           allow_inf: bool = False) -> np.ndarray:
    """A real array (any shape) with NaN refused and entries checked against [low, high]."""
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentType(name, f"{name}={values!r} must be a number or an array of numbers")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(name, f"{name} must be a number or a rectangular array of numbers") from exc
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain real numbers, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if np.isnan(array).any():
        raise InvalidArgument(name, f"{name} contains nan")
    if not allow_inf and np.isinf(array).any():
        index = int(np.argmax(np.isinf(array).ravel()))
        raise InvalidArgument(name, f"{name}={float(array.ravel()[index])!r} must be finite")
    if low is not None and (array < low).any():
        index = int(np.argmax((array < low).ravel()))
        raise InvalidArgument(name, f"{name}={float(array.ravel()[index])!r} must be >= {low:g}")
    if high is not None and (array > high).any():
        index = int(np.argmax((array > high).ravel()))
        raise InvalidArgument(name, f"{name}={float(array.ravel()[index])!r} must be <= {high:g}")
    return array




def guarantee_profile(epsilon: float, delta: float, epsilons: Any) -> np.ndarray:
    """The privacy profile an (epsilon, delta)-DP claim allows: delta(e) = delta for e >= epsilon and
    delta + (1 - delta)(e^epsilon - e^e) / (1 + e^epsilon) below (the profile of its dominating pair,
    Kairouz, Oh & Viswanath 2015), rounded up."""
    eps_grid = _array(epsilons, "epsilons", low=0.0, allow_inf=True)
    if math.isinf(epsilon):
        return np.where(np.isinf(eps_grid), delta, 1.0) if delta < 1 else np.ones_like(eps_grid)
    with np.errstate(over="ignore"):
        gap = -np.expm1(np.minimum(eps_grid - epsilon, 0.0)) / (1.0 + math.exp(-epsilon))
    value = delta + (1.0 - delta) * gap
    value = np.where(eps_grid >= epsilon, delta, value * (1.0 + 8 * _U) + 4 * _U)
    return np.clip(value, 0.0, 1.0)


def guarantee_tradeoff(epsilon: float, delta: float, alphas: Any) -> np.ndarray:
    """f_{eps,delta}(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha)): the trade-off
    function of (epsilon, delta)-DP (Dong, Roth & Su 2022, Prop. 2.5; Kairouz, Oh & Viswanath 2015),
    rounded down."""
    alphas = _array(alphas, "alphas", low=0.0, high=1.0)
    return tradeoff_from_profile(alphas, np.array([epsilon]), np.array([delta]))


def _upper_envelope(intercepts: np.ndarray, slopes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lines c + s x that are on top somewhere (convex-hull trick): (intercepts, slopes, breakpoints),
    line k being the maximum for x between breakpoints[k-1] and breakpoints[k]."""
    order = np.lexsort((intercepts, slopes))  # slopes ascending, then intercepts ascending
    hull_c: list[float] = []
    hull_s: list[float] = []
    for j in order:
        c, s = float(intercepts[j]), float(slopes[j])
        if hull_s and hull_s[-1] == s:  # same slope: the later one has the larger intercept
            hull_c.pop()
            hull_s.pop()
        while len(hull_s) >= 2:
            # the last line is useless if the new one overtakes the one before it no later than it does
            c1, s1, c2, s2 = hull_c[-2], hull_s[-2], hull_c[-1], hull_s[-1]
            if (c1 - c) * (s2 - s1) <= (c1 - c2) * (s - s1):
                hull_c.pop()
                hull_s.pop()
            else:
                break
        hull_c.append(c)
        hull_s.append(s)
    c_arr, s_arr = np.array(hull_c), np.array(hull_s)
    breaks = (c_arr[:-1] - c_arr[1:]) / (s_arr[1:] - s_arr[:-1])
    return c_arr, s_arr, breaks


class ProfileTradeoff:
    """The trade-off lower bound of a profile on a grid, max over the grid of 1 - delta - e^eps alpha and
    e^-eps (1 - delta - alpha), and 0 (Dong, Roth & Su 2022, Prop. 2.12): the upper envelope of those
    lines, kept once and evaluated by binary search (exact maximum; rounded down)."""

    def __init__(self, epsilons: Any, deltas: Any) -> None:
        eps = np.asarray(epsilons, dtype=np.float64).ravel()
        dels = np.asarray(deltas, dtype=np.float64).ravel()
        finite = np.isfinite(eps)
        eps, dels = eps[finite], dels[finite]
        with np.errstate(over="ignore"):
            up, down = np.exp(eps), np.exp(-eps)
        keep = np.isfinite(up)
        intercepts = np.concatenate([1.0 - dels[keep], down * (1.0 - dels), [0.0]])
        slopes = np.concatenate([-up[keep], -down, [0.0]])
        self.intercepts, self.slopes, self.breaks = _upper_envelope(intercepts, slopes)

    def __call__(self, alphas: Any) -> np.ndarray:
        x = np.asarray(alphas, dtype=np.float64)
        k = np.searchsorted(self.breaks, x)
        c, s = self.intercepts[k], self.slopes[k]
        value = c + s * x
        value = value - 8 * _U * (2.0 + np.abs(s) * x)  # float error of 1 - delta - e^eps alpha and friends
        return np.clip(value, 0.0, 1.0)


def tradeoff_from_profile(alphas: Any, epsilons: Any, deltas: Any) -> np.ndarray:
    """Lower bound on the trade-off function of any mechanism whose profile (both orderings) is at most
    ``deltas`` at ``epsilons``: max over the grid of 1 - delta - e^eps alpha and e^-eps (1 - delta - alpha),
    and 0 (Dong, Roth & Su 2022, Prop. 2.12), rounded down; vectorised (see :class:`ProfileTradeoff`)."""
    return ProfileTradeoff(epsilons, deltas)(alphas)
