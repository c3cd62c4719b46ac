"""Walk an event tree into a multiset of normalised leaves, validating the whole tree first.

Every accountant interprets the same normal form: a count for every distinct
``Leaf(kind, param, buckets, sampling, q)`` (:mod:`.leaf`). Base events are normalised by the family
registered for their type (:mod:`.registry`, :mod:`.families`); compositions and samplers here:

* ``Composed`` and ``SelfComposed`` multiply counts; nested ``PoissonSampled`` multiply rates (a Poisson
  sample of a Poisson sample is a Poisson sample); a rate of 1 means no sampling.
* e.g. ``Gaussian(s)`` -> ("gaussian", 1/s), ``Laplace(b)`` -> ("laplace", 1/b) (at sensitivity C);
  ``PureDP(eps)`` -> binary randomized response, its worst case; ``RandomizedResponse(eps, k)`` -> ("rr", eps, k).
* ``SampledWithoutReplacement`` is defined for replace-one neighbours only.
* A sampled sub-tree that is not a single base event (``PoissonSampled(q, Composed([...]))``) becomes a
  leaf of kind "tree" carrying the sub-tree's own normalised leaves; so does every
  ``SampledWithReplacement`` (replace-one only; its inner leaves must be unsampled Gaussian, Laplace or
  randomized response: the families with a k-fold ``group`` version).
* ``BandMF(z, b, n, q, c)``: ceil(n / b) Gaussians at mu = c / z, Poisson-sampled at rate q when q < 1
  (the banded-MF sensitivity under b-min-separation and its cyclic-Poisson amplification).
* ``UserLevel(event, k)``: each of ``event``'s unsampled leaves at its family's exact k-fold group change
  (Gaussian, Laplace, randomized response); every other leaf (sampled steps) becomes a leaf of kind "user"
  wrapping it (:mod:`.families.user_level`: the exact mixture for Poisson-sampled Gaussians, group privacy on
  the RDP curve otherwise). ``PoissonSampled(q, UserLevel(event, k))`` samples users, not records: the
  sampled leaf is the group change itself (``Gaussian(s)`` at sensitivity k, i.e. ``Gaussian(s / k)``).
* ``RepeatAndSelect(event, mean, shape)`` becomes a leaf of kind "repeat" carrying ``event``'s own leaves
  (its Renyi-DP curve is a transform of theirs, :mod:`.families.repeat_select`).

Anything else raises :class:`~dpaudit.errors.UnsupportedEventError` naming the event and the relation,
before any state is touched.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

from ..errors import UnsupportedEventError
from ..events import (
    BandMF,
    Composed,
    PoissonSampled,
    PrivacyEvent,
    RepeatAndSelect,
    SampledWithoutReplacement,
    SampledWithReplacement,
    SelfComposed,
    UserLevel,
)
from . import families  # noqa: F401  (registers the built-in event families)
from .leaf import Leaf, LeafCheck
from .registry import FAMILIES

__all__ = ["flatten", "Leaf"]


def _base_leaf(event: PrivacyEvent) -> Leaf | None:
    return FAMILIES.normal_form(event)


def flatten(event: PrivacyEvent, count: int, relation: str, owner: str,
            check: LeafCheck | None = None) -> Counter[Leaf]:
    """Counts of normalised leaves in ``count`` runs of ``event`` under ``relation``; raises
    UnsupportedEventError (mentioning ``owner``, the accountant's name) for anything unsupported."""
    leaves: Counter[Leaf] = Counter()

    def refuse(node: PrivacyEvent, reason: str) -> UnsupportedEventError:
        return UnsupportedEventError(f"{owner} cannot account for {node!r} under neighbouring={relation!r}: {reason}")

    def sampled(node: PrivacyEvent, inner: PrivacyEvent, q: float, kind: str) -> Leaf:
        while kind == "poisson" and isinstance(inner, PoissonSampled):
            q *= inner.sampling_probability
            inner = inner.event
        base = _base_leaf(inner) if not inner.children() else None
        if base is None:  # a sub-tree: its own leaves, sampled together
            sub = flatten(inner, 1, relation, owner, check)
            if q >= 1.0:
                return sub
            if sub and all(leaf.kind == "gaussian" and leaf.sampling is None for leaf in sub):
                # Gaussians compose exactly into one (mu^2 add up): the sampled sub-tree is a sampled Gaussian
                mu = math.sqrt(math.fsum(n * leaf.param**2 for leaf, n in sub.items()))
                return Leaf("gaussian", mu, 2, kind, q)
            if len(sub) == 1 and next(iter(sub.values())) == 1 and next(iter(sub)).sampling is None:
                return replace(next(iter(sub)), sampling=kind, q=q)
            return Leaf("tree", 0.0, 2, kind, q, 0.0, tuple(sorted(sub.items(), key=lambda item: repr(item[0]))))
        if q >= 1.0:
            return base
        return replace(base, sampling=kind, q=q)

    def with_replacement(node: SampledWithReplacement) -> Leaf:
        if relation != "replace_one":
            raise refuse(node, "sampling with replacement is only defined for neighbouring='replace_one' "
                               "(the source size would reveal an added record)")
        sub = flatten(node.event, 1, relation, owner, check)
        for inner_leaf in sub:
            if inner_leaf.sampling is not None or FAMILIES.of_kind(inner_leaf.kind).group is None:
                raise refuse(node, "only unsampled Gaussian, Laplace, PureDP or RandomizedResponse events can be "
                                   "sampled with replacement (their group privacy is known)")
        return Leaf("tree", 0.0, 2, "wr", node.sampling_probability, float(node.sample_size),
                    tuple(sorted(sub.items(), key=lambda item: repr(item[0]))))

    def band_mf(node: BandMF) -> Leaf:
        mu = node.column_norm / node.noise_multiplier
        if node.sampling_probability >= 1.0:
            return Leaf("gaussian", mu)
        if relation != "add_remove":
            raise refuse(node, "the amplified BandMF analysis (cyclic Poisson sampling) is under "
                               "neighbouring='add_remove' only")
        return Leaf("gaussian", mu, sampling="poisson", q=node.sampling_probability)

    def user_level(node: UserLevel) -> Counter[Leaf]:
        k = node.max_contributions
        grouped: Counter[Leaf] = Counter()
        for inner_leaf, count in flatten(node.event, 1, relation, owner, check).items():
            group = FAMILIES.of_kind(inner_leaf.kind).group
            if k == 1:
                leaf = inner_leaf
            elif inner_leaf.sampling is None and group is not None:
                leaf = group(inner_leaf, k)  # the exact k-fold change (sensitivity k, or k eps)
            else:  # a sampled step (or no known group change): the user-level family decides
                leaf = Leaf("user", float(k), inner=((inner_leaf, 1),))
                if check is not None and check(leaf, relation) is not None:
                    raise refuse(node, "user-level accounting (group privacy over the user's records): " +
                                 check(leaf, relation))
            grouped[leaf] += count
        return grouped

    memo: dict = {}

    def walk(node: PrivacyEvent, multiplicity: int) -> None:
        leaf: Leaf | None
        if isinstance(node, Composed):
            for child in node.events:
                walk(child, multiplicity)
            return
        if isinstance(node, SelfComposed):
            walk(node.event, multiplicity * node.count)
            return
        if isinstance(node, BandMF):
            leaf = band_mf(node)
            if check is not None and check(leaf, relation) is not None:
                raise refuse(node, check(leaf, relation))
            leaves[leaf] += multiplicity * node.participations
            return
        if isinstance(node, UserLevel):
            for leaf, count in user_level(node).items():
                leaves[leaf] += multiplicity * count
            return
        known = memo.get(node, memo)  # a leaf already normalised (and checked) in this tree
        if known is not memo:
            if known is not None:
                leaves[known] += multiplicity
            return
        if isinstance(node, PoissonSampled):
            leaf = sampled(node, node.event, node.sampling_probability, "poisson")
        elif isinstance(node, SampledWithReplacement):
            leaf = with_replacement(node)
        elif isinstance(node, RepeatAndSelect):  # the best of K runs: its inner tree's leaves, kept together
            sub = flatten(node.event, 1, relation, owner, check)
            leaf = Leaf("repeat", node.mean, extra=node.shape,
                        inner=tuple(sorted(sub.items(), key=lambda item: repr(item[0]))))
        elif isinstance(node, SampledWithoutReplacement):
            if relation != "replace_one":
                raise refuse(node, "sampling a fixed-size subset without replacement is only defined for "
                                   "neighbouring='replace_one' (the sample size would reveal an added record)")
            leaf = sampled(node, node.event, node.sampling_probability, "wor")
        else:
            leaf = _base_leaf(node)
            if leaf is None:
                raise refuse(node, f"unknown event type {type(node).__name__}")
        if isinstance(leaf, Counter):  # sampled with probability 1: the sub-tree itself
            for sub_leaf, sub_count in leaf.items():
                leaves[sub_leaf] += multiplicity * sub_count
            return
        if leaf.kind == "tree" and not leaf.inner:
            return  # the sampled sub-tree reveals nothing
        if check is not None:
            reason = check(leaf, relation)
            if reason is not None:
                raise refuse(node, reason)
        if leaf.kind == "rr" and leaf.param == 0.0:
            memo[node] = None
            return  # reveals nothing
        memo[node] = leaf
        leaves[leaf] += multiplicity

    walk(event, count)
    return leaves
