"""The tightest sound epsilon for an event tree: the minimum over every bound the accountants give.

Each candidate is an upper bound on the same quantity (the smallest epsilon with the tree
(epsilon, target_delta)-DP under the neighbouring relation), so their minimum is one too:

* ``pld``: :meth:`PLDAccountant.epsilon` itself, every path it takes (the pessimistic connect-the-dots PLD,
  the exact optimal composition of bounded-range mechanisms, its tilted read-out at small delta, basic
  composition of pure and (epsilon, delta) steps);
* ``pld_tilted``: the same composed PLD read out by exponential tilting with the tails beyond the grid
  bounded analytically (:mod:`.pld_tilted`), finite and tight down to delta = 1e-30;
* ``pure``: basic composition when every leaf is pure DP or (epsilon, delta)-DP with the summed delta within
  the target (the order-infinity bound);
* ``rdp``: the Renyi-DP accountant with the Canonne-Kamath-Steinke conversion (when it supports the tree);
* ``gdp``: the exact mu-GDP curve when the tree is a composition of unsampled Gaussians (Dong, Roth &
  Su 2022).

Example:
    >>> from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
    >>> best = epsilon_upper(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100), 1e-20)
    >>> best.method, round(best.epsilon, 2)
    ('pld_tilted', 5.06)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .._validation import check_delta
from ..events import PrivacyEvent, check_event, check_neighbouring

__all__ = ["EpsilonUpper", "epsilon_upper", "METHODS"]

#: Candidate bounds, in the order ties are resolved (the first smallest wins).
METHODS = ("gdp", "pld", "pld_tilted", "pure", "rdp")


@dataclass(frozen=True)
class EpsilonUpper:
    """The smallest of the candidate upper bounds on epsilon at ``target_delta`` and which one won.

    ``candidates`` maps every method that applied to its bound (inf: no finite bound)."""

    epsilon: float
    method: str
    target_delta: float
    neighbouring: str
    candidates: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon_upper": self.epsilon, "method": self.method, "target_delta": self.target_delta,
                "neighbouring": self.neighbouring, "candidates": dict(self.candidates)}


def epsilon_upper(event: PrivacyEvent, target_delta: float, *, neighbouring: str = "add_remove",
                  methods: tuple[str, ...] = METHODS) -> EpsilonUpper:
    """The minimum of every sound upper bound on the epsilon of ``event`` at ``target_delta``.

    Args:
        event: the event tree (every accountant that supports it is consulted).
        target_delta: in [0, 1).
        neighbouring: "add_remove" or "replace_one".
        methods: the subset of :data:`METHODS` to try.

    Raises:
        UnsupportedEventError: when neither the PLD accountant nor the RDP accountant can account for the
            tree (the RDP accountant alone analyses repeat-and-select). A tree it supports but whose grid it refuses to build (too many
            cells, losses beyond the float range) is bounded by the other candidates (RDP, pure).
    """
    from ..errors import InvalidArgument, UnsupportedEventError
    from .pld import PLDAccountant, _merged, _up
    from .rdp import RDPAccountant

    check_event(event)
    target_delta = check_delta(target_delta, "target_delta")
    neighbouring = check_neighbouring(neighbouring)
    unknown = set(methods) - set(METHODS)
    if unknown or not methods:
        raise InvalidArgument("methods", f"methods={methods!r} must be a non-empty subset of {METHODS}")
    candidates: dict[str, float] = {}
    try:
        pld = PLDAccountant(neighbouring).compose(event)
    except UnsupportedEventError as refused:  # an event only the RDP accountant analyses (repeat and select)
        if "rdp" not in methods:
            raise
        try:
            candidates["rdp"] = RDPAccountant(neighbouring).compose(event).epsilon(target_delta)
        except UnsupportedEventError:
            raise refused from None
        return EpsilonUpper(candidates["rdp"], "rdp", target_delta, neighbouring, candidates)
    if "pure" in methods:
        candidates["pure"] = pld._pure_epsilon(target_delta)
    if "gdp" in methods:
        mu = pld.gaussian_mu()
        if mu is not None:  # the PLD accountant reads exactly this curve (any mu, overflow handled)
            candidates["gdp"] = pld.epsilon(target_delta) if target_delta > 0 else math.inf
    if target_delta > 0 and pld.leaves and ("pld" in methods or "pld_tilted" in methods):
        try:  # a grid too large to build is refused (UnsupportedEventError): the other candidates remain
            if "pld" in methods:  # every path the accountant takes (exact bounded-range optimum, tilting, ...)
                candidates["pld"] = pld.epsilon(target_delta)
            if "pld_tilted" in methods and pld.gaussian_mu() is None:  # exact GDP needs no tilted grid
                from .pld_tilted import tilted_epsilon

                pld._check_cells(pld.tilt_step(True))
                candidates["pld_tilted"] = _up(tilted_epsilon(_merged(pld._leaves), neighbouring, pld.tilt_step(True),
                                                                   target_delta))
        except (UnsupportedEventError, OverflowError, MemoryError):
            pass
    if not pld.leaves:
        candidates = {name: 0.0 for name in methods}
    if "rdp" in methods:
        try:
            candidates["rdp"] = RDPAccountant(neighbouring).compose(event).epsilon(target_delta)
        except UnsupportedEventError:
            pass
    if not candidates:
        return EpsilonUpper(math.inf, "none", target_delta, neighbouring, {})
    method = min((name for name in METHODS if name in candidates), key=lambda name: candidates[name])
    return EpsilonUpper(candidates[method], method, target_delta, neighbouring, candidates)
