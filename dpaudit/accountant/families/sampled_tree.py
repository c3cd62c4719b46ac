"""The samplers over sub-trees: a sampled sub-tree is one leaf of kind "tree" (Poisson, without or with replacement).

A sampled sub-tree that is not a single base event (``PoissonSampled(q, Composed([...]))``) and every
``SampledWithReplacement`` become a leaf of kind "tree" carrying the sub-tree's own normalised leaves
(:mod:`.event_tree` builds it). Its PLD pair: the inner tree's composed PLD pair, then the pair of the
sampled mechanism built from it (:mod:`..pld_core.subsampling`); with replacement, the mixture over how
often the differing record is drawn of the inner tree's group-privacy PLDs (each inner family's
``group``). Its Renyi-DP curve (the sampling theorems over the composed curve) is read by
:class:`~dpaudit.accountant.RDPAccountant`.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from ...errors import UnsupportedEventError
from ..leaf import Leaf
from ..leaf_plds import build_leaf, compose_leaves, merged
from ..pld_core.base_pairs import symmetrise
from ..pld_core.grid import GridPLD
from ..pld_core.subsampling import subsampled_pair
from ..registry import FAMILIES, Family

__all__ = ["FAMILY"]

_U = 2.0**-53
_MAX_GROUP_SIZES = 4096  # sampling with replacement: at most this many group sizes (one PLD each)


def _with_replacement(leaf: Leaf, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """``m`` draws with replacement from ``n`` records, replace-one: the differing record is drawn
    K ~ Binomial(m, 1/n) times, and given K = k the inner tree sees a k-fold group change (Gaussian
    and Laplace: k times the sensitivity; an eps-DP step: k eps, worst case binary randomized response).
    By joint convexity of the hockey-stick divergence (the pair conditioned on K and K revealed),
    delta(eps) <= sum_k P(K = k) delta_k(eps): the mixture of the group PLDs (k = 0 reveals nothing),
    with the Binomial tail beyond the last k kept (< 1e-18) at loss +inf. An upper bound only (not
    tight: it amplifies delta, not epsilon); the lower side is 0 (the identity)."""
    from scipy.stats import binom  # local: scipy.stats is slow to import and only needed here

    zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, pessimistic)
    if not pessimistic:
        return zero, zero
    m, q = int(leaf.extra), leaf.q
    top = int(binom.isf(1e-18, m, q)) + 1
    top = max(1, min(m, top))
    low = max(0, int(binom.ppf(1e-18, m, q)) - 1)  # below it: at most 1e-18 of mass, charged at loss +inf
    if top - low > _MAX_GROUP_SIZES:
        raise UnsupportedEventError(
            f"sampling with replacement of {m} draws from {round(1 / q)} records: the differing record is drawn "
            f"between {low} and {top} times (all but 1e-18 of the mass), more than the {_MAX_GROUP_SIZES} "
            "group-privacy PLDs the accountant builds; no analysis of this sampling is available")
    weights = binom.pmf(np.arange(low, top + 1), m, q)
    tail = float(binom.sf(top, m, q)) + (float(binom.cdf(low - 1, m, q)) if low > 0 else 0.0) + 16 * _U * (top - low + 1)
    total = zero._scaled(float(weights[0]) if low == 0 else 0.0)
    for k in range(max(1, low), top + 1):
        if weights[k - low] <= 0:
            continue
        group: dict[Leaf, int] = {}
        for inner, count in leaf.inner:
            scaled = FAMILIES.of_kind(inner.kind).group(inner, k)
            group[scaled] = group.get(scaled, 0) + count
        part, _ = compose_leaves(Counter(group), "replace_one", step, True)
        total = total.plus(part._scaled(float(weights[k - low])))
    total = GridPLD(total.step, total.offset, total.pmf, min(1.0, total.inf_mass + tail), total.error, True)
    return total, total


def _tree_lower(inner, leaf: Leaf, relation: str, step: float) -> tuple[GridPLD, GridPLD]:
    """Lower side of a sampled sub-tree: the sampled mechanism reveals at least what the same sampling of
    one of its components reveals (dropping the other outputs is a post-processing), so the optimistic
    PLD of the sampled component with the largest mean loss is a valid lower bound (not a tight one when
    several components matter; the upper side is the full mixture). A Poisson-sampled component of a
    Poisson-sampled tree (add/remove) is one Poisson sample at the product of the rates."""
    best, best_mean = None, -math.inf
    for sub in inner:
        if not FAMILIES.of_kind(sub.kind).sampled_lower_side:
            continue
        if sub.sampling is None:
            single = Leaf(sub.kind, sub.param, sub.buckets, leaf.sampling, leaf.q, sub.extra)
        elif sub.sampling == leaf.sampling == "poisson" and relation == "add_remove":
            # Poisson sampling of a Poisson sample is one Poisson sample at the product of the rates
            single = Leaf(sub.kind, sub.param, sub.buckets, "poisson", leaf.q * sub.q, sub.extra)
        else:
            continue
        if leaf.sampling == "poisson" and relation == "replace_one" and sub.kind != "gaussian":
            pair = build_leaf(single, "add_remove", step, False)  # attained, as for single leaves
        else:
            pair = build_leaf(single, relation, step, False)
        mean = max(float((p.losses * p.pmf).sum()) for p in pair)
        if mean > best_mean:
            best, best_mean = pair, mean
    if best is None:
        zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
        return zero, zero
    return best


def _tree_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """(remove, add) PLDs of a sampled sub-tree: the inner tree's composed PLD pair, then the pair of the
    sampled mechanism built from it (the mixture (1-q) Q + q P of the inner composed pair)."""
    inner = merged(Counter(dict(leaf.inner)))
    q = leaf.q
    if leaf.sampling == "wr":
        return _with_replacement(leaf, step, pessimistic)
    if not pessimistic:
        return _tree_lower(inner, leaf, relation, step)
    if leaf.sampling == "poisson" and relation == "add_remove":
        remove, _ = compose_leaves(inner, "add_remove", step, pessimistic)
        return (subsampled_pair(remove, q, "remove", pessimistic), subsampled_pair(remove, q, "add", pessimistic))
    if leaf.sampling == "poisson":  # replace-one
        if pessimistic:  # joint convexity: a fresh loss-0 outcome w.p. 1-q, the replace-one pair w.p. q
            remove, add = compose_leaves(inner, "replace_one", step, True)
            zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, True)
            one = remove.mixture(zero, q)
            return one, (one if add is remove else add.mixture(zero, q))
        if any(sub.sampling == "wor" or sub.sampling == "wr" or sub.kind == "tree" for sub in inner):
            zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
            return zero, zero  # no attained pair known: the trivial lower bound
        # attained: a record replaced by one contributing nothing (the add/remove pair at sensitivity C)
        remove, _ = compose_leaves(inner, "add_remove", step, False)
        return (subsampled_pair(remove, q, "remove", False), subsampled_pair(remove, q, "add", False))
    # without replacement, replace-one (Dong, Roth & Su 2022, Thm 4.2, as for single leaves)
    remove, add = compose_leaves(inner, "replace_one", step, pessimistic)
    if add is not remove and pessimistic:
        raise UnsupportedEventError("sampling without replacement of a sub-tree whose replace-one pair is not "
                                    "symmetric is not supported")
    sub = subsampled_pair(remove, q, "remove", pessimistic)
    if not pessimistic:
        return sub, sub
    one = symmetrise(sub)
    return one, one


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return _tree_leaf(leaf, relation, step, pessimistic)


def _not_an_event(event) -> None:
    return None  # tree leaves are built by the tree walk (:mod:`..event_tree`), not from one event


FAMILY = Family(name="sampled_tree", events=(), kinds=("tree",), normal_form=_not_an_event, pld_pair=_pld_pair)
