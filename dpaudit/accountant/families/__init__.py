"""The built-in event families, one module each, registered in the one table the accountants read.

Each module holds its family's normal form, PLD pair, Renyi-DP curve, pure-DP level and zCDP parameter
(:class:`~..registry.Family`); this file registers them, one line per family. Order matters only where
families merge their unsampled leaves (:func:`..leaf_plds.merged` appends the merged leaves in this order).
"""

from __future__ import annotations

from ..registry import FAMILIES
from . import (
    approx_dp,
    bounded_range,
    discrete_gaussian,
    discrete_laplace,
    gaussian,
    laplace,
    mixture_gaussians,
    random_allocation,
    randomized_response,
    repeat_select,
    sampled_tree,
    tree_aggregation,
    truncated_gaussian,
    user_level,
    zcdp,
)

__all__ = ["FAMILIES"]

FAMILIES.register(gaussian.FAMILY)
FAMILIES.register(laplace.FAMILY)
FAMILIES.register(randomized_response.FAMILY)
FAMILIES.register(discrete_gaussian.FAMILY)
FAMILIES.register(discrete_laplace.FAMILY)
FAMILIES.register(approx_dp.FAMILY)
FAMILIES.register(bounded_range.FAMILY)
FAMILIES.register(zcdp.FAMILY)
FAMILIES.register(tree_aggregation.FAMILY)
FAMILIES.register(sampled_tree.FAMILY)
FAMILIES.register(mixture_gaussians.FAMILY)
FAMILIES.register(truncated_gaussian.FAMILY)
FAMILIES.register(repeat_select.FAMILY)
FAMILIES.register(random_allocation.FAMILY)
FAMILIES.register(user_level.FAMILY)
