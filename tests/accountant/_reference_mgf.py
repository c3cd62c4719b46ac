"""Independent reference for epsilon(delta) of DP-SGD by Laplace inversion of the exact moment generating
function of the privacy loss (written apart from dpaudit's PLD code, which is not imported; no grid of the
loss at all, so none of a PLD's discretisation, truncation or FFT round-off).

Pairs (Poisson-subsampled Gaussian, add/remove neighbours, mu = 1/sigma, r(x) = e^{mu x - mu^2/2}):
remove P = q N(mu, 1) + (1 - q) N(0, 1) against Q = N(0, 1), loss L = ln(1 - q + q r(x)) under P; add
P = N(0, 1) against Q = the mixture, loss -ln(1 - q + q r(x)) under N(0, 1). Their moment generating
functions at complex s are one-dimensional integrals against the standard normal density:
M_remove(s) = E_N(0,1)[(1 - q + q r)^{1 + s}], M_add(s) = E_N(0,1)[(1 - q + q r)^{-s}], both entire in s.

1. delta(eps) of T compositions = E_P[(1 - e^{eps - L_T})_+], and the hockey-stick function has the Laplace
   transform e^{-s eps} / (s (s + 1)) for Re s > 0, so for every c > 0
       delta(eps) = (1 / pi) int_0^inf Re[ M(c + it)^T e^{-(c + it) eps} / ((c + it)(c + it + 1)) ] dt
   (Bromwich inversion; the integrand is analytic in the strip 0 < Re s, so the trapezoid rule in t converges
   geometrically: its error is the aliasing e^{-2 pi c / dt} plus delta(eps + 2 pi / dt) e^{2 pi c / dt}).
   c is the saddle point of the integrand (where it does not oscillate), found on the real axis.
2. M(s) - 1 = E[expm1(a(s) log1p(u(x)))] with u = q (r - 1), a = 1 + s or -s, by Gauss-Legendre panels of
   width 1/4 over +-40 standard deviations around both of the integrand's bumps (x = 0 and the tilted tail
   at x = (1 + c) mu): float64, relative error ~1e-15 of M - 1, so T ln M is exact to ~1e-12 even at
   T = 2e6 (:func:`check_mgf` compares it with mpmath quadrature at 40 digits).
3. The t-grid is refined (halving dt, doubling the range) until two successive delta values agree to
   ``rtol``; epsilon(delta) by bisection on eps. epsilon = the larger of the two directions'.

Checks: the T-fold Gaussian mechanism (q = 1) against its closed form, to 3e-13 relative in epsilon; q = 0.01,
sigma = 1, T = 100, delta = 1e-10: 2.1628199, inside the rigorous bracket [2.1528210, 2.1628226] of
``_reference_small_delta`` at step 2e-4.

Accuracy: not a proven bracket, but every approximation is exponentially convergent and checked by its own
refinement; the returned (eps, err) carries err = the change of epsilon between the last two refinements
plus the bisection width (typically 1e-9 relative).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from scipy.special import roots_legendre

_NODES, _WEIGHTS = roots_legendre(24)
_PANEL = 0.25


def _panels(lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    count = max(1, int(math.ceil((hi - lo) / _PANEL)))
    edges = np.linspace(lo, hi, count + 1)
    half = 0.5 * np.diff(edges)
    mid = 0.5 * (edges[1:] + edges[:-1])
    x = (mid[:, None] + half[:, None] * _NODES[None, :]).ravel()
    w = (half[:, None] * _WEIGHTS[None, :]).ravel()
    return x, w


@functools.lru_cache(maxsize=64)
def _nodes(q: float, sigma: float, c_max: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(log1p(u(x)), ln(weight * phi(x)), x) on panels covering both bumps of the integrand for tilts up to
    ``c_max``."""
    mu = 1.0 / sigma
    x, w = _panels(-40.0, (1.0 + c_max) * mu + 40.0)
    log_r = mu * x - 0.5 * mu * mu
    # u = q (r - 1); log1p(u) = log(1 - q + q r), computed without cancellation on both sides
    if q == 1.0:  # the Gaussian mechanism itself (used to validate the inversion against its closed form)
        return log_r, np.log(w) - 0.5 * x * x - 0.5 * math.log(2.0 * math.pi), x
    with np.errstate(over="ignore"):
        small = log_r < 0.0
        u = q * np.expm1(log_r)
        big = np.logaddexp(math.log1p(-q), math.log(q) + log_r)
    log_1pu = np.where(small, np.log1p(np.where(small, u, 0.0)), big)
    log_weight = np.log(w) - 0.5 * x * x - 0.5 * math.log(2.0 * math.pi)
    return log_1pu, log_weight, x


