"""Discretised privacy loss distributions (PLDs) on a uniform grid: construction, FFT composition and
the (epsilon, delta) read-out, with every approximation on one declared side.

A PLD of an ordered pair (P, Q) is the law of the privacy loss L = ln(dP/dQ)(o), o ~ P; its hockey-stick
curve is delta(eps) = E_P[(1 - e^(eps - L))_+] + P(L = +inf) (Koskela, Jaelkoe & Honkela 2020; Sommer,
Meiser & Mohammadi 2019). Composition of mechanisms adds independent losses, so PLDs convolve.

Here a PLD lives on losses ``(offset + i) * step``, i = 0..n-1, plus a mass at +inf.

* **Pessimistic** (an upper bound on delta at every eps): each grid interval (e_i, e_{i+1}] of the exact
  PLD is replaced by two atoms at its ends that keep both its P-mass a and its Q-mass b ("connect the
  dots", Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022): P-mass (a - e^{e_i} b) / (1 - e^{-step})
  at e_{i+1}, the rest at e_i. Splitting an outcome into two is the inverse of merging them, so the new
  pair dominates the old one for every epsilon, also after composition (Blackwell). Mass below the grid
  is raised to its first point, mass above it is sent to +inf, and float errors are resolved towards
  larger losses. The error is second order in ``step`` per composition.
* **Optimistic** (a lower bound): the outcomes whose loss lies in the cell (e_i - step/2, e_i + step/2]
  are merged into one (a post-processing, so the pair becomes less informative); a merged cell whose
  likelihood ratio falls short of e^{e_i} absorbs just enough of the cell above (whose ratio exceeds
  e^{e_i}) to reach it, and every remaining ratio is rounded down to the grid. Where the loss
  accumulates (at its infimum or supremum, as for subsampled mechanisms) that rounding would lose up to
  a step of most of the mass per composition; there consecutive cells are merged into groups whose
  ratio is exactly a grid ratio instead (:mod:`.merging`), so the error stays second order in ``step``
  everywhere. Merging can only lower delta (Blackwell), and lowering losses too, also after
  composition. Atoms of discrete mechanisms are rounded down.

Numerical error. Every FFT convolution adds at most ``16 u log2(n) sqrt(n)`` (u = 2^-53) to a bound on the
l1 distance between the stored masses and those exact arithmetic would give (Higham 2002, Thm 24.2:
relative 2-norm error of a radix-2 FFT <= ~5u log2 n, converted to l1). Self-composition counts the error of
each squaring once per copy of its block in the result; where that would exceed ``PRECISE_BUDGET`` the
squaring (:meth:`GridPLD.square`) splits off its peak (a short extended-precision convolution plus a long
float64 one of the sparse rest, whose norms, and so bound, are small) or runs its FFTs in extended precision
(``np.longdouble``, bounded with its own unit round-off); a composition of two different peaked vectors can
split off both peaks the same way (:func:`_compose_split`, used by the tilted read-out). The FFT lengths are
``scipy.fft.next_fast_len(n, real=True)``, products of 2, 3 and 5, which numpy's pocketfft runs as radix-4, 2, 3
and 5 passes: the radix-2 argument of Higham's Thm 24.2 (a product of sparse butterfly stages, each with a small
relative error, Lemma 3.7) carries over pass by pass (mixed-radix analysis: Ramos 1971, Math. Comp. 25,
757-768): a radix-r pass of r-point butterflies has relative 2-norm error about (r + 1 + mu) u sqrt(r), within the
``8 * 1.5 * log2(r) u`` the bound charges per pass for r = 3, 4, 5 as for r = 2 (checked against exact integer
convolutions in the tests, at such lengths). Since every weight in delta(eps)
lies in [0, 1], that bound is added to (pessimistic) or subtracted from (optimistic) every delta read
out; sums carry a further relative ``n u``. Truncating tail mass below ``TAIL_MASS`` per operation is
done on the declared side (pessimistic: into +inf or up to the first grid point), so it is not an
error but costs at most that mass in delta.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.fft

from .merging import merge_onto_grid

__all__ = ["GridPLD", "TAIL_MASS", "PRECISE_BUDGET", "budgets", "tail_mass", "error_budget", "convolution_error", "compose_split_error", "squaring_error", "from_interval_masses", "from_centred_masses", "from_atoms", "binomial_rr", "identity"]

#: Tail mass cut off (on the declared side) after every convolution.
TAIL_MASS = 1e-15
#: Self-composition: a squaring whose float64 error bound, times the copies of the squared block in the
#: result, would exceed this runs its FFTs in extended precision (``np.longdouble``).
PRECISE_BUDGET = 1e-10
_BUDGETS: ContextVar[tuple[float, float]] = ContextVar("pld_budgets", default=(TAIL_MASS, PRECISE_BUDGET))


@contextmanager
def budgets(tail: float, error: float) -> Iterator[None]:
    """Within the block, tail mass cut per operation (leaf construction and every convolution; default
    :data:`TAIL_MASS`) and the float error a self-composition's squarings may charge (default
    :data:`PRECISE_BUDGET`) are ``tail`` and ``error``: an accountant planning for a small target delta
    lowers both (they are charged to delta in full). Only tightness and cost depend on them."""
    token = _BUDGETS.set((float(tail), float(error)))
    try:
        yield
    finally:
        _BUDGETS.reset(token)


def tail_mass() -> float:
    """The tail mass cut per operation in the current :func:`budgets` context."""
    return _BUDGETS.get()[0]


def error_budget() -> float:
    """The squarings' float error budget in the current :func:`budgets` context."""
    return _BUDGETS.get()[1]
