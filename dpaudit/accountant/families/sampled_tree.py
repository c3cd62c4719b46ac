"""The samplers over sub-trees: a sampled sub-tree is one leaf of kind "tree" (Poisson, without or with replacement).

A sampled sub-tree that is not a single base event (``PoissonSampled(q, Composed([...]))``) and every
``SampledWithReplacement`` become a leaf of kind "tree" carrying the sub-tree's own normalised leaves
(:mod:`.event_tree` builds it). Its PLD pair: the inner tree's composed PLD pair, then the pair of the
sampled mechanism built from it (:mod:`..pld_core.subsampling`); with replacement, the mixture over how
often the differing record is drawn of the inner tree's group-privacy PLDs (each inner family's
``group``). Under Poisson sampling (add/remove) and sampling without replacement the inner tree is composed
on its own grid, coarser than the outer one by the slope of the sampled loss (:func:`inner_factor`), and
the sampled pair is placed on the outer grid. Its lower side (Poisson sampling) is the same mixture built from the inner tree's optimistic
PLDs over the inner leaves whose worst-case pair one record attains (:func:`_tree_lower`), the remove side's
Q-masses composed by a convolution of their own. Float error: the sampled pair carries only the inner
composition's own error (absolute, in l1); the rounding of the sampled atoms' masses and losses is relative and
is taken into the masses and losses on the declared side, so that a sampled sub-tree composed many times keeps its
float floor far below delta 1e-10 (:mod:`..pld_core.subsampling`). Its Renyi-DP curve (the sampling theorems over the composed curve) is read by
:class:`~dpaudit.accountant.RDPAccountant`.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache

import numpy as np

from ...errors import UnsupportedEventError
from ..leaf import Leaf
from ..leaf_plds import build_leaf, compose_leaves, merged
from ..pld_core.base_pairs import symmetrise
from ..pld_core.grid import GridPLD
from ..pld_core.subsampling import subsampled_lower_pair, subsampled_pair
from ..registry import FAMILIES, Family

__all__ = ["FAMILY", "inner_factor", "inner_top"]

_U = 2.0**-53
_MAX_GROUP_SIZES = 4096  # sampling with replacement: at most this many group sizes (one PLD each)
_MAX_INNER_FACTOR = 2**20  # the inner composed tree's grid at most this many times coarser than the outer one
_MAX_INNER_STEP = 0.25  # an inner grid coarser than the outer one is at most this coarse
_TOP_PROBE_STEP = 1e-2  # grid of the probe composition that finds the inner tree's top loss (inner_top)
_TOP_TAIL = 1e-13  # inner mass above that top: moved by at most one inner step on the outer grid (inner_factor)


@lru_cache(maxsize=256)
def inner_top(leaf: Leaf, relation: str) -> float:
    """A loss above which a sampled sub-tree's inner composed pessimistic PLD (remove direction) has at most
    _TOP_TAIL of its mass: read off the inner tree composed on a probe grid of step _TOP_PROBE_STEP (or 1/4096 of
    the summed leaf spans), plus two probe steps. Only the grid planning reads it (:func:`inner_factor`); no
    bound depends on it."""
    inner = merged(Counter(dict(leaf.inner)))
    with np.errstate(all="ignore"):  # a coarse estimate: far-out edge cases are moot
        span = 0.0
        for sub, count in inner.items():
            probe = build_leaf(sub, relation, 64.0, True)
            span += count * max(p.pmf.size * p.step for p in probe)
        step = max(_TOP_PROBE_STEP, span / 4096.0)
        remove, _ = compose_leaves(inner, relation, step, True)
    tail = np.cumsum(remove.pmf[::-1])[::-1]  # mass at or above each loss
    above = np.nonzero(tail > _TOP_TAIL)[0]
    last = int(above[-1]) if above.size else 0
    return float((remove.offset + last + 2) * step)


def inner_factor(leaf: Leaf, relation: str) -> int:
    """How many times coarser than the outer grid a Poisson- (or without-replacement-) sampled sub-tree's
    inner composition is discretised: the largest power of two F <= _MAX_INNER_FACTOR with F w(L) <= 1, where
    w(l) = q e^l / (1 - q + q e^l) is the slope of the sampled loss psi(l) = ln(1 - q + q e^l) in the inner loss l
    and L is the inner loss with at most 1e-13 of the inner mass above it (:func:`inner_top`; psi is convex, so w
    is largest there). An inner atom below L moved by up to F times the outer step then moves its sampled atom
    by at most one outer step (the rest, at most q 1e-13 of the sampled mass, by at most F outer steps): the inner
    grid's discretisation costs the sampled PLD about what the outer grid's own does, while the inner composition, whose
    losses span far more than the sampled ones (by about 1/q), needs F times fewer cells. Sampling with
    replacement and Poisson sampling under replace-one (a mixture on the inner grid itself) use F = 1. Every
    F gives a dominating pair (the inner pair on any grid dominates the inner mechanism, and the sampled pair of
    a dominating pair dominates the sampled mechanism, Zhu, Dong & Wang 2022, Thm 11); F only sets the cost
    and the tightness."""
    if leaf.kind != "tree" or not leaf.inner or not (leaf.sampling == "wor" or (
            leaf.sampling == "poisson" and relation == "add_remove")):
        return 1
    top = inner_top(leaf, relation)
    q = leaf.q
    log_w = -math.log1p((1.0 - q) / q * math.exp(-min(top, 700.0)))  # ln w(top)
    factor = 1
    while factor < _MAX_INNER_FACTOR and math.log(2 * factor) + log_w <= 0.0:
        factor *= 2
    return factor


def _inner_step(leaf: Leaf, relation: str, step: float) -> float:
    """The grid step of a sampled sub-tree's inner composition: ``step`` times :func:`inner_factor`, but no
    coarser than _MAX_INNER_STEP (probe builds on coarse grids) unless ``step`` itself is."""
    factor = inner_factor(leaf, relation)
    while factor > 1 and step * factor > _MAX_INNER_STEP:
        factor //= 2
    return step * factor


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
    """Lower side of a sampled sub-tree (optimistic PLDs of a pair the sampled tree attains).

    Poisson sampling: the mixture over the inclusion of one record of the inner composed pair, (q P +
    (1-q) Q, Q) and its reverse, built from the inner tree's optimistic PLDs in both directions
    (:func:`..pld_core.subsampling.subsampled_lower_pair`), with the inner remove side's Q-masses composed on
    their own (``compose_leaves(..., measure="q")``: their error is then not the P-masses' times e^{-loss}, up to
    55 times larger, which set the floor of many-fold compositions at small delta). Its inner pair is the composition of the
    worst-case pairs of the inner leaves whose pair one record attains (families with
    ``sampled_lower_side``: Gaussian, Laplace and their discrete versions at the sensitivity, randomized response,
    a zCDP step's own lower side, a mechanism with its guarantee; nested
    Poisson-sampled sub-trees, recursively); the other inner leaves are dropped (ignoring some outputs is
    a post-processing). All of them are attained together by the same record, so the mixture is the pair
    of that record's presence and absence. Under replace-one the record is replaced by one that
    contributes nothing, which gives the same add/remove pair. Sampling without replacement: the
    optimistic PLD of the sampled component with the largest mean loss (the other outputs dropped)."""
    zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
    if leaf.sampling == "poisson":
        attained = Counter({sub: count for sub, count in inner.items() if _attained(sub)})
        if not attained:
            return zero, zero
        # the inner composition on its own coarser grid (:func:`inner_factor`), the sampled pair on the outer one
        tree = Leaf("tree", 0.0, 2, "poisson", leaf.q, 0.0, tuple(sorted(attained.items(), key=lambda item: repr(item[0]))))
        inner_step = _inner_step(tree, "add_remove", step)
        remove, add = compose_leaves(attained, "add_remove", inner_step, False)
        # the remove side's Q-masses composed on their own: their error is not the P-masses' times e^{-loss}
        remove_q, _ = compose_leaves(attained, "add_remove", inner_step, False, only="remove", measure="q")
        return subsampled_lower_pair(remove, add, leaf.q, step, remove_q)
    best, best_mean = None, -math.inf
    for sub in inner:
        if not FAMILIES.of_kind(sub.kind).sampled_lower_side or sub.sampling is not None:
            continue
        pair = build_leaf(Leaf(sub.kind, sub.param, sub.buckets, leaf.sampling, leaf.q, sub.extra), relation, step, False)
        mean = max(float((p.losses * p.pmf).sum()) for p in pair)
        if mean > best_mean:
            best, best_mean = pair, mean
    return (zero, zero) if best is None else best


def _attained(sub: Leaf) -> bool:
    """Whether an inner leaf's add/remove worst-case pair is attained by one record (see _tree_lower)."""
    if sub.kind == "tree":
        return sub.sampling == "poisson"
    return FAMILIES.of_kind(sub.kind).sampled_lower_side and sub.sampling in (None, "poisson")


