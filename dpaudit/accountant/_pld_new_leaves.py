"""Grid PLDs of the accountant-breadth leaves (see :mod:`._new_leaves` for the normal form).

Exact atoms (pessimistic: each atom split onto the two grid points around it keeping its P- and
Q-mass, :func:`._pld_core.from_atoms`; optimistic: losses rounded down):

* discrete Gaussian, integer sensitivity D: P = N_Z(D, sigma^2), Q = N_Z(0, sigma^2), outcome x has loss
  (2 D x - D^2) / (2 sigma^2) (Canonne, Kamath & Steinke 2020). Outcomes |x| > K are cut off; their mass is
  at most 2 e^{-K^2/(2 sigma^2)} / (1 - e^{-K/sigma^2}) (geometric tail, normaliser >= 1) and goes to loss
  +inf (pessimistic) or is dropped (optimistic). The pair is symmetric.
* discrete Laplace P(x) ~ r^{|x - D|}, Q(x) ~ r^{|x|}, r = e^{-1/scale}: losses -D/scale (x <= 0, P-mass
  r^D/(1+r)), +D/scale (x >= D, P-mass 1/(1+r)) and (2x - D)/scale for 0 < x < D (P-mass c r^{D-x},
  c = (1-r)/(1+r)); exact and symmetric.
* (eps, delta): the Kairouz-Oh-Viswanath worst case P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0),
  Q = (0, (1-delta)/(1+e^eps), (1-delta) e^eps/(1+e^eps), delta): every (eps, delta)-DP mechanism is a
  post-processing of it (Kairouz, Oh & Viswanath 2015, Thm. 2.1), so it is exact under composition.
* Poisson subsampling (add/remove): the pairs (qP + (1-q)Q, Q) and (Q, qP + (1-q)Q) (Zhu, Dong & Wang
  2022); replace-one: the mixture with a fresh loss-0 outcome of weight 1 - q (joint convexity); sampling
  without replacement (replace-one): the remove pair symmetrised as in Dong, Roth & Su (2022, Thm. 4.2).

Dominating pairs built from a privacy profile (no single exact pair exists):

* bounded range (Dong, Durfee & Rogers 2020, Sec. 4): an eps-BR mechanism is dominated, for some t in [0, 1],
  by the binary pair with losses (1-t) eps (P-mass p_t) and -t eps, p_t = (e^{t eps} - 1)/(e^{t eps} - e^{-(1-t) eps});
  its profile is delta_t(e) = p_t (1 - e^{e - (1-t) eps}) for 0 <= e < (1-t) eps. Since t may depend on the
  history (adaptive composition), every run is dominated by the pair whose profile is sup_t delta_t,
  computed per grid point (33-point scan, then golden section; relative margin 1e-10).
* zCDP: delta(e) <= min_alpha e^{(alpha-1)(alpha rho - e)} (1 - 1/alpha)^alpha / (alpha - 1) (Canonne, Kamath &
  Steinke 2020, Prop. 12), over a grid of orders plus alpha* = (e + rho)/(2 rho); both families are
  closed under swapping P and Q.

From a profile upper bound g on the grid e_i = i step >= 0 (with the subsampling transforms of Balle,
Barthe & Gaboardi 2018 / Zhu, Dong & Wang 2022 applied to it, and max(remove, add) for Poisson sampling
under add/remove), the lower convex hull in x = e^e of the points (x_i, g_i) is a valid profile above the
true one (a convex function below the points lies below the hull). Its slopes give atoms p_j at e_j > 0;
mirrored atoms p_j e^{-e_j} at -e_j, the rest at loss 0, and g at the last grid point as mass at +inf form a
symmetric PLD whose profile equals the hull for e >= 0 and its mirror image below (Doroshenko et al.
2022, "connect the dots"). The profile of the atoms is then recomputed at every grid point and any
shortfall below g (float error) is added to the +inf mass, so the result is an upper bound by
construction. The optimistic side of these kinds uses an actual mechanism with the guarantee (a lower
bound on the worst case): binary randomized response at eps/2 (which is eps-BR) and the Gaussian with
mu = sqrt(2 rho) (which is rho-zCDP), with the same sampling.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache

import numpy as np
from scipy.special import logsumexp

from ..errors import UnsupportedEventError
from ._event_tree import Leaf
from ._new_leaves import integer_sensitivity
from ._pld_core import GridPLD, from_atoms

__all__ = ["build_new_leaf", "bounded_range_profile", "zcdp_profile", "pair_from_profile", "MAX_DISCRETE_GAUSSIAN_ATOMS"]

#: Largest number of integer outcomes a discrete Gaussian PLD is built from (sigma up to about 1.7e5).
MAX_DISCRETE_GAUSSIAN_ATOMS = 2**22
_TAIL_EXPONENT = 75.0  # cut the discrete Gaussian where e^{-x^2/(2 sigma^2)} < e^-75
_PROFILE_TAIL = 1e-18  # zCDP grid ends where the profile bound is below this (the rest goes to +inf)
_PROFILE_MAX_LOSS = 600.0  # profile grids stop here (e^600 is still a float)
_U = 2.0**-53


# --------------------------------------------------------------------------- exact atoms
def _dgauss_cut(sigma: float) -> int:
    return int(math.ceil(sigma * math.sqrt(2.0 * _TAIL_EXPONENT))) + 1


def discrete_gaussian_atom_count(sigma: float, d: int) -> int:
    """Number of integer outcomes the discrete Gaussian PLD is built from."""
    return 2 * _dgauss_cut(sigma) + d + 1


@lru_cache(maxsize=8)
def _dgauss_atoms(sigma: float, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(losses, log P, log Q, truncated mass bound) of the discrete Gaussian pair at sensitivity d (cached,
    read-only arrays: the grid planner builds a leaf several times)."""
    k = _dgauss_cut(sigma)
    count = 2 * k + d + 1
    if count > MAX_DISCRETE_GAUSSIAN_ATOMS:
        raise UnsupportedEventError(
            f"DiscreteGaussian(sigma={sigma!r}) needs {count} exact atoms (more than {MAX_DISCRETE_GAUSSIAN_ATOMS}); "
            "use RDPAccountant or ZCDPAccountant for it")
    x = np.arange(-k, k + d + 1, dtype=float)
    two_s2 = 2.0 * sigma * sigma
    centre = np.arange(-k, k + 1, dtype=float)
    log_norm = float(logsumexp(-centre * centre / two_s2))  # >= 0 (the term x = 0), missing tails only
    log_q = -x * x / two_s2 - log_norm
    log_p = -(x - d) ** 2 / two_s2 - log_norm
    losses = (2.0 * d * x - d * d) / two_s2
    tail = 2.0 * math.exp(-k * k / two_s2) / -math.expm1(-k / (sigma * sigma))
    for array in (losses, log_p, log_q):
        array.flags.writeable = False
    return losses, log_p, log_q, tail


