"""Exact optimal adaptive composition of epsilon-bounded-range mechanisms (e.g. exponential mechanisms).

Dong, Durfee & Rogers (2020, Sec. 3-4): the privacy-loss pair of an eps-BR mechanism is, for some t in
[0, 1], a post-processing of generalized randomized response RR_t, whose loss is (1 - t) eps with P-mass
p_t = (1 - e^{-t eps}) / (1 - e^{-eps}) and -t eps otherwise. In an adaptive composition t may depend on
everything released so far, and the hockey-stick divergence E_P[(1 - e^{eps_g - L})_+] depends on the
history only through the loss so far (a randomised adversary is a mixture of deterministic ones, which
cannot do better than the best of them). So the optimal delta of k adaptively composed eps-BR mechanisms
is the value of a k-step game on the remaining budget x:

    V_0(x) = (1 - e^x)_+,    V_j(x) = sup_{t in [0, 1]} p_t V_{j-1}(x - (1 - t) eps) + (1 - p_t) V_{j-1}(x + t eps),

    delta_opt(eps_g) = V_k(eps_g)   (both adjacency directions alike: swapping P and Q maps t to 1 - t).

V_j(x) = 1 - e^x for x <= -j eps and 0 for x >= j eps. In between it is computed on the grid x = i h,
h = eps / E, with both sides certified:

* **lower bound**: the adversary restricted to t in {m / E}: its losses stay on the grid, so the
  recursion is exact there (a restricted adversary is an actual one);
* **upper bound**: for t in [m/E, (m+1)/E] each loss atom of RR_t is split onto the two grid points
  around it keeping its P- and Q-mass ("connect the dots"). That never lowers the continuation value,
  because V_{j-1}(x + ln y) is convex in y = e^{-loss} (V_j(ln w) is a supremum of expectations of
  (1 - w e^{-S})_+, convex in w). Both atoms split with the same weight theta, and with
  z = e^{(t - m/E) eps} in [1, e^h], theta is linear in z and p_t affine in 1/z, so the split pair's value
  is alpha + beta z + gamma / z, maximised exactly (endpoints, and z* = sqrt(gamma / beta) when
  beta, gamma < 0). Between grid points, delta(eps) lies below the chord in w = e^eps (convexity).

Both errors are second order in h per step (the split) or vanish (the grid restriction at a smooth
maximum), so a few dozen cells per eps give an interval far narrower than any other accountant's gap.
Float error: every step is a nonnegative combination (a few ulps relative); the upper end is inflated,
the lower end deflated, by 32 k ulps. Time and memory: O(k^2 E^2) and O(k E); compositions beyond
:data:`MAX_WORK` cell-updates are refused (the PLD accountant then uses its dominating pair).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .._numeric import round_down, round_up
from .._validation import check_delta, check_epsilon, check_positive_int

__all__ = ["BoundedRangeComposition", "bounded_range_composition", "bounded_range_cells", "MAX_WORK", "DEFAULT_CELLS"]

#: Largest k^2 E^2 (cell updates of the game, each ~25 flops) computed; about a second here.
MAX_WORK = 2.5e7
#: Grid cells per eps (E) when not given: as many as MAX_WORK allows, at most this many.
DEFAULT_CELLS = 64
_MIN_CELLS = 4
_U = 2.0**-53


@dataclass(frozen=True, eq=False)
class BoundedRangeComposition:
    """Optimal delta(eps) of ``count`` adaptively composed ``mechanism_epsilon``-BR mechanisms on the grid
    eps_i = i * step (i = 0..count * cells): ``upper`` and ``lower`` bracket the exact value."""

    mechanism_epsilon: float
    count: int
    cells: int
    step: float
    upper: np.ndarray
    lower: np.ndarray

    def delta(self, target_epsilon: float) -> float:
        """Upper bound on the optimal delta at ``target_epsilon`` (chord of the convex curve in e^eps)."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        i = target_epsilon / self.step
        if i >= self.upper.size - 1:
            return 0.0
        lo = int(math.floor(i))
        w0, w1, w = math.exp(lo * self.step), math.exp((lo + 1) * self.step), math.exp(target_epsilon)
        share = min(1.0, max(0.0, (w - w0) / (w1 - w0)))
        u0, u1 = float(self.upper[lo]), float(self.upper[lo + 1])
        return min(1.0, round_up(max(u0 + share * (u1 - u0), u1), ulps=4))

    def delta_lower(self, target_epsilon: float) -> float:
        """Lower bound on the optimal delta at ``target_epsilon`` (the curve is non-increasing)."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        i = math.ceil(target_epsilon / self.step - 1e-12)
        return 0.0 if i >= self.lower.size else round_down(float(self.lower[i]))

    def epsilon(self, target_delta: float) -> float:
        """Upper bound on the smallest eps with delta_opt(eps) <= ``target_delta``."""
        target_delta = check_delta(target_delta, "target_delta")
        below = np.flatnonzero(self.upper <= target_delta)
        if below.size == 0:
            return math.inf
        hi = int(below[0])
        if hi == 0:
            return 0.0
        lo = hi - 1  # upper[lo] > target >= upper[hi]: solve the chord in w = e^eps
        w0, w1 = math.exp(lo * self.step), math.exp(hi * self.step)
        u0, u1 = float(self.upper[lo]), float(self.upper[hi])
        share = (u0 - target_delta) / (u0 - u1)
        return min(hi * self.step, round_up(math.log(w0 + share * (w1 - w0)), ulps=4))

    def epsilon_lower(self, target_delta: float) -> float:
        """Lower bound on the smallest eps with delta_opt(eps) <= ``target_delta``."""
        target_delta = check_delta(target_delta, "target_delta")
        above = np.flatnonzero(self.lower > target_delta)
        if above.size == 0:
            return 0.0
        i = int(above[-1])
        value = i * self.step
        if 0 < i < self.lower.size - 1:  # beyond w_i the convex curve stays above the line through the
            w_prev, w_i = math.exp((i - 1) * self.step), math.exp(value)  # lower end at w_i with the chord
            slope = float(self.lower[i] - self.upper[i - 1]) / (w_i - w_prev)  # slope (i-1, i), which the
            if slope < 0:  # subgradient at w_i is at least: it stays above the target up to this w
                w = w_i + (float(self.lower[i]) - target_delta) / -slope
                value = min((i + 1) * self.step, math.log(w))
        return round_down(value)


def bounded_range_composition(epsilon: float, count: int, cells: int | None = None) -> BoundedRangeComposition:
    """The optimal adaptive composition of ``count`` ``epsilon``-BR mechanisms (module docstring), on a
    grid of ``cells`` cells per epsilon (default: up to :data:`DEFAULT_CELLS`, within :data:`MAX_WORK`).

    Raises ValueError when count^2 cells^2 exceeds MAX_WORK (or fewer than 4 cells would fit)."""
    epsilon = check_epsilon(epsilon, "epsilon")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ValueError(f"epsilon must be a positive finite number, got {epsilon!r}")
    count = check_positive_int(count, "count")
    if cells is None:
        cells = bounded_range_cells(epsilon, count)
        if cells is None:
            raise ValueError(f"count={count} bounded-range mechanisms exceed the exact composition's limit "
                             f"(count <= {int(math.sqrt(MAX_WORK) / _MIN_CELLS)} at {_MIN_CELLS} cells per epsilon)")
    else:
        cells = check_positive_int(cells, "cells")
        if (count * cells) ** 2 > MAX_WORK:
            raise ValueError(f"count * cells = {count * cells} exceeds the exact composition's limit "
                             f"sqrt(MAX_WORK) = {int(math.sqrt(MAX_WORK))}")
    return _compose(float(epsilon), int(count), int(cells))


def bounded_range_cells(epsilon: float, count: int, interval: float | None = None) -> int | None:
    """Cells per epsilon for the exact composition: ``epsilon / interval`` rounded up (at least 4) when a
    grid interval is asked for, else :data:`DEFAULT_CELLS`; fewer if :data:`MAX_WORK` demands it; None
    when not even 4 fit (too many mechanisms for the exact game)."""
    cells = DEFAULT_CELLS if interval is None else max(_MIN_CELLS, math.ceil(epsilon / interval))
    cells = min(cells, int(math.sqrt(MAX_WORK) / count))
    return cells if cells >= _MIN_CELLS else None


@lru_cache(maxsize=32)
def _compose(epsilon: float, count: int, cells: int) -> BoundedRangeComposition:
    E, k = cells, count
    h = epsilon / E
    lo = -(k + 1) * E  # array position of grid index i is i - lo
    index = np.arange(lo, (k + 1) * E + 1)
    x = index * h
    start = -np.expm1(np.minimum(x, 0.0))  # V_0 = (1 - e^x)_+
    upper, lower = start.copy(), start.copy()
    t = np.arange(E + 1) / E
    p = -np.expm1(-t * epsilon) / -np.expm1(-epsilon)  # p_t at the grid points
    r = np.exp(-t * epsilon)
    c = math.exp(-h)
    K = 1.0 / -math.expm1(-h)
    P0 = 1.0 / -math.expm1(-epsilon)
    z_top = math.exp(h)
    for j in range(1, k + 1):
        a, b = -j * E + 1 - lo, j * E - lo  # positions of the indices -jE < i < jE
        new_upper = _upper_step(upper, a, b, E, p, r, c, K, P0, z_top)
        new_lower = _lower_step(lower, a, b, E, p)
        upper[a:b], lower[a:b] = new_upper, new_lower
        upper[:a], lower[:a] = start[:a], start[:a]  # V_j = 1 - e^x for x <= -j eps (exact)
        upper[b:], lower[b:] = 0.0, 0.0  # and 0 for x >= j eps
    margin = 32.0 * k * _U
    zero = -lo
    up = np.minimum(1.0, upper[zero:] * (1.0 + margin))
    low = np.maximum(0.0, lower[zero:] * (1.0 - margin))
    up.setflags(write=False)
    low.setflags(write=False)
    return BoundedRangeComposition(epsilon, k, E, h, up, low)


def _lower_step(v: np.ndarray, a: int, b: int, E: int, p: np.ndarray) -> np.ndarray:
    """max over grid t = m/E of p_m V(x - (E - m) h) + (1 - p_m) V(x + m h) at positions a..b-1."""
    best = np.zeros(b - a)
    for m in range(E + 1):
        high, low = v[a - E + m:b - E + m], v[a + m:b + m]
        np.maximum(best, p[m] * high + (1.0 - p[m]) * low, out=best)
    return best


def _upper_step(v: np.ndarray, a: int, b: int, E: int, p: np.ndarray, r: np.ndarray, c: float, K: float,
                P0: float, z_top: float) -> np.ndarray:
    """max over t in [0, 1] of the value of RR_t split onto the grid (module docstring) at positions a..b-1."""
    best = np.zeros(b - a)
    for m in range(E):
        va = v[a - E + m:b - E + m]  # V(x - (E - m) h): the high loss split's upper atom
        va1 = v[a - E + m + 1:b - E + m + 1]  # V(x - (E - m - 1) h)
        vb = v[a + m:b + m]  # V(x + m h): the low loss split's upper atom
        vb1 = v[a + m + 1:b + m + 1]  # V(x + (m + 1) h)
        np.maximum(best, p[m] * va + (1.0 - p[m]) * vb, out=best)  # z = 1 (t = m/E)
        np.maximum(best, p[m + 1] * va1 + (1.0 - p[m + 1]) * vb1, out=best)  # z = e^h (t = (m+1)/E)
        d_high, d_low = va - va1, vb - vb1
        spread = d_high - d_low
        beta = -K * c * (d_low + P0 * spread)
        gamma = -P0 * r[m] * (va1 - vb1 + K * spread)
        with np.errstate(invalid="ignore", divide="ignore"):
            z = np.sqrt(gamma / beta)
        inside = (beta < 0) & (gamma < 0) & (z > 1.0) & (z < z_top)
        if inside.any():
            zi = z[inside]
            theta = K * (1.0 - c * zi)
            pz = P0 * (1.0 - r[m] / zi)
            value = pz * (va1[inside] + theta * d_high[inside]) + (1.0 - pz) * (vb1[inside] + theta * d_low[inside])
            best[inside] = np.maximum(best[inside], value)
    return best
