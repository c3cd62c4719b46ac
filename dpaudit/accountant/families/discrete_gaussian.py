"""The discrete Gaussian family: ``DiscreteGaussian(sigma, sensitivity)``, integer noise N_Z(0, sigma^2).

* Normal form: ("dgauss", sigma, extra = s); integer sensitivity D = s under add/remove-one, 2 s under
  replace-one.
* PLD pair: exact atoms P = N_Z(D, sigma^2), Q = N_Z(0, sigma^2), outcome x has loss (2 D x - D^2) / (2 sigma^2)
  (Canonne, Kamath & Steinke 2020). Outcomes |x| > K are cut off; their mass is at most
  2 e^{-K^2/(2 sigma^2)} / (1 - e^{-K/sigma^2}) (geometric tail, normaliser >= 1) and goes to loss +inf
  (pessimistic) or is dropped (optimistic). The pair is symmetric; samplings as in :mod:`..pld_core.atoms`.
* RDP: alpha D^2 / (2 sigma^2), zCDP rho = D^2 / (2 sigma^2) (Canonne, Kamath & Steinke 2020, Prop. 5 /
  Thm. 4). No pure-DP level.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy.special import logsumexp

from ...errors import UnsupportedEventError
from ...events import DiscreteGaussian
from ..leaf import Leaf, integer_sensitivity
from ..pld_core.atoms import atom_pair
from ..registry import Family

__all__ = ["FAMILY", "MAX_DISCRETE_GAUSSIAN_ATOMS", "discrete_gaussian_atom_count"]

#: Largest number of integer outcomes a discrete Gaussian PLD is built from (sigma up to about 1.7e5).
MAX_DISCRETE_GAUSSIAN_ATOMS = 2**22
_TAIL_EXPONENT = 75.0  # cut the discrete Gaussian where e^{-x^2/(2 sigma^2)} < e^-75


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


def _normal_form(event: DiscreteGaussian) -> Leaf:
    return Leaf("dgauss", event.sigma, extra=float(event.sensitivity))


def _atoms(leaf: Leaf, scale: float):
    return _dgauss_atoms(leaf.param, integer_sensitivity(leaf, scale))


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return atom_pair(leaf, relation, step, pessimistic, _atoms, additive=True, attained_replace_one=True)


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    count = discrete_gaussian_atom_count(leaf.param, integer_sensitivity(leaf, 2.0))
    if count > MAX_DISCRETE_GAUSSIAN_ATOMS:
        return (f"sigma={leaf.param!r} needs {count} exact atoms (more than {MAX_DISCRETE_GAUSSIAN_ATOMS}); "
                "use RDPAccountant or ZCDPAccountant")
    return None


def _rdp_curve(leaf: Leaf, scale: float):
    d = integer_sensitivity(leaf, scale)
    return lambda a: np.asarray(a, dtype=float) * d * d / (2.0 * leaf.param**2)


def _rho(leaf: Leaf, scale: float) -> float:
    d = integer_sensitivity(leaf, scale)
    return d * d / (2.0 * leaf.param**2)


FAMILY = Family(
    name="discrete_gaussian", events=(DiscreteGaussian,), kinds=("dgauss",), normal_form=_normal_form,
    pld_pair=_pld_pair, rdp_curve=_rdp_curve, rho=_rho, pld_check=_pld_check,
    sampled_lower_side=True,  # its exact pair is attained: one record shifts the integer query by D
)
