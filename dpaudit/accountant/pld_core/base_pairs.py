"""Grid PLDs of a base mechanism's privacy-loss pair and of its sampled versions, from tail masses or atoms.

The pairs (in units of the noise scale; Poisson rate q; the families in :mod:`..families` give the base
tails or atoms):

* Poisson subsampling with rate q of a base pair (P0, Q0), add/remove neighbours: "remove" pair
  (q P0 + (1-q) Q0, Q0) and "add" pair (Q0, q P0 + (1-q) Q0) (Zhu, Dong & Wang 2022, Thm 11; both
  are attained, so they are also the optimistic pairs). Losses psi(L0) and -psi(L0) with
  psi(v) = ln(1 - q + q e^v).
* Poisson subsampling under replace-one: by joint convexity of the hockey-stick divergence,
  (1-q) (fresh loss-0 outcome) + q (base replace-one pair) dominates (upper side); the add/remove pairs at
  sensitivity C are attained (lower side). A family may give its own exact pair instead (the Gaussian's
  ((1-q) N(0) + q N(mu), (1-q) N(0) + q N(-mu)), the pair dp_accounting uses).
* Sampling m of n without replacement under replace-one (q = m/n): by Dong, Roth & Su (2022, Thm 4.2)
  the mechanism is C_q(f)-DP, whose curve is delta(eps) = delta_remove(eps) for eps >= 0 and the
  mirror image 1 - e^eps + e^eps delta_remove(-eps) below, where "remove" is the Poisson-remove pair
  of the base replace-one pair; the remove pair itself is attained (lower side).

Continuous pairs are discretised from their tail masses P(L > v), P(L <= v), Q(L > v), Q(L <= v) (each
accurate to a few ulps relative to its own value) on the pessimistic or optimistic grid of :mod:`.grid`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.special import ndtr

from ..leaf import Leaf
from scipy.special import ndtri

from .grid import GridPLD, from_atoms, from_centred_masses, from_interval_masses, tail_mass

__all__ = ["Tails", "both_tails", "tails_pld", "atoms_pld", "tilt_quantile", "symmetrise", "base_pair",
           "Z_DEFAULT", "Z_MAX", "PoissonRemoveTails", "PoissonAddTails"]

Z_DEFAULT = 8.5  # standard-normal quantile beyond which mass is < 1e-17 per side
Z_MAX = 37.5  # standard-normal tail mass beyond it underflows (< 1e-307): the widest grid ever built
_U = 2.0**-53
_TAIL_STRIDE = 64  # grid points between the probes of _last_needed


class Tails:
    """Tail masses of the loss of a monotone continuous pair at thresholds v: P(L > v), P(L <= v),
    Q(L > v), Q(L <= v), each accurate to a few ulps relative to its own value."""

    def __call__(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError


def both_tails(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(x), Phi(-x)) from one ndtr call: the smaller one directly (accurate to a few ulps relative to
    itself, also far out), the other as 1 minus it (>= 1/2, so equally accurate)."""
    small = ndtr(-np.abs(x))
    large = 1.0 - small
    negative = x < 0
    return np.where(negative, small, large), np.where(negative, large, small)


def _inverse_psi(v: np.ndarray, q: float) -> np.ndarray:
    """g(v) = psi^{-1}(v) = ln((e^v - 1 + q) / q) for v > ln(1 - q); -inf at or below.

    Near 0 (v <= 1) from expm1 directly; above, in log space, g(v) = v - ln q + ln(1 - (1-q) e^{-v})
    = v - ln q + ln(-expm1(ln(1-q) - v)), which never overflows (no warnings for losses up to ~1e308)."""
    v = np.asarray(v, dtype=float)
    small = v <= 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = np.expm1(np.minimum(v, 1.0)) + q
        near = np.log(inner / q)
        far = v - math.log(q) + np.log(-np.expm1(math.log1p(-q) - np.maximum(v, 1.0)))
    return np.where(small, np.where(inner > 0, near, -np.inf), far)


def _psi(v: float, q: float) -> float:
    return math.log1p(q * math.expm1(v)) if v < 700 else v + math.log(q) + math.log1p((1 - q) * math.exp(-v) / q)


class PoissonRemoveTails(Tails):
    """(q P0 + (1-q) Q0, Q0): L = psi(L0) > v  <=>  L0 > g(v)."""

    def __init__(self, base, q: float) -> None:
        self.base, self.q = base, q

    def __call__(self, v):
        q = self.q
        g = _inverse_psi(np.asarray(v, dtype=float), q)
        sp0, fp0, sq0, fq0 = self.base(np.where(np.isfinite(g), g, -1e300))
        sp = q * sp0 + (1 - q) * sq0
        fp = q * fp0 + (1 - q) * fq0
        return sp, fp, sq0, fq0

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        lo, hi = self.base.range(z)
        return _psi(lo, self.q), _psi(hi, self.q)

    def atoms(self) -> list[tuple[float, float, float]]:
        q = self.q
        return [(_psi(l, q), q * p + (1 - q) * m, m) for l, p, m in self.base.atoms()]


