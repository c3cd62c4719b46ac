"""The Gaussian family: ``Gaussian(noise_multiplier)``, Gaussian noise of standard deviation z C.

* Normal form: ("gaussian", mu = 1 / z) at sensitivity C (2 mu under replace-one).
* PLD pair: P = N(mu, 1), Q = N(0, 1), loss mu x - mu^2/2 (symmetric); Poisson sampling under replace-one:
  ((1-q) N(0) + q N(mu), (1-q) N(0) + q N(-mu)) with mu = C / sigma (the sampled record moves the sum by
  +C or -C), the pair dp_accounting uses; other samplings as in :mod:`..pld_core.base_pairs`.
* RDP: alpha mu^2 / 2 (Mironov 2017); Poisson-subsampled under add/remove: the exact bound of
  :func:`.._rdp_formulas.poisson_gaussian_rdp`. No pure-DP level.
* zCDP: rho = mu^2 / 2 (Bun & Steinke 2016, Prop. 1.6).
* Unsampled Gaussians compose exactly into one: mu^2 add up (Dong, Roth & Su 2022).
* A k-fold group change is the Gaussian at k mu.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import log_ndtr, ndtr

from ...events import Gaussian
from .._rdp_formulas import gaussian_rdp, poisson_gaussian_rdp
from ..leaf import Leaf
from ..pld_core.base_pairs import Tails, Z_DEFAULT, base_pair, both_tails, tails_pld, tilt_quantile
from ..pld_core.grid import GridPLD
from ..registry import Family

__all__ = ["FAMILY"]


class _GaussianTails(Tails):
    def __init__(self, mu: float) -> None:
        self.mu = mu

    def __call__(self, v):
        mu = self.mu
        return (*both_tails(mu / 2 - v / mu), *both_tails(-mu / 2 - v / mu))

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        return self.mu * self.mu / 2 - Z_DEFAULT * self.mu, self.mu * self.mu / 2 + z * self.mu

    def log_sq(self, v):
        """ln Q(L > v), accurate where Q(L > v) underflows."""
        return log_ndtr(-self.mu / 2 - np.asarray(v, dtype=float) / self.mu)

    def atoms(self) -> list[tuple[float, float, float]]:
        return []


class _AntipodalTails(Tails):
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

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        return self.loss(-self.mu - Z_DEFAULT), self.loss(self.mu + z)

    def atoms(self) -> list[tuple[float, float, float]]:
        return []


def _normal_form(event: Gaussian) -> Leaf:
    return Leaf("gaussian", 1.0 / event.noise_multiplier)


def _directional(leaf: Leaf, param: float, direction: str, step: float, pessimistic: bool,
                 lam: float | None) -> GridPLD:
    return tails_pld(_GaussianTails(param), leaf.q, direction, step, pessimistic, tilt_quantile(param, lam))


def _antipodal(leaf: Leaf, step: float, pessimistic: bool, lam: float | None) -> GridPLD:
    z = tilt_quantile(2.0 * leaf.param, lam)
    return tails_pld(_AntipodalTails(leaf.param, leaf.q), leaf.q, "sym", step, pessimistic, z)


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return base_pair(leaf, relation, step, pessimistic, lam, only, _directional, 2.0, _antipodal)


def _rdp_curve(leaf: Leaf, scale: float):
    return lambda a: gaussian_rdp(a, leaf.param * scale)


def _rho(leaf: Leaf, scale: float) -> float:
    return (leaf.param * scale) ** 2 / 2.0


def _merge(leaves: list[tuple[Leaf, int]]) -> list[tuple[Leaf, int]]:
    largest = max(leaf.param for leaf, _ in leaves)  # normalised: mu^2 never overflows
    if largest <= 0:
        return []
    mu_squared = math.fsum(count * (leaf.param / largest) ** 2 for leaf, count in leaves)
    return [(Leaf("gaussian", largest * math.sqrt(mu_squared)), 1)]


def _group(leaf: Leaf, k: int) -> Leaf:
    return Leaf(leaf.kind, leaf.param * k, leaf.buckets)


FAMILY = Family(
    name="gaussian", events=(Gaussian,), kinds=("gaussian",), normal_form=_normal_form, pld_pair=_pld_pair,
    rdp_curve=_rdp_curve, rho=_rho, poisson_rdp=poisson_gaussian_rdp, rdp_poisson_replace_one=True,
    merge_unsampled=_merge, group=_group, sampled_lower_side=True,
)
