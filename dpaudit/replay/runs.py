"""One instrumented run of a mechanism: its output (one run, flattened) and the log of its draws."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DPAuditError, MechanismError
from .hooks import active_run
from .recording import Draw, Recorder, RecordingGenerator

__all__ = ["Run", "run_once", "first_difference", "UninstrumentableMechanism"]


class UninstrumentableMechanism(MechanismError):
    """The replay cannot control the mechanism's randomness (it draws from a source other than the
    generator it is given, numpy's global state or the instrumented samplers: ``random``, ``secrets``,
    ``os.urandom``, an unseeded generator, a C extension)."""


@dataclass(frozen=True)
class Run:
    """What one run returned (float64, flattened; NaN kept) and the draws it made, in order."""

    outputs: np.ndarray
    draws: tuple[Draw, ...]

    @property
    def signature(self) -> tuple[Any, ...]:
        return tuple(draw.signature for draw in self.draws)

    @property
    def primitives(self) -> tuple[Draw, ...]:
        return tuple(draw for draw in self.draws if draw.family is not None)


def run_once(mechanism: Any, data: Any, seed: int, perturbations: dict[int, np.ndarray] | None = None,
             overrides: dict[int, np.ndarray] | None = None) -> Run:
    """Run ``mechanism(data, 1, rng)`` once with a recording generator seeded by ``seed`` (noise primitives
    perturbed or overridden as :class:`~dpaudit.replay.recording.Recorder` describes).

    Raises MechanismError when the mechanism raises or returns something that is not a numeric array
    with one run on axis 0.
    """
    recorder = Recorder(seed, perturbations, overrides)
    generator = RecordingGenerator(recorder)
    try:
        with active_run(recorder, generator):
            raw = mechanism(copy.deepcopy(data), 1, generator)
    except DPAuditError:
        raise
    except Exception as exc:  # the mechanism's own failure: report it, never a traceback
        raise MechanismError(f"the mechanism raised {type(exc).__name__}: {exc}") from exc
    try:
        array = np.asarray(raw)
        if array.dtype == object or not (np.issubdtype(array.dtype, np.number) or array.dtype == bool):
            raise TypeError(f"dtype {array.dtype}")
        outputs = array.astype(np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise MechanismError(f"the mechanism must return a numeric array (size, ...), got {type(raw).__name__} "
                             f"({exc})") from exc
    if array.ndim == 0 or array.shape[0] != 1:
        raise MechanismError(f"the mechanism must return one output per run on axis 0: asked for 1, got shape "
                             f"{array.shape}")
    return Run(outputs, tuple(recorder.draws))


def first_difference(run: Run, other: Run) -> str | None:
    """Where two runs' sequences of draws stop agreeing (None when they agree)."""
    for draw, other_draw in zip(run.draws, other.draws):
        if draw.signature != other_draw.signature:
            return f"draw {draw.index}: {draw.describe()} on d, {other_draw.describe()} on d'"
    if len(run.draws) != len(other.draws):
        shorter, longer, which = (run, other, "d'") if len(run.draws) < len(other.draws) else (other, run, "d")
        extra = longer.draws[len(shorter.draws)]
        return f"draw {extra.index}: {extra.describe()} only on {which} ({len(run.draws)} draws on d, " \
               f"{len(other.draws)} on d')"
    return None
