"""Laws of sums of lognormal likelihood ratios on a lattice, each rounding on a declared side: the numerical
core of random-allocation accounting (:mod:`..families.random_allocation`).

With s = 1 / z and the Gaussian outputs of t steps in units of the noise, the likelihood ratio of one step is
Y = exp(s x - s^2 / 2): LN(-s^2/2, s^2) when the record is absent from the step ("base" summand) and
LN(+s^2/2, s^2) when it is present ("shifted" summand). Two kinds of law are computed here (analysis ours):

* :func:`bracketed_sum_law`: a variable S' on the lattice with S' >= S (``up``) or S' <= S (not ``up``)
  **pointwise**, S the exact sum: each summand is rounded up (down) to the lattice of step h0, and whenever a
  partial sum's law outgrows the cell budget its lattice step is doubled, the partial sum rounded up (down)
  again. A partial sum of 2^j summands is rounded at most once per doubling, and it appears t / 2^j times in
  S, so S' - S stays within t h0 + sum_j (t / 2^j) h_j, about 3.4 t h0 when the step doubles every other
  squaring (the spread of a partial sum grows like sqrt(2^j)), rather than the t h of one fine lattice.
  The returned ``slack`` is that bound.
* :func:`exact_sum_law`: the exact law of the statistic T = sum of the summands each rounded down to the
  lattice (one fixed function of the outputs, no further rounding), for any number of shifted summands:
  the data-processing inequality makes the pair of its laws a lower bound on the privacy of the outputs.

Both are t-fold FFT convolutions by squaring. Tails below ``_TAIL`` per operation are cut: pessimistically
(``worst``: moved to the worst end) for the bracketing laws, dropped otherwise (``dropped`` counts them). The
FFT round-off is bounded per cell by 16 u log2(n) |a|_2 |b|_2 (Higham 2002, Sec. 24.1) and summed over the
cells into ``error`` (an l1 bound).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.signal import fftconvolve
from scipy.special import ndtr

__all__ = ["LatticeLaw", "summand_span", "bracketed_sum_law", "exact_sum_law"]

_TAIL = 1e-15  # mass cut per truncation
_Z_TAIL = 8.0  # lognormal summands are gridded up to this standard-normal quantile
_MAX_SUMMAND_CELLS = 1 << 23
_U = 2.0**-53


@dataclass(frozen=True)
class LatticeLaw:
    """A law on the lattice (offset + i) * step, i = 0..n-1: ``pmf``; ``worst`` is the mass sent to the worst
    end (pessimistic laws), ``dropped`` the mass cut away (optimistic laws), ``error`` an l1 bound on the FFT
    round-off in ``pmf``, ``slack`` a bound on |S' - S| (bracketing laws; 0 for exact laws)."""

    pmf: np.ndarray
    offset: int
    step: float
    worst: float = 0.0
    dropped: float = 0.0
    error: float = 0.0
    slack: float = 0.0

    def values(self) -> np.ndarray:
        """The lattice points of ``pmf``."""
        return (self.offset + np.arange(self.pmf.size)) * self.step


def summand_span(s: float) -> float:
    """The largest shifted summand kept on a lattice: exp(s^2/2 + 8 s)."""
    return math.exp(s * s / 2 + s * _Z_TAIL)


def _summand(mu: float, s: float, h: float, up: bool) -> tuple[np.ndarray, float]:
    """(pmf on y = j h, mass beyond the lattice) of LN(mu, s^2) rounded up (``up``) or down to the lattice;
    rounded down, the mass beyond the lattice is put on its last point (nothing is beyond)."""
    top = math.exp(mu + s * _Z_TAIL)
    cells = min(_MAX_SUMMAND_CELLS, int(math.ceil(top / h)) + 1)
    edges = np.arange(cells + 1) * h
    with np.errstate(divide="ignore"):
        cdf = ndtr((np.log(edges) - mu) / s)
    mass = np.diff(cdf)  # mass in (y_j, y_{j+1}]
    beyond = float(ndtr(-(math.log(edges[-1]) - mu) / s))
    pmf = np.zeros(cells + 1)
    if up:
        pmf[1:] = mass
        return pmf, beyond
    pmf[:-1] = mass
    pmf[-1] = beyond
    return pmf, 0.0


def _roundoff(a: np.ndarray, b: np.ndarray, n: int) -> float:
    """l1 bound on the FFT round-off of a * b over its n cells (Higham 2002, Sec. 24.1, constant 16)."""
    return n * 16 * _U * math.log2(n + 1) * float(np.linalg.norm(a) * np.linalg.norm(b))


