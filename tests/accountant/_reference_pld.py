"""Independent fine-grid PLD references (written apart from dpaudit's PLD code, which is not imported).

The Poisson-subsampled (add/remove) composition of a Gaussian (mu = 1/sigma) and a Laplace (d = 1/b) step:
the inner loss L0 = L_G + L_L has the exact CDFs (under P and under Q)

    P(L0 <= t) = 1/2 F_P(t - d) + e^-d/2 F_P(t + d) + int_0^d 1/2 e^-x F_P(t - d + 2x) dx,
    Q(L0 <= t) = e^-d/2 F_Q(t - d) + 1/2 F_Q(t + d) + int_0^d 1/2 e^-(d-x) F_Q(t - d + 2x) dx,

with F_P(s) = Phi((s - mu^2/2)/mu), F_Q(s) = Phi((s + mu^2/2)/mu) (Gauss-Legendre quadrature, 64 nodes).
The subsampled remove pair (q P + (1-q) Q, Q) has loss psi(L0) = ln(1 - q + q e^L0); its exact cell masses on
a psi-grid follow from the CDFs at psi^{-1} of the cell edges. Upper reference: connect-the-dots in each
cell (keeps both masses); lower reference: every cell's mass at its left end. Both are composed by a
plain numpy FFT and read out as delta(eps) = sum p (1 - e^(eps - l))_+ + p_inf.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, roots_legendre


def _cdfs(t: np.ndarray, mu: float, d: float | None):
    """(P(L0 <= t), P(L0 > t), Q(L0 <= t), Q(L0 > t)) for the Gaussian (+ Laplace when d) pair."""
    def fp(s):
        return ndtr((s - mu * mu / 2) / mu)

    def sp(s):
        return ndtr(-(s - mu * mu / 2) / mu)

    def fq(s):
        return ndtr((s + mu * mu / 2) / mu)

    def sq(s):
        return ndtr(-(s + mu * mu / 2) / mu)

    if d is None:
        return fp(t), sp(t), fq(t), sq(t)
    nodes, weights = roots_legendre(64)
    x = (nodes + 1) * d / 2
    w = weights * d / 2
    shift = t[:, None] - d + 2 * x[None, :]
    wp = w * 0.5 * np.exp(-x)
    wq = w * 0.5 * np.exp(-(d - x))
    out = []
    for f, atoms_w in ((fp, (0.5, math.exp(-d) / 2)), (sp, (0.5, math.exp(-d) / 2))):
        out.append(atoms_w[0] * f(t - d) + atoms_w[1] * f(t + d) + (f(shift) * wp).sum(axis=1))
    for f, atoms_w in ((fq, (math.exp(-d) / 2, 0.5)), (sq, (math.exp(-d) / 2, 0.5))):
        out.append(atoms_w[0] * f(t - d) + atoms_w[1] * f(t + d) + (f(shift) * wq).sum(axis=1))
    return out[0], out[1], out[2], out[3]


def subsampled_cells(q: float, mu: float, d: float | None, step: float, z: float = 9.0):
    """(losses of the cell left ends, P-masses, Q-masses, P-mass above the grid) of the remove pair."""
    top_inner = mu * mu / 2 + z * mu + (d or 0.0)
    lo = math.floor(math.log1p(-q) / step)
    hi = math.ceil(math.log1p(q * math.expm1(top_inner)) / step) + 1
    edges = np.arange(lo, hi + 1) * step
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.log((np.expm1(edges) + q) / q)
    inner = np.where(np.isfinite(inner), inner, -1e300)
    fp, sp, fq, sq = _cdfs(inner, mu, d)
    p_cdf_mass = np.where(sp[:-1] < 0.5, sp[:-1] - sp[1:], fp[1:] - fp[:-1])
    q_mass = np.where(sq[:-1] < 0.5, sq[:-1] - sq[1:], fq[1:] - fq[:-1])
    p_mass = q * np.clip(p_cdf_mass, 0, None) + (1 - q) * np.clip(q_mass, 0, None)
    above = q * sp[-1] + (1 - q) * sq[-1]
    return edges[:-1], p_mass, np.clip(q_mass, 0, None), float(above)


def _ctd(left: np.ndarray, a: np.ndarray, b: np.ndarray, step: float) -> np.ndarray:
    """P-masses on the points left[0] + i step (one more than cells): connect-the-dots."""
    right = np.clip((a - np.exp(left) * b) / -math.expm1(-step), 0.0, a)
    pmf = np.zeros(a.size + 1)
    pmf[1:] += right
    pmf[:-1] += a - right
    return pmf


def _compose(pmf: np.ndarray, count: int, cut: float = 1e-18) -> tuple[np.ndarray, int, float]:
    """count-fold self-convolution by squaring; returns (pmf, offset shift in cells, mass sent to +inf)."""
    result, result_shift, inf = None, 0, 0.0
    power, power_shift = pmf, 0
    while True:
        if count & 1:
            if result is None:
                result, result_shift = power, power_shift
            else:
                result, result_shift, lost = _conv(result, power, result_shift + power_shift, cut)
                inf += lost
        count >>= 1
        if not count:
            break
        power, power_shift, lost = _conv(power, power, 2 * power_shift, cut)
        inf = inf  # mass cut from a power only matters once it is used: counted via ``lost`` below
        inf += 0.0
    return result, result_shift, inf


def _conv(a: np.ndarray, b: np.ndarray, shift: int, cut: float):
    n = a.size + b.size - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:n]
    out = np.clip(out, 0.0, None)
    keep = np.flatnonzero(out > cut * 1e-3)
    lo, hi = int(keep[0]), int(keep[-1]) + 1
    lost = float(out[hi:].sum())
    return out[lo:hi], shift + lo, lost


def reference_epsilon(q: float, sigma: float, laplace_scale: float | None, steps: int, delta: float,
                      step: float = 2e-5) -> tuple[float, float]:
    """(lower, upper) epsilon of ``steps`` runs of PoissonSampled(q, Composed([Gaussian(sigma), Laplace(b)]))
    (just the Gaussian when ``laplace_scale`` is None), remove direction, on a grid of ``step``."""
    mu = 1.0 / sigma
    d = None if laplace_scale is None else 1.0 / laplace_scale
    left, a, b, above = subsampled_cells(q, mu, d, step)
    first = int(round(left[0] / step))
    results = []
    for pmf0, inf0 in ((_ctd(left, a, b, step), above), (np.append(a, above), 0.0)):
        pmf, shift, lost = _compose(pmf0, steps)
        inf = 1 - (1 - inf0) ** steps + lost
        losses = (first * steps + shift + np.arange(pmf.size)) * step

        def delta_at(eps: float) -> float:
            mask = losses > eps
            return float(np.sum(pmf[mask] * -np.expm1(eps - losses[mask]))) + inf

        lo_e, hi_e = 0.0, float(losses[-1])
        for _ in range(80):
            mid = 0.5 * (lo_e + hi_e)
            if delta_at(mid) <= delta:
                hi_e = mid
            else:
                lo_e = mid
        results.append(hi_e)
    upper, lower = results
    return lower, upper