_U = 2.0**-53
_PEAK_CELLS = 1024  # squarings split off a peak of at most this many cells, summed directly (_square_split)
_U_EXTENDED = float(np.finfo(np.longdouble).epsneg)  # unit round-off of the extended-precision FFTs
_FLUSH = 1e-250
_MAX_MULTI_BORROW = 256  # optimistic construction: heavy cells fixed from several cells above
_MAX_REACH = 4096  # masses below this are set to 0 (their total is counted in the error bound)
_HEAD_CELLS = 64  # optimistic compositions: the largest cells convolved directly (_convolve_heads)
_FIRST_COARSE_LEVEL = 6  # multi-resolution self-composition: first halving of the grid at 2^6 copies,
_LEVELS_PER_HALVING = 2  # then one every second squaring (4 times the copies: twice the loss spread)


@dataclass(frozen=True, eq=False)
class GridPLD:
    """P-masses of the privacy loss on the grid ``(offset + i) * step`` plus a mass at +inf.

    ``error`` bounds the l1 distance of ``pmf`` from its exact-arithmetic value; ``pessimistic`` says
    which side every approximation was taken on (True: delta is over-estimated).
    """

    step: float
    offset: int
    pmf: np.ndarray
    inf_mass: float
    error: float
    pessimistic: bool

    # ------------------------------------------------------------------ composition
    def compose(self, other: GridPLD, tail_mass: float | None = None, precise: bool = False) -> GridPLD:
        """The PLD of running both mechanisms (convolution of the finite parts; ``precise``: FFTs in
        extended precision, :func:`_convolve`)."""
        _check_compatible(self, other)
        tail_mass = _current_tail(tail_mass)
        pmf, err, level = (_convolve(self.pmf, other.pmf, precise) if self.pessimistic or precise
                           else _convolve_heads(self.pmf, other.pmf))
        inf_mass = 1.0 - (1.0 - self.inf_mass) * (1.0 - other.inf_mass)
        error = self.error * other.pmf.sum() + other.error * self.pmf.sum() + err + self.error * other.error
        result = GridPLD(self.step, self.offset + other.offset, pmf, inf_mass, error, self.pessimistic)
        return result.truncate(tail_mass, noise=level)

    def square(self, tail_mass: float | None = None, error_budget: float = math.inf) -> GridPLD:
        """``self.compose(self)``, with the float error kept within ``error_budget`` where it can be: the
        plain float64 FFT when its bound is within it, else the peak split off (:func:`_square_split`) when
        that bound is, else extended precision."""
        pmf = self.pmf
        tail_mass = _current_tail(tail_mass)
        if pmf.size <= 64 or convolution_error(pmf) <= error_budget:
            return self.compose(self, tail_mass)
        split = _split_peak(pmf)
        if split is not None and _split_error(pmf, *split) <= error_budget:
            out, err, level = _square_split(pmf, *split)
            inf_mass = 1.0 - (1.0 - self.inf_mass) ** 2
            total = float(pmf.sum())
            error = 2.0 * self.error * total + err + self.error * self.error
            return GridPLD(self.step, 2 * self.offset, out, inf_mass, error, self.pessimistic).truncate(tail_mass, noise=level)
        return self.compose(self, tail_mass, precise=True)

    def self_compose(self, count: int, tail_mass: float | None = None, final_step: float | None = None) -> GridPLD:
        """``count``-fold composition by exponentiation by squaring (O(log count) convolutions).

        Multi-resolution (pessimistic only): with ``final_step`` = 2^r ``step``, the squared block (2^l
        copies of the leaf) is coarsened by 2 (:meth:`coarsen`) at levels l = 6, 8, 10, ... until the grid
        is ``final_step``, and the result ends there. A split onto a grid of step h adds at most h^2 / 4 to
        the loss variance of each atom (h^2 / 8 on average for a block already on the half grid), once
        per copy of the block: coarsening the 2^l-fold block to 2^(c+1) step at l = 2c + 6 adds about
        count step^2 / 128, against about count step^2 / 6 for the leaf's own connect-the-dots split, so
        the total error stays close to that of the fine leaf while every later FFT runs on the coarser
        grid."""
        if count < 1:
            raise ValueError("count must be >= 1")
        tail = _current_tail(tail_mass)
        budget = _BUDGETS.get()[1]
        # the squared block's float error is counted once per copy of it in the result (``count`` copies):
        # where that would exceed PRECISE_BUDGET the squaring splits off its peak (_square_split) or, where
        # that is not enough, runs in extended precision
        return multiresolution_power(self, count, final_step,
                                     compose=lambda result, power, left: result.compose(power, tail),
                                     square=lambda power, left: power.square(tail, budget / left))

    def coarsen(self, factor: int) -> GridPLD:
        """The PLD on the grid of step ``factor * step`` (pessimistic only): every atom is split onto the two
        coarse grid points around it keeping its P- and Q-mass (connect the dots; Doroshenko et al. 2022),
        the inverse of a merge, so the new pair dominates the old one also after composition. An atom
        r fine cells above its coarse point sends the fraction (1 - e^{-r step}) / (1 - e^{-factor step})
        of its P-mass up."""
        if factor == 1:
            return self
        if not self.pessimistic or factor < 1:
            raise ValueError("only pessimistic PLDs are coarsened, by an integer factor >= 1")
        base, lead = divmod(self.offset, factor)  # the first fine cell is ``lead`` cells above coarse point ``base``
        blocks = -(-(lead + self.pmf.size) // factor)
        fine = np.zeros(blocks * factor)
        fine[lead:lead + self.pmf.size] = self.pmf
        fine = fine.reshape(blocks, factor)  # row j: the fine cells r = 0..factor-1 above coarse point base + j
        up_share = np.expm1(-np.arange(factor) * self.step) / np.expm1(-factor * self.step)
        up = fine @ up_share
        pmf = np.zeros(blocks + 1)
        pmf[:-1] = fine @ (1.0 - up_share)
        pmf[1:] += up
        if pmf[-1] == 0.0:
            pmf = pmf[:-1]
        error = self.error + 16.0 * _U * float(self.pmf.sum())  # the split fractions and sums, a few ulps each
        return GridPLD(self.step * factor, base, pmf, self.inf_mass, error, True)

    def truncate(self, tail_mass: float | None = None, noise: float = 0.0) -> GridPLD:
        """Cut both tails on the declared side: the cells outside the first and last cell above the
        round-off ``noise`` level, and then at most ``tail_mass / 2`` of mass at each end.

        Pessimistic: the upper tail goes to +inf and the lower tail up to the first kept cell, which
        can only raise delta (by at most the mass moved). Optimistic: both tails are dropped."""
        pmf = self.pmf
        if pmf.size <= 1:
            return self
        tail_mass = _current_tail(tail_mass)
        above = pmf > noise
        lo = int(above.argmax())
        if not above[lo]:
            return self
        hi = pmf.size - int(above[::-1].argmax())
        half = 0.5 * tail_mass
        lo += _cells_within(pmf[lo:hi], half)
        hi -= _cells_within(pmf[lo:hi][::-1], half)
        if hi <= lo:  # nearly all mass in a handful of cells: keep them all
            return self
        if lo == 0 and hi == pmf.size:
            return self
        new = pmf[lo:hi].copy()
        inf_mass = self.inf_mass
        if self.pessimistic:
            new[0] += float(pmf[:lo].sum())  # raised losses: pessimistic
            inf_mass = inf_mass + float(pmf[hi:].sum())
        return replace(self, offset=self.offset + lo, pmf=new, inf_mass=min(1.0, inf_mass))

    def mixture(self, other: GridPLD, weight: float) -> GridPLD:
        """The PLD of the pair (w P1 + (1-w) P2, w Q1 + (1-w) Q2) when both pairs share outcomes only
        through equal losses; used for mixtures with a fresh loss-0 outcome."""
        _check_compatible(self, other)
        lo = min(self.offset, other.offset)
        hi = max(self.offset + self.pmf.size, other.offset + other.pmf.size)
        pmf = np.zeros(hi - lo)
        pmf[self.offset - lo:self.offset - lo + self.pmf.size] += weight * self.pmf
        pmf[other.offset - lo:other.offset - lo + other.pmf.size] += (1.0 - weight) * other.pmf
        return GridPLD(self.step, lo, pmf, weight * self.inf_mass + (1 - weight) * other.inf_mass,
                       weight * self.error + (1 - weight) * other.error, self.pessimistic)

    def plus(self, other: GridPLD) -> GridPLD:
        """Sum of the masses of two parts of one PLD (for example continuous part and atoms)."""
        return self.mixture(other, 0.5)._scaled(2.0)

    def _scaled(self, factor: float) -> GridPLD:
        return replace(self, pmf=self.pmf * factor, inf_mass=self.inf_mass * factor, error=self.error * factor)

    # ------------------------------------------------------------------ read-out
    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(self.pmf.size)) * self.step

    def delta(self, epsilon: float) -> float:
        """delta(epsilon) = sum_i p_i (1 - e^(eps - l_i))_+ + p_inf, moved outward by the error bound."""
        losses = self.losses
        mask = losses > epsilon
        raw = float(np.sum(self.pmf[mask] * -np.expm1(epsilon - losses[mask]))) + self.inf_mass
        slack = raw * (mask.sum() + 4) * _U
        if self.pessimistic:
            return min(1.0, raw + slack + self.error)
        return max(0.0, raw - slack - self.error)

    def epsilon(self, target_delta: float) -> float:
        """Smallest eps >= 0 with delta(eps) <= target_delta (inf if none); on the declared side."""
        floor_mass = self.inf_mass + (self.error if self.pessimistic else -self.error)
        if self.pessimistic and floor_mass >= target_delta:
            return math.inf
        if self.delta(0.0) <= target_delta:
            return 0.0
        losses = self.losses
        positive = np.flatnonzero(losses > 0.0)
        if positive.size == 0:
            return 0.0
        # delta is decreasing: binary search for the first positive grid loss where it is within target
        lo, hi = 0, positive.size - 1
        if self.delta(float(losses[positive[hi]])) > target_delta:
            return math.inf
        while lo < hi:
            mid = (lo + hi) // 2
            if self.delta(float(losses[positive[mid]])) <= target_delta:
                hi = mid
            else:
                lo = mid + 1
        j = int(positive[lo])
        right = float(losses[j])
        left = 0.0 if lo == 0 else float(losses[positive[lo - 1]])
        # on [left, right] delta(eps) = A - e^{eps - left} B' with A, B' over losses > left
        above = losses > left
        fudge = self.error if self.pessimistic else -self.error
        big_a = float(self.pmf[above].sum()) + self.inf_mass + fudge
        b_rel = float((self.pmf[above] * np.exp(left - losses[above])).sum())
        eps = right
        if b_rel > 0 and big_a > target_delta:
            eps = min(max(left + math.log(big_a - target_delta) - math.log(b_rel), left), right)
        if self.pessimistic:
            return _nudge_up(self, eps, target_delta, right)
        return max(0.0, eps - 8 * math.ulp(eps) - 1e-12 * eps)


