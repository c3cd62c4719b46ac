"""Log-space Binomial(k, p) probabilities for any k < 2^53, in bounded memory.

ln P(j) is evaluated with Loader's saddle-point form (C. Loader, "Fast and accurate computation of
binomial probabilities", 2000; the algorithm of R's ``dbinom_raw``):

    ln P(j) = stirlerr(k) - stirlerr(j) - stirlerr(k-j) - bd0(j, kp) - bd0(k-j, kq)
              - 1/2 ln(2 pi j (k-j) / k),

with stirlerr(n) = ln n! - (n + 1/2) ln n + n - ln sqrt(2 pi) and the deviance
bd0(x, M) = x ln(x/M) + M - x. Unlike ln C(k, j) + j ln p + (k-j) ln q (terms of size k ln k that cancel
to a value of size 1), every term here is of the size of the result, so the absolute error of ln P(j) is a
few ulps of max(|ln P(j)|, ln k), for every k. The constants p, q, ln p, ln q and kp, kq (as double-double
sums, so that j - kp is exact) are computed once with mpmath at 40 digits; q = 1/(1 + e^eps0) may be far
below the float range (eps0 up to 10^4 and beyond).

Every evaluation also returns a bound eta_j on the absolute error of each ln P(j), used by the callers to
bound the error of sums rigorously.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["LogBinomial", "UNIT_ROUNDOFF", "MAX_EXACT_INTEGER"]

UNIT_ROUNDOFF = 2.0**-53
#: Largest k for which every integer j <= k is an exact float (and j - kp is exact near the mode).
MAX_EXACT_INTEGER = 2**53
_LOG_2PI = math.log(2.0 * math.pi)
# Error factor: absolute error of each computed term <= _ETA_FACTOR * u * (sum of the magnitudes involved).
_ETA_FACTOR = 16.0


def _stirlerr_small() -> np.ndarray:
    """stirlerr(n) for n = 0..16 at 40 digits (n = 0 is unused and set to 0)."""
    import mpmath as mp

    with mp.workdps(40):
        values = [0.0] + [
            float(mp.loggamma(n + 1) - (n + mp.mpf(0.5)) * mp.log(n) + n - mp.log(2 * mp.pi) / 2) for n in range(1, 17)
        ]
    return np.array(values)


_STIRLERR_TABLE: np.ndarray | None = None


def stirlerr(n: np.ndarray) -> np.ndarray:
    """ln n! - (n + 1/2) ln n + n - ln sqrt(2 pi) for integer-valued n >= 1 (Stirling series beyond 16)."""
    global _STIRLERR_TABLE
    if _STIRLERR_TABLE is None:
        _STIRLERR_TABLE = _stirlerr_small()
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        inv2 = 1.0 / (n * n)
        series = (1.0 / 12 - (1.0 / 360 - (1.0 / 1260 - (1.0 / 1680 - inv2 / 1188) * inv2) * inv2) * inv2) / n
    small = n <= 16
    if np.any(small):
        series = np.where(small, _STIRLERR_TABLE[np.clip(n, 0, 16).astype(np.int64)], series)
    return series


def bd0(x: np.ndarray, mean_hi: float, mean_lo: float, log_mean: float) -> tuple[np.ndarray, np.ndarray]:
    """The deviance x ln(x/M) + M - x for M = mean_hi + mean_lo, and a magnitude bound for its error.

    Near M (|x - M| < 0.1 (x + M)) Loader's series in v = (x - M)/(x + M) is used, whose terms all have
    the size of the result; elsewhere the direct form, with ln M given separately so M may underflow.
    """
    mean = mean_hi + mean_lo
    d = (x - mean_hi) - mean_lo  # x - mean_hi is exact (Sterbenz) where the series is used
    near = np.abs(d) < 0.1 * (x + mean)
    result = np.empty_like(x)
    magnitude = np.empty_like(x)
    every = bool(near.all())
    if every or np.any(near):
        xn, dn = (x, d) if every else (x[near], d[near])
        v = dn / (xn + mean)
        s = dn * v
        ej = 2.0 * xn * v
        v2 = v * v
        # Terms after the i-th are below v^(2i) s / 3; stop once v^(2i) < 2^-60 (|v| < 0.1: at most 9).
        largest = float(v2.max())
        terms = 0 if largest == 0.0 else min(15, max(1, math.ceil(-60.0 * math.log(2.0) / math.log(largest))))
        for i in range(1, terms + 1):
            ej = ej * v2
            s = s + ej / (2 * i + 1)
        if every:
            return s, 8.0 * np.abs(s)
        result[near] = s
        magnitude[near] = 8.0 * np.abs(s)
    far = ~near
    if np.any(far):
        xf = x[far]
        with np.errstate(divide="ignore", invalid="ignore"):
            log_x = np.log(xf)
            value = xf * (log_x - log_mean) + mean - xf
            mag = xf * (np.abs(log_x) + abs(log_mean) + 1.0) + mean
        zero = xf == 0.0
        result[far] = np.where(zero, mean, value)
        magnitude[far] = np.where(zero, mean, mag)
    return result, magnitude


@dataclass(frozen=True)
class LogBinomial:
    """ln of the Binomial(k, p) pmf with p = e^eps0 / (1 + e^eps0), eps0 > 0, evaluated on demand."""

    k: int
    epsilon0: float
    log_p: float
    log_q: float
    p: float
    mean_p: tuple[float, float, float]  # kp as (hi, lo, ln kp)
    mean_q: tuple[float, float, float]  # kq as (hi, lo, ln kq)
    stirlerr_k: float
    log_k: float

    @classmethod
    def build(cls, epsilon0: float, k: int) -> LogBinomial:
        import mpmath as mp

        with mp.workdps(40):
            e0 = mp.mpf(epsilon0)
            log_p = -mp.log1p(mp.exp(-e0))
            log_q = log_p - e0
            p, q = mp.exp(log_p), mp.exp(log_q)

            def split(value):
                hi = float(value)
                return hi, float(value - hi), float(mp.log(value))

            mean_p, mean_q = split(k * p), split(k * q)
        return cls(k, epsilon0, float(log_p), float(log_q), float(p), mean_p, mean_q,
                   float(stirlerr(np.array([float(k)]))[0]), math.log(k))

    @property
    def mode(self) -> int:
        """An index at or just above the mode: ln P is non-increasing from here on."""
        return min(self.k, int(math.floor((self.k + 1) * self.p)) + 1)

    def log_pmf(self, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ln P(j) for integer-valued float64 ``j`` in [0, k], and a bound on the absolute error of each."""
        j = np.asarray(j, dtype=np.float64)
        k = float(self.k)
        out = np.empty_like(j)
        eta = np.empty_like(j)
        interior = (j > 0) & (j < k)
        if np.any(interior):
            ji = j[interior]
            kj = k - ji
            dev_p, mag_p = bd0(ji, *self.mean_p)
            dev_q, mag_q = bd0(kj, *self.mean_q)
            st_j, st_kj = stirlerr(ji), stirlerr(kj)
            log_j, log_kj = np.log(ji), np.log(kj)
            lf = _LOG_2PI + log_j + log_kj - self.log_k
            value = self.stirlerr_k - st_j - st_kj - dev_p - dev_q - 0.5 * lf
            magnitude = (abs(self.stirlerr_k) + np.abs(st_j) + np.abs(st_kj) + mag_p + mag_q
                         + 0.5 * (_LOG_2PI + np.abs(log_j) + np.abs(log_kj) + self.log_k) + np.abs(value))
            out[interior] = value
            eta[interior] = _ETA_FACTOR * UNIT_ROUNDOFF * magnitude
        for edge, log_prob in ((0.0, self.log_q), (k, self.log_p)):
            at = j == edge
            if np.any(at):
                out[at] = k * log_prob  # ln q^k and ln p^k
                eta[at] = _ETA_FACTOR * UNIT_ROUNDOFF * (2.0 * k * abs(log_prob) + 1e-300)
        return out, eta

    def log_pmf_scalar(self, j: int) -> tuple[float, float]:
        value, eta = self.log_pmf(np.array([float(j)]))
        return float(value[0]), float(eta[0])

    def loss(self, j):
        """The privacy loss (2j - k) eps0 of j "high" outcomes (2j - k is an exact integer)."""
        return (2.0 * np.asarray(j, dtype=np.float64) - float(self.k)) * self.epsilon0

    def log_ratio_up(self, j: int) -> float:
        """An upper bound on ln(P(j+1)/P(j)) = ln((k-j)/(j+1)) + eps0 (decreasing in j: log-concavity)."""
        value = math.log(self.k - j) - math.log(j + 1) + self.epsilon0
        return value + 64.0 * UNIT_ROUNDOFF * (abs(math.log(self.k - j)) + abs(math.log(j + 1)) + self.epsilon0 + 1.0)

    def log_ratio_down_up(self, j: int) -> float:
        """An upper bound on ln(P(j-1)/P(j)) = ln(j/(k-j+1)) - eps0 (increasing in j)."""
        value = math.log(j) - math.log(self.k - j + 1) - self.epsilon0
        return value + 64.0 * UNIT_ROUNDOFF * (abs(math.log(j)) + abs(math.log(self.k - j + 1)) + self.epsilon0 + 1.0)

    def upper_cut(self, start: int, log_level: float) -> int:
        """Smallest j >= max(start, mode) with ln P(j) <= log_level (k if none): P is decreasing there."""
        lo = max(start, self.mode)
        if lo >= self.k or self.log_pmf_scalar(lo)[0] <= log_level:
            return min(lo, self.k)
        if self.log_pmf_scalar(self.k)[0] > log_level:
            return self.k
        hi = self.k  # invariant: ln P(lo) > level >= ln P(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.log_pmf_scalar(mid)[0] > log_level:
                lo = mid
            else:
                hi = mid
        return hi

    def lower_cut(self, stop: int, log_level: float) -> int:
        """Largest j <= min(stop, mode) with ln P(j) <= log_level (0 if none): P increases up to the mode."""
        hi = min(stop, self.mode - 1)
        if hi <= 0 or self.log_pmf_scalar(hi)[0] <= log_level:
            return max(hi, 0)
        if self.log_pmf_scalar(0)[0] > log_level:
            return 0
        lo = 0  # invariant: ln P(lo) <= level < ln P(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self.log_pmf_scalar(mid)[0] <= log_level:
                lo = mid
            else:
                hi = mid
        return lo

    def log_upper_tail_bound(self, last: int) -> float:
        """ln of an upper bound on sum_{j > last} P(j), for last >= mode (-inf when last = k).

        P(j+1)/P(j) is decreasing in j, so the tail is at most P(last+1) / (1 - r), r = P(last+2)/P(last+1).
        """
        if last >= self.k:
            return -math.inf
        first, eta = self.log_pmf_scalar(last + 1)
        if last + 1 >= self.k:
            return first + eta
        log_r = self.log_ratio_up(last + 1)
        if log_r >= 0.0:
            return 0.0  # no useful bound (never happens beyond the mode); ln 1 is always valid
        return first + eta - math.log(-math.expm1(log_r)) + 1e-12

    def log_lower_tail_bound(self, first: int) -> float:
        """ln of an upper bound on sum_{j < first} P(j), for first <= mode (-inf when first = 0)."""
        if first <= 0:
            return -math.inf
        last, eta = self.log_pmf_scalar(first - 1)
        if first - 1 <= 0:
            return last + eta
        log_r = self.log_ratio_down_up(first - 1)
        if log_r >= 0.0:
            return 0.0
        return last + eta - math.log(-math.expm1(log_r)) + 1e-12
