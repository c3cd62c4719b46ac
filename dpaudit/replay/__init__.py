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
"""

from .api import DEFAULT_SEEDS, replay, replay_pairs
from .pairs import generated_pairs
from .recording import Draw, Recorder, RecordingGenerator
from .result import DrawShift, PairReplay, ReplayResult
from .runs import UninstrumentableMechanism

__all__ = ["replay", "replay_pairs", "generated_pairs", "ReplayResult", "PairReplay", "DrawShift", "Draw", "Recorder",
           "RecordingGenerator", "UninstrumentableMechanism", "DEFAULT_SEEDS"]
