"""Privacy-loss pairs of the leaf mechanisms, discretised onto a grid (see :mod:`._pld_core`).

Each leaf is given as an ordered pair (P, Q) of output distributions on adjacent inputs; in units of
the noise scale (x = output / noise), with ``mu = sensitivity / sigma`` for the Gaussian and
``d = sensitivity / b`` for Laplace:

* Gaussian: P = N(mu, 1), Q = N(0, 1); loss mu x - mu^2/2 (symmetric pair, one direction suffices).
* Laplace: P = Lap(0, 1), Q = Lap(d, 1); loss |x - d| - |x| in [-d, d], atoms at +-d (symmetric).
* Randomized response (k values, parameter eps): losses eps, -eps, 0 with P-masses e^eps/Z, 1/Z,
  (k-2)/Z, Z = e^eps + k - 1 (symmetric); binary RR is the worst case of every eps-DP mechanism
  (Kairouz, Oh & Viswanath 2015).
* Poisson subsampling with rate q of a base pair (P0, Q0), add/remove neighbours: "remove" pair
  (q P0 + (1-q) Q0, Q0) and "add" pair (Q0, q P0 + (1-q) Q0) (Zhu, Dong & Wang 2022, Thm 11; both
  are attained, so they are also the optimistic pairs). Losses psi(L0) and -psi(L0) with
  psi(v) = ln(1 - q + q e^v).
* Poisson subsampling under replace-one, Gaussian: ((1-q) N(0) + q N(mu), (1-q) N(0) + q N(-mu)) with
  mu = C / sigma (the sampled record moves the sum by +C or -C); the pair dp_accounting uses. Other
  leaves: by joint convexity of the hockey-stick divergence, (1-q) (fresh loss-0 outcome) + q (base
  replace-one pair) dominates (upper side); the add/remove pairs at sensitivity C are attained
  (lower side).
* Sampling m of n without replacement under replace-one (q = m/n): by Dong, Roth & Su (2022, Thm 4.2)
  the mechanism is C_q(f)-DP, whose curve is delta(eps) = delta_remove(eps) for eps >= 0 and the
  mirror image 1 - e^eps + e^eps delta_remove(-eps) below, where "remove" is the Poisson-remove pair
  of the base replace-one pair; the remove pair itself is attained (lower side).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from ..errors import UnsupportedEventError
from ._event_tree import Leaf
from ._new_leaves import NEW_KINDS
from ._pld_new_leaves import build_new_leaf
from ._pld_core import TAIL_MASS, GridPLD, from_atoms, from_centred_masses, from_interval_masses

__all__ = ["Leaf", "build_leaf", "leaf_loss_moments"]

_Z = 8.5  # standard-normal quantile beyond which mass is < 1e-17 per side
_LOW_CUT = -4.0  # sampled sub-trees: inner losses below it are raised to it (upper side)
_Z_MAX = 37.5  # standard-normal tail mass beyond it underflows (< 1e-307): the widest grid ever built
_U = 2.0**-53
_TAIL_STRIDE = 64  # grid points between the probes of _last_needed


# --------------------------------------------------------------------------- base pairs
class _Tails:
    """Tail masses of the loss of a monotone continuous pair at thresholds v: P(L > v), P(L <= v),
    Q(L > v), Q(L <= v), each accurate to a few ulps relative to its own value."""

    def __call__(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError


def _both_tails(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(x), Phi(-x)) from one ndtr call: the smaller one directly (accurate to a few ulps relative to
    itself, also far out), the other as 1 minus it (>= 1/2, so equally accurate)."""
    small = ndtr(-np.abs(x))
    large = 1.0 - small
    negative = x < 0
    return np.where(negative, small, large), np.where(negative, large, small)


class _GaussianTails(_Tails):
    def __init__(self, mu: float) -> None:
        self.mu = mu

    def __call__(self, v):
        mu = self.mu
        return (*_both_tails(mu / 2 - v / mu), *_both_tails(-mu / 2 - v / mu))

    def range(self, z: float = _Z) -> tuple[float, float]:
        return self.mu * self.mu / 2 - _Z * self.mu, self.mu * self.mu / 2 + z * self.mu

    def log_sq(self, v):
        """ln Q(L > v), accurate where Q(L > v) underflows."""
        return log_ndtr(-self.mu / 2 - np.asarray(v, dtype=float) / self.mu)

    def atoms(self) -> list[tuple[float, float, float]]:
        return []


