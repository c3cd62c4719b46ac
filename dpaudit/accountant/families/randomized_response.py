"""The randomized-response family: ``RandomizedResponse(epsilon, num_buckets)`` and ``PureDP(epsilon)``.

* Normal form: ("rr", eps, k); ``PureDP(eps)`` is binary randomized response, the worst case of every
  eps-DP mechanism (Kairouz, Oh & Viswanath 2015). A guarantee under either relation (a record's value
  changes), never doubled.
* PLD pair: losses eps, -eps, 0 with P-masses e^eps/Z, 1/Z, (k-2)/Z, Z = e^eps + k - 1 (symmetric); exact
  atoms, Poisson-subsampled atoms in the remove/add directions. Binary randomized response composed
  ``count`` times with its atoms on the grid is the exact binomial PLD (no FFT error).
* RDP: :func:`.._rdp_formulas.rr_rdp`; pure level eps; zCDP rho = eps^2 / 2 (Bun & Steinke 2016, Prop. 1.4).
* A k-fold group change (k > 1) is binary randomized response at k eps.
"""

from __future__ import annotations

import math

import numpy as np

from ...events import PureDP, RandomizedResponse
from .._rdp_formulas import rr_rdp
from ..leaf import Leaf
from ..pld_core.base_pairs import atoms_pld, base_pair
from ..pld_core.grid import GridPLD, binomial_rr
from ..registry import Family

__all__ = ["FAMILY"]


def _normal_form(event: PureDP | RandomizedResponse) -> Leaf:
    if isinstance(event, RandomizedResponse):
        return Leaf("rr", event.epsilon, event.num_buckets)
    return Leaf("rr", event.epsilon, 2)


def _rr_atoms(eps: float, buckets: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(losses, P-masses, Q-masses) of k-ary randomized response."""
    z = math.exp(eps) + buckets - 1
    losses = np.array([eps, -eps, 0.0])
    p = np.array([math.exp(eps) / z, 1.0 / z, (buckets - 2) / z])
    qm = np.array([1.0 / z, math.exp(eps) / z, (buckets - 2) / z])
    return losses, p, qm


def _discrete(leaf: Leaf, direction: str, step: float, pessimistic: bool) -> GridPLD:
    """RR leaves (possibly Poisson-subsampled: "remove"/"add" directions) as atoms."""
    losses, p0, q0 = _rr_atoms(leaf.param, leaf.buckets)
    q = leaf.q
    if direction == "sym":
        return atoms_pld(losses, p0, step, pessimistic)
    mix = q * p0 + (1 - q) * q0
    with np.errstate(divide="ignore", invalid="ignore"):  # zero-mass atoms are dropped later
        if direction == "remove":
            return atoms_pld(np.log(mix) - np.log(q0), mix, step, pessimistic)
        return atoms_pld(np.log(q0) - np.log(mix), q0, step, pessimistic)


def _directional(leaf: Leaf, param: float, direction: str, step: float, pessimistic: bool,
                 lam: float | None) -> GridPLD:
    return _discrete(leaf, direction, step, pessimistic)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return base_pair(leaf, relation, step, pessimistic, lam, only, _directional, 1.0)


def _on_grid(value: float, step: float) -> int | None:
    cells = round(value / step)
    return cells if cells >= 1 and cells * step == value else None


def _exact_power(leaf: Leaf, count: int, step: float, pessimistic: bool) -> GridPLD | None:
    """``count`` runs of unsampled binary randomized response whose loss is on the grid: the exact binomial."""
    cells = _on_grid(leaf.param, step)
    if cells is not None and leaf.buckets == 2:
        return binomial_rr(step, cells, count, 1.0 / (1.0 + math.exp(-leaf.param)), pessimistic)
    return None


def _rdp_curve(leaf: Leaf, scale: float):
    return lambda a: rr_rdp(a, leaf.param, leaf.buckets)


def _pure_epsilon(leaf: Leaf, scale: float) -> float:
    return leaf.param * scale


def _rho(leaf: Leaf, scale: float) -> float:
    return leaf.param**2 / 2.0


def _atom_loss(leaf: Leaf, scale: float) -> float:
    return leaf.param * scale


def _group(leaf: Leaf, k: int) -> Leaf:
    return Leaf(leaf.kind, leaf.param * k, 2 if k > 1 else leaf.buckets)


FAMILY = Family(
    name="randomized_response", events=(PureDP, RandomizedResponse), kinds=("rr",), normal_form=_normal_form,
    pld_pair=_pld_pair, rdp_curve=_rdp_curve, pure_epsilon=_pure_epsilon, rho=_rho, guarantee=True,
    atom_loss=_atom_loss, exact_power=_exact_power, group=_group, sampled_lower_side=True,
)