def _cells_within(masses: np.ndarray, budget: float) -> int:
    """How many leading cells hold at most ``budget`` of mass together (cumulative sums over a growing
    prefix only: the tails cut are a handful of cells)."""
    size = 64
    while True:
        cum = np.cumsum(masses[:size])
        cells = int(np.searchsorted(cum, budget, side="right"))
        if cells < cum.size or size >= masses.size:
            return cells
        size *= 8


def _nudge_up(pld: GridPLD, eps: float, target: float, cap: float) -> float:
    """Raise eps until the directly summed (outward-rounded) delta is within target."""
    for _ in range(60):
        if pld.delta(eps) <= target:
            return eps
        eps = min(cap, eps + max(1e-12 * abs(eps), 4 * math.ulp(eps), 1e-300)) if eps < cap else eps
        if eps >= cap:
            return cap if pld.delta(cap) <= target else math.nextafter(cap, math.inf)
    return cap


def _current_tail(tail: float | None) -> float:
    return _BUDGETS.get()[0] if tail is None else tail


def _check_compatible(a: GridPLD, b: GridPLD) -> None:
    if a.step != b.step or a.pessimistic != b.pessimistic:
        raise ValueError("PLDs on different grids or of different sides cannot be combined")


def _convolve(a: np.ndarray, b: np.ndarray, precise: bool = False) -> tuple[np.ndarray, float, float]:
    """Linear convolution via real FFT with negative round-off clipped.

    Returns (result, l1 error bound, per-entry noise level). Error analysis (Higham 2002, Thm 24.2):
    a radix-2 FFT has relative 2-norm error <= c u log2 n (c ~ 5), so the 2-norm error of the product
    is <= c u log2 n (2 |a|_2 |b|_1 + |a|_1 |b|_2) and its l1 error <= sqrt(n) times that.
    ``precise``: the FFTs run in extended precision (``np.longdouble``, its own unit round-off u' in the
    bound: 2^-64 on x86, 2^-53 where it is plain double) and the result is rounded to float64, which adds
    a relative u to every entry, at most u |a|_1 |b|_1 in l1.
    """
    n = a.size + b.size - 1
    sum_a = float(a.sum())
    sum_b = sum_a if b is a else float(b.sum())
    if min(a.size, b.size) <= 64:
        out = np.convolve(a, b)
        level = 2.0 * _U * min(a.size, b.size) * float(a.max() * b.max() + 1e-300)
        return out, 2.0 * _U * min(a.size, b.size) * sum_a * sum_b, level
    norm_a = math.sqrt(float(np.square(a).sum()))  # no BLAS: its threads cost more than they save here
    norm_b = norm_a if b is a else math.sqrt(float(np.square(b).sum()))
    norms = norm_a * sum_b + sum_a * norm_b
    size = scipy.fft.next_fast_len(n, real=True)
    unit = _U_EXTENDED if precise else _U
    # the product of the transforms is taken in place (the same arithmetic, one large temporary fewer)
    if precise:
        fa = np.fft.rfft(a.astype(np.longdouble), size)
        fb = fa if b is a else np.fft.rfft(b.astype(np.longdouble), size)
        out = np.fft.irfft(np.multiply(fa, fb, out=fa), size)[:n].astype(np.float64)
    else:
        fa = np.fft.rfft(a, size)  # numpy's pocketfft: the same transform without scipy's dispatch overhead
        fb = fa if b is a else np.fft.rfft(b, size)
        out = np.fft.irfft(np.multiply(fa, fb, out=fa), size)[:n]
    out[out < _FLUSH] = 0.0  # negative round-off and subnormal noise (far below the error bound)
    bound_2 = _fft_bound_2(unit, size, norms)
    rounding = 2.0 * _U * sum_a * sum_b if precise else 0.0  # the cast to float64
    # cells below the typical round-off level (2-norm spread over the cells) carry no information
    return out, bound_2 * math.sqrt(size) + n * _FLUSH + rounding, 4.0 * bound_2 / math.sqrt(size)


