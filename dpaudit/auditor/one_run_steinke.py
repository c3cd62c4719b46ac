"""The one-run bound of Steinke, Nasr & Jagielski 2023 ("Privacy Auditing with One (1) Training Run",
NeurIPS 2023, Theorem 3.1): from r guesses of which v are right, among m canaries each included
independently with probability 1/2, for an (epsilon, delta)-DP training algorithm

    P[V >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,
    f(u) = P[Binomial(r, e^eps / (1 + e^eps)) >= u]

(delta = 0: V is stochastically dominated by Binomial(r, e^eps/(1+e^eps))). The lower bound is the
largest epsilon at which this p-value is <= the significance (exact binomial tails, bisection).
"""

from __future__ import annotations

import math

import numpy as np

from .._numeric import round_down

__all__ = ["one_run_p_value", "one_run_epsilon", "one_run_p_values"]


def one_run_p_values(canaries: int, guesses: int, correct: int, epsilons: np.ndarray, delta: float) -> np.ndarray:
    """:func:`one_run_p_value` at every epsilon of ``epsilons`` (vectorised)."""
    from scipy.special import expit
    from scipy.stats import binom

    epsilons = np.asarray(epsilons, dtype=np.float64)
    if correct <= 0:
        return np.ones_like(epsilons)
    p = expit(epsilons)[:, None]
    tail = binom.sf(correct - 1, guesses, p)  # (E, 1)
    if delta == 0:
        return np.minimum(1.0, tail[:, 0])
    i = np.arange(1, correct + 1)[None, :]
    worst = np.empty(epsilons.size)
    step = max(1, (1 << 22) // correct)  # bounded memory: at most ~4M binomial tails at once
    for start in range(0, epsilons.size, step):
        rows = slice(start, start + step)
        shifted = binom.sf(correct - i - 1, guesses, p[rows])  # (rows, v)
        worst[rows] = np.max((shifted - tail[rows]) / i, axis=1)
    return np.minimum(1.0, tail[:, 0] + 2.0 * canaries * delta * np.maximum(0.0, worst))


def one_run_p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """Steinke, Nasr & Jagielski 2023, Theorem 3.1: an upper bound on P[>= ``correct`` of ``guesses``
    guesses are right] for an (epsilon, delta)-DP algorithm with ``canaries`` randomised canaries,
    f(v) + 2 m delta max_{1<=i<=v} (f(v-i) - f(v)) / i, f(u) = P[Binomial(r, e^eps/(1+e^eps)) >= u]
    (the max over i > v adds nothing: f(v - i) = 1 there and (1 - f(v))/i decreases)."""
    return float(one_run_p_values(canaries, guesses, correct, np.array([float(epsilon)]), delta)[0])


def one_run_epsilon(canaries: int, guesses: int, correct: int, delta: float, significance: float) -> float:
    """The largest epsilon >= 0 at which :func:`one_run_p_value` <= ``significance``, rounded down (0 if none).

    Sound for the largest such epsilon (not only the first crossing): an (eps, delta)-DP algorithm is also
    (eps', delta)-DP for every eps' >= eps, so min_{eps' >= eps} p(eps') is a valid p-value. With delta = 0
    the p-value increases with epsilon (plain bisection); with delta > 0 it can only exceed the delta = 0
    one, so the answer lies below the pure-DP answer (closed form: a beta quantile); it is found on a grid
    of 256 points there and refined by bisection (a missed crossing between grid points only makes the
    result smaller).
    """
    if correct <= 0 or guesses <= 0:
        return 0.0

    def p(eps: float, d: float) -> float:
        return one_run_p_value(canaries, guesses, correct, eps, d)

    if p(0.0, 0.0) > significance:
        return 0.0
    # delta = 0: P[Binomial(r, p) >= v] = I_p(v, r - v + 1) (regularised incomplete beta), increasing in p,
    # so the crossing is p* = Beta(v, r - v + 1).ppf(significance), eps = logit(p*); then stepped down
    # until the exact tail confirms it (guards the ppf's last digits)
    from scipy.special import logit
    from scipy.stats import beta

    pure = float(logit(beta.ppf(significance, correct, guesses - correct + 1)))
    if not math.isfinite(pure):
        return math.inf if pure > 0 else 0.0
    for _ in range(64):
        if p(pure, 0.0) <= significance:
            break
        pure -= 1e-9 * max(1.0, abs(pure))
    else:
        return 0.0
    pure = max(0.0, pure)
    if delta == 0:
        return round_down(pure)
    grid = np.linspace(0.0, pure, 257)
    ok = one_run_p_values(canaries, guesses, correct, grid, delta) <= significance
    if not ok.any():
        return 0.0
    last = int(np.flatnonzero(ok)[-1])
    if last == grid.size - 1:
        return round_down(float(grid[-1]))
    lo, hi = float(grid[last]), float(grid[last + 1])
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if p(mid, delta) <= significance:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return round_down(lo)
