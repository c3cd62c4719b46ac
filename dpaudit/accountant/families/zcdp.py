"""The zCDP family: ``ZCDP(rho)``, any rho-zCDP mechanism (a guarantee under the accountant's relation).

* Normal form: ("zcdp", rho). Unsampled zCDP steps compose exactly: rho adds up (Bun & Steinke 2016,
  Lemma 2.3), so their dominating pair is built once from the total (in parts of at most
  :data:`PLD_MAX_RHO`).
* PLD pair: from the profile bound delta(e) <= min_alpha e^{(alpha-1)(alpha rho - e)} (1 - 1/alpha)^alpha / (alpha - 1)
  (Canonne, Kamath & Steinke 2020, Prop. 12), over a grid of orders plus alpha* = (e + rho)/(2 rho), turned
  into a pair by :mod:`..pld_core.profiles`. The optimistic side uses the Gaussian with mu = sqrt(2 rho)
  (which is rho-zCDP), with the same sampling.
* RDP: alpha rho (Bun & Steinke 2016, Def. 1.1); zCDP rho. No pure-DP level. Sampled, its profile pair is
  looser than the RDP accountant's sampling bound (``sampled_pld_loose``: the PLD accountant takes both).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..._numeric import round_up
from ...events import ZCDP
from ..leaf import Leaf
from ..leaf_plds import build_leaf
from ..pld_core.grid import GridPLD
from ..pld_core.profiles import profile_pair
from ..registry import Family

__all__ = ["FAMILY", "zcdp_profile", "PLD_MAX_RHO"]

#: Largest zCDP rho (per merged leaf) the PLD accountant builds a pair for: its privacy-loss grid would
#: otherwise need losses beyond e^600.
PLD_MAX_RHO = 400.0
_PROFILE_TAIL = 1e-18  # zCDP grid ends where the profile bound is below this (the rest goes to +inf)


def zcdp_profile(rho: float, e: np.ndarray) -> np.ndarray:
    """Upper bound on delta(e), e >= 0, of any rho-zCDP mechanism (Canonne, Kamath & Steinke 2020, Prop. 12):
    min over alpha > 1 of exp(f(alpha)), f(alpha) = (alpha - 1)(alpha rho - e) + (alpha - 1) ln(1 - 1/alpha) - ln alpha.
    f is strictly convex (f'' = 2 rho + 1/(alpha (alpha - 1)) > 0); its derivative, in d = alpha - 1,
    g(d) = (1 + 2 d) rho - e + ln d - ln(1 + d), is increasing and concave, so Newton's method on g started left of
    its root (d = (e - rho) / (2 rho) when that exceeds 0, where g = ln(1 - 1/alpha) < 0; else d = e^{e - 3 rho - 1},
    where g < -1) increases monotonically to the minimiser. Every alpha gives a valid bound, so the root's accuracy
    only costs tightness. Linear in the number of points (a few vector passes)."""
    e = np.asarray(e, dtype=float)
    d = (e - rho) / (2.0 * rho)
    d = np.where(d > 0.0, d, np.maximum(np.exp(np.minimum(e - 3.0 * rho - 1.0, 0.0)), 1e-300))
    for _ in range(100):
        g = (1.0 + 2.0 * d) * rho - e + np.log(d) - np.log1p(d)
        move = -g / (2.0 * rho + 1.0 / (d * (1.0 + d)))
        d = d + np.maximum(move, 0.0)
        if not np.any(move > 1e-12 * d):
            break
    log_delta = d * ((1.0 + d) * rho - e) + d * (np.log(d) - np.log1p(d)) - np.log1p(d)
    return np.minimum(1.0, np.exp(log_delta) * (1.0 + 1e-12))


def _profile_top(leaf: Leaf) -> float:
    """A loss beyond which the profile (after any sampling) is negligible (below _PROFILE_TAIL)."""
    rho = leaf.param
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / _PROFILE_TAIL)) + 1.0


@lru_cache(maxsize=64)
def _profile_pair(leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """The pessimistic pair of a zCDP leaf (cached: leaves are immutable and GridPLDs are never mutated)."""
    return profile_pair(leaf, relation, step, lambda e: zcdp_profile(leaf.param, e), _profile_top(leaf))


def _normal_form(event: ZCDP) -> Leaf:
    return Leaf("zcdp", event.rho)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    if not pessimistic:  # an actual mechanism with the guarantee: a lower bound on the worst case
        mu = math.sqrt(2.0 * leaf.param) / (2.0 if relation == "replace_one" else 1.0)
        return build_leaf(Leaf("gaussian", mu, 2, leaf.sampling, leaf.q), relation, step, pessimistic)
    return _profile_pair(leaf, relation, step)


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    if leaf.param > PLD_MAX_RHO:
        return f"rho={leaf.param!r} > {PLD_MAX_RHO} is beyond the PLD grid; use ZCDPAccountant or RDPAccountant"
    return None


def _rdp_curve(leaf: Leaf, scale: float):
    return lambda a: np.asarray(a, dtype=float) * leaf.param


def _rho(leaf: Leaf, scale: float) -> float:
    return leaf.param


def _merge(leaves: list[tuple[Leaf, int]]) -> list[tuple[Leaf, int]]:
    rho = [count * leaf.param for leaf, count in leaves]
    total = round_up(math.fsum(rho), ulps=4 + len(rho))
    parts = max(1, math.ceil(total / PLD_MAX_RHO))  # each part within the grid (see _pld_check)
    return [(Leaf("zcdp", round_up(total / parts)), parts)]


FAMILY = Family(
    name="zcdp", events=(ZCDP,), kinds=("zcdp",), normal_form=_normal_form, pld_pair=_pld_pair,
    rdp_curve=_rdp_curve, rho=_rho, guarantee=True, pld_check=_pld_check, merge_unsampled=_merge,
    sampled_pld_loose=True,
    sampled_lower_side=True,  # its lower side is a Gaussian mechanism with the guarantee, which one record attains
)