class _LaplaceTails(_Tails):
    """Continuous part (0 < x < d, loss d - 2x) of the Laplace pair; the atoms are listed apart."""

    def __init__(self, d: float) -> None:
        self.d = d

    def __call__(self, v):
        d = self.d
        v = np.asarray(v, dtype=float)
        y = np.clip((d - v) / 2.0, 0.0, d)  # L0 > v  <=>  x < y, within (0, d)
        e_y, e_yd, e_d = np.exp(-y), np.exp(y - d), math.exp(-d)
        sp = 0.5 * -np.expm1(-y)  # P0(0 < X < y)
        fp = 0.5 * (e_y - e_d)  # P0(y <= X < d)
        sq = 0.5 * (e_yd - e_d)  # Q0(0 < X < y)
        fq = 0.5 * -np.expm1(y - d)  # Q0(y <= X < d)
        return sp, fp, sq, fq

    def range(self, z: float = _Z) -> tuple[float, float]:
        return -self.d, self.d

    def atoms(self) -> list[tuple[float, float, float]]:
        """(loss, P0-mass, Q0-mass): x <= 0 gives loss d, x >= d gives loss -d."""
        d = self.d
        return [(d, 0.5, 0.5 * math.exp(-d)), (-d, 0.5 * math.exp(-d), 0.5)]


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


class _PoissonRemoveTails(_Tails):
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

    def range(self, z: float = _Z) -> tuple[float, float]:
        lo, hi = self.base.range(z)
        return _psi(lo, self.q), _psi(hi, self.q)

    def atoms(self) -> list[tuple[float, float, float]]:
        q = self.q
        return [(_psi(l, q), q * p + (1 - q) * m, m) for l, p, m in self.base.atoms()]


class _PoissonAddTails(_Tails):
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

    def range(self, z: float = _Z) -> tuple[float, float]:
        lo, hi = self.base.range(z)
        return -_psi(hi, self.q), -_psi(lo, self.q)

    def atoms(self) -> list[tuple[float, float, float]]:
        q = self.q
        return [(-_psi(l, q), m, q * p + (1 - q) * m) for l, p, m in self.base.atoms()]


class _AntipodalTails(_Tails):
    """((1-q) N(0) + q N(mu), (1-q) N(0) + q N(-mu)); loss increasing in x, inverse in closed form:
    with u = e^{mu x}, c = q e^{-mu^2/2}, t = e^v: c u^2 + (1-q)(1-t) u - t c = 0."""

    def __init__(self, mu: float, q: float) -> None:
        self.mu, self.q = mu, q

    def _x(self, v):
        mu, q = self.mu, self.q
        log_c = math.log(q) - mu * mu / 2
        v = np.asarray(v, dtype=float)
        # work with s = u / sqrt(t) to stay in range: c s^2 + (1-q)(t^-1/2 - t^1/2) s - c = 0
        beta = (1 - q) * (-2.0 * np.sinh(v / 2))  # (1-q)(t^-1/2 - t^1/2)
        c = math.exp(log_c)
        disc = np.sqrt(beta * beta + 4 * c * c)
        s = np.where(beta <= 0, (-beta + disc) / (2 * c), 2 * c / (beta + disc))
        return (np.log(s) + v / 2) / mu

    def __call__(self, v):
        mu, q = self.mu, self.q
        x = self._x(v)
        sp = (1 - q) * ndtr(-x) + q * ndtr(mu - x)
        fp = (1 - q) * ndtr(x) + q * ndtr(x - mu)
        sq = (1 - q) * ndtr(-x) + q * ndtr(-mu - x)
        fq = (1 - q) * ndtr(x) + q * ndtr(x + mu)
        return sp, fp, sq, fq

    def loss(self, x: float) -> float:
        mu, q = self.mu, self.q
        top = np.logaddexp(math.log1p(-q), math.log(q) + mu * x - mu * mu / 2) if q < 1 else mu * x - mu * mu / 2
        bottom = np.logaddexp(math.log1p(-q), math.log(q) - mu * x - mu * mu / 2) if q < 1 else -mu * x - mu * mu / 2
        return float(top - bottom)

    def range(self, z: float = _Z) -> tuple[float, float]:
        return self.loss(-self.mu - _Z), self.loss(self.mu + z)

    def atoms(self) -> list[tuple[float, float, float]]:
        return []


