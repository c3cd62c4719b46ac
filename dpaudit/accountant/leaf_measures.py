"""Per-leaf pure-DP level and zCDP parameter, read through the family registry (unsampled leaves).

zCDP parameter rho of one run (Bun & Steinke 2016; per family: Gaussian mu^2/2, discrete Gaussian
D^2/(2 sigma^2), pure eps-DP events eps^2/2, bounded range eps^2/8, ZCDP rho); sampled leaves and families
without a zCDP bound have none. rho adds up under composition (Bun & Steinke 2016, Lemma 2.3).
"""

from __future__ import annotations

import math
from fractions import Fraction

from .._numeric import round_up
from .leaf import Leaf
from .registry import FAMILIES, relation_scale

__all__ = ["pure_epsilon", "approx_level", "basic_composition", "rho_of_leaf", "total_rho"]


def pure_epsilon(leaf: Leaf, relation: str) -> float:
    """Pure-DP level of one run of an unsampled leaf under ``relation`` (inf if none)."""
    family = FAMILIES.of_kind(leaf.kind)
    return family.pure_epsilon(leaf, relation_scale(family, relation))


def approx_level(leaf: Leaf, relation: str) -> tuple[float, float]:
    """(epsilon, delta) guarantee of one run of an unsampled leaf under ``relation``: its family's (eps, delta)
    level, else (its pure level, 0) ((inf, 0) if none)."""
    family = FAMILIES.of_kind(leaf.kind)
    scale = relation_scale(family, relation)
    if family.approx_level is not None:
        return family.approx_level(leaf, scale)
    return family.pure_epsilon(leaf, scale), 0.0


def basic_composition(leaves: dict, relation: str) -> tuple[Fraction, Fraction] | None:
    """(total epsilon, total delta), exact rationals, of basic composition (Dwork & Roth 2014, Thm 3.16) of
    the leaves' (epsilon, delta) levels; None when some leaf is sampled or has no finite level."""
    total_eps, total_delta = Fraction(0), Fraction(0)
    for leaf, count in leaves.items():
        if leaf.sampling is not None:
            return None
        eps, delta = approx_level(leaf, relation)
        if not math.isfinite(eps):
            return None
        total_eps += count * Fraction(eps)
        total_delta += count * Fraction(delta)
    return total_eps, total_delta


def rho_of_leaf(leaf: Leaf, relation: str) -> float | None:
    """zCDP parameter rho of one run of an unsampled leaf (None if the leaf has no finite zCDP bound)."""
    if leaf.sampling is not None:
        return None
    family = FAMILIES.of_kind(leaf.kind)
    return family.rho(leaf, relation_scale(family, relation))


def total_rho(leaves: dict, relation: str) -> float:
    """Sum of the leaves' zCDP parameters (inf if some leaf has none), rounded up."""
    parts = []
    for leaf, count in leaves.items():
        rho = rho_of_leaf(leaf, relation)
        if rho is None:
            return math.inf
        parts.append(count * rho)
    return round_up(math.fsum(parts), ulps=4 + len(parts))
