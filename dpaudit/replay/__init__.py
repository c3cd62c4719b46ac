"""Gray-box record/replay: run a mechanism on adjacent inputs with identical randomness and compare the shift
that reaches its noise with what the claim allows, and whether its draws depend on the data.

Beside :mod:`dpaudit.training`, above the auditor: imports accountant, mechanisms, events, errors and
validation, never reporting, gate or cli.

Example:
    >>> import numpy as np
    >>> from dpaudit.replay import replay
    >>> def count(data, size, rng):
    ...     return np.sum(data) + rng.laplace(0.0, 1.0, size)
    >>> replay(count, [1, 0, 1], [1, 0], epsilon=1.0).verdict
    'pass'

``dpaudit.replay`` is this package and, called, :func:`replay`: ``dpaudit.replay(mechanism, d, d_prime,
epsilon=...)``.
"""

import sys
import types
from typing import Any

from .api import DEFAULT_SEEDS, replay, replay_pairs
from .pairs import generated_pairs
from .recording import Draw, Recorder, RecordingGenerator
from .result import DrawShift, PairReplay, ReplayResult
from .runs import UninstrumentableMechanism

__all__ = ["replay", "replay_pairs", "generated_pairs", "ReplayResult", "PairReplay", "DrawShift", "Draw", "Recorder",
           "RecordingGenerator", "UninstrumentableMechanism", "DEFAULT_SEEDS"]


class _CallableModule(types.ModuleType):
    """``dpaudit.replay(...)`` calls :func:`replay`: the package is also the contract's function."""

    def __call__(self, *args: Any, **kwargs: Any) -> ReplayResult:
        return replay(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
