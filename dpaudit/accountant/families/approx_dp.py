"""The (epsilon, delta) family: ``ApproxDP(epsilon, delta)``, any (eps, delta)-DP step.

* Normal form: ("approx", eps, extra = delta) when delta > 0, else binary randomized response ("rr", eps),
  its exact worst case. A guarantee under the accountant's relation.
* PLD pair: the Kairouz-Oh-Viswanath worst case P = (delta, (1-delta) e^eps/(1+e^eps), (1-delta)/(1+e^eps), 0),
  Q = (0, (1-delta)/(1+e^eps), (1-delta) e^eps/(1+e^eps), delta): every (eps, delta)-DP mechanism is a
  post-processing of it (Kairouz, Oh & Viswanath 2015, Thm. 2.1), so it is exact under composition.
* Basic composition: k such steps are (k eps, k delta)-DP (the PLD accountant's bound at delta >= k delta,
  where the pair's mass at +inf leaves its grid read-out no margin).
* No finite Renyi divergence (refused by the RDP accountant) and no zCDP bound.
"""

from __future__ import annotations

import math

import numpy as np

from ...events import ApproxDP
from ..leaf import Leaf
from ..pld_core.atoms import atom_pair
from ..registry import Family

__all__ = ["FAMILY"]


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


def _normal_form(event: ApproxDP) -> Leaf:
    if event.delta == 0.0:
        return Leaf("rr", event.epsilon, 2)
    return Leaf("approx", event.epsilon, extra=event.delta)


def _atoms(leaf: Leaf, scale: float):
    return _approx_atoms(leaf.param, leaf.extra)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return atom_pair(leaf, relation, step, pessimistic, _atoms, additive=False, attained_replace_one=False)


def _rdp_check(leaf: Leaf, relation: str) -> str | None:
    return (f"an (epsilon, delta) step with delta={leaf.extra!r} > 0 has no finite Renyi divergence "
            "(use PLDAccountant)")


def _atom_loss(leaf: Leaf, scale: float) -> float:
    return leaf.param


def _approx_level(leaf: Leaf, scale: float) -> tuple[float, float]:
    return leaf.param, leaf.extra


FAMILY = Family(
    name="approx_dp", events=(ApproxDP,), kinds=("approx",), normal_form=_normal_form, pld_pair=_pld_pair,
    guarantee=True, rdp_check=_rdp_check, atom_loss=_atom_loss, approx_level=_approx_level,
)