def _split_peak(a: np.ndarray) -> tuple[int, int] | None:
    """(start, width) of the window of at most _PEAK_CELLS cells holding the most mass, when the rest holds
    at most a tenth of it; else None."""
    width = min(_PEAK_CELLS, a.size)
    cum = np.concatenate(([0.0], np.cumsum(a)))
    window = cum[width:] - cum[:-width]
    start = int(window.argmax())
    if cum[-1] - window[start] > 0.1 * cum[-1]:
        return None
    return start, width


def _split_error(a: np.ndarray, start: int, width: int) -> float:
    """The l1 error bound of :func:`_square_split` (computed there too)."""
    return _square_split(a, start, width, bound_only=True)[1]


def _square_split(a: np.ndarray, start: int, width: int, bound_only: bool = False
                  ) -> tuple[np.ndarray | None, float, float]:
    """a * a with the peak w = a[start:start + width] split off: a * a = w * w + r * (a + w), r = a - w (w and r
    as full-length vectors; both exact in floats). w * w is a short convolution run in extended precision
    (:func:`_convolve`, with its bound), r * (a + w) a long one in float64 with the bound of :func:`_convolve`
    on its own norms (|r|_1 and |r|_2 are small when the mass sits in the peak: that is the point), and the
    two are added (a relative u, at most 2 u |a|_1^2 in l1). Returns (result, l1 error bound,
    per-entry noise level); with ``bound_only`` the result is None and only the bound is computed."""
    peak = a[start:start + width]
    total, peak_mass = float(a.sum()), float(peak.sum())
    norm_a2, peak_2 = float(np.square(a).sum()), float(np.square(peak).sum())
    rest_1 = max(0.0, total - peak_mass) * (1 + a.size * _U)
    rest_2 = math.sqrt(max(0.0, norm_a2 - peak_2) + 4 * a.size * _U * norm_a2)
    b_1, b_2 = total + peak_mass, math.sqrt(norm_a2) + math.sqrt(peak_2)
    n = 2 * a.size - 1
    size = scipy.fft.next_fast_len(n, real=True)
    bound_2 = _fft_bound_2(_U, size, rest_2 * b_1 + rest_1 * b_2)
    core_size = scipy.fft.next_fast_len(2 * width - 1, real=True)
    core_bound = (_fft_bound_2(_U_EXTENDED, core_size, 2.0 * peak_mass * math.sqrt(peak_2)) * math.sqrt(core_size)
                  + 2.0 * _U * peak_mass**2)
    error = bound_2 * math.sqrt(size) + core_bound + 2.0 * _U * total * total + n * _FLUSH
    level = 4.0 * bound_2 / math.sqrt(size)
    if bound_only:
        return None, error, level
    rest = a.copy()
    rest[start:start + width] = 0.0
    b = a.copy()
    b[start:start + width] += peak
    out = np.fft.irfft(np.fft.rfft(rest, size) * np.fft.rfft(b, size), size)[:n]
    out[2 * start:2 * start + 2 * width - 1] += _convolve(peak, peak, precise=True)[0]
    out[out < _FLUSH] = 0.0
    return out, error, level


