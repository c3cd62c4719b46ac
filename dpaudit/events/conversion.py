"""Conversion between dpaudit event trees and Google's dp_accounting ``DpEvent`` trees.

``from_dp_accounting(dp_event)`` and ``to_dp_accounting(event)`` (importable from :mod:`dpaudit.events`
and :mod:`dpaudit.interop`) need the optional dependency ``dp-accounting`` (extra ``bench``); it is imported
only when they are called. Every event type with a counterpart is converted, recursively; any other
node raises :class:`~dpaudit.errors.UnsupportedEventError` naming it (and its path in the tree).

Counterparts (dpaudit <-> dp_accounting):

========================================  ==========================================================
``Gaussian(z)``                           ``GaussianDpEvent(z)``
``Laplace(z)``                            ``LaplaceDpEvent(z)``
``DiscreteLaplace(scale, s)``             ``DiscreteLaplaceDpEvent(1 / scale, s)``
``RandomizedResponse(eps, k)``            ``RandomizedResponseDpEvent(p, k)``, p = k / (e^eps + k - 1)
``PureDP(eps)`` / ``ApproxDP(eps, 0)``    to: binary ``RandomizedResponseDpEvent`` (the worst eps-DP case)
``ApproxDP(eps, delta)``                  ``EpsilonDeltaDpEvent`` when the installed version has it
``ZCDP(rho)``                             ``ZCDpEvent(rho)`` (``xi`` must be 0)
``TreeAggregation(z, n)``                 ``SingleEpochTreeAggregationDpEvent(z, n)`` (a list of step counts
                                          becomes its maximum, which fixes the tree depth)
``Composed``, ``SelfComposed``,           ``ComposedDpEvent``, ``SelfComposedDpEvent``,
``PoissonSampled``,                       ``PoissonSampledDpEvent``,
``SampledWithoutReplacement``             ``SampledWithoutReplacementDpEvent``
(``SampledWithReplacement``)              ``SampledWithReplacementDpEvent`` (when dpaudit has the event)
``MixtureOfGaussians(s, c, p)``            ``MixtureOfGaussiansDpEvent(s, c, p)``
``TruncatedSubsampledGaussian(n, q, B, z)`` ``TruncatedSubsampledGaussianDpEvent(n, q, B, z)``
``RepeatAndSelect(e, mean, shape)``       ``RepeatAndSelectDpEvent(e, mean, shape)``
``RandomAllocation(z, t, k)``             ``RandomAllocationDpEvent(GaussianDpEvent(z), k, t)`` (releases that
                                          have it; from: a Gaussian inner event only)
``PureDP(0.0)`` (from)                    ``NoOpDpEvent``, empty compositions, zero counts or rates, a
                                          mixture whose sensitivities are all 0, a truncated sample of size 0
========================================  ==========================================================

Every dp_accounting event type is converted except those with no sound meaning as a dpaudit event:
``NonPrivateDpEvent`` (no finite guarantee), ``UnsupportedDpEvent`` (dp_accounting's own marker) and
``ZCDpEvent`` with ``xi > 0`` ((xi, rho)-zCDP: reading it as rho-zCDP would understate it). No counterpart
in dp_accounting (to): ``DiscreteGaussian``, ``BoundedRange``, ``UserLevel``, ``BandMF``, ``RandomAllocation`` on
releases without ``RandomAllocationDpEvent``, and ``ApproxDP`` with delta > 0 on versions without an (epsilon,
delta) event.

**Noise-multiplier convention.** dpaudit's ``noise_multiplier`` is relative to C, the bound on one
record's norm: under replace-one the sensitivity is 2C, so ``Gaussian(z)`` under
``neighbouring="replace_one"`` has mu = 2 / z, in every dpaudit accountant. dp_accounting's PLD accountant
uses the same convention (its ``REPLACE_ONE`` Gaussian also has mu = 2 / z), but its RDP accountant takes
``noise_multiplier`` relative to the sensitivity of the neighbouring relation: under ``REPLACE_ONE`` (for
example for ``SampledWithoutReplacementDpEvent``) a ``GaussianDpEvent(z)`` has mu = 1 / z there
(dp_accounting issue #378). The conversion keeps the number as it is, which is exact under
add/remove-one and for dp_accounting's PLD accountant; to compare with dp_accounting's RDP accountant
under ``REPLACE_ONE``, a dpaudit ``Gaussian(z)`` corresponds to ``GaussianDpEvent(z / 2)`` (likewise for
Laplace). dp_accounting requires ``REPLACE_SPECIAL`` (a record replaced by a zero record, sensitivity C)
for tree aggregation, which is dpaudit's add/remove accounting of ``TreeAggregation``.
"""

