"""The normal form every accountant reads: a leaf mechanism (kind, parameters, sampling) and its count.

An event tree is reduced (:mod:`.event_tree`) to a multiset of :class:`Leaf` values; each leaf ``kind`` is
interpreted by the event family registered for it (:mod:`.registry`, :mod:`.families`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Leaf", "LeafCheck", "integer_sensitivity"]


@dataclass(frozen=True)
class Leaf:
    """A normalised leaf: ``kind`` names the family that interprets it (e.g. "gaussian", "laplace", "rr"),
    ``param`` is its main parameter (mu, d or eps) and ``buckets`` the randomized-response alphabet;
    ``sampling`` in {None, "poisson", "wor", "wr"} with rate q."""

    kind: str
    param: float
    buckets: int = 2
    sampling: str | None = None
    q: float = 1.0
    extra: float = 0.0  # a family's second parameter (integer sensitivity, delta of an (eps, delta) step)
    #: kind "tree": the sampled sub-tree's own normalised leaves and counts (sorted), e.g. the several
    #: noisy statistics released by one sampled step; sampling "wr" (with replacement) keeps the sample
    #: size in ``extra`` and q = 1 / source_size.
    inner: tuple[tuple[Leaf, int], ...] = ()
    #: a family's vector parameters (hashable tuples), e.g. a mixture of Gaussians' sensitivities and
    #: probabilities; kept when the leaf is sampled.
    data: tuple = ()

#: A hook an accountant uses to refuse a normalised leaf: returns a reason, or None if supported.
LeafCheck = Callable[[Leaf, str], "str | None"]


def integer_sensitivity(leaf: Leaf, scale: float) -> int:
    """Integer sensitivity of a discrete-noise leaf: its per-record bound times ``scale`` (1 or 2)."""
    return int(round(leaf.extra * scale))
