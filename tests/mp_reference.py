"""Independent high-precision (mpmath, 50 digits) evaluations used as ground truth by the tests."""

from __future__ import annotations

import mpmath as mp

mp.mp.dps = 50


def optimal_delta_pure(epsilon0, k, epsilon_total):
    """delta_pure(eps) = (1+e^eps0)^-k sum_i C(k,i) max(0, e^{(k-i)eps0} - e^{eps} e^{i eps0})."""
    e0, et = mp.mpf(epsilon0), mp.mpf(epsilon_total)
    total = mp.mpf(0)
    for i in range(k + 1):
        term = mp.exp((k - i) * e0) - mp.exp(et + i * e0)
        if term > 0:
            total += mp.binomial(k, i) * term
    return total / (1 + mp.exp(e0)) ** k


def optimal_epsilon(epsilon0, k, target_delta):
    """Smallest eps >= 0 with delta_pure(eps) <= target_delta, solved segment by segment."""
    e0, target = mp.mpf(epsilon0), mp.mpf(target_delta)
    if optimal_delta_pure(e0, k, 0) <= target:
        return mp.mpf(0)
    breakpoints = sorted({(2 * j - k) * e0 for j in range(k + 1) if (2 * j - k) > 0})
    lo = mp.mpf(0)
    for b in breakpoints:
        if optimal_delta_pure(e0, k, b) <= target:
            return mp.findroot(lambda x: optimal_delta_pure(e0, k, x) - target, (lo, b), solver="bisect" if False else "anderson")
        lo = b
    return k * e0


def mp_delta_pure(epsilon0: float, k: int, epsilon_total: float, dps: int = 50) -> mp.mpf:
    """sum_{j: (2j-k) eps0 > eps} P_j (1 - e^{eps - (2j-k) eps0}), summed upward until negligible."""
    with mp.workdps(dps):
        e0, eps = mp.mpf(epsilon0), mp.mpf(epsilon_total)
        start = int(mp.floor((eps / e0 + k) / 2)) + 1
        while start - 1 >= 0 and (2 * (start - 1) - k) * e0 > eps:
            start -= 1
        while start <= k and (2 * start - k) * e0 <= eps:
            start += 1
        log_p = -mp.log1p(mp.exp(-e0))
        log_q = log_p - e0
        term = mp.exp(mp.loggamma(k + 1) - mp.loggamma(start + 1) - mp.loggamma(k - start + 1)
                      + start * log_p + (k - start) * log_q)
        growth, shrink = mp.exp(e0), mp.exp(-2 * e0)
        factor = mp.exp(eps - (2 * start - k) * e0)  # e^{eps - L_j}, multiplied by e^{-2 eps0} per step
        total, j = mp.mpf(0), start
        mode = (k + 1) * mp.exp(log_p)
        negligible = mp.mpf(10) ** (-dps + 5)
        while j <= k:
            total += term * (1 - factor)
            if j > mode and term < total * negligible:
                break
            term *= mp.mpf(k - j) / (j + 1) * growth
            factor *= shrink
            j += 1
        return total
