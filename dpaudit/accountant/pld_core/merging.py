"""Optimistic placement of a PLD's cells on the loss grid by exact merging ("chords").

The optimistic (lower-bound) grid PLD must be less informative than the exact pair: every grid atom is a
merge of outcomes (a post-processing, Blackwell) whose likelihood ratio is at least that of its grid
point, any excess being rounded down. Rounding a whole cell down loses up to a step of loss on its mass
at every composition, which is first order in the step; where the loss accumulates (the infimum ln(1-q)
of a Poisson-subsampled mechanism's "remove" loss, the supremum -ln(1-q) of its "add" loss) that is most
of the mass, and over 10^5-10^6 compositions it dominates the composed loss.

The input is the cells (e_k - h/2, e_k + h/2], each merged into one outcome (P-mass a_k, Q-mass b_k).

* Smooth cells (the bulk of most pairs) are placed as before, vectorised: a cell whose merged ratio is at
  least e^{e_k} is rounded down to e_k (its ratio exceeds e^{e_k} by O(h^2)); a cell below it borrows the
  fraction of the cell above that brings its ratio up to e^{e_k} (a merge; computed for whole cells, so
  a cell that also lends to the one below borrows a little more than it needs, which stays a lower bound).
* A cell where that would lose much (its ratio far above e^{e_k}, or below it with too little above to
  borrow from, or needing more than a thousandth of the cell above: an accumulation) starts a window
  handled by chords: consecutive cells, and fractions of
  cells (splitting an outcome by an independent coin is exact), are merged so that each group's ratio is
  *exactly* a grid ratio e^{e_G}. On the trade-off curve this replaces the curve by chords whose slopes
  are grid ratios (a less informative pair); merging loses only the spread of the loss within a group
  (the Jensen gap, second order in the step) instead of a first-order rounding.

  - upward (the accumulation holds more mass at the bottom end): a group starts at a cell whose merged
    loss x lies in [e_F, e_{F+1}); it is rounded down to e_F when no chord can cost less (x - e_F at most
    half the squared gap to e_{F+1}), otherwise merged with the cells above until its ratio is exactly
    e^{e_{F+1}}, unless that merge's Jensen gap would exceed the rounding's loss (or span more than
    ``_MAX_CHORD`` cells);
  - downward (more mass at the top end, where no cells lie above to borrow from): a group starts at the
    highest cell left, targets the grid point e_F at or below its merged loss and merges the cells below
    into it while its ratio stays at least e^{e_F}.

  A window ends at the first smooth cell past its last hard one (downward: one whose ratio is at least
  its grid point, so it borrows nothing from the cells consumed above, or the cell ``_HANDOVER`` cells
  down, then rounded a step down); what is left of a cell split by the last group is a cell of its own
  there, with the same ratio.

Float error: each cell's masses carry absolute bounds; a group is closed only when its P-mass excess
over e^{e_G} times its Q-mass is non-negative after subtracting every bound, so each emitted atom sits at
or below its exact merged ratio.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["merge_onto_grid"]

_U = 2.0**-53
_MAX_CHORD = 64  # cells one group may span (beyond it the cell is rounded down / the group closed)
_WINDOW_GAP = 4.0  # a cell above its grid point by more than this times step^2 starts a chord window
# a cell that must borrow more than this fraction of the cell above starts one: the vectorised placement
# borrows fractions of whole cells, over-borrowing by about the product of two neighbours' fractions
_BORROW_LIMIT = 1e-3
_HANDOVER = 16  # downward windows end at most this many smooth cells past their last hard one


def merge_onto_grid(step: float, a: np.ndarray, tb: np.ndarray, err: np.ndarray, known: np.ndarray) -> np.ndarray:
    """P-masses on the grid points e_{k-1}..e_{m-1} (index 0 is one step below the first cell) of the
    cells k = 0..m-1, cell k holding P-mass ``a[k]`` and e^{e_k} times Q-mass ``tb[k]`` (centred on e_k),
    each with absolute float error at most ``err[k]`` (in both). Cells whose ratio is unknown (``known``
    False: the Q-mass underflowed) are rounded down a whole step and take part in no group."""
    a, tb, err = a.copy(), tb.copy(), err.copy()  # windows consume cells
    m = a.size
    out = np.zeros(m + 1)
    usable = known & (a > 0)
    unknown = ~known & (a > 0)
    out[:-1] += np.where(unknown, a, 0.0)  # index k is e_{k-1}
    a = np.where(unknown, 0.0, a)
    hard = _hard(step, a, tb, err, usable)
    if hard.any():
        cells = np.flatnonzero(usable)
        upward = a[cells[0]] >= a[cells[-1]]
        hard_cells = np.flatnonzero(hard).tolist()
        # the windows walk cell by cell: on Python lists (numpy scalars would allocate at every access)
        cols = [a.tolist(), tb.tolist(), err.tolist(), usable.tolist(), hard.tolist()]
        chords = [0.0] * (m + 1)
        if upward:
            _windows_up(step, *cols, (a - tb - err < 0).tolist(), hard_cells, chords)
        else:
            _windows_down(step, *cols, hard_cells[::-1], chords)
        a, tb, err = (np.array(col) for col in cols[:3])
        out += np.array(chords)
    out += _placed(step, a, tb, err)
    return out


def _placed(step: float, a: np.ndarray, tb: np.ndarray, err: np.ndarray) -> np.ndarray:
    """Vectorised placement (module docstring) of the cells' remaining masses: index 0 is e_{-1}."""
    m = a.size
    err = np.where(a > 0, err, 0.0)  # cells consumed by chords (or empty) take no part
    excess = a - tb - err  # under-estimated
    lender_excess = np.append(a[1:] - tb[1:] * math.exp(-step) - err[1:], 0.0)
    need = excess < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(need, -excess / lender_excess, 0.0)
    fixable = need & (lender_excess > 0) & (frac <= 1.0)
    frac = np.where(fixable, np.minimum(1.0, frac * (1 + 16 * _U)), 0.0)
    avail = 1.0 - np.append(0.0, frac[:-1])  # fraction of each cell not lent to the cell below
    gained = np.append(frac[:-1] * a[1:], 0.0)  # P-mass each cell borrowed from the cell above
    ok = ~need | fixable
    pmf = np.zeros(m + 1)
    kept = np.clip(a * avail, 0.0, None)
    pmf[1:] += np.where(ok, kept + gained, 0.0)
    pmf[:-1] += np.where(ok, 0.0, kept + gained)
    return pmf


