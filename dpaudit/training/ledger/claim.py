"""The claim a witnessed run is held to, as the parameters the run can witness: per step a noise multiplier
sigma and a Poisson sampling rate q, and the number of steps.

* no claim given: the engine's accountant history (``(sigma, q, steps)`` entries, what the optimizer told
  the accountant, :func:`~dpaudit.training.engine.history_of`);
* an event tree of DP-SGD steps (``SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)``, composed):
  its own sigma, q and steps;
* an epsilon (at ``delta``), or an event of another shape: the engine's q and steps, and the noise
  multipliers the claim implies: the engine's sigmas times the factor k at which dpaudit's PLD accountant
  reaches the claimed epsilon (the lower end of the calibration bracket, so the claim's sigma is never
  overstated), tested with a relative slack of :data:`IMPLIED_SLACK` for the accountants' differences.

A given claim below the engine's own figure (Opacus' epsilon for its history, else dpaudit's upper bound)
is a warning: the claim is then not what the engine computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from ..._validation import check_epsilon
from ...errors import InvalidArgument, InvalidArgumentType
from ...events import Composed, Gaussian, PoissonSampled, PrivacyEvent, SelfComposed
from ..engine import _opacus_epsilon, history_of

__all__ = ["ClaimedRun", "claimed_run", "IMPLIED_SLACK"]

IMPLIED_SLACK = 0.01  # relative tolerance on a noise multiplier implied by an epsilon (accountants differ)


@dataclass(frozen=True)
class ClaimedRun:
    """Per-step sigma and q of a claim (None when the claim does not give them), its source, the epsilon
    given (None for the engine's claim), the engine's own epsilon when one was computed, and warnings."""

    source: str
    sigmas: np.ndarray | None
    rates: np.ndarray | None
    epsilon: float | None
    delta: float
    engine_epsilon: float | None
    slack: float
    warnings: tuple[str, ...]
    history: tuple[tuple[float, float, int], ...]

    @property
    def steps(self) -> int | None:
        return None if self.sigmas is None else int(self.sigmas.size)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "steps": self.steps, "epsilon": self.epsilon, "delta": self.delta,
                "engine_epsilon": self.engine_epsilon, "sigma_slack": self.slack,
                "history": [list(h) for h in self.history], "warnings": list(self.warnings)}


def _expand(history: list[tuple[float, float, int]]) -> tuple[np.ndarray, np.ndarray]:
    sigmas = np.concatenate([np.full(int(n), float(s)) for s, _, n in history])
    rates = np.concatenate([np.full(int(n), float(q)) for _, q, n in history])
    return sigmas, rates


def dpsgd_history(event: PrivacyEvent) -> list[tuple[float, float, int]] | None:
    """The ``(sigma, q, steps)`` entries of an event tree made of DP-SGD steps, or None for another shape."""
    if isinstance(event, Composed):
        out: list[tuple[float, float, int]] = []
        for part in event.events:
            found = dpsgd_history(part)
            if found is None:
                return None
            out.extend(found)
        return out
    count, inner = 1, event
    if isinstance(event, SelfComposed):
        count, inner = int(event.count), event.event
    if isinstance(inner, PoissonSampled) and isinstance(inner.event, Gaussian):
        return [(float(inner.event.noise_multiplier), float(inner.sampling_probability), count)]
    if isinstance(inner, Gaussian):
        return [(float(inner.noise_multiplier), 1.0, count)]
    return None


def _engine_epsilon(accountant: Any, history: list[tuple[float, float, int]], delta: float) -> float | None:
    theirs, _ = _opacus_epsilon(accountant, delta) if accountant is not None else (None, None)
    if theirs is not None:
        return theirs
    from ...accountant import epsilon_upper

    return float(epsilon_upper(_event(history, 1.0), delta).epsilon)


def _text(history: list[tuple[float, float, int]]) -> str:
    return "; ".join(f"{n} steps at sigma {s:g}, q {q:g}" for s, q, n in history)


def _dominance(claim: list[tuple[float, float, int]], engine: list[tuple[float, float, int]]) -> int | None:
    """0 when the two single-entry histories are equal, -1 when the claim's epsilon is smaller for every
    accountant (sigma at least, q and steps at most the engine's, one strictly: DP-SGD's epsilon falls with
    sigma and rises with q and the steps), None when that cannot be read off the parameters."""
    if len(claim) != 1 or len(engine) != 1:
        return None
    (sc, qc, nc), (se, qe, ne) = claim[0], engine[0]
    if (sc, qc, nc) == (se, qe, ne):
        return 0
    if sc >= se and qc <= qe and nc <= ne:
        return -1
    return None


def _accountant_epsilon(accountant: Any, history: list[tuple[float, float, int]], delta: float) -> float | None:
    """The epsilon a fresh accountant of the engine's kind gives ``history`` (None if it cannot be built)."""
    source = accountant.accountant if hasattr(accountant, "accountant") and not hasattr(accountant, "history") else accountant
    try:
        fresh = type(source)()
        fresh.history = list(history)
        value = float(fresh.get_epsilon(delta=delta))
    except Exception:  # noqa: BLE001 - an accountant that cannot be rebuilt: dpaudit's bound is used instead
        return None
    return value if math.isfinite(value) else None


def _event(history: list[tuple[float, float, int]], factor: float) -> PrivacyEvent:
    return Composed([SelfComposed(Gaussian(s * factor) if q == 1.0 else PoissonSampled(q, Gaussian(s * factor)), n)
                     for s, q, n in history])


def _implied_factor(history: list[tuple[float, float, int]], epsilon: float, delta: float) -> float:
    """The factor on the engine's sigmas at which dpaudit's PLD accountant reaches ``epsilon`` (lower end)."""
    from ...accountant.calibration import calibrate
    from ...errors import InfeasibleBudgetError

    try:
        found = calibrate(lambda k: _event(history, k), epsilon, delta, bounds=(1e-3, 1e3), tolerance=1e-3)
    except InfeasibleBudgetError:
        return math.inf  # no noise level up to 1000x the engine's reaches the claim
    return float(found.bracket[1]) if found.bracket[1] is not None else 1e-3


def claimed_run(claim: Any, accountant: Any, delta: float) -> ClaimedRun:
    """The claim's per-step parameters (see the module docstring); ``accountant`` is the run's (or None)."""
    if claim is not None and not isinstance(claim, PrivacyEvent) and (isinstance(claim, bool) or not isinstance(claim, Real)):
        raise InvalidArgumentType("claim", f"claim={claim!r} must be None (the engine's), an epsilon (a number > 0) or "
                                           "a dpaudit event tree")
    history = history_of(accountant) if accountant is not None else None
    if claim is None:
        if history is None:
            raise InvalidArgument("claim", "no claim: the run attached no privacy engine or accountant (call "
                                           "hooks.attach(model, optimizer, privacy_engine)) and no claim was given")
        sigmas, rates = _expand(history)
        return ClaimedRun("engine history", sigmas, rates, None, delta, None, 0.0, (), tuple(history))
    warnings: list[str] = []
    if isinstance(claim, PrivacyEvent):
        given = dpsgd_history(claim)
        if given is not None:
            sigmas, rates = _expand(given)
            order = _dominance(given, history) if history is not None else None
            if order is not None:  # the comparison follows from the parameters alone: no epsilon computed
                if order < 0:
                    warnings.append(f"the claim ({_text(given)}) has more noise, a lower sampling rate or fewer steps than "
                                    f"the engine's history ({_text(history)}), so its epsilon is below the engine's own "
                                    "figure: the claim is not what the engine computed")
                return ClaimedRun(f"given event {claim!r}", sigmas, rates, None, delta, None, 0.0, tuple(warnings),
                                  tuple(given))
            engine = _engine_epsilon(accountant, history, delta) if history is not None else None
            epsilon = None
            if engine is not None:  # compared by the engine's own accountant when it can take the claim's history
                epsilon = _accountant_epsilon(accountant, given, delta)
                if epsilon is None:
                    from ...accountant import epsilon_upper

                    epsilon = float(epsilon_upper(claim, delta).epsilon)
                _warn_below(warnings, epsilon, engine)
            return ClaimedRun(f"given event {claim!r}", sigmas, rates, epsilon, delta, engine, 0.0, tuple(warnings),
                              tuple(given))
        from ...accountant import epsilon_upper

        epsilon = float(epsilon_upper(claim, delta).epsilon)
        source = f"given event {claim!r} (not DP-SGD steps: its epsilon)"
    else:
        epsilon = check_epsilon(claim, "claim")
        source = "given epsilon"
    if history is None:
        warnings.append("the run attached no privacy engine or accountant, so the claim's steps, sampling rate and noise "
                        "cannot be read: only the clipping and the data and update ledgers are witnessed")
        return ClaimedRun(source, None, None, epsilon, delta, None, 0.0, tuple(warnings), ())
    engine = _engine_epsilon(accountant, history, delta)
    if engine is not None:
        _warn_below(warnings, epsilon, engine)
    factor = _implied_factor(history, epsilon, delta)
    sigmas, rates = _expand(history)
    return ClaimedRun(source + f" (noise multipliers implied: the engine's x {factor:.4g})", sigmas * factor, rates,
                      epsilon, delta, engine, IMPLIED_SLACK, tuple(warnings), tuple(history))


def _warn_below(warnings: list[str], epsilon: float, engine: float) -> None:
    if epsilon < engine * (1 - 1e-3):
        warnings.append(f"the claim (epsilon {epsilon:.4g}) is below the engine's own figure ({engine:.4g}) for the "
                        "same run: the claim is not what the engine computed")