# --------------------------------------------------------------------------- discretisation
def _last_needed(tails, first: float, last: float, step: float) -> float:
    """The smallest grid index e <= ``last`` (of the form first + 64 j, or ``last``) with P(L > e step) <= TAIL_MASS
    / 4, from the tails at every 64th grid point: heavy upper tails (subsampled mechanisms) reach losses far
    beyond any mass that survives a composition, and cells there would only be cut after the first FFT."""
    coarse = first + np.arange(0, last - first, _TAIL_STRIDE)
    beyond = np.flatnonzero(tails(coarse * step)[0] <= 0.25 * TAIL_MASS)
    return float(coarse[beyond[0]]) if beyond.size and coarse[beyond[0]] < last else last


def _grid_from_tails(tails, step: float, pessimistic: bool, z: float = _Z) -> GridPLD:
    """Grid PLD of a continuous pair from its tail masses; losses up to the standard-normal quantile ``z``
    of the noise (the rest goes to +inf). A wider ``z`` than the default keeps every cell (no
    construction-time truncation), for the tilted small-delta read-out (:mod:`._pld_tail`)."""
    lo, hi = tails.range(z)
    first = math.floor(lo / step) - 1
    last = math.ceil(hi / step) + 1
    shift = 0.0 if pessimistic else -0.5  # optimistic cells are centred on the grid points
    if z == _Z:  # the default grid: cut the upper tail like every composition does (TAIL_MASS per operation)
        last = round(_last_needed(tails, first + shift, last + shift, step) - shift)
        tail = {"tail": 0.5 * TAIL_MASS}
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


