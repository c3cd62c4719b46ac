"""Laws of sums of lognormal likelihood ratios on a lattice: the numerical core of random-allocation
accounting (``dpaudit.accountant.families.random_allocation``).

With s = 1 / z and the Gaussian outputs of t steps in units of the noise, the likelihood ratio of one step is
Y = exp(s x - s^2 / 2): LN(-s^2/2, s^2) when the record is absent from the step ("base" summand) and
LN(+s^2/2, s^2) when it is present ("shifted" summand). Every summand Y_i is rounded to the nearest point of
the lattice of step h (values beyond the lattice's top, exp(mu + 8 s), onto its last point), and
:func:`rounded_sum_law` computes the law of S' = sum_i round(Y_i) by FFT convolution (squaring).

Bracketing the exact sum S (analysis ours). While every Y_i lies below the top, the rounding errors
e_i = round(Y_i) - Y_i are independent, in [-h/2, h/2], with known means m_i (from the lattice law and the
lognormal's partial mean), so by Hoeffding's inequality (1963, Thm 2) |S' - S - sum m_i| <= c with
c = h sqrt(n ln(2 / eta) / 2) except with probability eta. So S' - b - c <= S <= S' - b + c (b = sum m_i)
outside a failure event of probability at most eta + (mass of the summands beyond the top): a pointwise
bracket of S, whose width 2c grows like sqrt(n) h rather than the n h of rounding every summand one way.

Tails of a law are cut on the side the caller declares: moved monotonically (pessimistic: the lower tail, up
to ``_MOVED_TAIL``, up to the first kept point when an upper bracket is wanted, or the upper tail down for a
lower one; the other tail, up to ``_TAIL / weight``, to the worst end) or dropped (optimistic, both up to
``_TAIL / weight``), which keeps the bracket pointwise (``weight``: how often the law is counted in the final
one, below). Each tail's mass is summed from its own end (a running sum over the whole law would misplace the
cut by its own float error, ~1e-12), so the mass sent to the worst end or dropped, counted ``weight`` times,
adds up to about ``_TAIL`` per convolution in the final law.

Round-off. Every FFT convolution's l1 error is bounded by ``grid._convolve`` (Higham 2002, "Accuracy and
Stability of Numerical Algorithms", Sec. 24.1, Thm 24.2: the 2-norm error of a product of transforms is at
most ~c u log2(n) (|a|_2 |b|_1 + |a|_1 |b|_2), and the l1 error at most sqrt(n) times that) and summed into
``error``. The sum of n copies counts the error of its first squaring about n / 2 times, so a convolution
whose result is counted ``weight`` > 1 times runs in extended precision (``np.longdouble``: u = 2^-64 on
x86-64 against 2^-53, the result rounded to float64 with the rounding counted) whenever its float64 bound
times ``weight`` exceeds ``_ROUNDOFF_BUDGET``: at t = 10^4 summands (z = 0.7) that lowers the total
round-off bound from 2.9e-8 to 4.5e-11.

Long, thin tails (analysis ours). At little noise a summand's lattice is millions of points long while all
but ~1e-9 of its mass sits in a short head. The n-fold sum is then computed from the head alone: with the pmf
split into head a and tail r, (a + r)^{*n} = sum_k C(n, k) a^{*(n - k)} * r^{*k}, and the terms k = 0, 1 are
a^{*(n - 1)} * (a + n r): every squaring runs on the short head and the long tail enters one product
(:func:`_power_from_head`); the terms k >= 2, of mass at most C(n, 2) |r|_1^2, are cut (about ``_PAIR_MASS``
with the head chosen for n). Likewise every product of two laws with thin tails leaves out the product of the
two tails, of mass at most |r_a|_1 |r_b|_1 (:func:`_convolve`), so a head-by-tail product is one FFT of the
tail's length plus the head's. Both left-out masses are counted like cut tails (``worst`` or ``dropped``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from .grid import _convolve as _fft_convolve, convolution_error

__all__ = ["LatticeLaw", "summand_top", "rounded_sum_law", "power_law", "sum_law", "FAILURE"]

_TAIL = 1e-12  # mass cut per truncation, divided by how often the truncated law is counted in the final one
_HEAD_TAIL = 1e-9  # convolution: mass outside the window convolved on its own
_PAIR_MASS = 1e-13  # a power from its head: mass of the outcomes with two or more summands in the tail, at most
_MOVED_TAIL = 1e-9  # mass of a tail moved monotonically (not to the worst end) per truncation
_ROUNDOFF_BUDGET = 2e-12  # a convolution runs in extended precision when its float64 bound, weighted, exceeds this
_Z_TAIL = 8.0  # summands are on the lattice up to this standard-normal quantile
#: Probability of the Hoeffding failure event of one bracket.
FAILURE = 1e-15
_U = 2.0**-53


@dataclass(frozen=True)
class LatticeLaw:
    """The law of S' on the lattice (offset + i) * step: ``pmf``; ``worst`` is the mass sent to the worst end
    (pessimistic cuts), ``dropped`` the mass cut away (optimistic cuts), ``error`` an l1 bound on the FFT
    round-off in ``pmf``. ``bias`` is b = the summed mean rounding error, ``spread`` the Hoeffding half-width
    c at failure probability :data:`FAILURE`, and ``beyond`` the probability that a summand lies above the
    top of its lattice (where the bracket does not hold). ``left_out``: the probability of the outcomes left
    out of ``pmf`` (a shifted summand above ``left_out_above``, see :func:`rounded_sum_law`)."""

    pmf: np.ndarray
    offset: int
    step: float
    worst: float = 0.0
    dropped: float = 0.0
    error: float = 0.0
    bias: float = 0.0
    spread: float = 0.0
    beyond: float = 0.0
    left_out: float = 0.0
    left_out_above: float = math.inf

    def values(self) -> np.ndarray:
        """The lattice points of ``pmf``."""
        return (self.offset + np.arange(self.pmf.size)) * self.step


def summand_top(s: float, shifted: bool = True) -> float:
    """The top of a summand's lattice: exp(mu + 8 s), mu = +s^2/2 (shifted) or -s^2/2."""
    return math.exp((1 if shifted else -1) * s * s / 2 + s * _Z_TAIL)