def _compose_split(a: np.ndarray, b: np.ndarray, split_a: tuple[int, int], split_b: tuple[int, int],
                   bound_only: bool = False) -> tuple[np.ndarray | None, float, float]:
    """a * b with both peaks split off (:func:`_square_split` for two different vectors): with a = w + r and
    b = v + s (w, v the peak windows ``split_a``, ``split_b``; r, s the rest, as full-length vectors, exact in
    floats), a * b = w * v + r * b + w * s. w * v is a short extended-precision convolution; r * b and w * s
    are float64 FFT convolutions (:func:`_convolve`, each with its own bound on its own norms: small when the
    mass sits in the peaks, since |r|, |s| are); the three are added (two float64 additions of non-negative
    sums: at most 2 u |a|_1 |b|_1 in l1, plus the parts' own errors). Returns (result, l1 error bound,
    per-entry noise level); with ``bound_only`` the result is None and only the bound is computed."""
    (start_a, width_a), (start_b, width_b) = split_a, split_b
    peak_a, peak_b = a[start_a:start_a + width_a], b[start_b:start_b + width_b]
    rest_a, rest_b = a.copy(), b.copy()
    rest_a[start_a:start_a + width_a] = 0.0
    rest_b[start_b:start_b + width_b] = 0.0
    n = a.size + b.size - 1
    sum_a, sum_b = float(a.sum()), float(b.sum())
    margin_a, margin_b = 1.0 + 2 * a.size * _U, 1.0 + 2 * b.size * _U  # the float sums of the norms below
    r_1, r_2 = float(rest_a.sum()) * margin_a, math.sqrt(float(np.square(rest_a).sum()) * margin_a)
    s_1, s_2 = float(rest_b.sum()) * margin_b, math.sqrt(float(np.square(rest_b).sum()) * margin_b)
    w_1, w_2 = float(peak_a.sum()) * margin_a, math.sqrt(float(np.square(peak_a).sum()) * margin_a)
    b_1, b_2 = sum_b * margin_b, math.sqrt(float(np.square(b).sum()) * margin_b)
    size_rb = scipy.fft.next_fast_len(n, real=True)
    size_ws = scipy.fft.next_fast_len(width_a + b.size - 1, real=True)
    long_rb = _fft_bound_2(_U, size_rb, r_2 * b_1 + r_1 * b_2)
    long_ws = _fft_bound_2(_U, size_ws, w_2 * s_1 + w_1 * s_2)
    v_1, v_2 = float(peak_b.sum()) * margin_b, math.sqrt(float(np.square(peak_b).sum()) * margin_b)
    if min(width_a, width_b) <= 64:  # :func:`_convolve` sums short products directly
        core_bound = 2.0 * _U * min(width_a, width_b) * w_1 * v_1
    else:
        core_size = scipy.fft.next_fast_len(width_a + width_b - 1, real=True)
        core_bound = (_fft_bound_2(_U_EXTENDED, core_size, w_2 * v_1 + w_1 * v_2) * math.sqrt(core_size)
                      + 2.0 * _U * w_1 * v_1 + (width_a + width_b) * _FLUSH)
    error = (long_rb * math.sqrt(size_rb) + long_ws * math.sqrt(size_ws) + core_bound
             + 2.0 * _U * sum_a * sum_b * (1 + 1e-6) + 2 * n * _FLUSH)
    level = 4.0 * (long_rb / math.sqrt(size_rb) + long_ws / math.sqrt(size_ws))
    if bound_only:
        return None, error, level
    out = np.fft.irfft(np.fft.rfft(rest_a, size_rb) * np.fft.rfft(b, size_rb), size_rb)[:n]
    out[start_a:start_a + width_a + b.size - 1] += np.fft.irfft(
        np.fft.rfft(peak_a, size_ws) * np.fft.rfft(rest_b, size_ws), size_ws)[:width_a + b.size - 1]
    start = start_a + start_b
    out[start:start + width_a + width_b - 1] += _convolve(peak_a, peak_b, precise=True)[0]
    out[out < _FLUSH] = 0.0
    return out, error, level


