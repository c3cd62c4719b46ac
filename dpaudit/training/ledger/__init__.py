"""The ledgers of a witnessed training run: every parameter of a DP-SGD claim checked against one run.

:func:`witness_run` trains once (no canaries) with the user's ``train(dataset, seed, hooks)``; the dataset it
hands over logs every record read (:mod:`.dataset`), the hooks file every read, clip, noisy step and
parameter change (:mod:`.recorder`), the claim is read as per-step noise and sampling (:mod:`.claim`), and
the checks (:mod:`.checks`) test each parameter: which records were read and when, how often each was in a
step, how many noisy steps changed the model and whether anything else did, each example's clipped norm,
and the noise's level and independence.

Reuse: ``witness_run(train, dataset=..., seed=..., claim=None, delta=1e-5, false_alarm_rate=0.05)`` is the
one entry point; its :class:`WitnessResult` has ``flagged``, ``failed`` (the names), ``checks`` (each a
:class:`WitnessCheck` with ``name``, ``family``, ``flagged``, ``statistic``, ``expected``, ``p_value`` (None:
deterministic), ``false_alarm_rate``, ``tested``, ``sentence``), ``check(name)``, ``warnings``, ``claim``,
``summary()`` and ``to_dict()``. Callers holding a false-alarm budget pass their share as
``false_alarm_rate`` (it is split evenly over :data:`STATISTICAL`; deterministic checks spend none).
"""

from .checks import STATISTICAL, WitnessCheck
from .witness import OUT_OF_REACH, WitnessResult, witness_run

__all__ = ["witness_run", "WitnessResult", "WitnessCheck", "STATISTICAL", "OUT_OF_REACH"]
