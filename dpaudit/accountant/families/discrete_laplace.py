"""The discrete Laplace family: ``DiscreteLaplace(scale, sensitivity)``, integer noise P(x) ~ r^{|x|}, r = e^{-1/scale}.

* Normal form: ("dlap", scale, extra = s); integer sensitivity D = s under add/remove-one, 2 s under replace-one.
* PLD pair: P(x) ~ r^{|x - D|}, Q(x) ~ r^{|x|}: losses -D/scale (x <= 0, P-mass r^D/(1+r)), +D/scale (x >= D,
  P-mass 1/(1+r)) and (2x - D)/scale for 0 < x < D (P-mass c r^{D-x}, c = (1-r)/(1+r)); exact and symmetric.
* RDP at order alpha: the exact sum
  D_alpha = ln(c [r^{(1-alpha) D} + r^{alpha D}] / (1 - r) + c sum_{0<x<D} r^{(2alpha-1)x + (1-alpha)D}) / (alpha - 1)
  (geometric series over x <= 0, x >= D and the middle), capped by the pure level D / scale.
* zCDP: rho = (D / scale)^2 / 2 (pure DP, Bun & Steinke 2016, Prop. 1.4).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from ...events import DiscreteLaplace
from ..leaf import Leaf, integer_sensitivity
from ..pld_core.atoms import atom_pair
from ..registry import Family

__all__ = ["FAMILY"]


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


def _dlap_epsilon(scale: float, sensitivity: int) -> float:
    return sensitivity / scale


def _dlap_rdp(orders: np.ndarray, scale: float, sensitivity: int) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    log_r = -1.0 / scale
    log_c = math.log(-math.expm1(log_r)) - math.log1p(math.exp(log_r))
    log_1mr = math.log(-math.expm1(log_r))
    d = sensitivity
    parts = [log_c + (1 - a) * d * log_r - log_1mr, log_c + a * d * log_r - log_1mr]
    if d > 1:
        x = np.arange(1, d, dtype=float)
        middle = logsumexp(log_c + ((2 * a[:, None] - 1) * x[None, :] + (1 - a[:, None]) * d) * log_r, axis=1)
        parts.append(middle)
    total = logsumexp(np.stack(parts), axis=0)
    return np.minimum(np.maximum(total / (a - 1), 0.0), d / scale)


def _normal_form(event: DiscreteLaplace) -> Leaf:
    return Leaf("dlap", event.scale, extra=float(event.sensitivity))


def _atoms(leaf: Leaf, scale: float):
    return _dlap_atoms(leaf.param, integer_sensitivity(leaf, scale))


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return atom_pair(leaf, relation, step, pessimistic, _atoms, additive=True, attained_replace_one=True)


def _rdp_curve(leaf: Leaf, scale: float):
    d = integer_sensitivity(leaf, scale)
    return lambda a: _dlap_rdp(a, leaf.param, d)


def _pure_epsilon(leaf: Leaf, scale: float) -> float:
    return _dlap_epsilon(leaf.param, integer_sensitivity(leaf, scale))


def _rho(leaf: Leaf, scale: float) -> float:
    return _dlap_epsilon(leaf.param, integer_sensitivity(leaf, scale)) ** 2 / 2.0


def _atom_loss(leaf: Leaf, scale: float) -> float:
    return 1.0 / leaf.param


FAMILY = Family(
    name="discrete_laplace", events=(DiscreteLaplace,), kinds=("dlap",), normal_form=_normal_form,
    pld_pair=_pld_pair, rdp_curve=_rdp_curve, pure_epsilon=_pure_epsilon, rho=_rho, atom_loss=_atom_loss,
    sampled_lower_side=True,  # its exact pair is attained: one record shifts the integer query by D
)