class PoissonAddTails(Tails):
    """(Q0, q P0 + (1-q) Q0): L = -psi(L0) > v  <=>  L0 < g(-v); for a symmetric base
    Q0(L0 < w) = P0(L0 > -w)."""

    def __init__(self, base, q: float) -> None:
        self.base, self.q = base, q

    def __call__(self, v):
        q = self.q
        g = _inverse_psi(-np.asarray(v, dtype=float), q)
        g = np.where(np.isfinite(g), g, -1e300)
        sp0_neg, fp0_neg, sq0_neg, fq0_neg = self.base(-g)  # P0(L0 > -g) = Q0(L0 < g)
        # Q0(L0 < g) = P0(L0 > -g) = sp0_neg ; P0(L0 < g) = Q0(L0 > -g) = sq0_neg (symmetry)
        sp = sp0_neg
        fp = fp0_neg
        sq = q * sq0_neg + (1 - q) * sp0_neg
        fq = q * fq0_neg + (1 - q) * fp0_neg
        return sp, fp, sq, fq

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        lo, hi = self.base.range(z)
        return -_psi(hi, self.q), -_psi(lo, self.q)

    def atoms(self) -> list[tuple[float, float, float]]:
        q = self.q
        return [(-_psi(l, q), m, q * p + (1 - q) * m) for l, p, m in self.base.atoms()]


def _last_needed(tails, first: float, last: float, step: float) -> float:
    """The smallest grid index e <= ``last`` (of the form first + 64 j, or ``last``) with P(L > e step) <= TAIL_MASS
    / 4, from the tails at every 64th grid point: heavy upper tails (subsampled mechanisms) reach losses far
    beyond any mass that survives a composition, and cells there would only be cut after the first FFT."""
    coarse = first + np.arange(0, last - first, _TAIL_STRIDE)
    beyond = np.flatnonzero(tails(coarse * step)[0] <= 0.25 * tail_mass())
    return float(coarse[beyond[0]]) if beyond.size and coarse[beyond[0]] < last else last


def _grid_from_tails(tails, step: float, pessimistic: bool, z: float = Z_DEFAULT) -> GridPLD:
    """Grid PLD of a continuous pair from its tail masses; losses up to the standard-normal quantile ``z``
    of the noise (the rest goes to +inf). A wider ``z`` than the default keeps every cell (no
    construction-time truncation), for the tilted small-delta read-out (:mod:`..pld_tilted`)."""
    default = z == Z_DEFAULT
    if default and tail_mass() < 1e-15:  # a smaller tail budget (small target delta): grid further out
        z = min(Z_MAX, max(Z_DEFAULT, float(-ndtri(1e-2 * tail_mass()))))
    lo, hi = tails.range(z)
    first = math.floor(lo / step) - 1
    last = math.ceil(hi / step) + 1
    shift = 0.0 if pessimistic else -0.5  # optimistic cells are centred on the grid points
    if default:  # the default grid: cut the upper tail like every composition does (tail_mass() per operation)
        last = round(_last_needed(tails, first + shift, last + shift, step) - shift)
        tail = {"tail": 0.5 * tail_mass()}
    else:  # the tilted read-out's grid keeps every cell
        tail = {"tail": 0.0}
    edges = (first + shift + np.arange(last - first + 1)) * step
    sp, fp, sq, fq = tails(edges)
    # interval masses from whichever tail is smaller (better relative accuracy)
    use_upper_p = sp[:-1] <= 0.5
    mass_p = np.where(use_upper_p, sp[:-1] - sp[1:], fp[1:] - fp[:-1])
    err_p = 8 * _U * np.where(use_upper_p, sp[:-1] + sp[1:], fp[1:] + fp[:-1])
    use_upper_q = sq[:-1] <= 0.5
    mass_q = np.where(use_upper_q, sq[:-1] - sq[1:], fq[1:] - fq[:-1])
    err_q = 8 * _U * np.where(use_upper_q, sq[:-1] + sq[1:], fq[1:] + fq[:-1])
    # scale the Q-masses by e^{grid point}: cell k's point is edges[k] (+ step/2 when centred)
    points = edges[:-1] - shift * step
    scale = np.exp(np.minimum(points, 700.0))
    scaled_q, err_q = mass_q * scale, err_q * scale
    if hasattr(tails, "log_sq"):  # where Q-masses underflow, use ln Q(L > v) instead
        log_sq = tails.log_sq(edges)
        tiny = use_upper_q & (sq[:-1] < 1e-250)
        if tiny.any():
            with np.errstate(over="ignore"):
                upper = np.exp(np.minimum(log_sq[:-1] + points, 700.0))
                lower = np.exp(np.minimum(log_sq[1:] + points, 700.0))
            scaled_q = np.where(tiny, upper - lower, scaled_q)
            err_q = np.where(tiny, 1e-12 * (upper + lower), err_q)
    if pessimistic:
        pld = from_interval_masses(step, first, mass_p, scaled_q, err_p, err_q, below=float(fp[0]),
                                   above=float(sp[-1]), inf_mass=0.0, pessimistic=True, **tail)
    else:  # cell k is centred on (first + k) * step
        pld = from_centred_masses(step, first, mass_p, scaled_q, err_p, err_q, above=float(sp[-1]), inf_mass=0.0,
                                  **tail)
    atoms = tails.atoms()
    if atoms:
        losses, masses = np.array([a[0] for a in atoms]), np.array([a[1] for a in atoms])
        pld = pld.plus(from_atoms(step, losses, masses, 0.0, pessimistic))
    return pld


