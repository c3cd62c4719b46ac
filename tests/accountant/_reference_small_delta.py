"""Independent mpmath reference for epsilon(delta) of DP-SGD at very small delta (written apart from
dpaudit's PLD code, which is not imported).

Pair: the Poisson-subsampled Gaussian, add/remove "remove" direction, P = q N(mu, 1) + (1-q) N(0, 1) and
Q = N(0, 1) (mu = 1/sigma); its loss l(x) = ln(1 - q + q e^{mu x - mu^2/2}) is increasing in x, bounded below
by ln(1 - q). (The "add" direction has losses <= -ln(1 - q) per step, so for T steps its delta vanishes for
epsilon > -T ln(1 - q); the tests use it only where that is below the answer.)

1. Cells (e_k, e_{k+1}] of the loss on a lattice of step h, up to ``top``: their exact P- and Q-masses from
   the normal tails at x(e_k) = (psi^{-1}(e_k) + mu^2/2) / mu, psi^{-1}(v) = ln((e^v - 1 + q) / q), all in
   mpmath at 40 digits (the tails go far below the float range; masses are differences of survival
   functions, not of CDFs near 1).
2. Upper side: connect-the-dots in each cell (both masses kept: P-mass (a - e^{e_k} b) / (1 - e^{-h}) at
   e_{k+1}, the rest at e_k; Doroshenko et al. 2022), the mass above ``top`` at +inf. Lower side: each
   cell's P-mass at its left end (every loss rounded down, so every composed loss is too, and
   delta(eps) = E_P[(1 - e^{eps - L})_+] can only fall), the mass above ``top`` dropped.
3. Composition by exponential tilting (exact for any lam): with M = sum p e^{lam l} and tilted masses
   p~ = p e^{lam l} / M, the T-fold composition has delta(eps) = M^T e^{-lam eps} sum_{l > eps} p~*T(l)
   e^{-lam (l - eps)} (1 - e^{eps - l}) + P(L = inf); p~*T by FFT (numpy), tilted mass below 1e-24
   cut at the ends (upper: charged at weight 1, with 1e-12 per convolution for round-off).
4. epsilon(delta) by bisection on each side.
"""

from __future__ import annotations

import functools
import math

import mpmath as mp
import numpy as np
from scipy.special import logsumexp

_CUT = 1e-24
_FFT_SLACK = 1e-12


@functools.lru_cache(maxsize=4)
def _cells(q: float, sigma: float, h: float, top: float) -> tuple[int, np.ndarray, np.ndarray, float]:
    """(first lattice index, ln P-mass at lattice points for the upper (ctd) side, ln P-mass at the
    lattice points for the lower side, P-mass above ``top``)."""
    with mp.workdps(40):
        mq, mmu = mp.mpf(q), 1 / mp.mpf(sigma)
        floor = mp.log1p(-mq)
        k0 = int(mp.floor(floor / h))
        k1 = int(math.ceil(top / h))
        sp, sq = [], []
        for k in range(k0, k1 + 1):
            e = mp.mpf(k) * h
            if e <= floor:
                sp.append(mp.mpf(1)), sq.append(mp.mpf(1))
                continue
            x = (mp.log((mp.expm1(e) + mq) / mq) + mmu * mmu / 2) / mmu
            tail_q = mp.ncdf(-x)
            sp.append(mq * mp.ncdf(mmu - x) + (1 - mq) * tail_q)
            sq.append(tail_q)
        shrink = -mp.expm1(-mp.mpf(h))
        upper = [mp.mpf(0)] * (k1 - k0 + 1)
        lower = [mp.mpf(0)] * (k1 - k0 + 1)
        for i in range(k1 - k0):
            a, b = sp[i] - sp[i + 1], sq[i] - sq[i + 1]
            lower[i] += a
            right = (a - mp.exp(mp.mpf(k0 + i) * h) * b) / shrink
            right = min(max(right, mp.mpf(0)), a)
            upper[i + 1] += right
            upper[i] += a - right

        def logs(values):
            return np.array([float(mp.log(v)) if v > 0 else -np.inf for v in values])

        return k0, logs(upper), logs(lower), float(sp[-1])


def _conv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    n = a.size + b.size - 1
    size = 1 << (n - 1).bit_length()
    return np.clip(np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n], 0.0, None)


