"""Renyi-DP curves of the leaf mechanisms, vectorised over orders alpha > 1.

All values are the Renyi divergence D_alpha (natural log) of the worst-case pair, per run:

* Gaussian, sensitivity/sigma = mu: alpha mu^2 / 2 (Mironov 2017, Prop. 7).
* Laplace, sensitivity/b = d: ln(alpha/(2alpha-1) e^{(alpha-1)d} + (alpha-1)/(2alpha-1) e^{-alpha d}) / (alpha-1)
  (Mironov 2017, Prop. 6).
* k-ary randomized response with parameter eps: ln((e^{alpha eps} + e^{(1-alpha) eps} + k - 2) / (e^eps + k - 1))
  / (alpha-1), exact; binary RR is the worst eps-DP mechanism.
* Poisson-subsampled Gaussian, add/remove (Mironov, Talwar & Zhang 2019, Sec. 3.3): integer alpha by the
  binomial expansion, fractional alpha by the two erfc series, truncated once terms fall below e^-30.
* Poisson-subsampled mechanism with RDP eps(.) (Laplace, RR), add/remove: the general upper bound of
  Zhu & Wang (2019, Thm. 6) at integer alpha >= 2.
* Sampling without replacement, replace-one, mechanism with RDP eps(.) and eps(inf): the general upper
  bound of Wang, Balle & Kasiviswanathan (2019, Thm. 9) at integer alpha >= 2.

Fractional orders of the two general bounds use that (alpha - 1) eps(alpha) is convex in alpha (van
Erven & Harremoes 2014), so the chord between neighbouring integers is an upper bound; below 2 the bound
at 2 is used (RDP is non-decreasing in alpha).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import binom, gammaln, log_ndtr, logsumexp

__all__ = [
    "DEFAULT_ORDERS",
    "gaussian_rdp",
    "laplace_rdp",
    "rr_rdp",
    "poisson_gaussian_rdp",
    "poisson_general_rdp",
    "wor_general_rdp",
]

#: The standard order grid (that of dp_accounting and Opacus): 1.1..10.9 by 0.1, 11..63, 128..1024.
DEFAULT_ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(11, 64)) + [128, 256, 512, 1024])

_SERIES_CUTOFF = -30.0


def gaussian_rdp(orders: np.ndarray, mu: float) -> np.ndarray:
    with np.errstate(over="ignore"):  # mu^2 beyond the float range: +inf, an upper bound
        return orders * mu * mu / 2.0


def laplace_rdp(orders: np.ndarray, d: float) -> np.ndarray:
    a = orders
    log_terms = np.logaddexp(np.log(a / (2 * a - 1)) + (a - 1) * d, np.log((a - 1) / (2 * a - 1)) - a * d)
    return np.minimum(log_terms / (a - 1), d)


def rr_rdp(orders: np.ndarray, eps: float, buckets: int) -> np.ndarray:
    a = orders
    parts = [a * eps, (1 - a) * eps] + ([np.full_like(a, math.log(buckets - 2))] if buckets > 2 else [])
    top = logsumexp(np.stack(parts), axis=0)
    bottom = math.log(math.exp(eps) + buckets - 1) if eps < 700 else eps
    return np.minimum((top - bottom) / (a - 1), eps)


def _log_binom(n: float, k: np.ndarray) -> np.ndarray:
    return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)


def _poisson_gaussian_int(alpha: int, q: float, sigma: float) -> float:
    k = np.arange(alpha + 1, dtype=float)
    log_terms = _log_binom(alpha, k) + (alpha - k) * math.log1p(-q) + k * math.log(q) + (k * k - k) / (2 * sigma**2)
    return float(logsumexp(log_terms))


def _poisson_gaussian_frac(alpha: float, q: float, sigma: float) -> float:
    """ln A_alpha = ln(A0 + A1) of Mironov, Talwar & Zhang (2019) for fractional alpha."""
    z0 = sigma**2 * math.log(1.0 / q - 1.0) + 0.5
    total0, total1, block = 0.0, 0.0, 64
    log_scale = None
    start = 0
    while True:
        i = np.arange(start, start + block, dtype=float)
        j = alpha - i
        coef = binom(alpha, i)
        with np.errstate(divide="ignore"):
            log_coef = np.log(np.abs(coef))
        sign = np.sign(coef)
        log_s0 = log_coef + i * math.log(q) + j * math.log1p(-q) + (i * i - i) / (2 * sigma**2) + log_ndtr((z0 - i) / sigma)
        log_s1 = log_coef + j * math.log(q) + i * math.log1p(-q) + (j * j - j) / (2 * sigma**2) + log_ndtr((j - z0) / sigma)
        if log_scale is None:
            log_scale = float(max(log_s0.max(), log_s1.max()))
        total0 += float(np.sum(sign * np.exp(log_s0 - log_scale)))
        total1 += float(np.sum(sign * np.exp(log_s1 - log_scale)))
        if max(log_s0[-8:].max(), log_s1[-8:].max()) < _SERIES_CUTOFF or start > 100000:
            break
        start += block
    return log_scale + math.log(total0 + total1)


def poisson_gaussian_rdp(orders: np.ndarray, q: float, mu: float) -> np.ndarray:
    """RDP of the Poisson-subsampled Gaussian (add/remove), noise multiplier 1/mu."""
    if q >= 1.0:
        return gaussian_rdp(orders, mu)
    sigma = 1.0 / mu
    out = np.empty_like(orders)
    for index, alpha in enumerate(orders):
        if float(alpha).is_integer():
            log_a = _poisson_gaussian_int(int(alpha), q, sigma)
        else:
            log_a = _poisson_gaussian_frac(float(alpha), q, sigma)
        out[index] = (log_a + 1e-12) / (alpha - 1)  # 1e-12 covers the truncated series
    return np.maximum(out, 0.0)


def _integer_orders(orders: np.ndarray) -> np.ndarray:
    top = int(math.ceil(float(orders.max())))
    return np.arange(2, max(top, 2) + 1)


def _interpolate(orders: np.ndarray, integers: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Upper bound at any order from integer-order values, by convexity of (alpha-1) eps(alpha)."""
    moment = (integers - 1) * values
    out = np.empty_like(orders)
    for index, alpha in enumerate(orders):
        if alpha <= 2:
            out[index] = values[0]
            continue
        low = int(math.floor(alpha))
        if low == alpha:
            out[index] = values[low - 2]
            continue
        w = alpha - low
        out[index] = ((1 - w) * moment[low - 2] + w * moment[low - 1]) / (alpha - 1)
    return out