from __future__ import annotations

import math
from typing import Any

from .._numeric import round_down, round_up
from ..errors import InvalidArgumentType, UnsupportedEventError
from . import tree as ev

__all__ = ["from_dp_accounting", "to_dp_accounting"]


def _dp_event_module() -> Any:
    try:
        from dp_accounting import dp_event
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("dpaudit's dp_accounting interop needs the optional dependency dp-accounting: "
                          "pip install 'dpaudit[bench]' (or pip install dp-accounting)") from exc
    return dp_event


def _unsupported(node: Any, path: str, reason: str) -> UnsupportedEventError:
    return UnsupportedEventError(f"{type(node).__name__} at {path} has no counterpart: {reason} ({node!r})")


def from_dp_accounting(dp_event: Any) -> ev.PrivacyEvent:
    """Convert a dp_accounting ``DpEvent`` tree into the equivalent dpaudit event tree.

    Raises:
        UnsupportedEventError: a node has no dpaudit counterpart (the message names it and its path).
        InvalidArgumentType: ``dp_event`` is not a dp_accounting ``DpEvent``.
    """
    module = _dp_event_module()
    if not isinstance(dp_event, module.DpEvent):
        raise InvalidArgumentType("dp_event", f"dp_event={dp_event!r} must be a dp_accounting DpEvent, "
                                              f"not {type(dp_event).__name__}")
    return _from(module, dp_event, "root")