def _rr_atoms(eps: float, buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(losses, P-masses, Q-masses) of k-ary randomized response."""
    z = math.exp(eps) + buckets - 1
    losses = np.array([eps, -eps, 0.0])
    p = np.array([math.exp(eps) / z, 1.0 / z, (buckets - 2) / z])
    qm = np.array([1.0 / z, math.exp(eps) / z, (buckets - 2) / z])
    return losses, p, qm


def _atoms_pld(losses, p, step, pessimistic) -> GridPLD:
    return from_atoms(step, losses, p, 0.0, pessimistic)


def _discrete(leaf: Leaf, direction: str, step: float, pessimistic: bool) -> GridPLD:
    """RR leaves (possibly Poisson-subsampled: "remove"/"add" directions) as atoms."""
    losses, p0, q0 = _rr_atoms(leaf.param, leaf.buckets)
    q = leaf.q
    if direction == "sym":
        return _atoms_pld(losses, p0, step, pessimistic)
    mix = q * p0 + (1 - q) * q0
    with np.errstate(divide="ignore", invalid="ignore"):  # zero-mass atoms are dropped later
        if direction == "remove":
            return _atoms_pld(np.log(mix) - np.log(q0), mix, step, pessimistic)
        return _atoms_pld(np.log(q0) - np.log(mix), q0, step, pessimistic)


def _continuous_base(kind: str, param: float):
    return _GaussianTails(param) if kind == "gaussian" else _LaplaceTails(param)


def _directional(leaf: Leaf, param: float, direction: str, step: float, pessimistic: bool,
                 lam: float | None = None) -> GridPLD:
    """Base (direction "sym") or Poisson-subsampled (remove/add) pair at the given base parameter."""
    if leaf.kind == "rr":
        return _discrete(leaf, direction, step, pessimistic)
    base = _continuous_base(leaf.kind, param)
    z = tilt_quantile(param, lam)
    if direction == "sym":
        return _grid_from_tails(base, step, pessimistic, z)
    tails = _PoissonRemoveTails(base, leaf.q) if direction == "remove" else _PoissonAddTails(base, leaf.q)
    return _grid_from_tails(tails, step, pessimistic, z)


def tilt_quantile(mu: float, lam: float | None) -> float:
    """Noise quantile up to which a Gaussian-based leaf is gridded: the default, or, for the read-out
    tilted by e^{lam L} (whose loss peaks near the noise quantile lam mu), ten standard deviations past
    that peak (capped where the normal tail underflows)."""
    if lam is None:
        return _Z
    return min(_Z_MAX, max(_Z + 1.5, 10.0 + lam * mu))


def _symmetrise(pld: GridPLD) -> GridPLD:
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


def build_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool,
               lam: float | None = None, only: str | None = None) -> tuple[GridPLD | None, GridPLD | None]:
    """(remove-direction PLD, add-direction PLD) of a normalised leaf; the same object twice when the
    pair is symmetric. ``leaf.param`` is at sensitivity C; replace-one doubles it where needed.
    ``lam``: grid the continuous tails far enough (and untruncated) for a read-out tilted by e^{lam L}.
    ``only`` ("remove" or "add"): the other direction of an asymmetric pair is not built (None)."""
    if leaf.kind in NEW_KINDS:  # accountant-breadth events: DiscreteGaussian, ZCDP, ... (._pld_new_leaves)
        return build_new_leaf(leaf, relation, step, pessimistic)
    if leaf.kind == "tree":
        return _tree_leaf(leaf, relation, step, pessimistic)
    double = 2.0 if leaf.kind != "rr" else 1.0  # replace-one sensitivity 2C for additive noise
    if leaf.sampling is None:
        param = leaf.param * (double if relation == "replace_one" else 1.0)
        one = _directional(leaf, param, "sym", step, pessimistic, lam)
        return one, one
    if leaf.sampling == "poisson" and relation == "add_remove":
        return (None if only == "add" else _directional(leaf, leaf.param, "remove", step, pessimistic, lam),
                None if only == "remove" else _directional(leaf, leaf.param, "add", step, pessimistic, lam))
    if leaf.sampling == "poisson":  # replace-one
        if leaf.kind == "gaussian":
            z = tilt_quantile(2.0 * leaf.param, lam)
            one = _grid_from_tails(_AntipodalTails(leaf.param, leaf.q), step, pessimistic, z)
            return one, one
        if not pessimistic:  # attained: a record replaced by one contributing nothing
            return (_directional(leaf, leaf.param, "remove", step, pessimistic, lam),
                    _directional(leaf, leaf.param, "add", step, pessimistic, lam))
        base = _directional(leaf, leaf.param * double, "sym", step, pessimistic, lam)
        zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
        one = base.mixture(zero, leaf.q)
        return one, one
    # sampling without replacement, replace-one only
    remove = _directional(leaf, leaf.param * double, "remove", step, pessimistic, lam)
    if not pessimistic:
        return remove, remove
    one = _symmetrise(remove)
    return one, one


# --------------------------------------------------------------------------- sampled sub-trees
def _subsampled_pair(inner: GridPLD, q: float, direction: str, pessimistic: bool) -> GridPLD:
    """The Poisson-subsampled pair of a composed inner pair given by its PLD (P-masses p at losses l, Q-mass
    e^{-l} p, the rest of Q, r = 1 - sum e^{-l} p, at loss -inf; P-mass at +inf): "remove" is
    (q P + (1-q) Q, Q) with losses psi(l) = ln(1 - q + q e^l) (and ln(1-q) for r), "add" is
    (Q, q P + (1-q) Q) with losses -psi(l) (Zhu, Dong & Wang 2022, Thm 11: this holds for any dominating
    pair of the inner mechanism, in particular a composition). Every atom is then put on the grid keeping
    its P- and Q-mass (pessimistic) or rounded down (optimistic)."""
    losses = inner.losses
    keep = inner.pmf > 0
    l, p = losses[keep], inner.pmf[keep]
    if pessimistic and l.size and l[0] < _LOW_CUT:
        # raise the losses below _LOW_CUT to it (pessimistic, as in GridPLD.truncate): Q-mass errors are
        # the P-mass errors times e^{-l}, so this caps their amplification at e^{-_LOW_CUT}; after
        # subsampling such outcomes sit within q e^{_LOW_CUT} / (1-q) of ln(1-q) anyway
        low = l < _LOW_CUT
        moved = float(p[low].sum())
        l = np.append(_LOW_CUT, l[~low])
        p = np.append(moved, p[~low])
    log_q_mass = np.log(p) - l
    q_mass = np.exp(log_q_mass)
    total_q = float(q_mass.sum())
    err = inner.error * (1.0 + math.exp(min(700.0, -float(l[0])))) + 16 * _U * (l.size + 1)
    rest = 1.0 - total_q  # Q-mass at inner loss -inf
    if pessimistic:
        rest += err  # more Q-mass where P has none only lowers the losses below; keep it an upper bound
    rest = max(0.0, rest)
    log_1q, log_qq = math.log1p(-q), math.log(q)
    psi = np.logaddexp(log_1q, log_qq + l)
    if direction == "remove":
        masses = np.exp(np.logaddexp(log_qq + np.log(p), log_1q + log_q_mass))
        atoms = np.append(psi, log_1q)
        atom_masses = np.append(masses, (1 - q) * rest)
        inf_mass = q * inner.inf_mass
    else:
        atoms = np.append(-psi, -log_1q)
        atom_masses = np.append(q_mass, rest)
        inf_mass = 0.0
    if pessimistic:
        pld = from_atoms(inner.step, atoms, atom_masses, inf_mass, True)
        return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + err, True)
    return _merged_atoms(inner.step, atoms, atom_masses, inf_mass)


def _merged_atoms(step: float, losses: np.ndarray, masses: np.ndarray, inf_mass: float) -> GridPLD:
    """Optimistic grid PLD of atoms (loss, P-mass): the atoms in each centred cell (e_k - step/2, e_k + step/2]
    are merged (a post-processing) and the cells are fixed and rounded down as in
    :func:`._pld_core.from_centred_masses` (second-order accurate where the atoms are dense)."""
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    cell = np.ceil(losses / step - 0.5).astype(np.int64)
    first = int(cell.min())
    idx = cell - first
    size = int(idx.max()) + 1
    mass_p = np.bincount(idx, weights=masses, minlength=size)
    # e^{e_k} times the Q-mass m e^{-loss}: exponents within [-step/2, step/2)
    scaled_q = np.bincount(idx, weights=masses * np.exp((cell * step) - losses), minlength=size)
    err = 8 * _U * (mass_p + scaled_q)
    return from_centred_masses(step, first, mass_p, scaled_q, err, err, above=0.0, inf_mass=inf_mass)


def _with_replacement(leaf: Leaf, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """``m`` draws with replacement from ``n`` records, replace-one: the differing record is drawn
    K ~ Binomial(m, 1/n) times, and given K = k the inner tree sees a k-fold group change (Gaussian
    and Laplace: k times the sensitivity; an eps-DP step: k eps, worst case binary randomized response).
    By joint convexity of the hockey-stick divergence (the pair conditioned on K and K revealed),
    delta(eps) <= sum_k P(K = k) delta_k(eps): the mixture of the group PLDs (k = 0 reveals nothing),
    with the Binomial tail beyond the last k kept (< 1e-18) at loss +inf. An upper bound only (not
    tight: it amplifies delta, not epsilon); the lower side is 0 (the identity)."""
    from scipy.stats import binom

    from .pld import compose_leaves

    zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
    if not pessimistic:
        return zero, zero
    m, q = int(leaf.extra), leaf.q
    top = int(binom.isf(1e-18, m, q)) + 1
    top = max(1, min(m, top))
    weights = binom.pmf(np.arange(top + 1), m, q)
    tail = float(binom.sf(top, m, q)) + 16 * _U * (top + 1)
    total = zero._scaled(float(weights[0]))
    for k in range(1, top + 1):
        if weights[k] <= 0:
            continue
        group: dict[Leaf, int] = {}
        for inner, count in leaf.inner:
            scaled = Leaf(inner.kind, inner.param * k, 2 if inner.kind == "rr" and k > 1 else inner.buckets)
            group[scaled] = group.get(scaled, 0) + count
        from collections import Counter

        part, _ = compose_leaves(Counter(group), "replace_one", step, True)
        total = total.plus(part._scaled(float(weights[k])))
    total = GridPLD(total.step, total.offset, total.pmf, min(1.0, total.inf_mass + tail), total.error, True)
    return total, total


def _tree_lower(inner, leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """Lower side of a sampled sub-tree: the sampled mechanism reveals at least what the same sampling of
    one of its components reveals (dropping the other outputs is a post-processing), so the optimistic
    PLD of the sampled component with the largest mean loss is a valid lower bound (not a tight one when
    several components matter; the upper side is the full mixture)."""
    best, best_mean = None, -math.inf
    for sub in inner:
        if sub.sampling is not None or sub.kind == "tree" or sub.kind in NEW_KINDS:
            continue
        single = Leaf(sub.kind, sub.param, sub.buckets, leaf.sampling, leaf.q, sub.extra)
        if leaf.sampling == "poisson" and relation == "replace_one" and sub.kind != "gaussian":
            pair = build_leaf(single, "add_remove", step, False)  # attained, as for single leaves
        else:
            pair = build_leaf(single, relation, step, False)
        mean = max(float((p.losses * p.pmf).sum()) for p in pair)
        if mean > best_mean:
            best, best_mean = pair, mean
    if best is None:
        zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
        return zero, zero
    return best


def _tree_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """(remove, add) PLDs of a sampled sub-tree: the inner tree's composed PLD pair, then the pair of the
    sampled mechanism built from it (the mixture (1-q) Q + q P of the inner composed pair)."""
    from collections import Counter

    from .pld import _merged, compose_leaves

    inner = _merged(Counter(dict(leaf.inner)))
    q = leaf.q
    if leaf.sampling == "wr":
        return _with_replacement(leaf, step, pessimistic)
    if not pessimistic:
        return _tree_lower(inner, leaf, relation, step)
    if leaf.sampling == "poisson" and relation == "add_remove":
        remove, _ = compose_leaves(inner, "add_remove", step, pessimistic)
        return (_subsampled_pair(remove, q, "remove", pessimistic), _subsampled_pair(remove, q, "add", pessimistic))
    if leaf.sampling == "poisson":  # replace-one
        if pessimistic:  # joint convexity: a fresh loss-0 outcome w.p. 1-q, the replace-one pair w.p. q
            remove, add = compose_leaves(inner, "replace_one", step, True)
            zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, True)
            one = remove.mixture(zero, q)
            return one, (one if add is remove else add.mixture(zero, q))
        if any(sub.sampling == "wor" or sub.sampling == "wr" or sub.kind == "tree" for sub in inner):
            zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
            return zero, zero  # no attained pair known: the trivial lower bound
        # attained: a record replaced by one contributing nothing (the add/remove pair at sensitivity C)
        remove, _ = compose_leaves(inner, "add_remove", step, False)
        return (_subsampled_pair(remove, q, "remove", False), _subsampled_pair(remove, q, "add", False))
    # without replacement, replace-one (Dong, Roth & Su 2022, Thm 4.2, as for single leaves)
    remove, add = compose_leaves(inner, "replace_one", step, pessimistic)
    if add is not remove and pessimistic:
        raise UnsupportedEventError("sampling without replacement of a sub-tree whose replace-one pair is not "
                                    "symmetric is not supported")
    sub = _subsampled_pair(remove, q, "remove", pessimistic)
    if not pessimistic:
        return sub, sub
    one = _symmetrise(sub)
    return one, one


def leaf_loss_moments(leaf: Leaf, relation: str, pessimistic: bool = True) -> tuple[float, float, float]:
    """(largest loss mean, largest loss variance over the two directions, loss span) of a leaf's
    pessimistic PLD, from a discretisation with 500 to 20,000 cells; used only to plan the grid. The first
    try, at step 2e-3, is within range for loss spans from 1 to 40 (subsampled Gaussians at common noise
    levels); otherwise the leaf is rebuilt at 1/1500 of its span."""
    step = 2e-3
    for _ in range(6):
        remove, add = build_leaf(leaf, relation, step, pessimistic)
        span = max(_span(remove), _span(add))
        cells = span / step
        if 500 <= cells <= 20000 or step < 1e-12:
            break
        step = max(span / 1500.0, 1e-13)
    means, variances = [], []
    for pld in (remove, add):
        l, p = pld.losses, pld.pmf
        total = p.sum()
        mean = float((l * p).sum() / total)
        means.append(mean)
        variances.append(float(((l - mean) ** 2 * p).sum() / total))
    return max(means), max(variances), span


def _span(pld: GridPLD) -> float:
    return float(pld.pmf.size * pld.step)

