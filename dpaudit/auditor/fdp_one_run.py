"""The f-DP one-run test of Mahloujifar, Melis & Chaudhuri 2024 ("Auditing f-differential privacy in one
run", ICML 2025, arXiv:2410.22235): is a count of correct guesses possible under a claimed trade-off curve?

Setting (as in Steinke, Nasr & Jagielski 2023): m canaries, each included independently with probability
1/2; from one training run the auditor makes c' guesses (abstaining on the rest) of which c are right.
For a mechanism that is f-DP with respect to every canary (both orderings of each adjacent pair, as in
Dong, Roth & Su 2022), let B(a) = 1 - f(a) (the most probability an event can have under one input when it
has probability a under the other) and B^-1(x) = inf {a : f(a) <= 1 - x}. Run, from tau (the test's
significance),

    r = tau c / m,  h = tau (c' - c) / m,
    for i = c - 1, ..., 0:   h' = max(h, B^-1(r)),  r' = min(1, r + i / (c' - i) (h' - h)),  (r, h) = (r', h').

If r + h > c' / m at the end, the probability of >= c right guesses among c' is below tau for EVERY f-DP
mechanism (their Theorem; r and h are lower bounds on E[W 1{W >= j}] / m and E[(c' - W) 1{W >= j}] / m
for the number of right guesses W, whose sum at j = 0 is exactly c'/m). The same procedure is
jax_privacy's ``_epsilon_one_run_fdp`` (``audit_rh_with_cap`` in the paper).

Every claim tested on the same (c', c) at the same tau is covered by one error event: each rejection
bounds the true tail P[W >= c] by tau, so P[some true claim is rejected] <= P[G(W) < tau] <= tau with
G(c) = P[W >= c]. So the (epsilon, delta) bound, the mu bound and the claim's verdict hold together, and
the reported epsilon (mu) is any value verified rejected (no monotonicity of the recursion is assumed).

Rounding: every B^-1 used here is rounded down (a weaker claim, which the mechanism also satisfies), and a
rejection needs r + h to exceed c'/m by a relative 1e-9.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._numeric import round_down

__all__ = [
    "fdp_excess",
    "fdp_epsilon",
    "fdp_mu",
    "claim_inverse_power",
    "claim_rejected",
    "mu_upper_from_pure",
    "epsilon_inverse_power",
    "gdp_inverse_power",
    "REJECTION_MARGIN",
]

#: Relative margin by which r + h must exceed c'/m for a rejection (float error of the recursion).
REJECTION_MARGIN = 1e-9
_ROUND = 1.0 - 1e-12
#: Points per refinement round and rounds of the vectorised bisection for epsilon and mu.
_GRID, _ROUNDS = 16, 5

InversePower = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (r, row indices) -> B^-1(r), rounded down


def gdp_inverse_power(mu: Any) -> InversePower:
    """B^-1 of mu-GDP per row: Phi(Phi^-1(x) - mu) (= G_mu(1 - x), Dong, Roth & Su 2022), rounded down."""
    from scipy.special import ndtr, ndtri

    mu = np.atleast_1d(np.asarray(mu, dtype=np.float64))

    def inverse(r: np.ndarray, rows: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = ndtr(ndtri(np.clip(r, 0.0, 1.0)) - mu[rows])
        return np.nan_to_num(value * _ROUND - 1e-300, nan=0.0).clip(0.0, 1.0)

    return inverse


def epsilon_inverse_power(epsilon: Any, delta: float) -> InversePower:
    """B^-1 of (epsilon, delta)-DP per row: max(0, e^-eps (x - delta), 1 - delta - e^eps (1 - x)) (the
    trade-off f_{eps,delta}(a) = max(0, 1 - delta - e^eps a, e^-eps (1 - delta - a)) read at 1 - x;
    Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022, Prop. 2.5), rounded down."""
    epsilon = np.atleast_1d(np.asarray(epsilon, dtype=np.float64))

    def inverse(r: np.ndarray, rows: np.ndarray) -> np.ndarray:
        e = epsilon[rows]
        with np.errstate(over="ignore", invalid="ignore"):
            low = (r - delta) * np.exp(-e)
            high = 1.0 - delta - np.exp(e) * (1.0 - r)
        value = np.maximum(np.maximum(low, np.nan_to_num(high, nan=-np.inf)), 0.0)
        return (value * _ROUND - 4e-16).clip(0.0, 1.0)

    return inverse


def claim_inverse_power(tradeoff: Callable[[np.ndarray], np.ndarray], points: int = 20_000) -> InversePower:
    """B^-1(x) = inf {a : f(a) <= 1 - x} for a claimed trade-off function ``tradeoff`` (vectorised, a lower
    bound on f), from f tabulated once on a grid a_0 < a_1 < ...: the largest grid point a_j with
    f(a_j) > 1 - x, a lower bound on the infimum since f is non-increasing (rounded down)."""
    grid = np.unique(np.concatenate([[0.0], np.logspace(-14, 0, points), np.linspace(0.0, 1.0, points // 4)]))
    values = np.minimum.accumulate(np.asarray(tradeoff(grid), dtype=np.float64).clip(0.0, 1.0))
    descending = -values  # non-decreasing

    def inverse(r: np.ndarray, rows: np.ndarray) -> np.ndarray:
        # last j with f(a_j) > 1 - r  <=>  -f(a_j) < r - 1
        j = np.searchsorted(descending, np.asarray(r, dtype=np.float64) - 1.0, side="left") - 1
        return np.where(j >= 0, grid[np.clip(j, 0, None)], 0.0)

    return inverse


def fdp_excess(canaries: int, guesses: Any, correct: Any, significance: float, inverse: InversePower) -> np.ndarray:
    """r + h - c'/m at the end of the recursion, per row (rows: guesses c', correct c, and the parameter
    ``inverse`` reads by row index); > REJECTION_MARGIN * c'/m means the claim is rejected at level
    ``significance``. Vectorised over rows; a row stops as soon as h stops changing (then nothing changes)."""
    guesses = np.atleast_1d(np.asarray(guesses, dtype=np.float64))
    correct = np.atleast_1d(np.asarray(correct, dtype=np.int64))
    r = significance * correct / canaries
    h = significance * (guesses - correct) / canaries
    live = np.flatnonzero(correct > 0)
    step = 0
    while live.size:
        i = correct[live] - 1 - step
        keep = i >= 0
        live, i = live[keep], i[keep].astype(np.float64)
        if not live.size:
            break
        h_old = h[live]
        h_new = np.maximum(h_old, inverse(r[live], live))
        r[live] = np.minimum(r[live] + i / (guesses[live] - i) * (h_new - h_old), 1.0)
        h[live] = h_new
        live = live[h_new > h_old]
        step += 1
    return r + h - guesses / canaries


def _rejected(canaries: int, guesses: np.ndarray, correct: np.ndarray, significance: float,
              inverse: InversePower) -> np.ndarray:
    excess = fdp_excess(canaries, guesses, correct, significance, inverse)
    return excess > REJECTION_MARGIN * guesses / canaries


def _largest_rejected(canaries: int, guesses: np.ndarray, correct: np.ndarray, significance: float,
                      upper: np.ndarray, make_inverse: Callable[[np.ndarray], InversePower]) -> np.ndarray:
    """Per candidate, the largest parameter in [0, upper] verified rejected (0 if none): a grid of _GRID
    points per candidate, refined _ROUNDS times between the last rejected and the next point (vectorised
    over candidates x grid points)."""
    n = guesses.size
    lo = np.zeros(n)
    hi = np.asarray(upper, dtype=np.float64).copy()
    best = np.zeros(n)
    for _ in range(_ROUNDS):
        live = np.flatnonzero(hi > lo * (1.0 + 1e-7) + 1e-9)
        if not live.size:
            break
        fractions = np.arange(1, _GRID + 1) / _GRID
        params = lo[live, None] + (hi[live] - lo[live])[:, None] * fractions[None, :]
        rows = np.repeat(live, _GRID)
        ok = _rejected(canaries, guesses[rows], correct[rows], significance, make_inverse(params.ravel()))
        ok = ok.reshape(live.size, _GRID)
        for k, cand in enumerate(live):
            hits = np.flatnonzero(ok[k])
            if hits.size:
                top = int(hits[-1])
                best[cand] = max(best[cand], float(params[k, top]))
                lo[cand] = float(params[k, top])
                hi[cand] = float(params[k, top + 1]) if top + 1 < _GRID else float(params[k, top])
            else:
                hi[cand] = float(params[k, 0])
    return best


def fdp_epsilon(canaries: int, guesses: Any, correct: Any, delta: float, significance: float, upper: Any) -> np.ndarray:
    """Per candidate (c', c): the largest epsilon (found to ~1e-6 relative) at which (epsilon, delta)-DP is
    rejected by the f-DP recursion at ``significance``, rounded down; ``upper`` bounds the search (the
    Steinke et al. pure-DP bound at the same significance is one: randomized-response canaries are
    epsilon-DP and make the guess count exactly Binomial, so no valid test rejects beyond it)."""
    guesses = np.atleast_1d(np.asarray(guesses, dtype=np.float64))
    correct = np.atleast_1d(np.asarray(correct, dtype=np.int64))
    upper = np.atleast_1d(np.asarray(upper, dtype=np.float64))
    upper = np.where(np.isfinite(upper), upper, 50.0)
    found = _largest_rejected(canaries, guesses, correct, significance, upper,
                              lambda params: epsilon_inverse_power(params, delta))
    return np.array([round_down(float(v)) if v > 0 else 0.0 for v in found])


def fdp_mu(canaries: int, guesses: Any, correct: Any, significance: float, upper: Any) -> np.ndarray:
    """Per candidate: the largest mu at which mu-GDP is rejected by the f-DP recursion, rounded down;
    ``upper`` bounds the search (2 Phi^-1(p*) with p* the pure-DP bound's e^eps/(1 + e^eps) is one: the
    sign test on one Gaussian canary is right with probability Phi(mu/2), again an exact Binomial)."""
    guesses = np.atleast_1d(np.asarray(guesses, dtype=np.float64))
    correct = np.atleast_1d(np.asarray(correct, dtype=np.int64))
    upper = np.atleast_1d(np.asarray(upper, dtype=np.float64))
    upper = np.where(np.isfinite(upper), upper, 40.0)
    found = _largest_rejected(canaries, guesses, correct, significance, upper, gdp_inverse_power)
    return np.array([round_down(float(v)) if v > 0 else 0.0 for v in found])


def mu_upper_from_pure(pure_epsilon: Any) -> np.ndarray:
    """2 Phi^-1(e^eps / (1 + e^eps)): no valid test rejects mu-GDP above it (see :func:`fdp_mu`)."""
    from scipy.special import expit, ndtri

    eps = np.atleast_1d(np.asarray(pure_epsilon, dtype=np.float64))
    with np.errstate(divide="ignore"):
        value = 2.0 * ndtri(expit(eps))
    return np.where(np.isfinite(value), value * (1.0 + 1e-9) + 1e-9, 40.0)


def claim_rejected(canaries: int, guesses: Any, correct: Any, significance: float, inverse: InversePower) -> np.ndarray:
    """Per candidate: is the claim whose B^-1 is ``inverse`` rejected at ``significance``?"""
    guesses = np.atleast_1d(np.asarray(guesses, dtype=np.float64))
    correct = np.atleast_1d(np.asarray(correct, dtype=np.int64))
    return _rejected(canaries, guesses, correct, significance, inverse)
