"""Certification of a point audit's chosen events in looks: stop on a certified violation or a futile forecast.

The events and their directions are fixed before certification (on the selection batch). Look k counts
them on the blocks of ``LookPlan.blocks(k)`` (fresh certification samples, whole seeded blocks) and
certifies every event at error a * share_k per one-sided bound (``looks.py``: all bounds of all looks hold
together with probability >= 1 - a, so the best bound over the looks made is a valid lower bound whatever
the stopping rule). The certification stops

* on a **violation**: the best bound of the look exceeds the claimed epsilon;
* for **futility** (from a look holding FUTILITY_FROM of the budget): no event could certify a violation at the last look even with its final counts forecast
  in its favour (``looks.forecast_counts``: under the current trend, probability <= 10%);
* at the **budget**: the last look.

A fixed-budget audit is the plan with one look (``plan_looks(..., sequential=False)``): the same blocks, the
same error, the same bound as before looks existed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .certify import epsilon_lower_bound
from .looks import FUTILITY_FROM, LookPlan, forecast_counts

__all__ = ["LookBound", "SequentialCertification", "certify_in_looks", "best_bound"]


@dataclass(frozen=True)
class LookBound:
    """The best certified event at one look: its bound, the Clopper-Pearson ends, its counts and index."""

    bound: float
    p_lower: float
    q_upper: float
    count_p: int
    count_q: int
    index: int
    proven: bool  # epsilon = inf by the mechanism's exact support oracle
    look: int
    n: int  # certification samples per input behind the counts
    alpha: float  # the error of each one-sided bound at this look


@dataclass(frozen=True)
class SequentialCertification:
    """What the looks found: the best bound over the looks made, the per-block counts drawn, and why it stopped."""

    best: LookBound
    per_block_d: np.ndarray  # blocks drawn x events
    per_block_dp: np.ndarray
    looks: int  # looks made
    stopped: str  # "violation", "futility" or "budget"
    n_used: int  # certification samples drawn per input


def best_bound(forward: Sequence[bool], counts_d: np.ndarray, counts_dp: np.ndarray, n: int, delta: float, alpha: float,
               proof: Callable[[int, int, float], bool], look: int = 0) -> LookBound:
    """The best bound over the certified events (``forward[i]``: P is under d) from their counts at one look;
    ``proof(index, count_q, p_lower)`` says whether the exact support oracle proves epsilon = inf."""
    best = None
    for index, is_forward in enumerate(forward):
        count_p, count_q = (counts_d[index], counts_dp[index]) if is_forward else (counts_dp[index], counts_d[index])
        bound, p_low, q_high = epsilon_lower_bound(int(count_p), n, int(count_q), n, delta, alpha)
        proven = proof(index, int(count_q), p_low)
        if proven:
            bound = math.inf
        if best is None or bound > best.bound:
            best = LookBound(bound, p_low, q_high, int(count_p), int(count_q), index, proven, look, n, alpha)
    assert best is not None
    return best


def _futile(forward: Sequence[bool], counts_d: np.ndarray, counts_dp: np.ndarray, n: int, total: int, delta: float,
            alpha_final: float, epsilon: float) -> bool:
    """No event certifies more than ``epsilon`` at the last look (``total`` samples, error ``alpha_final``) with its
    final counts forecast in its favour: the numerator's up, the denominator's down."""
    for index, is_forward in enumerate(forward):
        count_p, count_q = (counts_d[index], counts_dp[index]) if is_forward else (counts_dp[index], counts_d[index])
        final_p = int(forecast_counts(count_p, n, total, "up"))
        final_q = int(forecast_counts(count_q, n, total, "down"))
        if epsilon_lower_bound(final_p, total, final_q, total, delta, alpha_final)[0] > epsilon:
            return False
    return True


def certify_in_looks(plan: LookPlan, draw: Callable[[range], tuple[np.ndarray, np.ndarray]], forward: Sequence[bool],
                     delta: float, alpha: float, epsilon: float, proof: Callable[[int, int, float], bool]
                     ) -> SequentialCertification:
    """Run the looks of ``plan``: ``draw(blocks)`` returns the per-block counts (blocks x events) under d and
    under d_prime of those certification blocks; ``alpha`` is the error of each one-sided bound at a fixed
    budget, spent over the looks by ``plan.shares``."""
    blocks_d: list[np.ndarray] = []
    blocks_dp: list[np.ndarray] = []
    width = len(forward)
    totals_d, totals_dp = np.zeros(width, dtype=np.int64), np.zeros(width, dtype=np.int64)
    best: LookBound | None = None
    stopped, last = "budget", len(plan.looks) - 1
    for look in range(len(plan.looks)):
        under_d, under_dp = draw(plan.blocks(look))
        blocks_d.append(under_d)
        blocks_dp.append(under_dp)
        totals_d = totals_d + under_d.sum(axis=0)
        totals_dp = totals_dp + under_dp.sum(axis=0)
        n = plan.looks[look]
        found = best_bound(forward, totals_d, totals_dp, n, delta, alpha * plan.shares[look], proof, look)
        if best is None or found.bound > best.bound:
            best = found
        if look == last:
            break
        if best.bound > epsilon:
            stopped = "violation"
            break
        if n >= FUTILITY_FROM * plan.looks[-1] and _futile(forward, totals_d, totals_dp, n, plan.looks[-1], delta, alpha * plan.shares[-1], epsilon):
            stopped = "futility"
            break
    assert best is not None
    return SequentialCertification(best, np.concatenate(blocks_d).reshape(-1, width), np.concatenate(blocks_dp).reshape(-1, width),
                                   look + 1, stopped, plan.looks[look])
