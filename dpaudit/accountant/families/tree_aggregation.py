"""The tree-aggregation family: ``TreeAggregation(noise_multiplier, steps)``, one epoch of tree aggregation.

Normal form: ("gaussian", sqrt(depth) / z) with depth = ceil(log2(n + 1)): a record enters ``depth`` nodes,
each with independent Gaussian noise z C, so the release is one Gaussian mechanism of sensitivity
sqrt(depth) C (dp_accounting's ``_compute_rdp_single_epoch_tree_aggregation``). Every other quantity is
the Gaussian family's (:mod:`.gaussian`), which interprets the leaf.
"""

from __future__ import annotations

import math

from ...events import TreeAggregation
from ..leaf import Leaf
from ..registry import Family
from . import gaussian

__all__ = ["FAMILY"]


def _normal_form(event: TreeAggregation) -> Leaf:
    return Leaf("gaussian", math.sqrt(event.depth) / event.noise_multiplier)


FAMILY = Family(name="tree_aggregation", events=(TreeAggregation,), kinds=(), normal_form=_normal_form,
                pld_pair=gaussian.FAMILY.pld_pair)