def _from(m: Any, node: Any, path: str) -> ev.PrivacyEvent:
    nothing = ev.PureDP(0.0)
    if isinstance(node, m.NoOpDpEvent):
        return nothing
    if isinstance(node, m.GaussianDpEvent):
        if node.noise_multiplier == 0:
            raise _unsupported(node, path, "noise_multiplier 0 is not private")
        return ev.Gaussian(node.noise_multiplier)
    if isinstance(node, m.LaplaceDpEvent):
        if node.noise_multiplier == 0:
            raise _unsupported(node, path, "noise_multiplier 0 is not private")
        return ev.Laplace(node.noise_multiplier)
    if isinstance(node, m.DiscreteLaplaceDpEvent):
        if node.noise_parameter == 0:
            raise _unsupported(node, path, "noise_parameter 0 is not private")
        return ev.DiscreteLaplace(round_down(1.0 / node.noise_parameter, ulps=2), node.sensitivity)  # never less noise
    if isinstance(node, m.RandomizedResponseDpEvent):
        p, k = float(node.noise_parameter), int(node.num_buckets)
        if p == 0:
            raise _unsupported(node, path, "noise_parameter 0 (the true bucket always) is not private")
        if k == 1:
            return nothing
        return ev.RandomizedResponse(round_up(math.log1p(k * (1.0 - p) / p), ulps=8), k)  # never a smaller epsilon
    if isinstance(node, m.ZCDpEvent):
        if getattr(node, "xi", 0.0):
            raise _unsupported(node, path, "(xi, rho)-zCDP with xi > 0 has no dpaudit counterpart, and reading it as "
                                           "rho-zCDP would understate it")
        return nothing if node.rho == 0 else ev.ZCDP(node.rho)
    epsilon_delta = getattr(m, "EpsilonDeltaDpEvent", None)
    if epsilon_delta is not None and isinstance(node, epsilon_delta):
        return ev.ApproxDP(node.epsilon, node.delta)
    if isinstance(node, m.SingleEpochTreeAggregationDpEvent):
        counts = node.step_counts if isinstance(node.step_counts, (list, tuple)) else [node.step_counts]
        if not counts or max(counts) < 1:
            raise _unsupported(node, path, "a tree needs at least one step")
        return ev.TreeAggregation(node.noise_multiplier, int(max(counts)))
    if isinstance(node, m.SelfComposedDpEvent):
        if node.count == 0:
            return nothing
        return ev.SelfComposed(_from(m, node.event, f"{path}.event"), node.count)
    if isinstance(node, m.ComposedDpEvent):
        if not node.events:
            return nothing
        return ev.Composed([_from(m, child, f"{path}.events[{i}]") for i, child in enumerate(node.events)])
    if isinstance(node, m.PoissonSampledDpEvent):
        if node.sampling_probability == 0:
            return nothing
        return ev.PoissonSampled(node.sampling_probability, _from(m, node.event, f"{path}.event"))
    if isinstance(node, m.SampledWithoutReplacementDpEvent):
        return ev.SampledWithoutReplacement(node.source_dataset_size, node.sample_size, _from(m, node.event, f"{path}.event"))
    if isinstance(node, m.SampledWithReplacementDpEvent):
        with_replacement = getattr(ev, "SampledWithReplacement", None)
        if with_replacement is None:
            raise _unsupported(node, path, "dpaudit has no sampling-with-replacement event")
        return with_replacement(node.source_dataset_size, node.sample_size, _from(m, node.event, f"{path}.event"))
    if isinstance(node, m.MixtureOfGaussiansDpEvent):
        if all(c == 0 for c in node.sensitivities):
            return nothing
        if node.standard_deviation == 0:
            raise _unsupported(node, path, "standard_deviation 0 is not private")
        return ev.MixtureOfGaussians(node.standard_deviation, list(node.sensitivities), list(node.sampling_probs))
    if isinstance(node, m.TruncatedSubsampledGaussianDpEvent):
        if node.sampling_probability == 0 or node.truncated_batch_size == 0 or node.dataset_size == 0:
            return nothing
        if node.noise_multiplier == 0:
            raise _unsupported(node, path, "noise_multiplier 0 is not private")
        return ev.TruncatedSubsampledGaussian(node.dataset_size, node.sampling_probability,
                                              min(node.truncated_batch_size, node.dataset_size), node.noise_multiplier)
    if isinstance(node, m.RepeatAndSelectDpEvent):
        return ev.RepeatAndSelect(_from(m, node.event, f"{path}.event"), node.mean, node.shape)
    allocation = getattr(m, "RandomAllocationDpEvent", None)
    if allocation is not None and isinstance(node, allocation):
        return _allocation_from(m, node, path)
    reasons = {"NonPrivateDpEvent": "a non-private step has no finite guarantee",
               "UnsupportedDpEvent": "dp_accounting marks it unsupported"}
    raise _unsupported(node, path, reasons.get(type(node).__name__, "dpaudit has no such event"))


def _allocation_from(m: Any, node: Any, path: str) -> ev.PrivacyEvent:
    """``RandomAllocationDpEvent(event, num_selected, num_steps)``: dpaudit accounts Gaussian steps only."""
    inner = node.event
    if node.num_selected == 0 or isinstance(inner, m.NoOpDpEvent):
        return ev.PureDP(0.0)
    if not isinstance(inner, m.GaussianDpEvent):
        raise _unsupported(node, path, f"dpaudit's random allocation is over Gaussian steps, not "
                                       f"{type(inner).__name__}")
    if inner.noise_multiplier == 0:
        raise _unsupported(node, path, "noise_multiplier 0 is not private")
    return ev.RandomAllocation(inner.noise_multiplier, node.num_steps, node.num_selected)


def to_dp_accounting(event: ev.PrivacyEvent) -> Any:
    """Convert a dpaudit event tree into the equivalent dp_accounting ``DpEvent`` tree (same numbers under
    add/remove-one; see the module notes on replace-one).

    Raises:
        UnsupportedEventError: a node has no dp_accounting counterpart (the message names it and its path).
    """
    ev.check_event(event)
    return _to(_dp_event_module(), event, "root")