def _hard(step: float, a: np.ndarray, tb: np.ndarray, err: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """Cells the vectorised placement would place badly: a merged loss above e_k by more than
    ``_WINDOW_GAP`` step^2 (rounding it down loses more than a chord would), or below e_k with the cell
    above unable to lift it, or only by lending more than ``_BORROW_LIMIT`` of itself. Deviations within
    the masses' float error (about 2 err / a in loss) do not count: rounding them costs nothing a chord
    would save."""
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.where(usable, np.log(a / tb), 0.0)
        noise = np.where(usable, 2.0 * err / a, 0.0)
    excess = a - tb - err
    lender_excess = np.append(a[1:] - tb[1:] * math.exp(-step) - err[1:], 0.0)
    need = excess < 0
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(need, -excess / lender_excess, np.inf)
        large = np.where(need, (-excess - 2.0 * err) / lender_excess, 0.0)
    stuck = need & ~((lender_excess > 0) & (frac <= 1.0))
    # smooth cells exceed e^{e_k} by about (slope of the log-density) h^2 / 12: left to the vectorised
    # placement; a chord pays off from about half the squared gap on, worth a window from a few times that
    wasteful = ~need & (x > _WINDOW_GAP * step * step + noise)
    return usable & (stuck | wasteful | (need & (large > _BORROW_LIMIT)))


def _windows_up(step, a, tb, err, usable, hard, need, hard_cells, out) -> None:
    """Upward chord windows from each hard cell not yet consumed; consumed masses are zeroed in a, tb
    (``need``: the cell's ratio is below its grid point)."""
    done_to = -1
    for h in hard_cells:
        if h <= done_to or a[h] <= 0:
            continue
        start = h
        while start - 1 > max(done_to, h - _MAX_CHORD) and need[start - 1] and usable[start - 1]:
            start -= 1  # the cells below that would borrow from this one join the window (a longer chain
            # of smooth borrowers leaves its top cell, whose lender the window takes, a step lower)
        done_to = _sweep_up(step, a, tb, err, usable, hard, start, out)


def _sweep_up(step, a, tb, err, usable, hard, start, out) -> int:
    """Chords upward from cell ``start``; stops at the first smooth cell past the last hard cell met.
    Emits into ``out`` (index k + 1 is e_k), zeroes the consumed masses; returns the last cell consumed."""
    exp, log, floor = math.exp, math.log, math.floor
    m = len(a)
    i, left = start, 1.0
    last_hard = start
    while i < m:
        if i > last_hard and not hard[i]:
            return i - 1  # the vectorised placement takes over (a cell's remainder is a cell of its own)
        if hard[i]:
            last_hard = i
        if not usable[i] or a[i] <= 0.0:
            i, left = i + 1, 1.0
            continue
        ak, tk, ek = a[i] * left, tb[i] * left, err[i] * left
        x = log(ak / tk)  # merged loss of the cell minus e_i
        f = floor(x / step)
        c = exp(f * step)
        if not ak - c * tk >= ek * (1.0 + c) + 4 * _U * (ak + c * tk):  # e_{i+f} not certainly below: one lower
            f -= 1
        cost_down = ak * (x - f * step)  # P-mass times loss given up by rounding down to e_{i+f}
        gap = (f + 1) * step - x
        chord = None
        if cost_down > 0.5 * ak * gap * gap:  # else no chord can cost less (its spread is at least the gap)
            chord = _chord_up(step, a, tb, err, usable, i, i + f + 1, ak, tk, ek, x + i * step, cost_down)
        if chord is None:
            _emit(out, i + f, ak)
            a[i] = tb[i] = 0.0
            i, left = i + 1, 1.0
            continue
        target, mass, j, t = chord
        _emit(out, target, mass)
        for used in range(i, j):
            if hard[used]:
                last_hard = max(last_hard, used)
            a[used] = tb[used] = 0.0
        if hard[j]:
            last_hard = max(last_hard, j)
        if t >= 1.0:
            a[j] = tb[j] = 0.0
            i, left = j + 1, 1.0
        else:
            a[j] *= 1.0 - t
            tb[j] *= 1.0 - t
            err[j] *= 1.0 - t
            i, left = j, 1.0  # the cell's remainder (same ratio) is a cell of its own now
    return m - 1


def _chord_up(step, a, tb, err, usable, i, target, ak, tk, ek, loss, budget):
    """Merge (ak, tk) (merged loss ``loss``) with the cells above i until the ratio is exactly e^{e_target}:
    (target, P-mass, cell where it ended, fraction of that cell used), or None when that would lose more
    than ``budget`` (P-mass times loss: the merge's Jensen gap sum a_i l_i - A e_target, which only grows
    once the cells merged lie above the target) or needs more than _MAX_CHORD cells."""
    exp, log = math.exp, math.log
    m = len(a)
    g = target * step
    c = exp((target - i) * step)
    mass = ak
    moment = ak * (loss - g)  # sum of P-mass times (loss - e_target) of the merged outcomes
    deficit = c * tk - ak + ek * (1.0 + c) + 4 * _U * (ak + c * tk)  # e^{e_G} B - A, over-estimated
    for j in range(i + 1, min(m, i + 1 + _MAX_CHORD)):
        aj, tj = a[j], tb[j]
        if not usable[j] or aj <= 0.0:
            continue
        c = exp((target - j) * step)
        lj = log(aj / tj) + j * step - g
        surplus = aj - c * tj - (err[j] * (1.0 + c) + 4 * _U * (aj + c * tj))  # under-estimated
        if surplus >= deficit and surplus > 0.0:
            t = min(1.0, deficit / surplus * (1.0 + 16 * _U))
            if moment + t * aj * lj > budget:
                return None
            return target, mass + t * aj, j, t
        moment += aj * lj
        if lj > 0.0 and moment > budget:
            return None
        deficit -= surplus
        mass += aj
    return None


def _windows_down(step, a, tb, err, usable, hard, hard_cells, out) -> None:
    """Downward chord windows from each hard cell (highest first) not yet consumed."""
    done_to = len(a)
    for h in hard_cells:
        if h >= done_to or a[h] <= 0:
            continue
        done_to = _sweep_down(step, a, tb, err, usable, hard, h, out)


def _sweep_down(step, a, tb, err, usable, hard, start, out) -> int:
    """Chords downward from cell ``start`` (module docstring); stops below the last hard cell met at a smooth
    cell whose ratio is at least its grid point (the vectorised placement rounds it down, borrowing nothing
    from above). Returns the lowest cell consumed (wholly or in part)."""
    exp, log, floor = math.exp, math.log, math.floor
    i = start
    last_hard = start
    while i >= 0:
        if not usable[i] or a[i] <= 0.0:
            i -= 1
            continue
        if hard[i]:
            last_hard = min(last_hard, i)
        ak, tk, ek = a[i], tb[i], err[i]
        if i < last_hard and not hard[i] and (_rounds_down(a, tb, err, i) or i < last_hard - _HANDOVER):
            # the vectorised placement takes over with this cell: it borrows nothing above, or (past
            # _HANDOVER smooth cells) it is rounded a step down there, the one cell that costs
            return i + 1
        f = floor(log(ak / tk) / step)
        c = exp(f * step)
        surplus = ak - c * tk - (ek * (1.0 + c) + 4 * _U * (ak + c * tk))  # A - e^{e_G} B, under-estimated
        if surplus < 0.0:  # too close to the grid point to tell: one step lower
            f -= 1
            c = exp(f * step)
            surplus = ak - c * tk - (ek * (1.0 + c) + 4 * _U * (ak + c * tk))
        target = i + f
        mass = ak
        a[i] = tb[i] = 0.0
        j = i - 1
        closed = False
        while j >= max(0, i - _MAX_CHORD):
            aj, tj = a[j], tb[j]
            if not usable[j] or aj <= 0.0:
                j -= 1
                continue
            c = exp((target - j) * step)
            need = c * tj - aj + (err[j] * (1.0 + c) + 4 * _U * (aj + c * tj))  # deficit, over-estimated
            if hard[j]:
                last_hard = min(last_hard, j)
            if need <= 0.0:  # a cell at or above the target ratio: merged whole
                surplus -= need
                mass += aj
                a[j] = tb[j] = 0.0
                j -= 1
                continue
            if need >= surplus:
                t = max(0.0, min(1.0, surplus / need * (1.0 - 16 * _U)))
                _emit(out, target, mass + t * aj)
                a[j] *= 1.0 - t
                tb[j] *= 1.0 - t
                err[j] *= 1.0 - t
                closed = True
                break
            surplus -= need
            mass += aj
            a[j] = tb[j] = 0.0
            j -= 1
        if not closed:  # the group keeps a ratio at least e^{e_G}: placed there
            _emit(out, target, mass)
        i = j
    return 0


def _rounds_down(a, tb, err, k) -> bool:
    """Whether cell k's ratio is certainly at least e^{e_k} (the vectorised placement rounds it down)."""
    return bool(a[k] - tb[k] - err[k] >= 0.0)


def _emit(out: list[float], grid_index: int, mass: float) -> None:
    """Add ``mass`` at grid point e_{grid_index} (out index grid_index + 1); below the grid it is dropped
    (dropping P-mass keeps a lower bound), above it (impossible: ratios are bounded by the cells') it
    is rounded down onto the top."""
    index = grid_index + 1
    if index >= len(out):
        out[-1] += mass
    elif index >= 0:
        out[index] += mass