def poisson_general_rdp(orders: np.ndarray, q: float, base) -> np.ndarray:
    """Zhu & Wang (2019, Thm 6): Poisson subsampling of any mechanism with RDP ``base(alpha)``:
    (alpha-1) eps' <= ln[(1-q)^{alpha-1}(alpha q - q + 1) + C(alpha,2) q^2 (1-q)^{alpha-2} e^{eps(2)}
    + 3 sum_{l>=3} C(alpha,l) (1-q)^{alpha-l} q^l e^{(l-1) eps(l)}]."""
    integers = _integer_orders(orders)
    eps = base(integers.astype(float))
    values = np.empty(integers.size)
    log_q, log_1q = math.log(q), math.log1p(-q)
    for index, alpha in enumerate(integers):
        l = np.arange(3, alpha + 1, dtype=float)
        terms = [(alpha - 1) * log_1q + math.log1p(alpha * q - q),
                 float(_log_binom(alpha, np.array(2.0))) + 2 * log_q + (alpha - 2) * log_1q + eps[0]]
        if l.size:
            rest = math.log(3) + _log_binom(alpha, l) + (alpha - l) * log_1q + l * log_q + (l - 1) * eps[l.astype(int) - 2]
            terms.append(float(logsumexp(rest)))
        values[index] = float(logsumexp(terms)) / (alpha - 1)
    values = np.minimum(np.maximum(values, 0.0), eps)  # subsampling never hurts
    return _interpolate(orders, integers, values)


def wor_general_rdp(orders: np.ndarray, q: float, base, eps_inf: float) -> np.ndarray:
    """Wang, Balle & Kasiviswanathan (2019, Thm 9): sampling a fraction q without replacement,
    replace-one, of any mechanism with RDP ``base`` and pure-DP level ``eps_inf`` (inf if none):
    (alpha-1) eps' <= ln(1 + q^2 C(alpha,2) min{4(e^{eps(2)}-1), e^{eps(2)} min{2, (e^{eps_inf}-1)^2}}
    + sum_{j>=3} q^j C(alpha,j) e^{(j-1) eps(j)} min{2, (e^{eps_inf}-1)^j})."""
    integers = _integer_orders(orders)
    eps = base(integers.astype(float))
    log_q = math.log(q)
    log_em1 = math.log(math.expm1(eps_inf)) if math.isfinite(eps_inf) and eps_inf > 0 else (math.inf if eps_inf > 0 else -math.inf)
    values = np.empty(integers.size)
    for index, alpha in enumerate(integers):
        second = min(math.log(4.0) + math.log(math.expm1(eps[0])) if eps[0] > 0 else -math.inf,
                     eps[0] + min(math.log(2.0), 2 * log_em1))
        terms = [0.0, 2 * log_q + float(_log_binom(alpha, np.array(2.0))) + second]
        j = np.arange(3, alpha + 1, dtype=float)
        if j.size:
            cap = np.minimum(math.log(2.0), j * log_em1)
            terms.append(float(logsumexp(j * log_q + _log_binom(alpha, j) + (j - 1) * eps[j.astype(int) - 2] + cap)))
        values[index] = float(logsumexp(terms)) / (alpha - 1)
    values = np.minimum(np.maximum(values, 0.0), eps)
    return _interpolate(orders, integers, values)
