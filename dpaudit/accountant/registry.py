"""The event-family registry: one table from event types and leaf kinds to the family that interprets them.

A family (:class:`Family`) holds everything the accountants need about one kind of leaf mechanism: its
normal form (event -> :class:`~.leaf.Leaf`), its PLD pair, its Renyi-DP curve, its pure-DP level and zCDP
parameter, and the checks that refuse what an accountant cannot bound. The accountants and the tree walk
read :data:`FAMILIES` instead of testing event types; the built-in families are registered by
:mod:`.families`, and a new family is one module plus one ``FAMILIES.register(...)`` line there (see
``docs/guides/extending.md``).

Sensitivity scale: additive-noise families (``guarantee=False``) have sensitivity 2C under replace-one
(one record removed, another added), so their parameters are read at scale 2 there; guarantee families
(randomized response, ``ApproxDP``, ``BoundedRange``, ``ZCDP``) hold under the accountant's relation itself
(scale 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..events import PrivacyEvent
from .leaf import Leaf, LeafCheck

__all__ = ["Family", "Registry", "FAMILIES", "relation_scale"]

#: (leaf, relation, step, pessimistic, lam, only) -> (remove-direction GridPLD, add-direction GridPLD).
PLDPair = Callable[[Leaf, str, float, bool, "float | None", "str | None"], tuple[Any, Any]]
#: (leaf, scale) -> the Renyi-DP curve alpha -> D_alpha (ndarray) of one unsampled run.
RDPCurveOf = Callable[[Leaf, float], Callable[[Any], Any]]


def _infinite(leaf: Leaf, scale: float) -> float:
    return math.inf


def _no_rho(leaf: Leaf, scale: float) -> float | None:
    return None


@dataclass(frozen=True)
class Family:
    """One kind of leaf mechanism and how every accountant interprets it.

    Attributes:
        name: a short name (also the registry key).
        events: event types whose normal form this family gives.
        kinds: leaf kinds it interprets.
        normal_form: event -> Leaf (None if the event is not one of its events after all).
        pld_pair: the (remove, add) grid PLDs of a leaf, any sampling (see :data:`PLDPair`).
        rdp_curve: the Renyi-DP curve of one unsampled run at a sensitivity scale (None: no RDP bound).
        pure_epsilon: pure-DP level of one unsampled run at a sensitivity scale (inf if none).
        rho: zCDP parameter of one unsampled run at a sensitivity scale (None if none).
        guarantee: a guarantee under the accountant's relation (never doubled under replace-one).
        pld_check, rdp_check: reasons the PLD / RDP accountant refuses a leaf (None: accepted).
        poisson_rdp: the family's own Poisson-subsampled RDP curve (orders, q, param) under add/remove
            (None: the general bound over its RDP curve).
        rdp_poisson_replace_one: whether the RDP accountant bounds its Poisson sampling under replace-one.
        merge_unsampled: exact composition of its unsampled leaves, [(leaf, count), ...] -> [(leaf, count), ...]
            (None: composed on the grid).
        atom_loss: (leaf, scale) -> the single loss of its unsampled atoms, for aligning the PLD grid.
        exact_power: (leaf, count, step, pessimistic) -> the exact grid PLD of ``count`` unsampled runs, or
            None (then composed by FFT).
        group: (leaf, k) -> the leaf of a k-fold group change (needed for sampling with replacement).
        sampled_lower_side: its sampled optimistic pair may stand for a sampled sub-tree's lower side.
        sampled_pld_loose: its sampled PLD pair comes from a profile bound looser than its RDP curve's
            conversion (sampled zCDP): the PLD accountant also takes the RDP bound of the tree.
        approx_level: (leaf, scale) -> the (epsilon, delta) guarantee of one unsampled run with delta > 0,
            for basic composition (None: only its pure level, ``pure_epsilon``, is used there).
        rdp_from_inner: (orders, inner curve at the orders, leaf) -> the leaf's Renyi-DP curve, for a leaf
            that wraps an inner tree (``Leaf.inner``) and transforms its composed curve (repeat and select).
    """

    name: str
    events: tuple[type, ...]
    kinds: tuple[str, ...]
    normal_form: Callable[[PrivacyEvent], Leaf | None]
    pld_pair: PLDPair
    rdp_curve: RDPCurveOf | None = None
    pure_epsilon: Callable[[Leaf, float], float] = _infinite
    rho: Callable[[Leaf, float], float | None] = _no_rho
    guarantee: bool = False
    pld_check: LeafCheck | None = None
    rdp_check: LeafCheck | None = None
    poisson_rdp: Callable[[Any, float, float], Any] | None = None
    rdp_poisson_replace_one: bool = False
    merge_unsampled: Callable[[list[tuple[Leaf, int]]], list[tuple[Leaf, int]]] | None = None
    atom_loss: Callable[[Leaf, float], float | None] | None = None
    exact_power: Callable[[Leaf, int, float, bool], Any] | None = None
    group: Callable[[Leaf, int], Leaf] | None = None
    sampled_lower_side: bool = False
    approx_level: Callable[[Leaf, float], tuple[float, float]] | None = None
    sampled_pld_loose: bool = False
    rdp_from_inner: Callable[[Any, Any, Leaf], Any] | None = None


class Registry:
    """The table of event families, looked up by event type (through its MRO) and by leaf kind."""

    def __init__(self) -> None:
        self._families: dict[str, Family] = {}
        self._by_event: dict[type, Family] = {}
        self._by_kind: dict[str, Family] = {}

    def register(self, family: Family) -> Family:
        """Add ``family``; its name, event types and leaf kinds must not be taken yet."""
        taken = ([family.name] if family.name in self._families else []) + \
                [t.__name__ for t in family.events if t in self._by_event] + \
                [k for k in family.kinds if k in self._by_kind]
        if taken:
            raise ValueError(f"family {family.name!r}: already registered: {', '.join(taken)}")
        self._families[family.name] = family
        for event_type in family.events:
            self._by_event[event_type] = family
        for kind in family.kinds:
            self._by_kind[kind] = family
        return family

    def unregister(self, name: str) -> None:
        """Remove the family registered as ``name`` (for tests of user-defined families)."""
        family = self._families.pop(name)
        for event_type in family.events:
            del self._by_event[event_type]
        for kind in family.kinds:
            del self._by_kind[kind]

    def of_event(self, event: PrivacyEvent) -> Family | None:
        """The family normalising ``event`` (its type or nearest registered base class), or None."""
        for event_type in type(event).__mro__:
            family = self._by_event.get(event_type)
            if family is not None:
                return family
        return None

    def of_kind(self, kind: str) -> Family:
        """The family interpreting leaves of ``kind`` (KeyError if none)."""
        return self._by_kind[kind]

    def normal_form(self, event: PrivacyEvent) -> Leaf | None:
        """The normalised leaf of a base event, or None if no family normalises it."""
        family = self.of_event(event)
        return None if family is None else family.normal_form(event)

    def __iter__(self):
        return iter(self._families.values())


#: The one registry every accountant reads (filled by :mod:`.families`).
FAMILIES = Registry()


def relation_scale(family: Family, relation: str) -> float:
    """Sensitivity scale of ``family`` under ``relation``: 2 for additive noise under replace-one, else 1."""
    return 2.0 if relation == "replace_one" and not family.guarantee else 1.0
