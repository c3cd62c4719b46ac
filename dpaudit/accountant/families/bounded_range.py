"""The bounded-range family: ``BoundedRange(epsilon)``, any eps-bounded-range mechanism (a guarantee).

* Normal form: ("br", eps), never doubled under replace-one.
* PLD pair (Dong, Durfee & Rogers 2020, Sec. 4): an eps-BR mechanism is dominated, for some t in [0, 1], by
  the binary pair with losses (1-t) eps (P-mass p_t) and -t eps, p_t = (e^{t eps} - 1)/(e^{t eps} - e^{-(1-t) eps});
  its profile is delta_t(e) = p_t (1 - e^{e - (1-t) eps}) for 0 <= e < (1-t) eps. Since t may depend on the
  history (adaptive composition), every run is dominated by the pair whose profile is sup_t delta_t,
  computed per grid point (33-point scan, then golden section; relative margin 1e-10), turned into a pair
  by :mod:`..pld_core.profiles`. The optimistic side uses binary randomized response at eps/2 (which is
  eps-BR), a lower bound on the worst case. Compositions of bounded-range steps alone are computed exactly
  by :mod:`..bounded_range` instead.
* RDP: min(alpha eps^2 / 8, RDP of binary randomized response at eps): an eps-BR mechanism is eps^2/8-zCDP
  (Cesar & Rogers 2021, Lemma 3.2) and eps-DP (dominated by randomized response, Kairouz, Oh & Viswanath
  2015); pure level eps; zCDP rho = eps^2 / 8.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ...events import BoundedRange
from .._rdp_formulas import rr_rdp
from ..leaf import Leaf
from ..leaf_plds import build_leaf
from ..pld_core.grid import GridPLD
from ..pld_core.profiles import profile_pair
from ..registry import Family

__all__ = ["FAMILY", "bounded_range_profile", "PLD_MAX_BR_EPSILON"]

#: Largest bounded-range epsilon the PLD accountant builds a pair for: its privacy-loss grid would otherwise
#: need losses beyond e^600.
PLD_MAX_BR_EPSILON = 500.0


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


@lru_cache(maxsize=64)
def _profile_pair(leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """The pessimistic pair of a bounded-range leaf (cached: leaves are immutable and GridPLDs are never mutated)."""
    return profile_pair(leaf, relation, step, lambda e: bounded_range_profile(leaf.param, e), leaf.param)


def _normal_form(event: BoundedRange) -> Leaf:
    return Leaf("br", event.epsilon)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    if not pessimistic:  # an actual mechanism with the guarantee: a lower bound on the worst case
        return build_leaf(Leaf("rr", leaf.param / 2.0, 2, leaf.sampling, leaf.q), relation, step, pessimistic)
    if leaf.param == 0.0:
        one = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
        return one, one
    return _profile_pair(leaf, relation, step)


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    if leaf.param > PLD_MAX_BR_EPSILON:
        return f"epsilon={leaf.param!r} > {PLD_MAX_BR_EPSILON} is beyond the PLD grid; use RDPAccountant"
    return None


def _rdp_curve(leaf: Leaf, scale: float):
    eps = leaf.param
    return lambda a: np.minimum(np.asarray(a, dtype=float) * eps * eps / 8.0, rr_rdp(np.asarray(a, dtype=float), eps, 2))


def _pure_epsilon(leaf: Leaf, scale: float) -> float:
    return leaf.param


def _rho(leaf: Leaf, scale: float) -> float:
    return leaf.param**2 / 8.0


FAMILY = Family(
    name="bounded_range", events=(BoundedRange,), kinds=("br",), normal_form=_normal_form, pld_pair=_pld_pair,
    rdp_curve=_rdp_curve, pure_epsilon=_pure_epsilon, rho=_rho, guarantee=True, pld_check=_pld_check,
)