def _cut(pmf: np.ndarray, offset: int, up: bool, pessimistic: bool) -> tuple[np.ndarray, int, float]:
    """Trim both tails (cells offset + i) by at most _TAIL each; returns (pmf, offset, mass moved to the worst
    end or dropped). Pessimistic and ``up`` (the loss grows with the sum): the lower tail moves up to the first
    kept cell, the upper tail is returned (the worst end is a sum of +inf); pessimistic and not ``up``: the
    upper tail moves down to the last kept cell, the lower tail is returned (a sum of 0). Otherwise both tails
    are dropped and their mass returned."""
    pmf = np.maximum(pmf, 0.0)
    cumulative = np.cumsum(pmf)
    total = cumulative[-1]
    lo = int(np.searchsorted(cumulative, _TAIL, side="right"))
    hi = int(np.searchsorted(cumulative, total - _TAIL, side="left")) + 1
    lo, hi = min(lo, pmf.size - 1), max(min(hi, pmf.size), lo + 1)
    kept = pmf[lo:hi].copy()
    below, above = float(pmf[:lo].sum()), float(pmf[hi:].sum())
    if not pessimistic:
        return kept, offset + lo, below + above
    if up:
        kept[0] += below
        return kept, offset + lo, above
    kept[-1] += above
    return kept, offset + lo, below


def _coarsen(law: LatticeLaw, factor: int, up: bool) -> LatticeLaw:
    """``law`` on the lattice of step ``factor * step``, each point rounded up (``up``) or down."""
    index = law.offset + np.arange(law.pmf.size)
    target = -((-index) // factor) if up else index // factor
    first = int(target[0])
    pmf = np.bincount(target - first, weights=law.pmf)
    # each point moves by at most (factor - 1) old steps
    return LatticeLaw(pmf, first, law.step * factor, law.worst, law.dropped, law.error,
                      law.slack + (factor - 1) * law.step)


class _Adder:
    """Adds independent lattice variables (same lattice step), cutting tails on the declared side."""

    def __init__(self, up: bool, pessimistic: bool) -> None:
        self.up, self.pessimistic = up, pessimistic

    def add(self, a: LatticeLaw, b: LatticeLaw) -> LatticeLaw:
        pmf = fftconvolve(a.pmf, b.pmf)
        error = (a.error * b.pmf.sum() + b.error * a.pmf.sum() + a.error * b.error
                 + _roundoff(a.pmf, b.pmf, pmf.size))
        kept, offset, lost = _cut(pmf, a.offset + b.offset, self.up, self.pessimistic)
        worst = 1.0 - (1.0 - a.worst) * (1.0 - b.worst)
        dropped = a.dropped + b.dropped
        if self.pessimistic:
            worst += lost
        else:
            dropped += lost
        return LatticeLaw(kept, offset, a.step, worst, dropped, error, a.slack + b.slack)


def _summand_law(mu: float, s: float, h: float, up: bool, pessimistic: bool) -> LatticeLaw:
    pmf, beyond = _summand(mu, s, h, up)
    # rounded up, a summand beyond its lattice is a sum of +inf (pessimistic) or dropped (optimistic)
    return LatticeLaw(pmf, 0, h, worst=beyond if pessimistic else 0.0, dropped=0.0 if pessimistic else beyond,
                      slack=h)


def _power(base: LatticeLaw, count: int, adder: _Adder, cell_budget: int | None) -> LatticeLaw:
    """The law of the sum of ``count`` copies of ``base`` by squaring; with a ``cell_budget`` the step of
    a partial sum whose law has more cells is doubled (rounded on the adder's side)."""
    result: LatticeLaw | None = None
    power = base  # the law of a block of 2^j summands
    while True:
        if count & 1:
            if result is not None and result.step < power.step:
                result = _coarsen(result, round(power.step / result.step), adder.up)
            result = power if result is None else adder.add(result, power)
        count >>= 1
        if not count:
            assert result is not None
            return result
        power = adder.add(power, power)
        if cell_budget is not None and power.pmf.size > cell_budget:
            power = _coarsen(power, 2, adder.up)


def bracketed_sum_law(s: float, base_count: int, shifted: bool, h0: float, up: bool, pessimistic: bool,
                      cell_budget: int) -> LatticeLaw:
    """A lattice variable S' >= S (``up``) or <= S pointwise, S = the sum of ``base_count`` base summands and
    one shifted summand if ``shifted``; see the module docstring. ``slack`` bounds |S' - S|."""
    adder = _Adder(up, pessimistic)
    base = _summand_law(-s * s / 2, s, h0, up, pessimistic)
    law = _power(base, base_count, adder, cell_budget) if base_count else None
    if shifted:
        own = _summand_law(s * s / 2, s, h0, up, pessimistic)
        if law is not None and law.step > own.step:
            own = _coarsen(own, round(law.step / own.step), up)
        law = own if law is None else adder.add(law, own)
    assert law is not None
    return law


def exact_sum_law(s: float, base_count: int, shifted_count: int, h: float) -> LatticeLaw:
    """The law of T = the sum of ``base_count`` base and ``shifted_count`` shifted summands, each rounded down
    to the lattice of step ``h`` (no other rounding; tails dropped and counted in ``dropped``)."""
    adder = _Adder(False, False)
    parts = []
    if base_count:
        parts.append(_power(_summand_law(-s * s / 2, s, h, False, False), base_count, adder, None))
    if shifted_count:
        parts.append(_power(_summand_law(s * s / 2, s, h, False, False), shifted_count, adder, None))
    law = parts[0]
    for part in parts[1:]:
        law = adder.add(law, part)
    return LatticeLaw(law.pmf, law.offset, law.step, 0.0, law.dropped, law.error, 0.0)