def _expm1_complex(z: np.ndarray) -> np.ndarray:
    """e^z - 1 for complex z, accurate for small |z| (no cancellation)."""
    a, b = z.real, z.imag
    return np.expm1(a) * np.cos(b) - 2.0 * np.sin(0.5 * b) ** 2 + 1j * np.exp(a) * np.sin(b)


def log_mgf(q: float, sigma: float, s: np.ndarray, direction: str, c_max: float | None = None) -> np.ndarray:
    """ln M(s) of one step's privacy loss (``direction`` "remove" or "add") at complex ``s`` (any shape)."""
    s = np.asarray(s, dtype=complex)
    c_max = float(np.max(s.real)) if c_max is None else c_max
    log_1pu, log_weight, _ = _nodes(q, sigma, math.ceil(max(c_max, 1.0)))
    weight = np.exp(log_weight)
    a = (1.0 + s) if direction == "remove" else -s
    out = np.empty(s.shape, dtype=complex)
    flat_s, flat_a = s.ravel(), a.ravel()
    flat = out.ravel()
    for start in range(0, flat_s.size, 64):
        block = flat_a[start:start + 64]
        z = block[:, None] * log_1pu[None, :]
        log_terms = z + log_weight[None, :]  # ln(weight phi(x) e^z)
        top = log_terms.real.max(axis=1)
        near = np.abs(z) < 1.0
        with np.errstate(over="ignore", invalid="ignore"):
            # phi(x) (e^z - 1): small z without cancellation, large z in log space (no overflow against phi's decay)
            terms = np.where(near, _expm1_complex(np.where(near, z, 0.0)) * weight[None, :],
                             np.exp(np.where(near, 0.0, np.minimum(log_terms.real, 700.0)) + 1j * log_terms.imag)
                             - weight[None, :])
        m1 = terms.sum(axis=1)  # M - 1 (E[1] = 1 removed exactly, term by term)
        re, im = m1.real, m1.imag
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            precise = 0.5 * np.log1p(2.0 * re + re * re + im * im) + 1j * np.arctan2(im, 1.0 + re)
            # M far from 1 (ln M > 300): no cancellation to avoid, sum in log space
            scaled = np.exp(log_terms - top[:, None]).sum(axis=1)
            large = np.log(scaled) + top
        flat[start:start + 64] = np.where(top < 300.0, precise, large)
    return out


def check_mgf(q: float, sigma: float, s: complex, direction: str, dps: int = 40) -> tuple[complex, complex]:
    """(float64 quadrature, mpmath tanh-sinh at ``dps`` digits) of M(s) - 1, for validating :func:`log_mgf`."""
    import mpmath as mp

    ours = complex(np.expm1(log_mgf(q, sigma, np.array([s]), direction)[0]))
    with mp.workdps(dps):
        mq, mu = mp.mpf(q), 1 / mp.mpf(sigma)
        a = (1 + mp.mpc(s)) if direction == "remove" else -mp.mpc(s)

        def f(x):
            w = mp.log(1 - mq + mq * mp.exp(mu * x - mu * mu / 2))
            return mp.exp(-x * x / 2) * mp.expm1(a * w)

        c = max(float(np.real(s)), 0.0)
        cross = float((mp.log(1 / mq) + mu * mu / 2) / mu)
        points = sorted({-mp.inf, -4.0, 0.0, 4.0, cross, (1 + c) * float(mu), (1 + c) * float(mu) + 5.0, mp.inf},
                        key=float)
        exact = complex(mp.quad(f, points) / mp.sqrt(2 * mp.pi))
    return ours, exact


@functools.lru_cache(maxsize=64)
def _saddle(q: float, sigma: float, steps: int, eps: float, direction: str) -> float:
    """The real c > 0 minimising T ln M(c) - c eps - ln(c (c + 1)) (the integrand's saddle point)."""

    def objective(cs: np.ndarray) -> np.ndarray:
        return steps * log_mgf(q, sigma, cs, direction, c_max=60.0).real - cs * eps - np.log(cs * (cs + 1.0))

    cs = np.geomspace(1e-3, 60.0, 120)
    best = int(np.argmin(objective(cs)))
    lo, hi = cs[max(best - 1, 0)], cs[min(best + 1, cs.size - 1)]
    for _ in range(3):
        fine = np.linspace(lo, hi, 21)
        best = int(np.argmin(objective(fine)))
        lo, hi = fine[max(best - 1, 0)], fine[min(best + 1, fine.size - 1)]
    return float(0.5 * (lo + hi))