def compose_split_error(a: np.ndarray, b: np.ndarray) -> float:
    """The l1 error bound of :func:`_compose_split` on the peaks :func:`_split_peak` finds, or inf when either
    vector's mass is not in a peak."""
    split_a, split_b = _split_peak(a), _split_peak(b)
    if split_a is None or split_b is None:
        return math.inf
    return _compose_split(a, b, split_a, split_b, bound_only=True)[1]


def _fft_bound_2(unit: float, size: int, norms: float) -> float:
    """2-norm error bound of an FFT convolution of length ``size`` with ``norms`` = |a|_2 |b|_1 + |a|_1 |b|_2."""
    return 8.0 * unit * math.log2(size) * 1.5 * norms


def convolution_error(a: np.ndarray) -> float:
    """The l1 error bound :func:`_convolve` charges for squaring ``a`` in float64 (FFT path), from its norms."""
    size = scipy.fft.next_fast_len(2 * a.size - 1, real=True)
    norms = 2.0 * float(a.sum()) * math.sqrt(float(np.square(a).sum()))
    return _fft_bound_2(_U, size, norms) * math.sqrt(size)


def squaring_error(a: np.ndarray, budget: float) -> float:
    """The l1 float error bound :meth:`GridPLD.square` charges for squaring ``a`` (its own arithmetic, not the
    error ``a`` already carries) under ``error_budget`` = ``budget``: the float64 FFT's, else that of the peak
    split off, else that of extended precision; computed from the norms alone (no convolution)."""
    if a.size <= 64:
        return 2.0 * _U * a.size * float(a.sum()) ** 2
    plain = convolution_error(a)
    if plain <= budget:
        return plain
    split = _split_peak(a)
    if split is not None:
        error = _split_error(a, *split)
        if error <= budget:
            return error
    size = scipy.fft.next_fast_len(2 * a.size - 1, real=True)
    total = float(a.sum())
    norms = 2.0 * total * math.sqrt(float(np.square(a).sum()))
    return _fft_bound_2(_U_EXTENDED, size, norms) * math.sqrt(size) + 2.0 * _U * total * total


