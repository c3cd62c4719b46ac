"""The privacy claim of an Opacus run read from its engine: the accountant's history as an event tree,
with dpaudit's upper bound beside Opacus' own number.

Opacus' accountants (``RDPAccountant``, ``PRVAccountant``, ``GaussianAccountant``) keep ``history``, a list
of ``(noise_multiplier, sample_rate, num_steps)`` in the order the optimizer stepped (consecutive equal
steps merged). Each entry is ``num_steps`` DP-SGD steps under Poisson sampling with rate ``sample_rate``:
``SelfComposed(PoissonSampled(sample_rate, Gaussian(noise_multiplier)), num_steps)``, a plain ``Gaussian``
when the rate is 1 (add/remove-one neighbours, the noise multiplier relative to the clipping norm, as in
Opacus). The history records what the optimizer was *told*; whether the data loader really samples that
way is what :func:`dpaudit.training.check_sampler` tests.

Example:
    >>> class Accountant:                    # any object with Opacus' ``history`` (or the list itself)
    ...     history = [(1.0, 0.01, 1000)]
    >>> event_from_opacus(Accountant())
    Composed(events=(SelfComposed(event=PoissonSampled(sampling_probability=0.01, event=Gaussian(noise_multiplier=1.0)), count=1000),))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from .._validation import check_delta, check_positive, check_positive_int, check_sampling_probability
from ..errors import InvalidArgument, InvalidArgumentType
from ..events import Composed, Gaussian, PoissonSampled, PrivacyEvent, SelfComposed

__all__ = ["event_from_opacus", "EngineClaim", "claim_from_opacus", "history_of"]

SAMPLING_ASSUMPTION = ("Poisson sampling at the engine's sample_rate (each record in each step independently); "
                       "add/remove-one neighbours")


def history_of(accountant: Any) -> list[tuple[float, float, int]]:
    """The validated ``(noise_multiplier, sample_rate, num_steps)`` entries of an Opacus accountant, a
    PrivacyEngine (its ``accountant``), dpaudit's ``OpacusAccountant`` or a plain list of triples."""
    source = accountant
    if hasattr(source, "accountant") and not hasattr(source, "history"):
        source = source.accountant  # a PrivacyEngine
    history = getattr(source, "history", source)
    if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
        raise InvalidArgumentType("accountant", f"accountant={accountant!r} must be an Opacus accountant (with a "
                                                "'history' list), a PrivacyEngine or a list of (noise_multiplier, "
                                                "sample_rate, num_steps)")
    if not history:
        raise InvalidArgument("accountant", "the accountant's history is empty: no DP-SGD step was taken (was the "
                                            "optimizer returned by make_private the one that stepped?)")
    out = []
    for index, entry in enumerate(history):
        try:
            sigma, rate, steps = entry
        except (TypeError, ValueError):
            raise InvalidArgument("accountant", f"history[{index}]={entry!r} must be a (noise_multiplier, "
                                                "sample_rate, num_steps) triple") from None
        out.append((check_positive(sigma, f"history[{index}].noise_multiplier"),
                    check_sampling_probability(rate, f"history[{index}].sample_rate"),
                    check_positive_int(steps, f"history[{index}].num_steps")))
    return out


def event_from_opacus(accountant: Any) -> PrivacyEvent:
    """The engine's history as a dpaudit event tree (a ``Composed`` of one ``SelfComposed`` per entry).

    Args:
        accountant: ``privacy_engine.accountant`` (any Opacus accountant), the PrivacyEngine itself,
            dpaudit's ``OpacusAccountant``, or a list of ``(noise_multiplier, sample_rate, num_steps)``.

    Raises:
        InvalidArgument: an empty history or an entry outside the allowed ranges (named).
    """
    parts = [SelfComposed(Gaussian(sigma) if rate == 1.0 else PoissonSampled(rate, Gaussian(sigma)), steps)
             for sigma, rate, steps in history_of(accountant)]
    return Composed(parts)


@dataclass(frozen=True)
class EngineClaim:
    """What a run claims, side by side: ``epsilon_upper`` is dpaudit's upper bound (rounded up; the minimum
    over its accountants) for ``event`` at ``delta``; ``epsilon_opacus`` is the number the engine's own
    accountant (``mechanism``) reports (None when it could not be computed); ``sampling`` is the assumption
    both rest on."""

    event: PrivacyEvent
    delta: float
    epsilon_upper: float
    epsilon_upper_method: str
    epsilon_opacus: float | None
    mechanism: str | None
    history: tuple[tuple[float, float, int], ...]
    sampling: str = SAMPLING_ASSUMPTION

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["event"] = repr(self.event)
        data["history"] = [list(h) for h in self.history]
        return data


def _opacus_epsilon(accountant: Any, delta: float) -> tuple[float | None, str | None]:
    source = accountant.accountant if hasattr(accountant, "accountant") and not hasattr(accountant, "history") else accountant
    named = getattr(source, "mechanism", None)
    try:
        mechanism = str(named()) if callable(named) else (named if isinstance(named, str) else None)
    except Exception:  # noqa: BLE001 - an accountant whose name cannot be read is reported without one
        mechanism = None
    get = getattr(source, "get_epsilon", None)
    if get is None:
        return None, mechanism
    try:
        value = float(get(delta=delta))
    except Exception:  # noqa: BLE001 - Opacus' own accountant failing is reported as "not available"
        return None, mechanism
    return (value if math.isfinite(value) or value == math.inf else None), mechanism


def claim_from_opacus(accountant: Any, delta: float) -> EngineClaim:
    """The claim of a run: dpaudit's epsilon upper bound for the engine's history and the engine's own.

    Example:
        >>> claim = claim_from_opacus([(1.0, 0.01, 1000)], delta=1e-5)
        >>> round(claim.epsilon_upper, 2), claim.epsilon_opacus is None
        (1.83, True)
    """
    from ..accountant import epsilon_upper

    delta = check_delta(delta, "delta")
    history = history_of(accountant)
    event = event_from_opacus(history)
    best = epsilon_upper(event, delta)
    theirs, mechanism = _opacus_epsilon(accountant, delta) if not isinstance(accountant, Sequence) else (None, None)
    return EngineClaim(event=event, delta=delta, epsilon_upper=float(best.epsilon), epsilon_upper_method=best.method,
                       epsilon_opacus=theirs, mechanism=mechanism, history=tuple(history))
