"""The Laplace family: ``Laplace(noise_multiplier)``, Laplace noise of scale b = z C.

* Normal form: ("laplace", d = 1 / z) at sensitivity C (2 d under replace-one).
* PLD pair: P = Lap(0, 1), Q = Lap(d, 1); loss |x - d| - |x| in [-d, d], atoms at +-d (symmetric); samplings
  as in :mod:`..pld_core.base_pairs`.
* RDP: the closed form of :func:`.._rdp_formulas.laplace_rdp` (Mironov 2017); pure level d.
* zCDP: rho = d^2 / 2 (pure d-DP, Bun & Steinke 2016, Prop. 1.4).
* A k-fold group change is the Laplace at k d.
"""

from __future__ import annotations

import math

import numpy as np

from ...events import Laplace
from .._rdp_formulas import laplace_rdp
from ..leaf import Leaf
from ..pld_core.base_pairs import Tails, Z_DEFAULT, base_pair, tails_pld, tilt_quantile
from ..pld_core.grid import GridPLD
from ..registry import Family

__all__ = ["FAMILY"]


class _LaplaceTails(Tails):
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

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        return -self.d, self.d

    def atoms(self) -> list[tuple[float, float, float]]:
        """(loss, P0-mass, Q0-mass): x <= 0 gives loss d, x >= d gives loss -d."""
        d = self.d
        return [(d, 0.5, 0.5 * math.exp(-d)), (-d, 0.5 * math.exp(-d), 0.5)]


def _normal_form(event: Laplace) -> Leaf:
    return Leaf("laplace", 1.0 / event.noise_multiplier)


def _directional(leaf: Leaf, param: float, direction: str, step: float, pessimistic: bool,
                 lam: float | None) -> GridPLD:
    return tails_pld(_LaplaceTails(param), leaf.q, direction, step, pessimistic, tilt_quantile(param, lam))


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return base_pair(leaf, relation, step, pessimistic, lam, only, _directional, 2.0)


def _rdp_curve(leaf: Leaf, scale: float):
    return lambda a: laplace_rdp(a, leaf.param * scale)


def _pure_epsilon(leaf: Leaf, scale: float) -> float:
    return leaf.param * scale


def _rho(leaf: Leaf, scale: float) -> float:
    return (leaf.param * scale) ** 2 / 2.0


def _atom_loss(leaf: Leaf, scale: float) -> float:
    return leaf.param * scale


def _group(leaf: Leaf, k: int) -> Leaf:
    return Leaf(leaf.kind, leaf.param * k, leaf.buckets)


FAMILY = Family(
    name="laplace", events=(Laplace,), kinds=("laplace",), normal_form=_normal_form, pld_pair=_pld_pair,
    rdp_curve=_rdp_curve, pure_epsilon=_pure_epsilon, rho=_rho, rdp_poisson_replace_one=True,
    atom_loss=_atom_loss, group=_group, sampled_lower_side=True,
)
