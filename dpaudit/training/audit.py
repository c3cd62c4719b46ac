"""Training audits: canaries planted in real training runs, scored, and certified by the score audits.

:func:`audit_training` drives any :class:`~dpaudit.training.TrainingTarget` (the framework-neutral
protocol); :func:`audit_opacus` builds the target for an Opacus training (factories or the user's own
train function that calls ``make_private``). Two designs:

* many runs (``runs=R``): R independent runs, half with the canary and half without (runs alternate),
  certified by :func:`dpaudit.audit_scores` (assumption-free; Jagielski et al. 2020, Nasr et al. 2023);
* one run (``canaries=m``): one run with m canaries, each included independently with probability 1/2,
  certified by :func:`dpaudit.audit_one_run` (Steinke, Nasr & Jagielski 2023, Theorem 3.1).

Every result puts side by side: the claim (dpaudit's epsilon upper bound for the engine's history and
Opacus' own number, or the claim given), the audit's certified lower bound, the threat model of the
canary preset, and the sampling assumption the claim rests on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._validation import (
    check_delta,
    check_epsilon,
    check_nonnegative_int,
    check_positive,
    check_positive_int,
    check_probability,
)
from ..errors import InvalidArgument, InvalidArgumentType, MechanismError
from ..events import PrivacyEvent
from .canaries import PRESETS, Canaries, as_numpy, canary_seed_sequence, make_canaries
from .engine import SAMPLING_ASSUMPTION, claim_from_opacus, history_of
from .protocol import RunOutcome, TrainingTarget, draw_runs, many_run_masks, run_seed

__all__ = ["TrainingAuditResult", "audit_training", "audit_opacus", "opacus_target", "perfect_guess_epsilon",
           "split_false_alarm", "statistical_checks"]


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


@dataclass(frozen=True)
class TrainingAuditResult:
    """Outcome of a training audit.

    ``epsilon_lower`` (at ``delta``) is the certified lower bound (probability >= ``confidence_level``,
    rounded down) against the threat model ``threat_model``; ``epsilon_upper`` is the claimed upper bound
    it is compared with (the claim given, else dpaudit's accountant on the engine's history);
    ``epsilon_opacus`` is the engine's own number when there was an engine. ``violated``: epsilon_lower >
    epsilon_upper, i.e. the run is not as private as claimed (under the claim's ``sampling`` assumption,
    which :func:`~dpaudit.training.check_sampler` tests on the loader)."""

    epsilon_lower: float
    epsilon_upper: float
    epsilon_opacus: float | None
    delta: float
    violated: bool
    threat_model: str
    preset: str
    mode: str
    sampling: str
    claim_source: str
    confidence_level: float
    runs: int
    canaries: int
    mu_lower: float | None
    epsilon_ceiling: float
    claim: dict[str, Any] | None
    audit: dict[str, Any]
    seed: int
    seconds: float
    warnings: tuple[str, ...] = ()
    update_scale: Any = None  # UpdateScaleCheck of white-box audits (None for black-box presets)
    checks: tuple[Any, ...] = ()  # the witness's WitnessChecks (dpaudit.training.ledger), run first
    false_alarm_rate: float | None = None  # of ``flagged``, split evenly over the statistical checks

    @property
    def flagged(self) -> bool:
        """A privacy finding of any check: ``violated`` (epsilon_lower above the claim), the update-scale check
        (white-box presets) rejecting the declared noise, or a check of the witnessed run. A correct stack is
        flagged with probability at most ``false_alarm_rate``: deterministic witness checks cannot flag it,
        and the rate is split evenly over the statistical ones (the audit, the update-scale check and the
        witness's three)."""
        return bool(self.violated or (self.update_scale is not None and self.update_scale.violated)
                    or any(c.flagged for c in self.checks))

    @property
    def failed(self) -> tuple[str, ...]:
        """The names of the checks that flagged: ``audit`` (violated), ``update_scale`` and the witness's."""
        names = ["audit"] if self.violated else []
        if self.update_scale is not None and self.update_scale.violated:
            names.append("update_scale")
        return tuple(names + [c.name for c in self.checks if c.flagged])

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["flagged"] = self.flagged
        data["failed"] = list(self.failed)
        data["checks"] = [c.to_dict() for c in self.checks]
        data["update_scale"] = None if self.update_scale is None else self.update_scale.to_dict()
        data["bounds"] = {"epsilon_lower": "lower bound (certified)", "epsilon_upper": "upper bound (claimed)"}
        return _plain(data)

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        theirs = "" if self.epsilon_opacus is None else f", Opacus reports {self.epsilon_opacus:.4f}"
        lines = [f"training audit ({self.preset}, {self.mode}: {self.runs} run(s), {self.canaries} canary(ies)): {verdict}",
                 f"  certified epsilon >= {self.epsilon_lower:.4f} at delta {self.delta:g} (confidence "
                 f"{self.confidence_level:g}; ceiling {self.epsilon_ceiling:.3g})"
                 + (f", mu >= {self.mu_lower:.4f}" if self.mu_lower is not None else ""),
                 f"  claimed epsilon <= {self.epsilon_upper:.4f} ({self.claim_source}){theirs}",
                 f"  threat model: {self.threat_model}",
                 f"  sampling assumption: {self.sampling}"]
        if self.update_scale is not None:
            lines += ["  " + line for line in self.update_scale.summary().splitlines()]
        if self.checks:
            lines.append("  witnessed run (one run, no canaries):")
            lines += [f"    {c.line()}" for c in self.checks]
        if self.false_alarm_rate is not None:
            lines.append(f"  flagged: {'YES (' + ', '.join(self.failed) + ')' if self.flagged else 'no'} (false-alarm "
                         f"rate {self.false_alarm_rate:g})")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def statistical_checks(canary: str, witness: bool = True) -> int:
    """How many statistical checks a training audit runs: the audit, the update-scale check (white-box
    presets) and the witnessed run's (:data:`~dpaudit.training.ledger.STATISTICAL`)."""
    from .canaries import PRESETS
    from .ledger import STATISTICAL

    if canary not in PRESETS:
        raise InvalidArgument("canary", f"canary={canary!r} must be one of {sorted(PRESETS)}")
    return 1 + (1 if PRESETS[canary].white_box else 0) + (len(STATISTICAL) if witness else 0)


def split_false_alarm(canary: str, share: float, witness: bool = True) -> tuple[float, float]:
    """(confidence_level of the audit, false-alarm rate of each statistical check) for a training audit whose
    ``flagged`` must hold a false-alarm ``share``: the share split evenly over its statistical checks
    (:func:`statistical_checks`)."""
    share = check_probability(share, "share", low_open=True, high_open=True)
    part = share / statistical_checks(canary, witness)
    return 1.0 - part, part


def perfect_guess_epsilon(canaries: int, delta: float, confidence_level: float) -> float:
    """The largest one-run bound any attack can certify with ``canaries`` canaries at this confidence:
    every canary guessed, every guess right (audit_one_run's grid, same Bonferroni split)."""
    from ..auditor import audit_one_run

    m = check_positive_int(canaries, "canaries")
    included = np.arange(m) % 2 == 0
    return audit_one_run(included.astype(np.float64), included, delta=delta, confidence_level=confidence_level).epsilon_lower


# ------------------------------------------------------------------------------------------ the claim
def _claim(claim: Any, outcomes: list[RunOutcome], delta: float) -> tuple[float, float | None, str, dict | None, list[str]]:
    warnings: list[str] = []
    accountants = [o.accountant for o in outcomes if o.accountant is not None]
    if accountants:
        first = history_of(accountants[0])
        if any(history_of(a) != first for a in accountants[1:]):
            warnings.append("the engine's history differs between runs; the claim is read from the first run")
    if claim is None:
        if not accountants:
            raise InvalidArgument("claim", "no claim: the runs had no privacy engine (pass hooks.attach(model, "
                                           "optimizer, privacy_engine)) and no claim was given")
        engine = claim_from_opacus(accountants[0], delta)
        return engine.epsilon_upper, engine.epsilon_opacus, "engine history, dpaudit accountant", _plain(engine.to_dict()), warnings
    theirs = None
    details = None
    if accountants:
        engine = claim_from_opacus(accountants[0], delta)
        theirs, details = engine.epsilon_opacus, _plain(engine.to_dict())
    if isinstance(claim, PrivacyEvent):
        from ..accountant import epsilon_upper

        return float(epsilon_upper(claim, delta).epsilon), theirs, f"given event {claim!r}", details, warnings
    return check_epsilon(claim, "claim", allow_inf=True), theirs, "given epsilon", details, warnings


# ------------------------------------------------------------------------------------------ the driver
def audit_training(
    target: TrainingTarget,
    *,
    runs: int | None = None,
    claim: float | PrivacyEvent | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    seed: int = 0,
    workers: int = 1,
    scheduler: Any = None,
    check_seed: bool = True,
    false_alarm_rate: float | None = None,
    witness: bool | None = None,
) -> TrainingAuditResult:
    """Audit ``target``: many runs (``runs`` given, one canary) or one run (the target's m canaries).

    Args:
        target: the training stack, its base dataset and canaries (one canary for many runs).
        runs: number of independent runs (many-run design; at least 4). None: one run.
        claim: the claimed epsilon (or an event tree); None reads it from the runs' privacy engine.
        delta: where epsilon is compared.
        confidence_level: probability with which ``epsilon_lower`` holds.
        seed: the audit's seed (runs, canary inclusion, selection splits).
        workers: processes to train in (1: this process); ``scheduler``: a Dask address or client.
        check_seed: train the first run twice (and once more with another seed) and refuse a train function
            that is not reproducible from its seed or ignores it (the audit must be reproducible); the
            first of those runs is the audit's run 0.
        false_alarm_rate: of ``result.flagged`` (default ``1 - confidence_level``), split evenly over the
            statistical checks: the audit (certified at ``max(confidence_level, 1 - share)``), the update-scale
            check of white-box audits (:func:`~dpaudit.training.update_scale.check_update_scale`: is the noise
            as declared and independent of the realised batch size?) and the witness's three.
        witness: first train once without canaries under :func:`~dpaudit.training.witness_run` (its checks in
            ``result.checks``; a deterministic finding spends no false-alarm rate). Default: for targets
            with Opacus' hooks (``make_hooks`` None).
    """
    from ..auditor import audit_one_run, audit_scores

    started = time.perf_counter()
    if not isinstance(target, TrainingTarget):
        raise InvalidArgumentType("target", f"target={target!r} must be a TrainingTarget")
    delta = check_delta(delta, "delta")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    workers = check_positive_int(workers, "workers")
    alpha = 1.0 - confidence_level if false_alarm_rate is None else check_probability(
        false_alarm_rate, "false_alarm_rate", low_open=True, high_open=True)
    witnessed = target.make_hooks is None if witness is None else bool(witness)
    from .ledger import STATISTICAL

    share = alpha / statistical_checks(target.canaries.preset.name, witnessed)
    confidence_level = max(confidence_level, 1.0 - share)
    m = len(target.canaries)
    if runs is not None:
        runs = check_positive_int(runs, "runs")
        if runs < 4:
            raise InvalidArgument("runs", f"runs={runs} must be >= 4 (half with the canary, half without)")
        if m != 1:
            raise InvalidArgument("canaries", f"a many-run audit plants one canary, the target has {m}")
        masks = many_run_masks(runs)
        outcomes_mask = None
    else:
        if m < 2:
            raise InvalidArgument("canaries", "a one-run audit needs at least 2 canaries (each in with probability 1/2)")
        masks = [np.random.default_rng(canary_seed_sequence(seed, 1)).random(m) < 0.5]
        outcomes_mask = masks[0]
    checks, witness_notes = _witness(target, claim, delta, share * len(STATISTICAL), seed) if witnessed else ((), [])
    if check_seed:
        checked = _check_seed(target, masks[0], run_seed(seed, 0))  # run 0 itself, trained twice
        outcomes = [checked] + (draw_runs(target, seed, len(masks) - 1, outcomes_mask, workers=workers,
                                          scheduler=scheduler, first=1) if len(masks) > 1 else [])
    else:
        outcomes = draw_runs(target, seed, len(masks), outcomes_mask, workers=workers, scheduler=scheduler)
    epsilon_upper, theirs, source, details, warnings = _claim(claim, outcomes, delta)
    warnings = witness_notes + warnings
    preset = target.canaries.preset
    if preset.white_box:
        planted = sum(o.canary_rows_seen for o, mask in zip(outcomes, masks) if mask.any())
        if planted == 0:
            raise MechanismError("no canary reached a training batch in any run: does the loader iterate the dataset "
                                 "it was given (make_data_loader(dataset)) and the model see the inputs unchanged?")
    update_scale = _update_scale(outcomes, share, seed) if preset.white_box else None
    if update_scale is not None and update_scale.violated:
        warnings.append(f"the update-scale check flags the stack (p = {update_scale.p_value:.3g}): the released updates' "
                        f"noise is not the declared sigma C after the declared divisor, or depends on the realised batch "
                        f"size (measured noise scale {update_scale.noise_scale:.4f} of the declared)")
    if runs is not None:
        scores = np.array([o.scores[0] for o in outcomes])
        inside = np.array([bool(mask[0]) for mask in masks])
        # the runs are all trained already: certify on every one (a sequential audit would stop early for
        # futility with a weaker bound and save nothing)
        inner = audit_scores(scores[inside], scores[~inside], epsilon=epsilon_upper, delta=delta,
                             confidence_level=confidence_level, seed=seed, sequential=False)
        mode, mu_lower = "many_runs", inner.mu_lower
        warnings.extend(inner.warnings)
    else:
        inner = audit_one_run(outcomes[0].scores, masks[0], delta=delta, confidence_level=confidence_level,
                              epsilon=epsilon_upper, seed=seed)
        mode, mu_lower = "one_run", None
    return TrainingAuditResult(
        epsilon_lower=float(inner.epsilon_lower), epsilon_upper=float(epsilon_upper), epsilon_opacus=theirs,
        delta=delta, violated=bool(inner.epsilon_lower > epsilon_upper), threat_model=preset.threat_model,
        preset=preset.name, mode=mode, sampling=SAMPLING_ASSUMPTION, claim_source=source,
        confidence_level=confidence_level, runs=len(outcomes), canaries=m, mu_lower=mu_lower,
        epsilon_ceiling=float(inner.epsilon_ceiling), claim=details, audit=inner.to_dict(), seed=seed,
        seconds=time.perf_counter() - started, warnings=tuple(warnings), update_scale=update_scale, checks=tuple(checks),
        false_alarm_rate=alpha)


def _witness(target: TrainingTarget, claim: Any, delta: float, rate: float, seed: int) -> tuple[tuple[Any, ...], list[str]]:
    """The witness's checks of one run without canaries (its own seed, spawned from the audit's), and its
    warnings; ghost clipping, which no hook can witness, is a warning instead."""
    from .ledger import witness_run
    from .ledger.recorder import GHOST_CLIPPING

    import torch

    run = int(np.random.SeedSequence(seed, spawn_key=(43,)).generate_state(1)[0])
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the audit's own runs (protocol.run_one)
    try:
        result = witness_run(target.train, dataset=target.dataset, seed=run, claim=claim, delta=delta,
                             false_alarm_rate=rate)
    except InvalidArgument as exc:
        if GHOST_CLIPPING not in str(exc):
            raise
        return (), [f"the run was not witnessed: {GHOST_CLIPPING}"]
    finally:
        torch.set_num_threads(threads)
    return result.checks, [f"witnessed run: {w}" for w in result.warnings]


def _update_scale(outcomes: list[RunOutcome], alpha: float, seed: int) -> Any:
    """The update-scale check over every observed step of every run (None when no step had pure noise)."""
    from .update_scale import check_update_scale

    steps = [o.update_steps for o in outcomes if o.update_steps is not None and len(o.update_steps)]
    table = np.concatenate(steps) if steps else np.zeros((0, 3))
    if not np.any(table[:, 1] > 0):
        return None
    return check_update_scale(table, alpha, seed)


def _check_seed(target: TrainingTarget, mask: np.ndarray, seed: int) -> RunOutcome:
    """Run 0 trained twice with its seed (must agree) and once with another (must differ); returns run 0."""
    from .protocol import run_one

    first = run_one(target, mask, seed, 0)
    again = run_one(target, mask, seed, 0).scores
    if not np.array_equal(first.scores, again):
        raise InvalidArgument("train", "the train function is not reproducible from its seed (two runs with seed "
                                       f"{seed} scored {first.scores[:3]} and {again[:3]}): seed every source of "
                                       "randomness from the seed argument (torch.manual_seed(seed), the loader's generator)")
    other = run_one(target, mask, seed + 1, 0).scores
    if np.array_equal(first.scores, other):
        raise InvalidArgument("train", "the train function ignores its seed (seeds differing gave identical runs): "
                                       "draw the run's randomness from the seed argument")
    return first


# ------------------------------------------------------------------------------------------ Opacus
def _base_sample(dataset: Any, limit: int = 256) -> tuple[np.ndarray, np.ndarray]:
    from .record_ids import is_iterable_style

    if is_iterable_style(dataset):
        raise InvalidArgumentType("dataset", "dataset is iterable-style, so canaries cannot be added to it: give a "
                                             "map-style dataset (dataset[i] -> (input, label), with a length; e.g. "
                                             "torch.utils.data.TensorDataset), or a TrainingTarget with your own "
                                             "add_canaries(dataset, inputs, labels)")
    try:
        size = len(dataset)
    except TypeError:
        raise InvalidArgumentType("dataset", "dataset must be a map-style dataset with a length (dataset[i] -> "
                                             "(input, label))") from None
    if size == 0:
        raise InvalidArgument("dataset", "dataset is empty")
    items = [dataset[i] for i in range(min(size, limit))]
    try:
        inputs = np.stack([as_numpy(x) for x, _ in items])
        labels = np.array([as_numpy(y) for _, y in items])
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType("dataset", f"dataset[i] must be an (input, label) pair of tensors ({exc})") from None
    return inputs, labels


def opacus_target(
    train: Callable[[Any, int, Any], Any] | None = None,
    *,
    dataset: Any,
    make_model: Callable[[], Any] | None = None,
    make_optimizer: Callable[[Any], Any] | None = None,
    make_data_loader: Callable[[Any], Any] | None = None,
    noise_multiplier: float | None = None,
    max_grad_norm: float | None = None,
    epochs: int = 1,
    poisson_sampling: bool = True,
    canary: str = "dirac_gradient",
    canaries: int = 1,
    num_classes: int | None = None,
    gradient_norm_factor: float = 1.0,
    seed: int = 0,
) -> TrainingTarget:
    """The :class:`TrainingTarget` :func:`audit_opacus` audits: ``train`` (or an
    :class:`~dpaudit.training.OpacusTraining` from the factories), ``dataset`` and ``canaries`` canaries of
    preset ``canary`` shaped like the dataset (their inputs and coordinates from ``seed``). Arguments as for
    :func:`audit_opacus`; feed it to :func:`audit_training` or :class:`~dpaudit.training.TrainingMechanism`."""
    if train is None:
        from .opacus_training import OpacusTraining

        missing = [name for name, value in (("make_model", make_model), ("make_optimizer", make_optimizer),
                                            ("make_data_loader", make_data_loader),
                                            ("noise_multiplier", noise_multiplier), ("max_grad_norm", max_grad_norm))
                   if value is None]
        if missing:
            raise InvalidArgument(missing[0], f"without a train function, {', '.join(missing)} must be given")
        train = OpacusTraining(make_model, make_optimizer, make_data_loader, noise_multiplier=noise_multiplier,
                               max_grad_norm=max_grad_norm, epochs=epochs, poisson_sampling=poisson_sampling)
    elif not callable(train):
        raise InvalidArgumentType("train", f"train={train!r} must be callable: train(dataset, seed, hooks) -> model")
    from ._torch import require_opacus

    require_opacus()
    gradient_norm_factor = check_positive(gradient_norm_factor, "gradient_norm_factor")
    inputs, labels = _base_sample(dataset)
    if num_classes is None:
        if not np.issubdtype(labels.dtype, np.integer):
            raise InvalidArgument("num_classes", "labels are not integers: give num_classes")
        num_classes = max(2, int(labels.max()) + 1)
    num_classes = check_positive_int(num_classes, "num_classes")
    planted = make_canaries(canary, check_positive_int(canaries, "canaries"), inputs, labels, num_classes,
                            check_nonnegative_int(seed, "seed"), gradient_norm_factor)
    return TrainingTarget(train=train, dataset=dataset, canaries=planted)


def audit_opacus(
    train: Callable[[Any, int, Any], Any] | None = None,
    *,
    dataset: Any,
    make_model: Callable[[], Any] | None = None,
    make_optimizer: Callable[[Any], Any] | None = None,
    make_data_loader: Callable[[Any], Any] | None = None,
    noise_multiplier: float | None = None,
    max_grad_norm: float | None = None,
    epochs: int = 1,
    poisson_sampling: bool = True,
    canary: str = "dirac_gradient",
    runs: int | None = None,
    canaries: int | None = None,
    num_classes: int | None = None,
    gradient_norm_factor: float = 1.0,
    claim: float | PrivacyEvent | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    seed: int = 0,
    workers: int = 1,
    scheduler: Any = None,
    check_seed: bool = True,
    false_alarm_rate: float | None = None,
    witness: bool = True,
) -> TrainingAuditResult:
    """Audit an Opacus training: witness one run, plant canaries, train, score, certify an epsilon lower bound.

    Give either ``train`` (your ``train(dataset, seed, hooks) -> model`` that calls
    ``hooks.attach(model, optimizer, privacy_engine)`` after ``make_private``) or the factories
    ``make_model``, ``make_optimizer``, ``make_data_loader`` with ``noise_multiplier``, ``max_grad_norm``,
    ``epochs`` and ``poisson_sampling`` (see :class:`~dpaudit.training.OpacusTraining`).

    Args:
        dataset: the training data, a map-style torch dataset of (input, label) pairs (canaries are shaped
            like its inputs and added to it in each run).
        canary: "dirac_gradient" (white-box, the tight one), "mislabelled" or "out_of_distribution"
            (black-box); the result's ``threat_model`` states what each assumes.
        runs: many-run audit with this many runs (half with one canary). ``canaries``: one-run audit with
            this many canaries (each in with probability 1/2). Exactly one of them.
        num_classes: the model's output width (default: from the dataset's labels).
        gradient_norm_factor: the Dirac canary's gradient norm in units of the clipping norm (1: the tight
            canary; above 1 probes whether clipping really happens).
        claim: the claimed epsilon (or event tree); None reads the claim from the engine's history.
        delta, confidence_level, seed, workers, scheduler, check_seed, false_alarm_rate, witness: as in
            :func:`audit_training` (the witnessed run comes first; ``false_alarm_rate``, default
            ``1 - confidence_level``, is that of ``flagged``).

    Returns:
        TrainingAuditResult: ``epsilon_lower``, ``epsilon_upper``, ``epsilon_opacus``, ``violated``,
        ``threat_model``, ``checks``, ``flagged``, ``to_dict()``.
    """
    if (runs is None) == (canaries is None):
        raise InvalidArgument("runs", "give exactly one of runs= (many runs, one canary) or canaries= (one run)")
    target = opacus_target(train, dataset=dataset, make_model=make_model, make_optimizer=make_optimizer,
                           make_data_loader=make_data_loader, noise_multiplier=noise_multiplier,
                           max_grad_norm=max_grad_norm, epochs=epochs, poisson_sampling=poisson_sampling, canary=canary,
                           canaries=1 if runs is not None else canaries, num_classes=num_classes,
                           gradient_norm_factor=gradient_norm_factor, seed=seed)
    return audit_training(target, runs=runs, claim=claim, delta=delta, confidence_level=confidence_level, seed=seed,
                          workers=workers, scheduler=scheduler, check_seed=check_seed, false_alarm_rate=false_alarm_rate,
                          witness=witness)



