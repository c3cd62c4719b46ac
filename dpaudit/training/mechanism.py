"""A training stack as an auditor mechanism: one output = one training run's canary score.

:class:`TrainingMechanism` wraps a one-canary :class:`~dpaudit.training.TrainingTarget` as a mechanism of the
auditor's contract, ``mechanism(data, size, rng) -> ndarray``: ``data`` says whether the canary is in the
training set (``[1]``) or not (``[0]``), and each of the ``size`` outputs is the canary's score in an
independent run whose seed is drawn from ``rng``. The neighbouring pair is ``d = [1]``, ``d_prime = [0]``
(add/remove the canary). So the auditor's statistics take training runs unchanged:
``dpaudit.audit_curve(mechanism, [1], [0])`` certifies points of the training's trade-off curve against
the claim (``mechanism.event``: the engine's history, read from one run with the canary, unless an event is
given), and ``dpaudit.audit`` an (epsilon, delta) lower bound; the runs go through the auditor's backends
(process pool or Dask), reproducible from the audit's seed.

Example (a full-batch Opacus training; ``train`` and ``dataset`` as for :func:`~dpaudit.training.audit_opacus`)::

    mechanism = TrainingMechanism(opacus_target(train, dataset=dataset))
    dpaudit.audit_curve(mechanism, [1], [0], samples=4000, workers=2).mu_lower
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidArgumentType
from ..events import PrivacyEvent
from .engine import event_from_opacus
from .protocol import TrainingTarget, run_one

__all__ = ["TrainingMechanism", "CANARY_IN", "CANARY_OUT"]

CANARY_IN = [1]
CANARY_OUT = [0]


@dataclass(frozen=True)
class TrainingMechanism:
    """``mechanism(data, size, rng)``: ``size`` training runs of ``target`` with its one canary in (``data ==
    [1]``) or out (``[0]``), each run's seed drawn from ``rng``; returns the canary's scores (float64).

    ``claim``: the privacy event the runs claim (default: read from the privacy engine of one run with the
    canary, seed 0, on first use of :attr:`event`)."""

    target: TrainingTarget
    claim: PrivacyEvent | None = None
    _event: list = field(default_factory=list, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.target, TrainingTarget):
            raise InvalidArgumentType("target", f"target={self.target!r} must be a TrainingTarget")
        if len(self.target.canaries) != 1:
            raise InvalidArgument("target", f"a training mechanism plants one canary; the target has "
                                            f"{len(self.target.canaries)}")
        if self.claim is not None and not isinstance(self.claim, PrivacyEvent):
            raise InvalidArgumentType("claim", f"claim={self.claim!r} must be a privacy event (or None: from the engine)")

    @property
    def event(self) -> PrivacyEvent:
        """The claim: the given event, else the engine's history of one run with the canary."""
        if self.claim is not None:
            return self.claim
        if not self._event:
            accountant = run_one(self.target, np.array([True]), 0, 0).accountant
            if accountant is None:
                raise InvalidArgument("claim", "the run had no privacy engine (hooks.attach(model, optimizer, "
                                               "privacy_engine)): give claim= an event")
            self._event.append(event_from_opacus(accountant))
        return self._event[0]

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        flat = np.asarray(data).reshape(-1)
        if flat.size != 1 or flat[0] not in (0, 1):
            raise InvalidArgument("data", f"data={data!r} must be [1] (the canary in) or [0] (out)")
        included = np.array([bool(flat[0])])
        seeds = rng.integers(0, 2**32, size=int(size), dtype=np.uint64)
        return np.array([run_one(self.target, included, int(s), i).scores[0] for i, s in enumerate(seeds)],
                        dtype=np.float64)