def _to(m: Any, node: ev.PrivacyEvent, path: str) -> Any:
    if isinstance(node, ev.Gaussian):
        return m.GaussianDpEvent(node.noise_multiplier)
    if isinstance(node, ev.Laplace):
        return m.LaplaceDpEvent(node.noise_multiplier)
    if isinstance(node, ev.DiscreteLaplace):
        return m.DiscreteLaplaceDpEvent(1.0 / node.scale, node.sensitivity)
    if isinstance(node, ev.RandomizedResponse):
        k = node.num_buckets
        return m.RandomizedResponseDpEvent(k / (math.exp(node.epsilon) + k - 1), k)
    if isinstance(node, ev.PureDP) or (isinstance(node, ev.ApproxDP) and node.delta == 0.0):
        return m.RandomizedResponseDpEvent(2.0 / (math.exp(node.epsilon) + 1.0), 2)
    if isinstance(node, ev.ApproxDP):
        epsilon_delta = getattr(m, "EpsilonDeltaDpEvent", None)
        if epsilon_delta is None:
            raise _unsupported(node, path, "this dp_accounting version has no (epsilon, delta) event")
        return epsilon_delta(node.epsilon, node.delta)
    if isinstance(node, ev.ZCDP):
        return m.ZCDpEvent(node.rho)
    if isinstance(node, ev.TreeAggregation):
        return m.SingleEpochTreeAggregationDpEvent(node.noise_multiplier, node.steps)
    if isinstance(node, ev.Composed):
        return m.ComposedDpEvent([_to(m, child, f"{path}.events[{i}]") for i, child in enumerate(node.events)])
    if isinstance(node, ev.SelfComposed):
        return m.SelfComposedDpEvent(_to(m, node.event, f"{path}.event"), node.count)
    if isinstance(node, ev.PoissonSampled):
        return m.PoissonSampledDpEvent(node.sampling_probability, _to(m, node.event, f"{path}.event"))
    if isinstance(node, ev.SampledWithoutReplacement):
        return m.SampledWithoutReplacementDpEvent(node.source_size, node.sample_size, _to(m, node.event, f"{path}.event"))
    with_replacement = getattr(ev, "SampledWithReplacement", None)
    if with_replacement is not None and isinstance(node, with_replacement):
        return m.SampledWithReplacementDpEvent(node.source_size, node.sample_size, _to(m, node.event, f"{path}.event"))
    if isinstance(node, ev.MixtureOfGaussians):
        return m.MixtureOfGaussiansDpEvent(node.standard_deviation, list(node.sensitivities), list(node.sampling_probs))
    if isinstance(node, ev.TruncatedSubsampledGaussian):
        return m.TruncatedSubsampledGaussianDpEvent(node.dataset_size, node.sampling_probability,
                                                    node.truncated_batch_size, node.noise_multiplier)
    if isinstance(node, ev.RepeatAndSelect):
        return m.RepeatAndSelectDpEvent(_to(m, node.event, f"{path}.event"), node.mean, node.shape)
    allocation = getattr(m, "RandomAllocationDpEvent", None)
    if allocation is not None and isinstance(node, ev.RandomAllocation):
        return allocation(event=m.GaussianDpEvent(node.noise_multiplier), num_selected=node.num_selected,
                          num_steps=node.num_steps)
    reasons = {"DiscreteGaussian": "dp_accounting has no discrete Gaussian event",
               "BoundedRange": "dp_accounting has no bounded-range (exponential mechanism) event",
               "UserLevel": "dp_accounting has no user-level event (convert the event with its sensitivity scaled)",
               "RandomAllocation": "this dp_accounting release has no random-allocation event "
                                   "(RandomAllocationDpEvent)",
               "BandMF": "dp_accounting has no banded matrix factorisation event (jax_privacy builds it from "
                         "Poisson-sampled Gaussians)"}
    raise _unsupported(node, path, reasons.get(type(node).__name__, "dp_accounting has no such event"))
