"""Dominating PLD pairs built from a privacy-profile upper bound (for guarantees with no single exact pair).

From a profile upper bound g on the grid e_i = i step >= 0 (with the subsampling transforms of Balle,
Barthe & Gaboardi 2018 / Zhu, Dong & Wang 2022 applied to it, and max(remove, add) for Poisson sampling
under add/remove), the lower convex hull in x = e^e of the points (x_i, g_i) is a valid profile above the
true one (a convex function below the points lies below the hull). Its slopes give atoms p_j at e_j > 0;
mirrored atoms p_j e^{-e_j} at -e_j, the rest at loss 0, and g at the last grid point as mass at +inf form a
symmetric PLD whose profile equals the hull for e >= 0 and its mirror image below (Doroshenko et al.
2022, "connect the dots"). The profile of the atoms is then recomputed at every grid point and any
shortfall below g (float error) is added to the +inf mass, so the result is an upper bound by
construction. The families that use it (bounded range, zCDP) give the base profile; both are closed
under swapping P and Q.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..leaf import Leaf
from .grid import GridPLD

__all__ = ["pair_from_profile", "profile_pair", "PROFILE_MAX_LOSS"]

_PROFILE_MAX_LOSS = 600.0  # profile grids stop here (e^600 is still a float)
#: Profile grids stop at this loss (e^600 is still a float); beyond, the profile value goes to +inf.
PROFILE_MAX_LOSS = _PROFILE_MAX_LOSS
_U = 2.0**-53


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


def profile_pair(leaf: Leaf, relation: str, step: float, base: Callable[[np.ndarray], np.ndarray],
                 top: float) -> tuple[GridPLD, GridPLD]:
    """The pessimistic (remove, add) pair of a (sampled) leaf whose unsampled profile is bounded by ``base``
    (for e >= 0), negligible beyond the loss ``top``; read-only arrays (callers cache the pair)."""
    top = min(top, _PROFILE_MAX_LOSS)  # beyond, the profile value goes to +inf (pessimistic)
    n = int(math.ceil(top / step)) + 1
    e = np.arange(n + 1) * step
    profile = _sampled_profile(leaf, relation, base)
    remove, add = pair_from_profile(profile(e), step)
    remove.pmf.flags.writeable = False  # shared through the cache
    add.pmf.flags.writeable = False
    return remove, add