def _convolve_heads(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float, float]:
    """:func:`_convolve` with the ``_HEAD_CELLS`` largest masses of each side convolved directly.

    The FFT's error bound grows with the 2-norms of its inputs, and a PLD whose mass sits in a few cells
    (a subsampled mechanism's accumulation, and its first self-compositions) has a 2-norm close to its
    mass; the bound of each early squaring is then multiplied by every later one (in a 10^6-fold
    composition it reaches ~1e-6). With a = s_a + r_a (s_a: the head cells), a * b = s_a * b + r_a * s_b +
    r_a * r_b: the first two are sums of at most ``_HEAD_CELLS`` shifted vectors each (l1 error at most
    2 (2 _HEAD_CELLS + 1) u |a|_1 |b|_1), the last an FFT of the tails, whose 2-norms are far smaller.
    Used when it lowers the 2-norms by at least 4x; otherwise the plain FFT."""
    if min(a.size, b.size) <= 4 * _HEAD_CELLS:
        return _convolve(a, b)
    head_a, rest_a = _split_head(a)
    head_b, rest_b = (head_a, rest_a) if b is a else _split_head(b)
    if head_a is None or head_b is None:
        return _convolve(a, b)
    out, err, level = _convolve(rest_a, rest_b)
    for i in head_a:
        out[i:i + b.size] += a[i] * b
    for j in head_b:
        out[j:j + rest_a.size] += b[j] * rest_a
    err += 2.0 * (2 * _HEAD_CELLS + 1) * _U * float(a.sum()) * float(b.sum())
    return out, err, level