class _Inversion:
    """delta(eps) near a fixed eps0 of one direction: the Bromwich integrand's eps-free part on a t-grid of
    step ``dt``, extended until the integrand's modulus stays below 1e-17 of its peak (times the 1/t^2
    decay of the hockey-stick's transform, over a further stretch as long as the grid so far)."""

    def __init__(self, q: float, sigma: float, steps: int, eps0: float, direction: str, dt: float):
        self.c = c = _saddle(q, sigma, steps, eps0, direction)
        parts, start, block = [], 0, int(round(4.0 / dt))
        peak = -math.inf
        while True:
            t = (start + np.arange(block)) * dt
            s = c + 1j * t
            part = steps * log_mgf(q, sigma, s, direction, c_max=max(c, 1.0)) - np.log(s * (s + 1.0)) - s * eps0
            # |M(c + it)|^T underflowed to 0 far out (ln 0 = -inf, its phase nan): a term of exactly 0, not a nan
            # that would keep the stopping rule below from ever holding
            part = np.where(np.isfinite(part) | (part.real == np.inf), part, complex(-np.inf, 0.0))
            parts.append(part)
            peak = max(peak, float(part.real.max()))
            start += block
            if float(part.real[block // 2:].max()) < peak - 40.0 + math.log(dt) or start * dt > 2e5:
                break
            block *= 2
        self.t = np.arange(sum(p.size for p in parts)) * dt
        self.log_part = np.concatenate(parts) + (c + 1j * self.t) * eps0
        self.weights = np.full(self.t.size, dt)
        self.weights[0] = 0.5 * dt

    def log_delta(self, eps: float) -> float:
        log_terms = self.log_part - (self.c + 1j * self.t) * eps
        top = float(np.max(log_terms.real))
        value = float(np.sum(self.weights * np.exp(log_terms - top).real)) / math.pi
        return math.log(value) + top if value > 0 else -math.inf


def _epsilon_on(inv: _Inversion, delta: float, lo: float, hi: float) -> float:
    target = math.log(delta)
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if inv.log_delta(mid) <= target:
            hi = mid
        else:
            lo = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return hi


def reference_epsilon(q: float, sigma: float, steps: int, delta: float, direction: str = "remove",
                      guess: float | None = None, rtol: float = 1e-9) -> tuple[float, float]:
    """(epsilon(delta), its estimated error) of one direction ("remove", "add") or of both ("both": the larger).
    The t-step is halved until two successive epsilons agree to ``rtol`` relative; the saddle is re-centred on
    the answer."""
    if direction == "both":
        return max(reference_epsilon(q, sigma, steps, delta, d, guess, rtol) for d in ("remove", "add"))
    eps0 = _chernoff_guess(q, sigma, steps, delta, direction) if guess is None else guess
    dt, previous = 0.05, None
    for _ in range(24):
        inv = _Inversion(q, sigma, steps, eps0, direction, dt)
        # bisection near the saddle's eps0 (far from it the inversion's sum may cancel to round-off); an answer
        # elsewhere re-centres the saddle there and is computed again
        width = 0.05 * max(eps0, 1e-3)
        lo, hi = max(eps0 - width, 0.0), eps0 + width
        value = _epsilon_on(inv, delta, lo, hi)
        if not lo + 1e-9 * max(1.0, hi) < value < hi - 1e-9 * max(1.0, hi):
            # the answer lies outside the bracket (a Chernoff guess far above it): one wide bisection on the same
            # inversion for the next centre (checked there), instead of stepping the bracket along
            wide = _epsilon_on(inv, delta, 1e-6 * eps0, 4.0 * eps0)
            value = wide if 1e-6 * eps0 < wide < 4.0 * eps0 * (1 - 1e-9) else value
        if abs(value - eps0) > 1e-3 * max(eps0, 1e-3):
            eps0 = max(value, 1e-9)
            continue
        if previous is not None and abs(value - previous) <= rtol * max(1.0, value):
            return value, abs(value - previous) + 1e-12 * max(1.0, value)
        previous, dt = value, dt / 2
    raise RuntimeError("Bromwich inversion did not converge")


def _chernoff_guess(q: float, sigma: float, steps: int, delta: float, direction: str) -> float:
    """min over c of (T ln M(c) - ln delta) / c: the Chernoff bound, an upper bound on the direction's epsilon."""
    cs = np.geomspace(1e-3, 60.0, 200)
    values = (steps * log_mgf(q, sigma, cs, direction, c_max=60.0).real - math.log(delta)) / cs
    return max(float(np.min(values)), 1e-6)