def _summand(mu: float, s: float, h: float, top: float | None = None, above: str = "last"
             ) -> tuple[np.ndarray, float, float, float, float]:
    """(pmf of round(min(Y, top)) on y = j h, P(Y > top), mean rounding error E[(round(Y) - Y) 1{Y <= top}],
    a bound on the float error of that mean, the top) for Y ~ LN(mu, s^2); the lattice runs up to ``top``
    (default exp(mu + 8 s)), rounded up to a point + h/2. ``above`` says what becomes of the mass above the top:
    "last": on the last point (where the bracket fails: counted in the second value); "cap": the summand is
    min(Y, top) itself (its rounding error stays within h/2 there too), the second value is 0 and the mean
    rounding error is that of min(Y, top); "leave": left out of the pmf (the caller accounts for it; the second
    value is 0). Cell masses come from the normal CDF below the median and from its complement above (each
    accurate to a few ulps relative), so the mean's float error is a few ulps per cell of the mean itself."""
    cells = int(math.ceil((math.exp(mu + s * _Z_TAIL) if top is None else top) / h)) + 1
    edges = (np.arange(cells + 1) + 0.5) * h  # cell j collects (y_j - h/2, y_j + h/2]
    with np.errstate(divide="ignore"):
        z = (np.log(edges) - mu) / s
    # the CDF where z <= 0 (z increases along the edges) and the survival function from there on: the same
    # values as both over the whole lattice, each evaluated once
    split = int(np.searchsorted(z, 0.0, side="right"))
    cdf, sf = ndtr(z[:split + 1]), ndtr(-z[max(split - 1, 0):])
    pmf = np.empty(cells + 1)
    pmf[0] = cdf[0] if split > 0 else 1.0 - sf[0]
    pmf[1:split] = np.diff(cdf[:split])  # edges j - 1, j both at z <= 0
    below = max(split - 1, 0)  # sf[i] is at edge below + i
    pmf[max(split, 1):] = sf[max(split, 1) - 1 - below:-1] - sf[max(split, 1) - below:]
    pmf = np.maximum(pmf, 0.0)
    top = float(edges[-1])
    beyond = float(sf[-1])
    # E[Y 1{Y <= top}] = e^{mu + s^2/2} Phi((ln top - mu - s^2) / s) (lognormal partial mean)
    partial_mean = math.exp(mu + s * s / 2) * float(ndtr((math.log(top) - mu - s * s) / s))
    lattice_mean = float(np.dot(np.arange(cells + 1) * h, pmf))
    if above == "leave":  # not in the pmf, so not a failure of its bracket either
        beyond = 0.0
    else:
        pmf[-1] += beyond  # values above the top: onto the last point
    if above == "cap":  # E[min(Y, top)] = E[Y 1{Y <= top}] + top P(Y > top), the top rounded down to the last point
        lattice_mean += cells * h * beyond
        partial_mean += top * beyond
        beyond = 0.0
    float_error = (cells + 16) * 8 * _U * (lattice_mean + partial_mean)
    return pmf, beyond, lattice_mean - partial_mean, float_error, top


