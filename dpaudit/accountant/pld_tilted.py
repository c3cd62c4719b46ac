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
  the l1 float error bound of the FFTs (Higham 2002, Thm 24.2, as in :mod:`.pld_core.grid`) -- adds at most
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

import numpy as np

from ..errors import AccountingTooLargeError
from .leaf import Leaf
from .leaf_plds import build_leaf, log_mgf_curve
from .pld_core.grid import GridPLD, _convolve

__all__ = ["TiltedPLD", "tilted_pld", "choose_tilts", "tilted_epsilon", "tilted_delta", "MAX_TILTED_CELLS",
           "check_tilted_cells"]

#: Largest grid (cells) one tilted leaf may need; beyond it the tilted read-out is refused
#: (:class:`~dpaudit.errors.AccountingTooLargeError`) before anything that size is allocated.
MAX_TILTED_CELLS = 2**22
_CHOOSE_CELLS = 2**17  # the tilt is chosen on a grid of at most this many cells per leaf (only tightness depends on it)
_PROBE_STEP = 64.0

_U = 2.0**-53
_CUT = 1e-20  # tilted mass cut off at each end after each operation (charged in ``slack``)
_LEAF_FLOOR = 1e-300  # P-mass beyond the widest grid (normal tail beyond 37.5 sd), charged at +inf
_LAMBDAS = np.concatenate([np.geomspace(0.02, 2000.0, 121)])


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
        with np.errstate(divide="ignore"):
            log_w = np.log(pld.pmf) + lam * losses
        top = float(np.max(log_w))
        inf_mass = pld.inf_mass if lower else min(1.0, pld.inf_mass + _LEAF_FLOOR)
        if not math.isfinite(top):  # no finite loss (every loss at +inf): M(lam) of the finite part is 0
            return cls(pld.step, lam, pld.offset, np.ones(1), -math.inf, 0.0, inf_mass, lower)
        weights = np.exp(log_w - top)
        total = float(weights.sum())
        log_mgf = top + math.log(total)
        pmf = weights / total
        # the l1 error of the stored masses, tilted at worst by the largest weight e^{lam l_max} / M
        slack = pld.error * math.exp(min(700.0, lam * float(losses[-1]) - log_mgf)) + 8 * _U * pmf.size
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
        lo += int(np.searchsorted(np.cumsum(pmf[lo:hi]), _CUT, side="right"))
        hi -= int(np.searchsorted(np.cumsum(pmf[lo:hi][::-1]), _CUT, side="right"))
        if hi <= lo:
            return self
        dropped = 0.0 if self.lower else float(pmf[:lo].sum() + pmf[hi:].sum()) * (1 + 4 * _U)
        return TiltedPLD(self.step, self.lam, self.offset + lo, pmf[lo:hi].copy(), self.log_mgf,
                         self.slack + dropped, self.inf_mass, self.lower)

    def compose(self, other: TiltedPLD) -> TiltedPLD:
        if self.step != other.step or self.lam != other.lam or self.lower != other.lower:
            raise ValueError("tilted PLDs on different grids or tilts cannot be composed")
        pmf, err, level = _convolve(self.pmf, other.pmf)
        slack = self.slack + other.slack + err + self.slack * other.slack
        if self.lower:
            inf_mass = max(0.0, (self.inf_mass + other.inf_mass - self.inf_mass * other.inf_mass) * (1 - 8 * _U))
        else:
            inf_mass = self.inf_mass + other.inf_mass  # union bound: >= 1 - (1 - a)(1 - b) in floats too
        result = TiltedPLD(self.step, self.lam, self.offset + other.offset, pmf,
                           self.log_mgf + other.log_mgf, slack, min(1.0, inf_mass), self.lower)
        return result._cut(level)

    def self_compose(self, count: int) -> TiltedPLD:
        result: TiltedPLD | None = None
        power = self
        while True:
            if count & 1:
                result = power if result is None else result.compose(power)
            count >>= 1
            if not count:
                break
            power = power.compose(power)
        assert result is not None
        return result

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
        itself checked; 0 when none fails."""
        top = (self.offset + self.pmf.size) * self.step
        if top <= 0:
            return 0.0
        grid = np.linspace(0.0, top, 257)
        failing = [x for x in grid if not meets(float(x))]
        if not failing:
            return 0.0
        low = float(failing[-1])
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


def _tilted_span(leaf: Leaf, relation: str, step: float, lam: float, pessimistic: bool) -> float:
    """The loss span of a leaf's grid for the read-out tilted by ``lam`` (``inf``: the widest grid), measured
    on coarse grids (first of step 64, then at most 2^16 cells) without building it at ``step``."""
    span = 0.0
    probe_step = _PROBE_STEP
    for _ in range(2):
        with np.errstate(all="ignore"):  # a span estimate: the coarse grid's edge cases are moot
            pair = build_leaf(leaf, relation, probe_step, pessimistic, lam=lam)
        span = max(float(p.pmf.size * p.step) for p in pair if p is not None)
        finer = max(step * 4096.0, span / 2.0**16)
        if finer >= probe_step:
            break
        probe_step = finer
    return span


def check_tilted_cells(leaves: Counter[Leaf], relation: str, step: float, lam: float,
                       pessimistic: bool = True) -> None:
    """Refuse (:class:`~dpaudit.errors.AccountingTooLargeError`), before building it, a tilted read-out on
    the grid of ``step`` for which some leaf would need more than :data:`MAX_TILTED_CELLS` cells (a large
    tilt reaches far into a leaf's tail: subsampled mechanisms at small epsilon)."""
    for leaf in leaves:
        cells = _tilted_span(leaf, relation, step, lam, pessimistic) / step
        if cells > MAX_TILTED_CELLS:
            raise AccountingTooLargeError(
                f"PLDAccountant: the tilted read-out (lam={lam:.3g}) would need {cells:.3g} cells for a "
                f"{leaf.kind!r} leaf at step {step:.3g} (limit {MAX_TILTED_CELLS:.3g}); use the plain read-out, "
                "RDPAccountant or epsilon_upper", cells=cells)


def tilted_pld(leaves: Counter[Leaf], relation: str, step: float, lam: float, direction: int,
               pessimistic: bool = True) -> TiltedPLD:
    """Composition of ``leaves`` in one direction (0: remove, 1: add) tilted by ``lam`` on the
    pessimistic (upper bound) or optimistic (lower bound) grid of ``step``; refused
    (:func:`check_tilted_cells`) where a leaf's grid would be too large."""
    check_tilted_cells(leaves, relation, step, lam, pessimistic)
    total: TiltedPLD | None = None
    for leaf, count in sorted(leaves.items(), key=lambda item: repr(item[0])):
        pld = build_leaf(leaf, relation, step, pessimistic, lam=lam)[direction]
        part = TiltedPLD.tilt(pld, lam).self_compose(count)
        total = part if total is None else total.compose(part)
    assert total is not None
    return total


def _approx_log_mgf(pld: GridPLD, lams: np.ndarray, cells: int = 8192) -> np.ndarray:
    """ln M(lam) of a grid PLD's finite part, approximately (for choosing a tilt only): the masses pooled into at
    most ``cells`` blocks, each at its mass-weighted mean loss (error second order in the block width)."""
    block = max(1, -(-pld.pmf.size // cells))
    pad = (-pld.pmf.size) % block
    pmf = np.append(pld.pmf, np.zeros(pad)).reshape(-1, block)
    losses = np.append(pld.losses, np.zeros(pad)).reshape(-1, block)
    mass = pmf.sum(axis=1)
    keep = mass > 0
    if not keep.any():
        return np.full(np.shape(lams), -np.inf)
    mean = (pmf * losses).sum(axis=1)[keep] / mass[keep]
    exponents = np.log(mass[keep])[None, :] + lams[:, None] * mean[None, :]
    top = exponents.max(axis=1)
    return top + np.log(np.exp(exponents - top[:, None]).sum(axis=1))


def choose_tilts(leaves: Counter[Leaf], relation: str, step: float, *, target_delta: float | None = None,
                 target_epsilon: float | None = None) -> list[float]:
    """Per direction (remove, add; one entry when every leaf is symmetric) the lam minimising the
    Chernoff bound of the widest pessimistic grid: for a target delta min_lam (ln M(lam) - ln delta) / lam,
    for a target epsilon min_lam ln M(lam) - lam eps. Only tightness depends on it. The grid is ``step`` or,
    where the widest grid would exceed 2^17 cells, coarser (refused beyond :data:`MAX_TILTED_CELLS` cells at
    that coarser step); ln M is summed over every cell (pooling cells at a block's top loss would add lam
    times the block width per leaf, n times: at 10^5 steps it moved lam by a factor 3)."""
    totals = [np.zeros(_LAMBDAS.size), np.zeros(_LAMBDAS.size)]
    symmetric = True
    for leaf, count in leaves.items():
        span = _tilted_span(leaf, relation, step, math.inf, True)
        leaf_step = max(step, span / _CHOOSE_CELLS)
        remove, add = build_leaf(leaf, relation, leaf_step, True, lam=math.inf)  # widest grid
        totals[0] += count * _approx_log_mgf(remove, _LAMBDAS)
        if add is not remove:
            symmetric = False
        totals[1] += count * _approx_log_mgf(add, _LAMBDAS)
    lams = []
    for total in totals[:1] if symmetric else totals:
        if target_delta is not None:
            objective = (total - math.log(target_delta)) / _LAMBDAS
        else:
            objective = total - _LAMBDAS * float(target_epsilon)
        lams.append(float(_LAMBDAS[int(np.argmin(objective))]))
    return lams


def tilted_epsilon(leaves: Counter[Leaf], relation: str, step: float, target_delta: float,
                   pessimistic: bool = True) -> float:
    """Upper (pessimistic) or lower bound on epsilon(target_delta) of the composed pairs (both directions)."""
    lams = choose_tilts(leaves, relation, step, target_delta=target_delta)
    return max(tilted_pld(leaves, relation, step, lam, d, pessimistic).epsilon(target_delta)
               for d, lam in enumerate(lams))


def tilted_delta(leaves: Counter[Leaf], relation: str, step: float, target_epsilon: float,
                 pessimistic: bool = True) -> float:
    """Upper (pessimistic) or lower bound on delta(target_epsilon) of the composed pairs (both directions)."""
    lams = choose_tilts(leaves, relation, step, target_epsilon=target_epsilon)
    return max(tilted_pld(leaves, relation, step, lam, d, pessimistic).delta(target_epsilon)
               for d, lam in enumerate(lams))
