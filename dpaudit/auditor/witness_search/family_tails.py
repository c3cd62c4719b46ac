"""Witness family: tail half-lines for (epsilon, delta) claims, from the whole streamed selection budget.

For an (epsilon, delta) claim the events that certify the most are in the tails: a half-line S = {y >= t}
with P[M(d) in S] = p and P[M(d') in S] = q certifies ln((p - delta) / q), best where p is a small
multiple of delta (for the analytic Gaussian at delta = 1e-5, p ~ 1e-4 .. 1e-3). The selection batch the
other families see is capped (``audit.MAX_SELECTION`` rows per input, kept whole in memory), too few to
place such a threshold well. For delta > 0 the audit therefore streams the rest of the selection budget
(``selection_fraction`` of the samples) block by block (:class:`TailTask`) and keeps per block, column and
end only the TAIL_KEEP most extreme values (:func:`summarise`): memory is O(blocks x columns x TAIL_KEEP),
independent of the sample count. Counts of {y <= t} are exact for every t below the smallest per-block cut
(and symmetrically for {y >= t}), so every kept value is a threshold whose selection counts are exact over
the whole streamed budget. :func:`tail_candidates` ranks every such threshold by the delta-adjusted bound
it is predicted to certify (``prediction.predicted_bound``), each direction and end, beside the threshold a
fitted tail model prefers (``tail_fit.fitted_choice``); the chosen events are certified on fresh samples
like every other candidate and enter the same confidence split. The family reads the streamed summaries
from the batch (``SelectionBatch.streamed``) and searches nothing when there are none.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..outcomes import shape_outcome
from ..sampling import PHASE_SELECT, block_label, draw_block
from ..witness import Column, ScoreRegion
from .batch import SelectionBatch
from .candidate import Candidate
from .prediction import predicted_bound
from .tail_fit import fitted_choice

__all__ = ["StreamedTails", "TAIL_KEEP", "MAX_TAIL_COLUMNS", "STREAM_BLOCK_OFFSET", "Tails", "summarise", "merge",
           "tail_candidates", "TailTask", "stream_size"]


TAIL_KEEP = 4096  # values kept per block, column and end (6% of a full block)
MAX_TAIL_COLUMNS = 16
STREAM_BLOCK_OFFSET = 1 << 20  # block indices of the streamed selection blocks: streams independent of the batch's


class StreamedTails:
    """Tail half-lines over the batch and the streamed selection blocks (only when the audit streamed some)."""

    name = "tail half-lines"
    costly = False

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        if batch.streamed is None:
            return []
        streamed_a, streamed_b = batch.streamed
        keep = max(TAIL_KEEP, batch.a.shape[0] // 16)  # the batch's tails as deep as a streamed block's
        return tail_candidates(merge([summarise(batch.a, keep)] + list(streamed_a)),
                               merge([summarise(batch.b, keep)] + list(streamed_b)), batch.width,
                               n_certify=batch.n_certify, z_certify=batch.z_certify, delta=batch.delta)


@dataclass(frozen=True)
class Tails:
    """Per column j, the kept smallest values ``low[j]`` (sorted; the count of values <= t among all rows is
    exact for t < ``low_cut[j]``) and the kept largest values ``high[j]`` (sorted; counts of values >= t
    exact for t > ``high_cut[j]``), over ``rows`` summarised rows. NaN values are in no tail."""

    low: tuple[np.ndarray, ...]
    low_cut: np.ndarray
    high: tuple[np.ndarray, ...]
    high_cut: np.ndarray
    rows: int


def summarise(outputs: np.ndarray, keep: int = TAIL_KEEP) -> Tails:
    """The tails of one block of canonical outputs (first MAX_TAIL_COLUMNS columns)."""
    low, high, low_cut, high_cut = [], [], [], []
    for j in range(min(outputs.shape[1], MAX_TAIL_COLUMNS)):
        column = outputs[:, j]
        column = column[~np.isnan(column)]
        if column.size <= keep:  # every value kept: exact everywhere
            ordered = np.sort(column)
            low.append(ordered)
            high.append(ordered)
            low_cut.append(math.inf)
            high_cut.append(-math.inf)
            continue
        part = np.partition(column, (keep, column.size - keep - 1))
        low.append(np.sort(part[:keep]))
        low_cut.append(float(part[keep]))  # every value < cut is among the kept ones
        high.append(np.sort(part[column.size - keep:]))
        high_cut.append(float(part[column.size - keep - 1]))
    return Tails(tuple(low), np.array(low_cut), tuple(high), np.array(high_cut), int(outputs.shape[0]))


def merge(parts: Sequence[Tails]) -> Tails:
    """The tails of the union of the summarised blocks (values beyond the exact range dropped)."""
    width = min(len(p.low) for p in parts)
    low_cut = np.array([min(p.low_cut[j] for p in parts) for j in range(width)])
    high_cut = np.array([max(p.high_cut[j] for p in parts) for j in range(width)])
    low, high = [], []
    for j in range(width):
        values = np.sort(np.concatenate([p.low[j] for p in parts]))
        low.append(values[values < low_cut[j]])
        values = np.sort(np.concatenate([p.high[j] for p in parts]))
        high.append(values[values > high_cut[j]])
    return Tails(tuple(low), low_cut, tuple(high), high_cut, sum(p.rows for p in parts))


def tail_candidates(tails_a: Tails, tails_b: Tails, width: int, *, n_certify: int, z_certify: float,
                    delta: float) -> list[Candidate]:
    """Per column, end (y <= t, y >= t) and direction, the half-line whose exact selection counts over
    the whole streamed budget predict the best certified bound ln((p_lo - delta) / q_hi)."""
    n = min(tails_a.rows, tails_b.rows)
    candidates: list[Candidate] = []
    for j in range(min(len(tails_a.low), len(tails_b.low))):
        ends = []
        la, lb = tails_a.low[j], tails_b.low[j]
        grid = np.unique(np.concatenate([la, lb]))
        grid = grid[(grid < min(tails_a.low_cut[j], tails_b.low_cut[j])) & np.isfinite(grid)]
        ends.append((grid, np.searchsorted(la, grid, "right"), np.searchsorted(lb, grid, "right"), True))
        ha, hb = tails_a.high[j], tails_b.high[j]
        grid = np.unique(np.concatenate([ha, hb]))
        grid = grid[(grid > max(tails_a.high_cut[j], tails_b.high_cut[j])) & np.isfinite(grid)]
        ends.append((grid, ha.size - np.searchsorted(ha, grid, "left"), hb.size - np.searchsorted(hb, grid, "left"), False))
        for grid, count_a, count_b, below in ends:
            if grid.size == 0:
                continue
            for forward, (numerator, denominator) in ((True, (count_a, count_b)), (False, (count_b, count_a))):
                make = (lambda t: ScoreRegion(Column(j, width), -math.inf, t)) if below else (
                    lambda t: ScoreRegion(Column(j, width), t, math.inf))
                scores = predicted_bound(numerator, denominator, n, n_certify, z_certify, delta)
                best = int(np.argmax(scores))
                if np.isfinite(scores[best]) and scores[best] > 0:
                    candidates.append(Candidate(make(float(grid[best])), forward, float(scores[best])))
                fitted = fitted_choice(grid, numerator, denominator, n, n_certify, z_certify, delta)
                if fitted is not None:
                    candidates.append(Candidate(make(fitted[0]), forward, fitted[1]))
    return candidates


def stream_size(samples: int, fraction: float, batch: int, delta: float) -> int:
    """Selection samples per input streamed as tails beside the batch of ``batch`` rows: for delta > 0, the
    rest of the selection budget (``fraction`` of the samples, at most half of them); else none."""
    if not delta > 0:
        return 0
    return max(0, min(int(round(samples * fraction)), samples // 2) - batch)


@dataclass(frozen=True)
class TailTask:
    """Draw one streamed selection block and summarise its tails (picklable for worker processes)."""

    mechanism: Callable
    data: Any
    sizes: tuple[int, ...]
    seed: int
    side: int
    dtypes: tuple[str, ...] = ()
    widths: tuple[int, ...] = ()

    def __call__(self, block: int) -> Tails:
        index = STREAM_BLOCK_OFFSET + block
        outputs = draw_block(self.mechanism, self.data, self.sizes[block], self.seed, self.side, PHASE_SELECT, index, self.dtypes)
        return summarise(shape_outcome(outputs, self.widths, block_label(self.side, PHASE_SELECT, index, self.seed)))