def _cut(pmf: np.ndarray, shift: int) -> tuple[np.ndarray, int, float]:
    c = np.cumsum(pmf)
    lo = int(np.searchsorted(c, _CUT, side="right"))
    r = np.cumsum(pmf[::-1])
    hi = pmf.size - int(np.searchsorted(r, _CUT, side="right"))
    hi = max(hi, lo + 1)
    return pmf[lo:hi], shift + lo, float(pmf[:lo].sum() + pmf[hi:].sum())


def _tilted_composition(log_p: np.ndarray, lam: float, steps: int, k0: int, h: float):
    """(tilted composed pmf, first lattice index, T ln M, tilted mass cut off + round-off allowance)."""
    losses = k0 + np.arange(log_p.size)
    w = log_p + lam * losses * h
    log_m = float(logsumexp(w))
    pmf = np.exp(w - log_m)
    pmf, shift, slack = _cut(pmf, k0)
    result = None
    power, power_shift = pmf, shift
    count = steps
    while True:
        if count & 1:
            if result is None:
                result, r_shift = power, power_shift
            else:
                result, r_shift, lost = _cut(_conv(result, power), r_shift + power_shift)
                slack += lost + _FFT_SLACK
        count >>= 1
        if not count:
            break
        power, power_shift, lost = _cut(_conv(power, power), 2 * power_shift)
        slack = slack * 2 + lost + _FFT_SLACK
    return result, r_shift, steps * log_m, slack



def _choose_lambda(log_p: np.ndarray, k0: int, h: float, steps: int, delta: float) -> float:
    losses = (k0 + np.arange(log_p.size)) * h
    lams = np.geomspace(0.05, 50.0, 300)
    log_m = logsumexp(log_p[None, :] + lams[:, None] * losses[None, :], axis=1)
    return float(lams[int(np.argmin((steps * log_m - math.log(delta)) / lams))])


def reference_epsilons(q: float, sigma: float, steps: int, deltas: tuple[float, ...], h: float = 1e-3,
                       top: float = 8.0, lam: float | None = None) -> list[tuple[float, float]]:
    """(lower, upper) bounds on epsilon(delta) at each delta of ``steps`` Poisson-subsampled Gaussian steps
    (remove pair). One tilt serves every delta (the identity is exact for any lam; by default the one
    minimising the Chernoff bound at the geometric middle delta)."""
    k0, log_upper, log_lower, above = _cells(q, sigma, h, top)
    if lam is None:
        middle = math.exp(0.5 * (math.log(min(deltas)) + math.log(max(deltas))))
        lam = _choose_lambda(log_lower, k0, h, steps, middle)
    sides = []
    for log_p, upper in ((log_lower, False), (log_upper, True)):
        pmf, shift, log_mt, slack = _tilted_composition(log_p, lam, steps, k0, h)
        losses = (shift + np.arange(pmf.size)) * h
        inf_mass = min(1.0, steps * above) if upper else 0.0

        def delta_at(eps: float, pmf=pmf, losses=losses, log_mt=log_mt, slack=slack, upper=upper,
                     inf_mass=inf_mass) -> float:
            first = int(np.searchsorted(losses, eps, side="right"))
            reach = int(np.searchsorted(losses, eps + 80.0 / lam, side="right"))  # beyond: weights < e^-80
            gap = losses[first:reach] - eps
            s = float(np.sum(pmf[first:reach] * np.exp(-lam * gap) * -np.expm1(-gap)))
            if upper:
                s = s * (1 + 1e-12) + slack + float(pmf[reach:].sum()) * math.exp(-80.0)
            else:
                s = max(0.0, s * (1 - 1e-12) - steps * _FFT_SLACK)
            return math.exp(log_mt - lam * eps) * s + inf_mass if s > 0 else inf_mass

        sides.append((delta_at, float(losses[-1]), upper))
    out = []
    for delta in deltas:
        pair = []
        for delta_at, top_loss, upper in sides:
            lo, hi = 0.0, top_loss
            for _ in range(60):
                mid = 0.5 * (lo + hi)
                if delta_at(mid) <= delta:
                    hi = mid
                else:
                    lo = mid
            pair.append(hi if upper else lo)
        out.append((pair[0], pair[1]))
    return out
