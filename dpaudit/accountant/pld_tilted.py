"""Small-delta read-out of a composed PLD by exponential tilting, with every truncated tail bounded.

An FFT convolution has an absolute error of about 1e-13 of the total mass, so the plain read-out of
:mod:`.pld_core.grid` cannot certify delta much below 1e-11 (and charges the truncated upper tail as loss
+inf). The tails are handled here by the exponential change of measure (Esscher tilting; the Chernoff
bound of the composed loss is its zeroth-order term):

* for a PLD with P-masses p_i at losses l_i and lam >= 0 let M(lam) = sum_i p_i e^{lam l_i} (on the
  pessimistic grid this is the discretised pair's Renyi moment e^{lam D_{lam+1}}) and the tilted
  masses p~_i = p_i e^{lam l_i} / M(lam), a probability vector. Tilting commutes with convolution:
  the tilt of a composition is the convolution of the tilts, and the moments multiply;
* hence for the composition delta(eps) = M e^{-lam eps} S(eps) + P(L = +inf) with
  S(eps) = sum_{l > eps} p~(l) e^{-lam (l - eps)} (1 - e^{eps - l}), a sum of O(1) terms near the
  tilted mean, which the FFT computes to ~1e-13 *relative* to the Chernoff factor M e^{-lam eps};
* every tilted mass that is not in the final vector -- cut off at either end after a convolution, or
  the l1 float error bound of the FFTs (Higham 2002, Thm 24.2, as in :mod:`.pld_core.grid`; squarings and
  compositions whose float64 bound would exceed their budget split off their peaks, else run in extended
  precision) -- adds at most
  its own size to S (each weight e^{-lam (l - eps)} (1 - e^{eps - l})_+ is <= 1 for lam >= 0), so it
  is charged as that: delta <= M e^{-lam eps} (S + slack) + P(L = +inf).

The leaves are the pessimistic (connect-the-dots) grid PLDs of :mod:`.leaf_plds` and :mod:`.families`, gridded out to
where the tilted mass is negligible (the rest, < 1e-300 per leaf for Gaussian noise, stays at +inf),
so the result is an upper bound on the composed dominating pairs' delta for any lam; lam only decides
how tight it is and is chosen to minimise the Chernoff bound M e^{-lam eps} of the grid itself.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.fft

from ..errors import AccountingTooLargeError
from .leaf import Leaf
from .leaf_plds import build_leaf, log_mgf_curve
from .pld_core.grid import (GridPLD, _compose_split, _convolve, _split_error, _split_peak, _square_split, convolution_error,
                             multiresolution_power)

__all__ = ["TiltedPLD", "tilted_pld", "choose_tilts", "tilted_epsilon", "tilted_epsilon_of", "tilted_lower_epsilon",
           "tilted_delta", "MAX_TILTED_CELLS",
           "check_tilted_cells"]

#: Largest grid (cells) one tilted leaf may need; beyond it the tilted read-out is refused
#: (:class:`~dpaudit.errors.AccountingTooLargeError`) before anything that size is allocated.
MAX_TILTED_CELLS = 2**22
_CHOOSE_CELLS = 2**17  # the tilt is chosen on a grid of at most this many cells per leaf (only tightness depends on it)
_PROBE_STEP = 64.0

_U = 2.0**-53
_CUT = 1e-20  # tilted mass cut off at each end after each operation (charged in ``slack``)
_CUT_HEAD = 4096  # cells summed first when looking for that cut
_LEAF_FLOOR = 1e-300  # P-mass beyond the widest grid (normal tail beyond 37.5 sd), charged at +inf
_LAMBDAS = np.concatenate([np.geomspace(0.02, 2000.0, 121)])
_SQUARE_BUDGET = 1e-10  # tilted mass a self-composition's squarings may lose to float error (split or extended beyond)


class _Futile(Exception):
    """A tilted leaf's float error, composed, would swamp any read-out: the tilted bound is not computed."""


def _product(a: float, b: float) -> float:
    """a b for slacks (inf instead of a float overflow: such a slack already makes the bound useless)."""
    return float(a) * float(b) if max(a, b) < 1e150 else math.inf