def _split_head(a: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(indices of the ``_HEAD_CELLS`` largest entries, ``a`` without them), or (None, a) when removing
    them does not lower the 2-norm by at least 4x."""
    head = np.argpartition(a, a.size - _HEAD_CELLS)[a.size - _HEAD_CELLS:]
    rest = a.copy()
    rest[head] = 0.0
    if 16.0 * float(np.square(rest).sum()) > float(np.square(a).sum()):
        return None, a
    return np.sort(head), rest


def identity(step: float, pessimistic: bool = True) -> GridPLD:
    """The PLD of a mechanism that reveals nothing (all mass at loss 0)."""
    return GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)


def from_interval_masses(step: float, first: int, mass_p: np.ndarray, scaled_q: np.ndarray,
                         err_p: np.ndarray, err_q: np.ndarray, below: float, above: float,
                         inf_mass: float, pessimistic: bool, tail: float | None = None) -> GridPLD:
    """A grid PLD from the exact masses of the loss intervals (e_k, e_{k+1}], e_k = (first + k) step.

    Args:
        mass_p: P-mass of each interval (length m; the grid has m + 1 points).
        scaled_q: e^{e_k} times the Q-mass of each interval (kept in this form to avoid underflow).
        err_p, err_q: bounds on the absolute float error of each entry of mass_p, scaled_q.
        below: P-mass of losses <= e_0; above: P-mass of finite losses > e_m; inf_mass: P(L = +inf).
        tail: mass cut off each end on the declared side (0: keep every cell, for the tilted read-out; None:
            1e-3 of the current :func:`tail_mass`).
    """
    tail = 1e-3 * tail_mass() if tail is None else tail
    m = mass_p.size
    pmf = np.zeros(m + 1)
    a = np.clip(mass_p, 0.0, None)
    if pessimistic:
        tb = np.clip(scaled_q, 0.0, None)
        # (a - t b) is the P-mass excess over the left end's likelihood ratio; its error is resolved
        # upwards (more mass to the right end is pessimistic).
        excess = a - tb + (err_p + err_q + 4 * _U * (a + tb))
        right = np.clip(excess / -math.expm1(-step), 0.0, a)
        pmf[1:] += right
        pmf[:-1] += a - right
        pmf[0] += max(0.0, below)
        inf_total = inf_mass + max(0.0, above)
        err = 0.0
    else:
        pmf[:-1] += a  # round every loss down to the left end of its interval
        pmf[-1] += max(0.0, above)  # finite losses above the grid, rounded down to its top
        inf_total = inf_mass  # mass below the grid dropped
        err = 0.0
    pmf[pmf < _FLUSH] = 0.0
    pld = GridPLD(step, first, pmf, min(1.0, inf_total), err + pmf.size * _FLUSH, pessimistic)
    return pld.truncate(tail) if tail > 0 else pld


def from_centred_masses(step: float, first: int, mass_p: np.ndarray, scaled_q: np.ndarray,
                        err_p: np.ndarray, err_q: np.ndarray, above: float, inf_mass: float,
                        tail: float | None = None) -> GridPLD:
    """Optimistic grid PLD from the masses of the cells (e_k - step/2, e_k + step/2], e_k = (first + k) step.

    The merged cells are grouped (consecutive cells and fractions of cells) so that each group's ratio
    is exactly a grid ratio, or rounded down where that is cheaper (:func:`.merging.merge_onto_grid`:
    second order in the step, also where the loss accumulates). Float errors are resolved downward.
    Mass below the first cell is dropped; finite mass above the last is rounded down onto it.
    """
    tail = 1e-3 * tail_mass() if tail is None else tail
    a = np.clip(mass_p, 0.0, None)
    tb = np.clip(scaled_q, 0.0, None)  # e^{e_k} b_k
    err = err_p + err_q + 4 * _U * (a + tb)
    # where the Q-mass underflowed the ratio is unknown: such cells are rounded down a whole step
    known = (tb > 1e-290) | (a == 0.0)
    pmf = merge_onto_grid(step, a, tb, err, known)  # index 0 is e_{first - 1}
    pmf[-1] += max(0.0, above)
    pmf[pmf < _FLUSH] = 0.0
    pld = GridPLD(step, first - 1, pmf, min(1.0, inf_mass), 0.0, False)
    return pld.truncate(tail) if tail > 0 else pld


def from_atoms(step: float, losses: np.ndarray, masses_p: np.ndarray, inf_mass: float,
               pessimistic: bool) -> GridPLD:
    """A grid PLD from finitely many atoms (loss, P-mass); each atom is split onto the two grid
    points around it keeping its P- and Q-mass (pessimistic) or rounded down (optimistic). (Millions of atoms
    come from lattice laws: the arithmetic runs in place, on as few temporary arrays as it can.)"""
    losses = np.asarray(losses, dtype=float)
    masses_p = np.asarray(masses_p, dtype=float)
    keep = masses_p > 0
    if not keep.all():
        losses, masses_p = losses[keep], masses_p[keep]
    work = np.divide(losses, step)
    np.floor(work, out=work)  # the cell below each atom, as a float (exact: an integer below 2^53)
    idx = work.astype(np.int64)
    first = int(idx.min())
    size = int(idx.max()) - first + 2
    idx -= first
    pmf = np.zeros(size)
    if pessimistic:
        np.multiply(work, step, out=work)  # frac = losses - lower * step, clipped to [0, step]
        np.subtract(losses, work, out=work)
        np.clip(work, 0.0, step, out=work)
        positive = work > 0
        # P-mass to the right end: m (1 - e^{-frac}) / (1 - e^{-step}); rounding resolved upwards
        np.negative(work, out=work)
        np.expm1(work, out=work)
        np.negative(work, out=work)
        np.multiply(masses_p, work, out=work)
        right = np.divide(work, -math.expm1(-step), out=work)
        slack = np.multiply(masses_p, 4 * _U)
        np.multiply(slack, positive, out=slack)
        np.multiply(right, 1 + 8 * _U, out=right)
        np.add(right, slack, out=right)
        np.minimum(masses_p, right, out=right)
        pmf[1:] += np.bincount(idx, right, minlength=size - 1)  # (np.add.at's sums, in one pass each)
        pmf += np.bincount(idx, np.subtract(masses_p, right, out=slack), minlength=size)
    else:
        pmf += np.bincount(idx, masses_p, minlength=size)
    pld = GridPLD(step, first, pmf, inf_mass, 0.0, pessimistic)
    return pld.truncate(0.0)


def binomial_rr(step: float, cells: int, count: int, p_high: float, pessimistic: bool) -> GridPLD:
    """The exact ``count``-fold composition of binary randomized response whose losses +-eps sit on the
    grid (eps = cells * step): loss (2j - count) eps with Binomial(count, p_high) mass, evaluated in log
    space (relative error ~1e-13 per cell, counted in the error bound)."""
    from scipy.special import gammaln  # local: only needed here

    j = np.arange(count + 1, dtype=float)
    log_pmf = (gammaln(count + 1.0) - gammaln(j + 1.0) - gammaln(count - j + 1.0)
               + j * math.log(p_high) + (count - j) * math.log1p(-p_high))
    masses = np.exp(log_pmf)
    pmf = np.zeros(2 * count * cells + 1)
    pmf[(2 * np.arange(count + 1)) * cells] = masses
    # absolute error of each log-mass (gammaln and the products, as in optimal.py) -> relative error
    log_error = 32 * _U * (float(gammaln(count + 1.0)) + count * (abs(math.log(p_high)) + abs(math.log1p(-p_high))) + 1)
    error = math.expm1(log_error) * float(masses.sum()) + (count + 1) * 4 * _U
    pld = GridPLD(step, -count * cells, pmf, 0.0, error, pessimistic)
    return pld.truncate()


def multiresolution_power(leaf: Any, count: int, final_step: float | None,
                          compose: Callable[[Any, Any, int], Any], square: Callable[[Any, int], Any]) -> Any:
    """``count``-fold composition of ``leaf`` by exponentiation by squaring, multi-resolution with
    ``final_step`` (see :meth:`GridPLD.self_compose`): the squared block is coarsened by 2 at levels 6, 8,
    10, ... until its grid is ``final_step``, and the result ends there. ``compose(result, power, count)``
    and ``square(power, count)`` do the work (``count``: the copies still to take, before and after the
    halving of the exponent), so that each PLD type keeps its own error budgets."""
    result = None
    power = leaf
    level, halvings = 0, 0
    while True:
        if count & 1:
            result = power if result is None else compose(result, power, count)
        count >>= 1
        if not count:
            break
        power = square(power, count)
        level += 1
        if (final_step is not None and power.step * 1.5 < final_step
                and level >= _LEVELS_PER_HALVING * halvings + _FIRST_COARSE_LEVEL):
            power = power.coarsen(2)
            halvings += 1
        if result is not None and result.step < power.step:
            result = result.coarsen(round(power.step / result.step))
    assert result is not None
    if final_step is not None and result.step * 1.5 < final_step:
        result = result.coarsen(round(final_step / result.step))
    return result