def _dlap_atoms(scale: float, d: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(losses, log P, log Q, 0) of the discrete Laplace pair: outcomes x <= 0, 0 < x < d, x >= d."""
    log_r = -1.0 / scale
    log_1pr = math.log1p(math.exp(log_r))
    log_c = math.log(-math.expm1(log_r)) - log_1pr
    x = np.arange(1, d, dtype=float)
    log_p = np.concatenate([[d * log_r - log_1pr], log_c + (d - x) * log_r, [-log_1pr]])
    log_q = np.concatenate([[-log_1pr], log_c + x * log_r, [d * log_r - log_1pr]])
    losses = np.concatenate([[-d / scale], (2 * x - d) / scale, [d / scale]])
    return losses, log_p, log_q, 0.0


def _approx_atoms(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """(losses, log P, log Q, 0) of the (eps, delta) worst case; outcome 0 only under P, outcome 3 only under Q."""
    with np.errstate(divide="ignore"):
        log_rest = math.log1p(-delta)
        log_hi = log_rest + eps - np.logaddexp(0.0, eps)
        log_lo = log_rest - np.logaddexp(0.0, eps)
        log_p = np.array([math.log(delta), log_hi, log_lo, -np.inf])
        log_q = np.array([-np.inf, log_lo, log_hi, math.log(delta)])
    losses = np.array([np.inf, eps, -eps, -np.inf])
    return losses, log_p, log_q, 0.0


def _atoms(leaf: Leaf, scale: float):
    if leaf.kind == "dgauss":
        return _dgauss_atoms(leaf.param, integer_sensitivity(leaf, scale))
    if leaf.kind == "dlap":
        return _dlap_atoms(leaf.param, integer_sensitivity(leaf, scale))
    return _approx_atoms(leaf.param, leaf.extra)


def _directed(losses, log_p, log_q, direction: str, q: float):
    """(losses, log-masses of the first distribution) of the pair in the given direction."""
    if direction == "sym":
        return losses, log_p
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mix = np.logaddexp(math.log(q) + log_p, math.log1p(-q) + log_q)
        if direction == "remove":
            return log_mix - log_q, log_mix
        return log_q - log_mix, log_q


def _grid_atoms(losses: np.ndarray, log_mass: np.ndarray, tail: float, step: float, pessimistic: bool) -> GridPLD:
    """A grid PLD of atoms (loss may be +inf; -inf atoms carry no P-mass), tail mass to +inf if pessimistic."""
    keep = np.isfinite(log_mass)
    losses, mass = losses[keep], np.exp(log_mass[keep])
    inf = np.isposinf(losses)
    inf_mass = float(mass[inf].sum())
    losses, mass = losses[~inf], mass[~inf]
    if pessimistic:
        inf_mass += tail
        error = 16 * _U * float(mass.sum()) + 1e-300  # float error of the masses (a few ulps each)
    else:
        mass = mass * (1.0 - 1e-12)
        error = 0.0
    pld = from_atoms(step, losses, mass, min(1.0, inf_mass), pessimistic)
    return replace(pld, error=pld.error + error)


def _mixture_with_zero(losses, log_mass, tail, q: float):
    """Atoms of (q P + (1-q) R, q Q + (1-q) R) with R a fresh outcome (loss 0)."""
    return (np.append(losses, 0.0), np.append(math.log(q) + log_mass, math.log1p(-q)), q * tail)


def _symmetrised_atoms(losses, log_mass, tail):
    """Dong-Roth-Su symmetrisation: keep losses > 0, mirror them (mass e^{-l}) and put the rest at 0."""
    finite = np.isfinite(log_mass)
    losses, mass = losses[finite], np.exp(log_mass[finite])
    inf_mass = float(mass[np.isposinf(losses)].sum()) + tail
    positive = (losses > 0) & np.isfinite(losses)
    lp, mp = losses[positive], mass[positive]
    mirrored = mp * np.exp(-lp)
    zero = max(0.0, 1.0 - float(mp.sum()) - float(mirrored.sum()) - inf_mass)
    out_l = np.concatenate([lp, -lp, [0.0, np.inf]])
    with np.errstate(divide="ignore"):
        out_m = np.log(np.concatenate([mp, mirrored, [zero, inf_mass]]))
    return out_l, out_m, 0.0


def _atom_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    double = 2.0 if relation == "replace_one" and leaf.kind in ("dgauss", "dlap") else 1.0
    if leaf.sampling is None:
        losses, log_p, _, tail = _atoms(leaf, double)
        one = _grid_atoms(losses, log_p, tail, step, pessimistic)
        return one, one
    q = leaf.q
    if leaf.sampling == "poisson" and (relation == "add_remove" or (not pessimistic and leaf.kind != "approx")):
        # add/remove: exact; replace-one lower bound: attained with a record replaced by a zero record
        losses, log_p, log_q, tail = _atoms(leaf, 1.0)
        remove = _grid_atoms(*_directed(losses, log_p, log_q, "remove", q), tail, step, pessimistic)
        add = _grid_atoms(*_directed(losses, log_p, log_q, "add", q), tail, step, pessimistic)
        return remove, add
    losses, log_p, log_q, tail = _atoms(leaf, double)
    if leaf.sampling == "poisson":  # replace-one: mixture with a fresh loss-0 outcome
        one = _grid_atoms(*_mixture_with_zero(losses, log_p, tail, q), step, pessimistic)
        return one, one
    # without replacement (replace-one only): remove pair of the replace-one base pair
    removed = _directed(losses, log_p, log_q, "remove", q)
    if not pessimistic:
        one = _grid_atoms(*removed, 0.0, step, pessimistic)
        return one, one
    one = _grid_atoms(*_symmetrised_atoms(*removed, tail), step, pessimistic)
    return one, one


# --------------------------------------------------------------------------- profiles
def bounded_range_profile(epsilon: float, e: np.ndarray) -> np.ndarray:
    """sup over t in [0, 1] of the profile delta_t(e) of the eps-BR binary pairs, for e >= 0 (vectorised);
    an upper bound (relative margin 1e-10 over the numerical maximum)."""
    e = np.asarray(e, dtype=float)
    out = np.zeros_like(e)
    live = e < epsilon
    if not live.any() or epsilon <= 0:
        return out
    ev = e[live]
    t_max = 1.0 - ev / epsilon

    grid = np.linspace(0.0, 1.0, 33)[None, :] * t_max[:, None]  # (m, 33)
    values = _f_point(epsilon, ev[:, None], grid)
    best = np.argmax(values, axis=1)
    rows = np.arange(ev.size)
    lo = grid[rows, np.maximum(best - 1, 0)]
    hi = grid[rows, np.minimum(best + 1, 32)]
    top = values[rows, best]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    c = hi - ratio * (hi - lo)
    d = lo + ratio * (hi - lo)
    fc, fd = _f_point(epsilon, ev, c), _f_point(epsilon, ev, d)
    for _ in range(48):
        left = fc >= fd
        hi = np.where(left, d, hi)
        lo = np.where(left, lo, c)
        new_c = hi - ratio * (hi - lo)
        new_d = lo + ratio * (hi - lo)
        fd_next = np.where(left, fc, _f_point(epsilon, ev, new_d))
        fc_next = np.where(left, _f_point(epsilon, ev, new_c), fd)
        c, d, fc, fd = new_c, new_d, fc_next, fd_next
        top = np.maximum(top, np.maximum(fc, fd))
    out[live] = np.minimum(1.0, top * (1.0 + 1e-10) + 1e-300)
    return out


def _f_point(epsilon: float, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """delta_t(e) of the eps-BR binary pair with parameter t (elementwise)."""
    a = t * epsilon
    b = epsilon - a
    num = np.expm1(a)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = num / (num - np.expm1(-b)) * -np.expm1(e - b)
    return np.where(np.isfinite(value) & (value > 0), value, 0.0)


_ORDERS = np.concatenate([1.0 + np.geomspace(1e-4, 1.0, 60)[:-1], np.geomspace(2.0, 1e5, 140)])


def zcdp_profile(rho: float, e: np.ndarray) -> np.ndarray:
    """Upper bound on delta(e), e >= 0, of any rho-zCDP mechanism (Canonne, Kamath & Steinke 2020, Prop. 12),
    minimised over a grid of orders and alpha* = (e + rho) / (2 rho)."""
    e = np.asarray(e, dtype=float)
    best = np.zeros_like(e)
    chunk = max(1, 2**20 // _ORDERS.size)
    for start in range(0, e.size, chunk):
        ev = e[start:start + chunk]
        star = np.maximum((ev + rho) / (2.0 * rho), 1.0 + 1e-9)
        a = np.concatenate([np.broadcast_to(_ORDERS, (ev.size, _ORDERS.size)),
                            (star[:, None] * np.array([0.98, 0.995, 1.0, 1.005, 1.02])[None, :])], axis=1)
        a = np.maximum(a, 1.0 + 1e-9)
        log_delta = (a - 1.0) * (a * rho - ev[:, None]) + (a - 1.0) * np.log1p(-1.0 / a) - np.log(a)
        best[start:start + chunk] = np.min(log_delta, axis=1)
    return np.minimum(1.0, np.exp(best) * (1.0 + 1e-12))


def _base_profile(leaf: Leaf):
    if leaf.kind == "br":
        return lambda e: bounded_range_profile(leaf.param, e)
    return lambda e: zcdp_profile(leaf.param, e)


def _profile_top(leaf: Leaf) -> float:
    """A loss beyond which the profile (after any sampling) is negligible (below _PROFILE_TAIL) or zero."""
    if leaf.kind == "br":
        return leaf.param
    rho = leaf.param
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / _PROFILE_TAIL)) + 1.0


def _sampled_profile(leaf: Leaf, relation: str, base):
    """Profile (e >= 0) of the symmetric pair dominating both directions of the (sampled) leaf."""
    q = leaf.q
    if leaf.sampling is None:
        return base
    if leaf.sampling == "poisson" and relation == "add_remove":
        def profile(e):
            x = np.exp(e)
            x_remove = (x - 1.0 + q) / q  # >= 1
            remove = q * base(np.log(x_remove))
            room = 1.0 - x * (1.0 - q)
            add = np.zeros_like(x)
            ok = room > 0
            add[ok] = room[ok] * base(np.log(x[ok] * q / room[ok]))
            return np.maximum(remove, add)
        return profile
    if leaf.sampling == "poisson":  # replace-one: mixture with a loss-0 outcome
        return lambda e: q * base(e)
    # without replacement, replace-one: the remove curve for e >= 0 (Dong, Roth & Su 2022, Thm. 4.2)
    return lambda e: q * base(np.log((np.exp(e) - 1.0 + q) / q))


def _atoms_profile(losses_x: np.ndarray, masses: np.ndarray, inf_mass: float, x: np.ndarray) -> np.ndarray:
    """Profile m + sum_{j: x_j > x_i} p_j (1 - x_i / x_j) of atoms at x_j = e^{l_j} (sorted), at the same points,
    rounded down by a bound on the float error of the suffix sums."""
    a_suffix = np.append(np.cumsum(masses[::-1])[::-1][1:], 0.0)
    b_suffix = np.append(np.cumsum((masses / losses_x)[::-1])[::-1][1:], 0.0)
    value = inf_mass + a_suffix - x * b_suffix
    return value - (masses.size + 4) * 4 * _U * (a_suffix + x * b_suffix + inf_mass)


def _convex_minorant_slopes(dx: np.ndarray, dy: np.ndarray) -> np.ndarray:
    """Per-segment slopes of the greatest convex minorant of the piecewise-linear function with segment
    widths ``dx`` > 0 and rises ``dy``: adjacent segments whose slopes decrease are pooled into their chord
    (pool adjacent violators weighted by dx; Barlow, Bartholomew, Bremner & Brunk 1972)."""
    slopes = dy / dx
    if np.all(np.diff(slopes) >= 0):
        return slopes
    widths: list[float] = []
    rises: list[float] = []
    counts: list[int] = []
    for width, rise in zip(dx.tolist(), dy.tolist()):
        widths.append(width)
        rises.append(rise)
        counts.append(1)
        while len(widths) > 1 and rises[-2] * widths[-1] > rises[-1] * widths[-2]:
            width, rise, count = widths.pop(), rises.pop(), counts.pop()
            widths[-1] += width
            rises[-1] += rise
            counts[-1] += count
    return np.repeat(np.array(rises) / np.array(widths), counts)


def pair_from_profile(g: np.ndarray, step: float) -> tuple[GridPLD, GridPLD]:
    """Pessimistic (remove, add) grid PLDs of a pair whose profile is >= ``g`` at every grid point
    e_i = i step, i = 0..n, in both directions, and >= the true profile everywhere.

    ``g`` is an upper bound on the true profile for e >= 0 of a family closed under swapping P and Q;
    below 0 the profile is G(x) = 1 - x + x g(1/x), x = e^e. The greatest convex minorant (in x) of the
    piecewise-linear interpolant of (0, 1) and (x_i, G_i), i = -n..n, is a valid profile above the true one
    (a convex function below the points lies below their interpolant, hence below its greatest convex
    minorant). Its slope jumps times x are the atoms; g[-1] becomes the mass at +inf; the add direction is
    the reversed pair. Below x = 1 every quantity is handled through its complement 1 - G = x (1 - g(1/x)),
    which keeps full relative precision. Each direction's profile is recomputed at every grid point and
    any shortfall below the minorant (float error) is added to its mass at +inf."""
    g = np.minimum.accumulate(np.clip(np.asarray(g, dtype=float), 0.0, 1.0))
    n = g.size - 1
    e = np.arange(-n, n + 1) * step
    x = np.exp(e)
    top = float(g[-1])
    # complement C = 1 - G at the grid points with x <= 1 (index 0 .. n; C(1) = 1 - g(0))
    comp = np.concatenate([x[:n] * (1.0 - g[::-1][:n]), [1.0 - g[0]]])
    comp = np.maximum.accumulate(comp)  # G non-increasing
    dx = np.concatenate([[x[0]], x[1:] * -math.expm1(-step)])  # first segment from x = 0
    dy = np.concatenate([[-comp[0]], -(np.diff(comp)), np.diff(g)])  # rises of G (all <= 0)
    slopes = _convex_minorant_slopes(dx, dy)
    jumps = np.append(np.diff(slopes), -slopes[-1])  # at every grid point (slope 0 after the last one)
    masses = np.maximum(jumps, 0.0) * x
    # the minorant at the grid points: complement from the left (x <= 1), value from the right (x >= 1)
    drops = -slopes * dx  # >= 0
    hull_comp = np.cumsum(drops)[: n + 1]  # 1 - H at x_0 .. x_n (= 1)
    hull_right = top + np.append(np.cumsum(drops[::-1])[::-1][n + 1:], 0.0)  # H at x_n .. x_2n
    # remove direction: recompute the atoms' profile (complement on the left) and top up +inf on shortfall
    deficit = max(0.0, 1.0 - top - float(masses.sum()))  # P-mass lost to rounding goes to +inf
    prefix = np.cumsum(masses)
    b_suffix = np.append(np.cumsum((masses / x)[::-1])[::-1][1:], 0.0)
    rebuilt_comp = prefix[: n + 1] + x[: n + 1] * b_suffix[: n + 1]  # 1 - R at x <= 1 (with full P-mass)
    rebuilt_right = _atoms_profile(x, masses, top, x)[n:]
    slack = (2 * n + 8) * 4 * _U
    shortfall = max(float(np.max(rebuilt_comp - hull_comp)), float(np.max(hull_right - rebuilt_right)), 0.0) + slack
    remove = GridPLD(step, -n, masses, min(1.0, top + deficit + shortfall), 0.0, True)
    # add direction: the reversed pair (atoms at -l with P-mass p e^{-l}); Q-only mass goes to +inf; its
    # profile at x >= 1 must be 1 - x (1 - H(1/x)) = 1 - x hull_comp(1/x)
    q_masses = (masses / x)[::-1]
    inf_add = max(0.0, 1.0 - float(q_masses.sum()))
    wanted = 1.0 - x[n:] * hull_comp[::-1]
    rebuilt_add = _atoms_profile(x, q_masses, inf_add, x)[n:]
    shortfall_add = max(float(np.max(wanted - rebuilt_add)), 0.0) + slack
    add = GridPLD(step, -n, q_masses, min(1.0, inf_add + shortfall_add), 0.0, True)
    return remove.truncate(0.0), add.truncate(0.0)


def _profile_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    if not pessimistic:  # an actual mechanism with the guarantee: a lower bound on the worst case
        from ._pld_leaves import build_leaf

        if leaf.kind == "br":
            lower = Leaf("rr", leaf.param / 2.0, 2, leaf.sampling, leaf.q)
        else:
            mu = math.sqrt(2.0 * leaf.param) / (2.0 if relation == "replace_one" else 1.0)
            lower = Leaf("gaussian", mu, 2, leaf.sampling, leaf.q)
        return build_leaf(lower, relation, step, pessimistic)
    if leaf.kind == "br" and leaf.param == 0.0:
        one = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
        return one, one
    return _profile_pair(leaf, relation, step)


@lru_cache(maxsize=64)
def _profile_pair(leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """The pessimistic pair of a profile leaf (cached: leaves are immutable and GridPLDs are never mutated)."""
    top = min(_profile_top(leaf), _PROFILE_MAX_LOSS)  # beyond, the profile value goes to +inf (pessimistic)
    n = int(math.ceil(top / step)) + 1
    e = np.arange(n + 1) * step
    profile = _sampled_profile(leaf, relation, _base_profile(leaf))
    remove, add = pair_from_profile(profile(e), step)
    remove.pmf.flags.writeable = False  # shared through the cache
    add.pmf.flags.writeable = False
    return remove, add


# --------------------------------------------------------------------------- entry point
def build_new_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """(remove-direction PLD, add-direction PLD) of an accountant-breadth leaf on the grid of ``step``."""
    if leaf.kind in ("dgauss", "dlap", "approx"):
        return _atom_leaf(leaf, relation, step, pessimistic)
    if leaf.kind == "br":
        return _profile_leaf(leaf, relation, step, pessimistic)
    if leaf.kind == "zcdp":
        return _profile_leaf(leaf, relation, step, pessimistic)
    raise UnsupportedEventError(f"no PLD for leaf kind {leaf.kind!r}")