def _head(pmf: np.ndarray) -> tuple[int, int]:
    """The window [lo, hi) of ``pmf`` outside which at most _HEAD_TAIL of its mass lies."""
    cumulative = np.cumsum(pmf)
    lo = int(np.searchsorted(cumulative, _HEAD_TAIL, side="right"))
    hi = int(np.searchsorted(cumulative, cumulative[-1] - _HEAD_TAIL, side="left")) + 1
    return min(lo, pmf.size - 1), max(min(hi, pmf.size), lo + 1)


def _product(a: np.ndarray, b: np.ndarray, weight: float) -> tuple[np.ndarray, float]:
    """(a * b, l1 bound on its round-off, from ``grid._convolve``), in extended precision when the result is
    counted more than once and float64's bound times ``weight`` would exceed _ROUNDOFF_BUDGET (that bound
    estimated from the bounds of a * a and b * b scaled to the masses of a * b: it only decides the precision;
    a result counted once keeps float64's bound, at most ~1e-11 here, at a fifth of the cost)."""
    mass_a, mass_b = float(a.sum()), float(b.sum())
    if mass_a <= 0.0 or mass_b <= 0.0:
        return _fft_convolve(a, b)[:2]
    estimate = convolution_error(a) if a is b else 0.5 * (convolution_error(a) * mass_b / mass_a
                                                         + convolution_error(b) * mass_a / mass_b)
    out, error, _ = _fft_convolve(a, b, precise=weight > 1.0 and weight * estimate > _ROUNDOFF_BUDGET)
    return out, error


