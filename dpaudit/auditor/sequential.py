"""Certification of a point audit's chosen events in looks: stop on a certified violation or a futile forecast.

The events and their directions are fixed before certification (on the selection batch). Look k counts
them on the blocks of ``LookPlan.blocks(k)`` (fresh certification samples, whole seeded blocks) and
certifies every event at error a * share_k per one-sided bound (``looks.py``: all bounds of all looks hold
together with probability >= 1 - a, so the best bound over the looks made is a valid lower bound whatever
the stopping rule). The certification stops

* on a **violation**: the best bound of the look exceeds the claimed epsilon;
* for **futility**, only when asked (``futility=True``: the gate and the pytest plugin, which read the verdict
  only; a reported bound is then the bound of a smaller sample), from a look holding FUTILITY_FROM of the budget,
  and once some look has certified a positive
  bound unless the selection already judged the events far from the claim (``settled``): no event could certify
  a violation at the last look even with its final counts forecast in its favour (``looks.forecast_counts``:
  under the current trend, probability <= 10%). A trend that has certified nothing is mostly noise: a correct
  mechanism at tiny epsilon stopped there would report 0, and a small leak there is one the early looks cannot
  yet resolve;
* at the **budget**: the last look.

Each certified event reads the counted witnesses through a :class:`Tally`: one event in one direction, or a
pooled pair (an event likelier under d with one likelier under d_prime, their counts pooled over both inputs:
``certify.pooled_bound``).

A fixed-budget audit is the plan with one look (``plan_looks(..., sequential=False)``): the same blocks, the
same error, the same bound as before looks existed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .certify import epsilon_lower_bound, pooled_bound
from .looks import FUTILITY_FROM, LookPlan, forecast_counts

__all__ = ["Tally", "tallies", "LookBound", "SequentialCertification", "certify_in_looks", "best_bound"]


@dataclass(frozen=True)
class Tally:
    """The counted witnesses one certified event reads: ``forward``, the column of an event likelier under d (P is
    under d), and/or ``backward``, the column of an event likelier under d_prime; both: a pooled pair (every look
    counts both inputs on the same n samples, the equal n a pooled pair needs)."""

    forward: int | None = None
    backward: int | None = None

    @property
    def pooled(self) -> bool:
        return self.forward is not None and self.backward is not None

    def counts(self, counts_d: np.ndarray, counts_dp: np.ndarray) -> tuple[int, int]:
        """(count_p, count_q): the numerator's and the denominator's counts, summed over both parts of a pair."""
        count_p = count_q = 0
        if self.forward is not None:
            count_p, count_q = count_p + int(counts_d[self.forward]), count_q + int(counts_dp[self.forward])
        if self.backward is not None:
            count_p, count_q = count_p + int(counts_dp[self.backward]), count_q + int(counts_d[self.backward])
        return count_p, count_q

    def trials(self, n: int) -> int:
        """Trials behind the counts at ``n`` samples per input: n, or 2 n for a pooled pair."""
        return 2 * n if self.pooled else n

    def bound(self, count_p: int, count_q: int, n: int, delta: float, alpha: float) -> tuple[float, float, float]:
        """(epsilon_lower, p_lower, q_upper) from the counts at ``n`` samples per input."""
        if self.pooled:
            return pooled_bound(count_p, count_q, 2 * n, delta, alpha)
        return epsilon_lower_bound(count_p, n, count_q, n, delta, alpha)


def tallies(events: Sequence[Tally | bool]) -> list[Tally]:
    """Tallies of certified events given as tallies or as directions (``forward[i]``: event i's column, P under d)."""
    return [e if isinstance(e, Tally) else (Tally(forward=i) if e else Tally(backward=i)) for i, e in enumerate(events)]


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
    pooled: bool = False  # a pooled pair: the counts are out of 2 n (both inputs)


@dataclass(frozen=True)
class SequentialCertification:
    """What the looks found: the best bound over the looks made, the per-block counts drawn, and why it stopped."""

    best: LookBound
    per_block_d: np.ndarray  # blocks drawn x events
    per_block_dp: np.ndarray
    looks: int  # looks made
    stopped: str  # "violation", "futility" or "budget"
    n_used: int  # certification samples drawn per input


def best_bound(events: Sequence[Tally | bool], counts_d: np.ndarray, counts_dp: np.ndarray, n: int, delta: float,
               alpha: float, proof: Callable[[int, int, float], bool], look: int = 0) -> LookBound:
    """The best bound over the certified events (:func:`tallies`) from their counts at one look;
    ``proof(index, count_q, p_lower)`` says whether the exact support oracle proves epsilon = inf."""
    best = None
    for index, tally in enumerate(tallies(events)):
        count_p, count_q = tally.counts(counts_d, counts_dp)
        bound, p_low, q_high = tally.bound(count_p, count_q, n, delta, alpha)
        proven = proof(index, count_q, p_low)
        if proven:
            bound = math.inf
        if best is None or bound > best.bound:
            best = LookBound(bound, p_low, q_high, count_p, count_q, index, proven, look, n, alpha, tally.pooled)
    assert best is not None
    return best


def _futile(events: Sequence[Tally], counts_d: np.ndarray, counts_dp: np.ndarray, n: int, total: int, delta: float,
            alpha_final: float, epsilon: float) -> bool:
    """No event certifies more than ``epsilon`` at the last look (``total`` samples, error ``alpha_final``) with its
    final counts forecast in its favour: the numerator's up, the denominator's down."""
    for tally in events:
        count_p, count_q = tally.counts(counts_d, counts_dp)
        final_p = int(forecast_counts(count_p, tally.trials(n), tally.trials(total), "up"))
        final_q = int(forecast_counts(count_q, tally.trials(n), tally.trials(total), "down"))
        if tally.bound(final_p, final_q, total, delta, alpha_final)[0] > epsilon:
            return False
    return True


def certify_in_looks(plan: LookPlan, draw: Callable[[range], tuple[np.ndarray, np.ndarray]],
                     events: Sequence[Tally | bool], delta: float, alpha: float, epsilon: float,
                     proof: Callable[[int, int, float], bool], settled: bool = False,
                     futility: bool = False) -> SequentialCertification:
    """Run the looks of ``plan``: ``draw(blocks)`` returns the per-block counts (blocks x witnesses) under d and
    under d_prime of those certification blocks; ``events`` (:func:`tallies`) say how each certified event reads
    them; ``alpha`` is the error of each one-sided bound at a fixed budget, spent over the looks by ``plan.shares``.
    ``futility``: also stop for futility (else only a certified violation stops the looks before the budget);
    ``settled``: the selection judged the events far from the claim (``selection_looks.pilot_futile``), so futility
    may stop the looks before any bound is positive."""
    events = tallies(events)
    blocks_d: list[np.ndarray] = []
    blocks_dp: list[np.ndarray] = []
    width = 1 + max(max(i for i in (t.forward, t.backward) if i is not None) for t in events)
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
        found = best_bound(events, totals_d, totals_dp, n, delta, alpha * plan.shares[look], proof, look)
        if best is None or found.bound > best.bound:
            best = found
        if look == last:
            break
        if best.bound > epsilon:
            stopped = "violation"
            break
        if (futility and (best.bound > 0 or settled) and n >= FUTILITY_FROM * plan.looks[-1]
                and _futile(events, totals_d, totals_dp, n, plan.looks[-1], delta, alpha * plan.shares[-1], epsilon)):
            stopped = "futility"
            break
    assert best is not None
    return SequentialCertification(best, np.concatenate(blocks_d).reshape(-1, width), np.concatenate(blocks_dp).reshape(-1, width),
                                   look + 1, stopped, plan.looks[look])
