""":func:`witness_run`: one training run, no canaries, every parameter of its claim witnessed by the ledgers."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..._validation import check_delta, check_nonnegative_int, check_probability
from ...errors import DPAuditError, InvalidArgumentType, MechanismError
from ...events import PrivacyEvent
from ..protocol import looks_like_a_shape_error
from .checks import WitnessCheck, ledger_limits, witness_checks
from .claim import claimed_run
from .dataset import shape_probes_unlogged, wrap_dataset
from .recorder import WitnessHooks

__all__ = ["WitnessResult", "witness_run", "OUT_OF_REACH"]

OUT_OF_REACH = ("what no run can show: two records of one person (the ledger sees records, not people), and copies "
                "of a record put into the data before it reaches the train function (jittered or not), beyond what "
                "the read counts show")


@dataclass(frozen=True)
class WitnessResult:
    """Outcome of :func:`witness_run`.

    ``checks``: every :class:`~dpaudit.training.ledger.checks.WitnessCheck` (name, family, flagged, statistic,
    p-value or None for a deterministic check, a sentence). ``flagged``: some check flagged; for a correct
    stack its probability is at most ``false_alarm_rate`` (deterministic checks cannot flag a correct stack;
    the rate is split evenly over the statistical ones). ``claim``: what the run was held to;
    ``warnings``: among them a given claim below the engine's own figure."""

    checks: tuple[WitnessCheck, ...]
    false_alarm_rate: float
    claim: dict[str, Any]
    warnings: tuple[str, ...]
    records: int
    noisy_steps: int
    seed: int
    seconds: float
    check_seconds: float = 0.0  # of ``seconds``: reading the claim and the checks, after the run
    out_of_reach: str = OUT_OF_REACH

    @property
    def flagged(self) -> bool:
        return any(c.flagged for c in self.checks)

    @property
    def failed(self) -> tuple[str, ...]:
        """The names of the checks that flagged."""
        return tuple(c.name for c in self.checks if c.flagged)

    def check(self, name: str) -> WitnessCheck:
        """The check called ``name``."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {"flagged": self.flagged, "failed": list(self.failed), "false_alarm_rate": self.false_alarm_rate,
                "checks": [c.to_dict() for c in self.checks], "claim": self.claim, "warnings": list(self.warnings),
                "records": self.records, "noisy_steps": self.noisy_steps, "seed": self.seed, "seconds": self.seconds,
                "check_seconds": self.check_seconds,
                "out_of_reach": self.out_of_reach}

    def summary(self) -> str:
        verdict = f"FLAGGED ({', '.join(self.failed)})" if self.flagged else "every check passes"
        lines = [f"witnessed run: {verdict}; {self.noisy_steps} noisy steps over {self.records} records, claim: "
                 f"{self.claim['source']} (false-alarm rate {self.false_alarm_rate:g})"]
        lines += [f"  {c.line()}" for c in self.checks]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def witness_run(train: Callable[[Any, int, Any], Any], *, dataset: Any, seed: int = 0,
                claim: float | PrivacyEvent | None = None, delta: float = 1e-5,
                false_alarm_rate: float = 0.05) -> WitnessResult:
    """Train once with the ledgers attached and check every parameter of the claim against the run.

    Args:
        train: ``train(dataset, seed, hooks) -> model``, calling ``hooks.attach(model, optimizer,
            privacy_engine)`` right after ``make_private`` (the third argument may be a bare Opacus accountant).
        dataset: the private data, map-style (``dataset[i]``, ``len``); the train function receives it in
            the ledger's wrapper and must read it through ``dataset[i]`` (a DataLoader does). Reads in
            DataLoader worker processes (``num_workers > 0``) are counted, not placed: after attach they leave
            the data checks of the steps not tested, with a warning (use ``num_workers=0``).
        seed: handed to ``train``; also seeds the Monte Carlo sampling tests.
        claim: None (the engine's accountant history), an event tree, or an epsilon at ``delta``.
        delta: where an epsilon claim holds.
        false_alarm_rate: the probability that a correct stack is flagged (split over the statistical checks).

    Returns:
        :class:`WitnessResult` with ``flagged``, ``checks`` and ``to_dict()``.

    Raises:
        InvalidArgumentType: an iterable-style dataset, a claim that is neither a number nor an event tree, a
            model or optimizer that is not make_private's.
        InvalidArgument: ghost clipping (its per-example gradients never exist), no claim at all.
        MechanismError: the train function failed, or never called ``hooks.attach``.
    """
    started = time.perf_counter()
    if not callable(train):
        raise InvalidArgumentType("train", f"train={train!r} must be callable: train(dataset, seed, hooks) -> model")
    seed = check_nonnegative_int(seed, "seed")
    delta = check_delta(delta, "delta")
    alpha = check_probability(false_alarm_rate, "false_alarm_rate", low_open=True, high_open=True)
    if claim is not None and not isinstance(claim, PrivacyEvent) and (isinstance(claim, bool) or not isinstance(claim, (int, float))):
        raise InvalidArgumentType("claim", f"claim={claim!r} must be None (the engine's), an epsilon (a number > 0) or "
                                           "a dpaudit event tree")
    from .._torch import require_opacus

    require_opacus()
    ledger = wrap_dataset(dataset)
    hooks = WitnessHooks(ledger)
    hooks.start()
    try:
        with shape_probes_unlogged(ledger):
            model = train(ledger, seed, hooks)
    except DPAuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's training code failed: say so, with its error
        hint = " (do the model and the data fit?)" if looks_like_a_shape_error(exc) else ""
        raise MechanismError(f"the witnessed training run (seed {seed}) failed: {type(exc).__name__}: {exc}{hint}") from exc
    finally:
        hooks.stop()
    if not hooks.attached:
        raise MechanismError("the train function never called hooks.attach(model, optimizer, privacy_engine): no noisy "
                             "step, clip or read can be filed, so nothing of the claim can be witnessed")
    hooks.finish(model)
    trained = time.perf_counter()
    claimed = claimed_run(claim, hooks.accountant, delta)
    checks = witness_checks(hooks, claimed, len(ledger), alpha, seed)
    return WitnessResult(checks=tuple(checks), false_alarm_rate=alpha, claim=claimed.to_dict(),
                         warnings=claimed.warnings + ledger_limits(hooks), records=len(ledger), noisy_steps=len(hooks.step_batches), seed=seed,
                         seconds=time.perf_counter() - started, check_seconds=time.perf_counter() - trained)