def _convolve(a: np.ndarray, b: np.ndarray, weight: float) -> tuple[np.ndarray, float, float]:
    """(a * b without the product of the two tails, l1 bound on its round-off, mass of that product);
    ``weight``: how often the result is counted in the final law (see the module docstring). Laws whose mass
    sits in a window much narrower than their array (the long, thin tails of lognormal summands) are split
    into that window (the head) and the rest, a = w_a + r_a, and a * b = w_a * w_b + r_a * w_b + w_a * r_b +
    r_a * r_b. The last term, of mass |r_a|_1 |r_b|_1 <= (2 _HEAD_TAIL)^2 (the sum of two summands both in
    their thin tails), is left out and its mass returned, for the caller to count as cut (it is exact in
    exact arithmetic; its float sums carry a relative n u, covered by a factor 1 + 4 n u): so each long
    product is a short head against a long tail, an FFT of the tail's length plus the head's rather than of
    both lengths. The round-off, which grows with the array's length times the norms, is paid at full length
    only on the thin parts; the partial products are added cell by cell (each addition a relative u: at most
    u |a|_1 |b|_1 in l1)."""
    n = a.size + b.size - 1
    alo, ahi = _head(a)
    blo, bhi = (alo, ahi) if b is a else _head(b)
    if (ahi - alo) + (bhi - blo) > (n // 2 if a is b else n // 4):
        return (*_product(a, b, weight), 0.0)
    square = a is b
    head_a = a[alo:ahi]
    a_rest = a.copy()
    a_rest[alo:ahi] = 0.0
    if square:
        head_b, b_rest = head_a, a_rest
    else:
        head_b = b[blo:bhi]
        b_rest = b.copy()
        b_rest[blo:bhi] = 0.0
    core, error = _product(head_a, head_b, weight)
    if square:  # a * a = w * w + r * (2 w) + r * r
        cross, cross_error = _product(a_rest, 2.0 * head_a, weight)
        out = np.zeros(max(alo + cross.size, 2 * alo + core.size))
        out[alo:alo + cross.size] = cross
        additions = 1
    else:  # a * b = w_a * w_b + r_a * w_b + w_a * r_b + r_a * r_b
        cross, cross_error = _product(a_rest, head_b, weight)
        other, other_error = _product(head_a, b_rest, weight)
        out = np.zeros(max(blo + cross.size, alo + other.size, alo + blo + core.size))
        out[blo:blo + cross.size] = cross
        out[alo:alo + other.size] += other
        cross_error += other_error
        additions = 2
    out[alo + blo:alo + blo + core.size] += core
    mass = float(np.abs(a).sum()) * float(np.abs(b).sum())
    tails = float(np.abs(a_rest).sum()) * float(np.abs(b_rest).sum()) * (1.0 + 4.0 * n * _U)
    return out, error + cross_error + additions * 2.0 * _U * mass, tails


def _cut(pmf: np.ndarray, side: str, tail: float) -> tuple[np.ndarray, int, float]:
    """Trim the tails; returns (kept pmf, index of its first cell, mass moved to the worst end or dropped).
    ``side`` "up": the lower tail (at most _MOVED_TAIL) moves up to the first kept cell and the upper tail (at
    most ``tail``) to the worst end (+inf); "down": the upper tail (at most _MOVED_TAIL) moves down to the last
    kept cell and the lower tail (at most ``tail``) to the worst end (0); "drop": both tails (at most ``tail``
    each) are dropped; "drop_high": likewise, the upper one up to _MOVED_TAIL. A moved tail keeps the bracket on
    its side pointwise (sound) and needs no delta term, and a dropped one only lowers a lower end; either
    loosens the curve only through its outcomes, which for the _MOVED_TAIL cuts lie far on the side where the
    user's loss is negative (a small sum for the remove direction's upper end, a large one for the add
    direction's ends)."""
    pmf = np.maximum(pmf, 0.0)
    low_tail = _MOVED_TAIL if side == "up" else tail
    high_tail = _MOVED_TAIL if side in ("down", "drop_high") else tail
    lo = int(np.searchsorted(np.cumsum(pmf), low_tail, side="right"))
    hi = pmf.size - int(np.searchsorted(np.cumsum(pmf[::-1]), high_tail, side="right"))  # the upper tail from its end
    lo, hi = min(lo, pmf.size - 1), max(min(hi, pmf.size), lo + 1)
    kept = pmf[lo:hi].copy()
    below, above = float(pmf[:lo].sum()), float(pmf[hi:].sum())
    if side in ("drop", "drop_high"):
        return kept, lo, below + above
    if side == "up":
        kept[0] += below
        return kept, lo, above
    kept[-1] += above
    return kept, lo, below


def _add(a: LatticeLaw, b: LatticeLaw, side: str, weight: float = 1.0) -> LatticeLaw:
    """The law of the sum of two independent lattice variables (same step), tails cut on ``side``; the result
    is counted ``weight`` times in the final law (it decides the precision of the convolution)."""
    pmf, roundoff, tails = _convolve(a.pmf, b.pmf, weight)
    error = a.error * b.pmf.sum() + b.error * a.pmf.sum() + a.error * b.error + roundoff
    kept, lo, lost = _cut(pmf, side, _TAIL / weight)
    lost += tails  # the product of the two thin tails, left out: cut like a tail
    worst = 1.0 - (1.0 - a.worst) * (1.0 - b.worst)
    dropped = a.dropped + b.dropped
    if side in ("drop", "drop_high"):
        dropped += lost
    else:
        worst += lost
    return LatticeLaw(kept, a.offset + b.offset + lo, a.step, worst, dropped, error, a.bias + b.bias,
                      0.0, 1.0 - (1.0 - a.beyond) * (1.0 - b.beyond))


def _power(base: LatticeLaw, count: int, side: str) -> LatticeLaw:
    """The law of the sum of ``count`` independent copies of ``base``: from its head where its tail is long
    and thin (:func:`_power_from_head`), else by squaring (:func:`_squarings`)."""
    if count > 2:
        window = _thin_tail_window(base.pmf, count)
        if window is not None:
            return _power_from_head(base, count, side, *window)
    return _squarings(base, count, side)


def _squarings(base: LatticeLaw, count: int, side: str) -> LatticeLaw:
    """The law of the sum of ``count`` independent copies of ``base`` (squaring; a square of 2^j copies is
    counted about count / 2^j times in the result)."""
    result: LatticeLaw | None = None
    power = base
    while True:
        if count & 1:
            result = power if result is None else _add(result, power, side)
        count >>= 1
        if not count:
            assert result is not None
            return result
        power = _add(power, power, side, weight=float(count))


def _thin_tail_window(pmf: np.ndarray, count: int) -> tuple[int, int] | None:
    """The window [lo, hi) outside which ``pmf`` holds at most sqrt(2 _PAIR_MASS) / count of its mass (from
    either end), when it is at most half the array (a long, thin tail: a lognormal summand at little
    noise); else None. Only the window's length depends on the float cumulative sums: the mass outside it is
    summed again where it is used."""
    allowed = math.sqrt(2.0 * _PAIR_MASS) / count / 2.0
    lo = int(np.searchsorted(np.cumsum(pmf), allowed, side="right"))
    hi = pmf.size - int(np.searchsorted(np.cumsum(pmf[::-1]), allowed, side="right"))
    lo, hi = min(lo, pmf.size - 1), max(min(hi, pmf.size), lo + 1)
    return (lo, hi) if hi - lo <= pmf.size // 2 else None


def _power_from_head(base: LatticeLaw, count: int, side: str, lo: int, hi: int) -> LatticeLaw:
    """The sum of n = ``count`` copies of a law with a long, thin tail, from its head. With the pmf split into
    its head a (the window [lo, hi)) and tail r (the rest), the n-fold convolution is
    (a + r)^{*n} = sum_k C(n, k) a^{*(n - k)} * r^{*k} (which k copies lie in the tail); the terms k = 0, 1
    are P * a + P * (n r) with P = a^{*(n - 1)}, the power of the short head (:func:`_squarings`): P * a is a
    short product (:func:`_convolve`) and P * (n r) one long product whose round-off bound is small with the
    tail's small norms (n r: a relative u per cell, at most n u |r|_1 in l1); the two are added cell by cell
    (a relative u, at most 2 u |P|_1 (|a|_1 + n |r|_1) in l1). The terms k >= 2 (two or more summands in the
    tail) are left out and counted as cut: their mass is at most C(n, 2) |r|_1^2 (|a|_1 + |r|_1)^(n - 2)
    (C(n, k) <= C(n, 2) C(n - 2, k - 2)), about _PAIR_MASS with the window of :func:`_thin_tail_window`
    (float sums: a relative 4 m u each, m cells). So every squaring runs on the head, and the long tail
    enters one product instead of one per squaring."""
    pmf = base.pmf
    head = LatticeLaw(pmf[lo:hi].copy(), base.offset + lo, base.step, base.worst, base.dropped, base.error,
                      base.bias, 0.0, base.beyond)
    slack = 1.0 + 4.0 * pmf.size * _U
    tail = pmf * float(count)
    tail[lo:hi] = 0.0
    tail_mass = (float(np.abs(pmf[:lo]).sum()) + float(np.abs(pmf[hi:]).sum())) * slack
    total = float(np.abs(pmf).sum()) * slack
    power = _squarings(head, count - 1, side)
    # P * a (counted once) runs in extended precision where float64's bound times n would exceed the budget, as
    # the first squaring would: it stands for the result products of a squaring of the whole law
    core, core_error, core_tails = _convolve(power.pmf, head.pmf, float(count))  # at power.offset + base.offset + lo
    spill, spill_error = _product(power.pmf, tail, 1.0)  # at power.offset + base.offset
    out = np.zeros(max(lo + core.size, spill.size))
    out[:spill.size] = spill
    out[lo:lo + core.size] += core
    power_mass = float(np.abs(power.pmf).sum()) * slack
    mixed_mass = total + (count - 1) * tail_mass * (1.0 + 2.0 * _U)  # |a|_1 + n |r|_1
    mixed_error = count * base.error + count * _U * tail_mass  # the tail's scaling
    error = (power.error * mixed_mass + mixed_error * power_mass + power.error * mixed_error + core_error
             + spill_error + 2.0 * _U * power_mass * mixed_mass)
    kept, first, lost = _cut(out, side, _TAIL)
    lost += core_tails + math.comb(count, 2) * tail_mass * tail_mass * max(1.0, total) ** (count - 2)
    # mass cut from P counts |a|_1 + n |r|_1 (> 1) times in P * (a + n r); mass cut from the base, at most n times
    worst = power.worst * mixed_mass + count * base.worst * power_mass
    dropped = power.dropped * mixed_mass + count * base.dropped * power_mass
    if side in ("drop", "drop_high"):
        dropped += lost
    else:
        worst += lost
    return LatticeLaw(kept, power.offset + base.offset + first, base.step, worst, dropped, error,
                      power.bias + base.bias, 0.0, 1.0 - (1.0 - power.beyond) * (1.0 - base.beyond))


def rounded_sum_law(s: float, base_count: int, shifted_count: int, h: float, side: str,
                    common_top: bool = False, max_cells: int | None = None, cap: float | None = None,
                    leave_out_above: bool = False) -> LatticeLaw:
    """The law of S' = the sum of ``base_count`` base and ``shifted_count`` shifted summands, each rounded to
    the nearest point of the lattice of step ``h``; tails cut on ``side`` ("up", "down", "drop" or "drop_high", see
    :func:`_cut`). Its ``bias``, ``spread`` and ``beyond`` bracket the exact sum (module docstring).
    ``common_top``: every summand is cut at the base summand's top, so S' is one function of the outputs
    whichever of them are shifted (for a post-processing statistic); otherwise each kind has its own top, at
    most ``max_cells`` lattice points (the mass above counts in ``beyond``). ``cap``: every summand is replaced
    by min(Y_i, cap') (cap' >= cap, the top of the lattice), a pointwise smaller sum whose rounding errors stay
    within h/2 everywhere: a lower bracket of S without failure mass above the top (for lower brackets only).
    ``leave_out_above``: the outcomes where a shifted summand lies above its top are left out of the law (their
    probability in ``left_out``, that top in ``left_out_above``, neither in ``beyond``): on the rest the bracket
    fails only with probability ``beyond`` + :data:`FAILURE` (the rounding errors times the indicators of the
    summands below their tops are the independent bounded variables of Hoeffding's inequality)."""
    parts = []
    float_slack = 0.0  # the float error of the summed mean rounding errors
    left_out, left_out_above = 0.0, math.inf
    for count, mu, shifted in ((base_count, -s * s / 2, False), (shifted_count, s * s / 2, True)):
        if count:
            top = summand_top(s, shifted=False) if common_top else math.exp(mu + s * _Z_TAIL)
            if max_cells is not None:
                top = min(top, max_cells * h)
            if cap is not None:
                top = min(top, cap)
            above = "cap" if cap is not None else "leave" if shifted and leave_out_above else "last"
            pmf, beyond, mean_error, float_error, top = _summand(mu, s, h, top, above)
            if above == "leave":  # P(some shifted summand above the top)
                left_out = -math.expm1(count * math.log1p(-float(ndtr((mu - math.log(top)) / s))))
                left_out_above = top
            summand = LatticeLaw(pmf, 0, h, bias=mean_error, beyond=beyond)
            parts.append(_power(summand, count, side))
            float_slack += count * float_error
    law = parts[0] if len(parts) == 1 else _add(parts[0], parts[1], side)
    n = base_count + shifted_count
    spread = h * math.sqrt(n * math.log(2.0 / FAILURE) / 2.0) + float_slack  # Hoeffding half-width
    return LatticeLaw(law.pmf, law.offset, law.step, law.worst, law.dropped, law.error, law.bias, spread,
                      law.beyond, left_out, left_out_above)


def power_law(pmf: np.ndarray, count: int, error: float, step: float, side: str = "drop") -> LatticeLaw:
    """The law of the sum of ``count`` independent copies of the lattice variable with ``pmf`` on 0, step, 2 step,
    ... (``error``: an l1 bound on the float error of ``pmf``, carried into the result's ``error`` with the
    convolutions' round-off); tails cut on ``side`` (:func:`_cut`). For a statistic of the outputs other than the
    rounded likelihood ratios (no bracket: ``spread``, ``bias`` and ``beyond`` stay 0)."""
    return _power(LatticeLaw(np.asarray(pmf, dtype=float), 0, step, error=error), count, side)


def sum_law(a: LatticeLaw, b: LatticeLaw, side: str = "drop") -> LatticeLaw:
    """The law of the sum of two independent lattice variables of the same step (tails cut on ``side``)."""
    return _add(a, b, side)