def _tree_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool) -> tuple[GridPLD, GridPLD]:
    """(remove, add) PLDs of a sampled sub-tree: the inner tree's composed PLD pair, then the pair of the
    sampled mechanism built from it (the mixture (1-q) Q + q P of the inner composed pair)."""
    inner = merged(Counter(dict(leaf.inner)))
    q = leaf.q
    if leaf.sampling == "wr":
        return _with_replacement(leaf, step, pessimistic)
    if not pessimistic:
        return _tree_lower(inner, leaf, relation, step)
    if leaf.sampling == "poisson" and relation == "add_remove":  # the inner tree on its own grid (inner_factor)
        remove, _ = compose_leaves(inner, "add_remove", _inner_step(leaf, relation, step), True)
        return (subsampled_pair(remove, q, "remove", True, step), subsampled_pair(remove, q, "add", True, step))
    if leaf.sampling == "poisson":  # replace-one; joint convexity: a fresh loss-0 outcome w.p. 1-q, the pair w.p. q
        remove, add = compose_leaves(inner, "replace_one", step, True)
        zero = GridPLD(step, 0, np.ones(1), 0.0, 0.0, True)
        one = remove.mixture(zero, q)
        return one, (one if add is remove else add.mixture(zero, q))
    # without replacement, replace-one (Dong, Roth & Su 2022, Thm 4.2, as for single leaves)
    remove, add = compose_leaves(inner, "replace_one", _inner_step(leaf, relation, step), True)
    if add is not remove:
        raise UnsupportedEventError("sampling without replacement of a sub-tree whose replace-one pair is not "
                                    "symmetric is not supported")
    one = symmetrise(subsampled_pair(remove, q, "remove", True, step))
    return one, one


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    return _tree_leaf(leaf, relation, step, pessimistic)


def _not_an_event(event) -> None:
    return None  # tree leaves are built by the tree walk (:mod:`..event_tree`), not from one event


FAMILY = Family(name="sampled_tree", events=(), kinds=("tree",), normal_form=_not_an_event, pld_pair=_pld_pair)