def _product_error(a: np.ndarray, b: np.ndarray) -> float:
    """The l1 error bound :func:`.pld_core.grid._convolve` charges for a float64 FFT product of ``a`` and ``b``."""
    if min(a.size, b.size) <= 64:
        return 0.0
    size = scipy.fft.next_fast_len(a.size + b.size - 1, real=True)
    norms = (math.sqrt(float(np.square(a).sum())) * float(b.sum())
             + float(a.sum()) * math.sqrt(float(np.square(b).sum())))
    return 8.0 * _U * math.log2(size) * 1.5 * norms * math.sqrt(size)


def _cells_below(pmf: np.ndarray, cut: float, side: str = "right") -> int:
    """``searchsorted(cumsum(pmf), cut, side)``: with "right", how many leading cells hold at most ``cut`` of mass
    together. The running sum of a prefix is bitwise that of the whole vector's head, so the cut is looked for on
    a short head first and on the whole vector only when it lies beyond."""
    head = np.cumsum(pmf[:_CUT_HEAD])
    if head.size < pmf.size and (head[-1] <= cut if side == "right" else head[-1] < cut):
        head = np.cumsum(pmf)
    return int(np.searchsorted(head, cut, side=side))


@dataclass(frozen=True)
class TiltedPLD:
    """Tilted masses ``pmf`` on losses ``(offset + i) * step``; ``log_mgf`` = ln M(lam) of the untilted
    PLD; ``slack`` bounds the tilted mass missing from ``pmf`` (cut off or float error); ``inf_mass``
    is the untilted P(L = +inf). ``lower``: built from an optimistic PLD, read out as a **lower** bound
    (then ``slack`` is only the float error, subtracted; mass cut off is simply dropped)."""

    step: float
    lam: float
    offset: int
    pmf: np.ndarray
    log_mgf: float
    slack: float
    inf_mass: float
    lower: bool = False

    @classmethod
    def tilt(cls, pld: GridPLD, lam: float) -> TiltedPLD:
        lower = not pld.pessimistic
        losses = pld.losses
        exponents = lam * losses
        with np.errstate(divide="ignore"):
            log_w = np.log(pld.pmf) + exponents
        top = float(np.max(log_w))
        inf_mass = pld.inf_mass if lower else min(1.0, pld.inf_mass + _LEAF_FLOOR)
        if not math.isfinite(top):  # no finite loss (every loss at +inf): M(lam) of the finite part is 0
            return cls(pld.step, lam, pld.offset, np.ones(1), -math.inf, 0.0, inf_mass, lower)
        # weights p e^{lam l - shift}: the masses enter as they are (no log), the shift only where e^{lam l}
        # would leave the float range
        high = float(np.max(exponents))
        shift = top if high > 700.0 or top < -700.0 else 0.0
        with np.errstate(under="ignore"):
            weights = pld.pmf * np.exp(exponents - shift) if shift == 0.0 else np.exp(log_w - shift)
        total = float(weights.sum())
        log_mgf = shift + math.log(total)
        pmf = weights / total
        # the l1 error of the stored masses, tilted at worst by the largest weight e^{lam l_max} / M; and the
        # float error of the tilted masses themselves: each is p times exp of an exponent of size lam |l| + |shift|
        # (with the shift: |ln p| + lam |l| + |shift|), whose absolute error u times that is a relative error of
        # that mass, summed over masses of total 1 (the product and division a few ulps more); the sum's rounding
        # scales every mass alike and cancels against ln M (its own error is in the margin below)
        finite = np.isfinite(log_w)
        size = np.abs(exponents[finite] - shift) if shift == 0.0 else np.abs(log_w[finite]) + abs(shift)
        exponent = float(np.dot(pmf[finite], size))  # the masses' relative errors, averaged
        slack = (pld.error * math.exp(min(700.0, lam * float(losses[-1]) - log_mgf))
                 + 4 * _U * (exponent + 8) * (1 + 1e-6))
        # float error of the log-moment itself, charged as relative slack on M (outward)
        margin = 8 * _U * (abs(log_mgf) + pmf.size)
        log_mgf += -margin if lower else margin
        return cls(pld.step, lam, pld.offset, pmf, log_mgf, slack, inf_mass, lower)._cut()

    def _cut(self, noise: float = 0.0) -> TiltedPLD:
        """Drop the cells below the round-off ``noise`` at the ends and then <= _CUT of mass at each end,
        charging all of it to ``slack``."""
        pmf = self.pmf
        keep = np.flatnonzero(pmf > noise)
        if keep.size == 0:
            return self
        lo, hi = int(keep[0]), int(keep[-1]) + 1
        lo += _cells_below(pmf[lo:hi], _CUT)
        hi -= _cells_below(pmf[lo:hi][::-1], _CUT)
        if hi <= lo:
            return self
        dropped = 0.0 if self.lower else float(pmf[:lo].sum() + pmf[hi:].sum()) * (1 + 4 * _U)
        return TiltedPLD(self.step, self.lam, self.offset + lo, pmf[lo:hi].copy(), self.log_mgf,
                         self.slack + dropped, self.inf_mass, self.lower)

    def compose(self, other: TiltedPLD, budget: float = math.inf) -> TiltedPLD:
        """The tilted PLD of running both (convolution; where the float64 bound would exceed ``budget``, with both
        peaks split off when that bound is within it, :func:`.pld_core.grid._compose_split`, else in extended
        precision)."""
        if self.step != other.step or self.lam != other.lam or self.lower != other.lower:
            raise ValueError("tilted PLDs on different grids or tilts cannot be composed")
        precise = math.isfinite(budget) and _product_error(self.pmf, other.pmf) > budget
        split = (_split_peak(self.pmf), _split_peak(other.pmf)) if precise else (None, None)
        if None not in split and _compose_split(self.pmf, other.pmf, *split, bound_only=True)[1] <= budget:
            pmf, err, level = _compose_split(self.pmf, other.pmf, *split)
        else:
            pmf, err, level = _convolve(self.pmf, other.pmf, precise)
        slack = float(self.slack) + float(other.slack) + float(err) + _product(self.slack, other.slack)
        if self.lower:
            inf_mass = max(0.0, (self.inf_mass + other.inf_mass - self.inf_mass * other.inf_mass) * (1 - 8 * _U))
        else:
            inf_mass = self.inf_mass + other.inf_mass  # union bound: >= 1 - (1 - a)(1 - b) in floats too
        result = TiltedPLD(self.step, self.lam, self.offset + other.offset, pmf,
                           self.log_mgf + other.log_mgf, slack, min(1.0, inf_mass), self.lower)
        return result._cut(level)

    def square(self, budget: float = math.inf) -> TiltedPLD:
        """``self.compose(self)`` with the float error kept within ``budget`` where it can be (as
        :meth:`.GridPLD.square`): the plain float64 FFT, else the peak split off, else extended precision."""
        pmf = self.pmf
        if pmf.size <= 64 or convolution_error(pmf) <= budget:
            return self.compose(self)
        split = _split_peak(pmf)
        if split is not None and _split_error(pmf, *split) <= budget:
            out, err, level = _square_split(pmf, *split)
        else:
            out, err, level = _convolve(pmf, pmf, precise=True)
        slack = 2.0 * float(self.slack) + float(err) + _product(self.slack, self.slack)
        if self.lower:
            inf_mass = max(0.0, (2.0 * self.inf_mass - self.inf_mass**2) * (1 - 8 * _U))
        else:
            inf_mass = 2.0 * self.inf_mass
        return TiltedPLD(self.step, self.lam, 2 * self.offset, out, 2.0 * self.log_mgf, slack, min(1.0, inf_mass),
                         self.lower)._cut(level)

    def self_compose(self, count: int, final_step: float | None = None) -> TiltedPLD:
        """``count``-fold composition by exponentiation by squaring; with ``final_step`` = 2^r ``step`` (upper
        bound only) the squared block is coarsened by 2 at levels 6, 8, 10, ... until the grid is
        ``final_step`` (as :meth:`.GridPLD.self_compose`), and the result ends there."""
        return multiresolution_power(
            self, count, final_step,
            compose=lambda result, power, left: result.compose(power, _SQUARE_BUDGET / max(1, left >> 1)),
            square=lambda power, left: power.square(_SQUARE_BUDGET / left))

    def coarsen(self, factor: int) -> TiltedPLD:
        """The tilted PLD on the grid of step ``factor * step`` (upper bound only): each untilted atom is split
        onto the two coarse grid points around it keeping its P- and Q-mass (connect the dots, as
        :meth:`.GridPLD.coarsen`; the new pair dominates the old one), and the tilted masses are re-weighted
        accordingly: an atom r fine cells above coarse point a sends the P-share u_r = (1 - e^{-r h}) /
        (1 - e^{-H}) up, so its tilted mass t becomes t (1 - u_r) e^{-lam r h} at a and t u_r e^{lam (H - r h)}
        at a + 1 (H = factor h). The masses are renormalised (their total Z goes into ``log_mgf``); mass
        missing from the vector (``slack``) would have grown by at most the largest per-atom factor c, so
        the slack becomes slack c / Z, plus a few ulps of the arithmetic."""
        if factor == 1:
            return self
        if self.lower or factor < 1:
            raise ValueError("only upper-bound tilted PLDs are coarsened, by an integer factor >= 1")
        h = self.step
        base, lead = divmod(self.offset, factor)
        blocks = -(-(lead + self.pmf.size) // factor)
        fine = np.zeros(blocks * factor)
        fine[lead:lead + self.pmf.size] = self.pmf
        fine = fine.reshape(blocks, factor)
        r = np.arange(factor)
        up_share = np.expm1(-r * h) / np.expm1(-factor * h)
        down_weight = (1.0 - up_share) * np.exp(-self.lam * r * h)
        up_weight = up_share * np.exp(self.lam * (factor - r) * h)
        pmf = np.zeros(blocks + 1)
        pmf[:-1] = fine @ down_weight
        pmf[1:] += fine @ up_weight
        if pmf[-1] == 0.0:
            pmf = pmf[:-1]
        total = float(pmf.sum())
        largest = float(np.max(down_weight + up_weight)) * (1 + 16 * _U)
        pmf /= total
        log_mgf = self.log_mgf + math.log(total) + 8 * _U * (abs(self.log_mgf) + factor + 8)
        slack = self.slack * largest / total * (1 + 16 * _U) + 16 * _U * (factor + 4)
        return TiltedPLD(h * factor, self.lam, base, pmf, log_mgf, slack, self.inf_mass, False)._cut()

    # ------------------------------------------------------------------ read-out
    def log_delta_finite(self, epsilon: float) -> float:
        """ln of an upper bound on the finite-loss part of delta(epsilon). Cells more than 60/lam above
        epsilon (weights < e^-60) are charged at their mass times the largest such weight."""
        first = max(0, math.floor(epsilon / self.step) - self.offset + 1)  # first cell with loss > eps
        while first > 0 and (self.offset + first - 1) * self.step > epsilon:
            first -= 1
        while first < self.pmf.size and (self.offset + first) * self.step <= epsilon:
            first += 1
        reach = self.pmf.size if self.lam <= 0 else min(self.pmf.size, first + math.ceil(60.0 / (self.lam * self.step)) + 1)
        gap = (self.offset + np.arange(first, reach)) * self.step - epsilon
        part = self.pmf[first:reach]
        s = float(np.sum(part * np.exp(-self.lam * gap) * -np.expm1(-gap)))
        if self.lower:  # far cells dropped, float error subtracted
            s = s * (1 - (part.size + 8) * 4 * _U) - self.slack
            return self.log_mgf - self.lam * epsilon + math.log(s) if s > 0.0 else -math.inf
        s *= 1 + (part.size + 8) * 4 * _U
        if reach < self.pmf.size:
            far_gap = (self.offset + reach) * self.step - epsilon
            s += float(self.pmf[reach:].sum()) * (1 + self.pmf.size * _U) * math.exp(-self.lam * far_gap)
        s += self.slack
        if s <= 0.0:
            return -math.inf
        return self.log_mgf - self.lam * epsilon + math.log(s)

    def delta(self, epsilon: float) -> float:
        """Upper (lower, if ``lower``) bound on delta(epsilon) of the composition."""
        log_finite = self.log_delta_finite(epsilon)
        if self.lower:
            return max(0.0, math.exp(log_finite) * (1 - 64 * _U) + self.inf_mass) if log_finite > -745 else self.inf_mass
        finite = math.exp(log_finite) * (1 + 64 * _U) if log_finite > -745 else 5e-324
        return min(1.0, finite + self.inf_mass)

    def epsilon(self, target_delta: float) -> float:
        """Upper (``lower``: lower) bound on the smallest eps >= 0 with delta(eps) <= target_delta; an upper
        bound is inf when none is found."""
        if self.lower:
            if self.inf_mass > target_delta:
                return math.inf
            budget = target_delta - self.inf_mass
        else:
            if self.inf_mass >= target_delta:
                return math.inf
            budget = target_delta - self.inf_mass * (1 + 4 * _U)
        log_budget = math.log(budget) if budget > 0 else -math.inf
        fudge = -64 * _U if self.lower else 64 * _U

        def meets(eps: float) -> bool:
            return self.log_delta_finite(eps) + fudge <= log_budget

        if self.lower:
            return self._lower_epsilon(meets)
        if meets(0.0):
            return 0.0
        # a bracket: the Chernoff factor alone, times (1 + slack), exceeds delta's finite part
        high = max(self.step, (self.log_mgf + math.log1p(self.slack) - log_budget) / self.lam) if self.lam > 0 else math.inf
        if not math.isfinite(high) or not meets(high):
            top = (self.offset + self.pmf.size) * self.step
            high = max(high if math.isfinite(high) else 0.0, top)
            if not meets(high):
                return math.inf
        low = 0.0
        for _ in range(200):
            if high - low <= 1e-11 * high + 1e-300:
                break
            mid = 0.5 * (low + high)
            if meets(mid):
                high = mid
            else:
                low = mid
        return low if self.lower else high


    def _lower_epsilon(self, meets) -> float:
        """Largest eps found with delta_lower(eps) > target (then the exact delta(eps) > target too, so
        the exact epsilon is >= eps): a scan of 256 points up to the top of the grid, then bisection
        between the last failing and the next meeting point. delta_lower need not be monotone (the
        float error subtracted can make it 0 where the tilted mass is small), so every returned point is
        itself checked; 0 when none fails. The scan runs from the top down and stops at the first failing
        point (the largest one: the same point a full scan finds, without evaluating the ones below it)."""
        top = (self.offset + self.pmf.size) * self.step
        if top <= 0:
            return 0.0
        grid = np.linspace(0.0, top, 257)
        low = next((float(x) for x in grid[::-1] if not meets(float(x))), None)
        if low is None:
            return 0.0
        high = min(top, low + top / 256)
        for _ in range(100):
            if high - low <= 1e-11 * high:
                break
            mid = 0.5 * (low + high)
            if meets(mid):
                high = mid
            else:
                low = mid
        return low


def _tilted_span(leaf: Leaf, relation: str, step: float, lam: float, pessimistic: bool,
                 only: str | None = None) -> float:
    """The loss span of a leaf's grid for the read-out tilted by ``lam`` (``inf``: the widest grid), measured
    on coarse grids (first of step 64, then at most 2^16 cells) without building it at ``step``."""
    span = 0.0
    probe_step = _PROBE_STEP
    for _ in range(2):
        with np.errstate(all="ignore"):  # a span estimate: the coarse grid's edge cases are moot
            pair = build_leaf(leaf, relation, probe_step, pessimistic, lam=lam, only=only)
        span = max(float(p.pmf.size * p.step) for p in pair if p is not None)
        finer = max(step * 4096.0, span / 2.0**16)
        if finer >= probe_step:
            break
        probe_step = finer
    return span


def check_tilted_cells(leaves: Counter[Leaf], relation: str, step: float, lam: float,
                       pessimistic: bool = True, only: str | None = None) -> None:
    """Refuse (:class:`~dpaudit.errors.AccountingTooLargeError`), before building it, a tilted read-out on
    the grid of ``step`` for which some leaf would need more than :data:`MAX_TILTED_CELLS` cells (a large
    tilt reaches far into a leaf's tail: subsampled mechanisms at small epsilon)."""
    for leaf in leaves:
        cells = _tilted_span(leaf, relation, step, lam, pessimistic, only) / step
        if cells > MAX_TILTED_CELLS:
            raise AccountingTooLargeError(
                f"PLDAccountant: the tilted read-out (lam={lam:.3g}) would need {cells:.3g} cells for a "
                f"{leaf.kind!r} leaf at step {step:.3g} (limit {MAX_TILTED_CELLS:.3g}); use the plain read-out, "
                "RDPAccountant or epsilon_upper", cells=cells)


def _check_composed_cells(tilted: TiltedPLD, count: int, step: float) -> None:
    """Refuse a tilted composition whose result would span more than :data:`MAX_TILTED_CELLS` cells of ``step``:
    the composed tilted law spans about 40 of its standard deviations (sqrt(count) times the leaf's), plus
    the leaf's own span."""
    losses = (tilted.offset + np.arange(tilted.pmf.size)) * tilted.step
    mean = float(np.dot(tilted.pmf, losses))
    sd = math.sqrt(max(0.0, float(np.dot(tilted.pmf, (losses - mean) ** 2))))
    cells = (40.0 * math.sqrt(count) * sd + tilted.pmf.size * tilted.step) / step
    if cells > MAX_TILTED_CELLS:
        raise AccountingTooLargeError(
            f"PLDAccountant: the tilted read-out (lam={tilted.lam:.3g}) of {count} compositions would need about "
            f"{cells:.3g} cells at step {step:.3g} (limit {MAX_TILTED_CELLS:.3g})", cells=cells)


def tilted_pld(leaves: Counter[Leaf], relation: str, step: float, lam: float, direction: int,
               pessimistic: bool = True, fine: int = 1) -> TiltedPLD:
    """Composition of ``leaves`` in one direction (0: remove, 1: add) tilted by ``lam`` on the
    pessimistic (upper bound) or optimistic (lower bound) grid of ``step``; with ``fine`` = 2^r > 1 (upper
    bound only) each leaf is discretised on step / fine and coarsened to step while it is self-composed
    (:meth:`TiltedPLD.self_compose`); refused
    (:func:`check_tilted_cells`) where a leaf's grid would be too large."""
    fine = fine if pessimistic else 1
    only = "add" if direction else "remove"
    check_tilted_cells(leaves, relation, step / fine, lam, pessimistic, only)
    total: TiltedPLD | None = None
    for leaf, count in sorted(leaves.items(), key=lambda item: repr(item[0])):
        pld = build_leaf(leaf, relation, step / fine, pessimistic, lam=lam, only=only)[direction]
        tilted = TiltedPLD.tilt(pld, lam)
        if tilted.slack * count >= 1e-2:  # its float error alone, composed, would swamp the read-out
            raise _Futile
        _check_composed_cells(tilted, count, step)
        part = tilted.self_compose(count, final_step=step if fine > 1 else None)
        total = part if total is None else total.compose(part)
    assert total is not None
    return total


def _log_mgf_and_reach(pld: GridPLD, lams: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln M(lam) of a grid PLD's finite part over every cell, the span of the tilted law between its cuts)
    at each lam (for choosing a tilt; the cumulative sums are in float, so a cut near 1 is approximate)."""
    keep = pld.pmf > 0
    if not keep.any():
        return np.full(np.shape(lams), -np.inf), np.zeros(np.shape(lams))
    log_p, losses = np.log(pld.pmf[keep]), pld.losses[keep]
    out, reach = np.empty(lams.size), np.empty(lams.size)
    for i, lam in enumerate(lams):
        weights = np.exp(log_p + lam * losses - float((log_p + lam * losses).max()))
        total = float(weights.sum())
        out[i] = float((log_p + lam * losses).max()) + math.log(total)
        first = _cells_below(weights, _CUT * total, "left")  # first cell whose lower tail reaches the cut
        last = losses.size - 1 - _cells_below(weights[::-1], _CUT * total, "left")  # last whose upper tail does
        top = float(losses[min(last, losses.size - 1)])
        # a tilted law reaching the top tenth of the widest grid sits at its edge: there it is not resolved
        edge = top > losses[-1] - 0.1 * (losses[-1] - losses[0])
        reach[i] = math.inf if edge else top - float(losses[min(first, losses.size - 1)])
    return out, reach


def choose_tilts(leaves: Counter[Leaf], relation: str, step: float, *, target_delta: float | None = None,
                 target_epsilon: float | None = None, cell_step: float | None = None,
                 max_cells: float = 2.0**18) -> list[float]:
    """Per direction (remove, add; one entry when every leaf is symmetric) the lam minimising the
    Chernoff bound of the widest pessimistic grid: for a target delta min_lam (ln M(lam) - ln delta) / lam,
    for a target epsilon min_lam ln M(lam) - lam eps, over 25 tilts from 0.02 to 2000 and then 13 around
    the best. Only tightness depends on it. With ``cell_step`` (the grid the leaves are tilted on), only tilts
    whose tilted leaves span at most ``max_cells`` of it are considered (all of them when none does):
    a subsampled leaf's tilted law at a large tilt sits in its far tail (its moments explode there), so a
    smaller tilt is both cheaper and, read out exactly, tight. The grid is ``step`` or, where the widest grid
    would exceed 2^17 cells, coarser; ln M is summed over every cell (pooling cells into blocks would move
    ln M by lam times the block width per leaf, n times: at 10^5 steps it moved lam by a factor 3)."""
    plds = []
    symmetric = True
    for leaf, count in leaves.items():
        span = _tilted_span(leaf, relation, step, math.inf, True)
        leaf_step = max(step, span / _CHOOSE_CELLS)
        remove, add = build_leaf(leaf, relation, leaf_step, True, lam=math.inf)  # widest grid
        symmetric = symmetric and add is remove
        plds.append((count, remove, add))

    def objective(lams: np.ndarray, direction: int) -> np.ndarray:
        total = np.zeros(lams.size)
        allowed = np.ones(lams.size, dtype=bool)
        for count, *pair in plds:
            log_mgf, reach = _log_mgf_and_reach(pair[direction], lams)
            total += count * log_mgf
            if cell_step is not None:
                allowed &= reach / cell_step <= max_cells
        if target_delta is not None:
            values = (total - math.log(target_delta)) / lams
        else:
            values = total - lams * float(target_epsilon)
        return np.where(allowed, values, np.inf) if allowed.any() else values

    lams = []
    coarse = np.geomspace(0.02, 2000.0, 25)
    for direction in (0,) if symmetric else (0, 1):
        values = objective(coarse, direction)
        best = float(coarse[int(np.nanargmin(values))]) if np.isfinite(values).any() else 1.0
        around = best * np.geomspace(0.62, 1.6, 13)
        values = objective(around, direction)
        lams.append(float(around[int(np.nanargmin(values))]) if np.isfinite(values).any() else best)
    return lams


def tilted_epsilon(leaves: Counter[Leaf], relation: str, step: float, target_delta: float, fine: int = 1) -> float:
    """Upper bound on epsilon(target_delta) of the composed pairs (both directions); ``fine``: see
    :func:`tilted_pld`. The lower bound is :func:`tilted_lower_epsilon`."""
    lams = choose_tilts(leaves, relation, step, target_delta=target_delta, cell_step=step / fine)
    try:
        return max(tilted_pld(leaves, relation, step, lam, d, True, fine).epsilon(target_delta)
                   for d, lam in enumerate(lams))
    except _Futile:
        return math.inf


def tilted_epsilon_of(leaves: Counter[Leaf], relation: str, step: float, lam: float, direction: int,
                      target_delta: float, fine: int = 1) -> float:
    """Upper bound on one direction's (0: remove, 1: add) epsilon(target_delta) read out at tilt ``lam``
    (:func:`tilted_pld`); inf where the tilted leaves' float error alone would swamp it."""
    try:
        return tilted_pld(leaves, relation, step, lam, direction, True, fine).epsilon(target_delta)
    except _Futile:
        return math.inf


def tilted_lower_epsilon(leaves: Counter[Leaf], relation: str, step: float, target_delta: float,
                         add_bound: Callable[[], float] | None = None) -> tuple[float, int]:
    """(lower bound on epsilon(target_delta) of the composed pairs, cells of the largest composed tilted PLD)
    on the optimistic grid of ``step``: the larger of the two directions' lower bounds. The add direction is
    not computed when ``add_bound()`` (an upper bound on its exact epsilon) is at most the remove direction's
    lower bound: it could not raise the maximum. 0.0 where a tilted leaf's float error would swamp it."""
    lams = choose_tilts(leaves, relation, step, target_delta=target_delta, cell_step=step)
    value, cells = 0.0, 0
    for direction, lam in enumerate(lams):
        if direction == 1 and add_bound is not None and add_bound() <= value:
            break
        try:
            pld = tilted_pld(leaves, relation, step, lam, direction, False)
        except _Futile:
            continue
        cells = max(cells, pld.pmf.size)
        value = max(value, pld.epsilon(target_delta))
    return value, cells


def tilted_delta(leaves: Counter[Leaf], relation: str, step: float, target_epsilon: float,
                 pessimistic: bool = True, fine: int = 1) -> float:
    """Upper (pessimistic) or lower bound on delta(target_epsilon) of the composed pairs (both directions);
    ``fine``: see :func:`tilted_pld`."""
    lams = choose_tilts(leaves, relation, step, target_epsilon=target_epsilon, cell_step=step / (fine if pessimistic else 1))
    try:
        return max(tilted_pld(leaves, relation, step, lam, d, pessimistic, fine).delta(target_epsilon)
                   for d, lam in enumerate(lams))
    except _Futile:
        return 1.0 if pessimistic else 0.0