def atoms_pld(losses, p, step, pessimistic) -> GridPLD:
    return from_atoms(step, losses, p, 0.0, pessimistic)


def tilt_quantile(mu: float, lam: float | None) -> float:
    """Noise quantile up to which a Gaussian-based leaf is gridded: the default, or, for the read-out
    tilted by e^{lam L} (whose loss peaks near the noise quantile lam mu), ten standard deviations past
    that peak (capped where the normal tail underflows)."""
    if lam is None:
        return Z_DEFAULT
    return min(Z_MAX, max(Z_DEFAULT + 1.5, 10.0 + lam * mu))


def symmetrise(pld: GridPLD) -> GridPLD:
    """The symmetric pair whose curve equals ``pld``'s for eps >= 0 and its mirror image below."""
    losses = pld.losses
    pos = losses > 0
    p = pld.pmf[pos]
    idx = pld.offset + np.flatnonzero(pos)  # grid indices (> 0)
    mirrored = p * np.exp(-losses[pos])  # P-mass at -l equals Q-mass at +l
    zero = 1.0 - p.sum() - mirrored.sum() - pld.inf_mass
    if zero < -1e-9:
        raise ValueError("the symmetrised curve is not a privacy curve (negative mass at loss 0)")
    top = int(idx.max()) if idx.size else 0
    pmf = np.zeros(2 * top + 1)
    pmf[top + idx] = p
    pmf[top - idx] = mirrored
    pmf[top] += max(zero, 0.0)
    return GridPLD(pld.step, -top, pmf, pld.inf_mass, pld.error * 2, pld.pessimistic)


def tails_pld(base: Tails, q: float, direction: str, step: float, pessimistic: bool, z: float) -> GridPLD:
    """Grid PLD of a continuous base pair given by its tails: the pair itself (direction "sym") or its
    Poisson-subsampled "remove" or "add" pair at rate ``q``; gridded up to the noise quantile ``z``."""
    if direction == "sym":
        return _grid_from_tails(base, step, pessimistic, z)
    tails = PoissonRemoveTails(base, q) if direction == "remove" else PoissonAddTails(base, q)
    return _grid_from_tails(tails, step, pessimistic, z)


#: (leaf, base parameter, direction "sym"/"remove"/"add", step, pessimistic, lam) -> GridPLD.
Directional = Callable[[Leaf, float, str, float, bool, "float | None"], GridPLD]


def base_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None, only: str | None,
              directional: Directional, double: float,
              antipodal: Callable[[Leaf, float, bool, "float | None"], GridPLD] | None = None,
              ) -> tuple[GridPLD | None, GridPLD | None]:
    """(remove-direction PLD, add-direction PLD) of a base leaf and its sampled versions; the same object
    twice when the pair is symmetric. ``leaf.param`` is at sensitivity C; ``double`` (2 for additive noise,
    1 for a guarantee) scales it under replace-one. ``directional`` builds the base pair or its Poisson
    remove/add pair; ``antipodal``, if given, the exact Poisson-sampled pair under replace-one.
    ``lam``: grid the continuous tails far enough (and untruncated) for a read-out tilted by e^{lam L}.
    ``only`` ("remove" or "add"): the other direction of an asymmetric pair is not built (None)."""
    if leaf.sampling is None:
        param = leaf.param * (double if relation == "replace_one" else 1.0)
        one = directional(leaf, param, "sym", step, pessimistic, lam)
        return one, one
    if leaf.sampling == "poisson" and relation == "add_remove":
        return (None if only == "add" else directional(leaf, leaf.param, "remove", step, pessimistic, lam),
                None if only == "remove" else directional(leaf, leaf.param, "add", step, pessimistic, lam))
    if leaf.sampling == "poisson":  # replace-one
        if antipodal is not None:
            one = antipodal(leaf, step, pessimistic, lam)
            return one, one
        if not pessimistic:  # attained: a record replaced by one contributing nothing
            return (directional(leaf, leaf.param, "remove", step, pessimistic, lam),
                    directional(leaf, leaf.param, "add", step, pessimistic, lam))
        base = directional(leaf, leaf.param * double, "sym", step, pessimistic, lam)
        zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
        one = base.mixture(zero, leaf.q)
        return one, one
    # sampling without replacement, replace-one only
    remove = directional(leaf, leaf.param * double, "remove", step, pessimistic, lam)
    if not pessimistic:
        return remove, remove
    one = symmetrise(remove)
    return one, one


