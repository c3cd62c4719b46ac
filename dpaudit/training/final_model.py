"""Final-model (black-box) audits of DP training: what an adversary who sees only the released model can prove.

:func:`audit_final_model` trains many models, half with one canary and half without (runs alternate), from
the same initial parameters: by default pre-trained non-privately on a public split of the data (the
worst-case initialisation of Annamalai & De Cristofaro, NeurIPS 2024, which makes the data's gradients small
so the canary's clipped gradient dominates), or each run's random initialisation (the average case). Each
final model gets one score (minus the canary's loss, or the user's), and the scores are certified by the
existing statistics:

* :func:`dpaudit.audit_scores`: thresholds chosen on a seeded selection split of the runs and certified on
  the rest (Clopper-Pearson, Bonferroni), so ``epsilon_lower`` (no assumption) and ``mu_lower`` hold at the
  stated confidence. ``epsilon_gdp`` is the epsilon at delta of mu_lower-GDP: it **assumes a Gaussian
  trade-off curve** (as Annamalai et al. and jax_privacy's ``epsilon_from_gdp`` report), and is labelled so.
  Unlike the published estimator, the threshold is never chosen on the scores it is certified on.
* :func:`dpaudit.auditor.score_curve.audit_score_curve`: the claim's whole trade-off curve tested on the same
  split; a certified point below the claimed curve is a violation with no Gaussian assumption (a claim
  made for twice the noise is caught this way).

The error 1 - confidence_level is shared (Bonferroni) between the two: every number and the verdict hold
together. Beside them: the claim's epsilon (an upper bound) and the last-iterate heuristic
(:func:`dpaudit.accountant.last_iterate_epsilon`, Steinke et al. ICLR 2025; a heuristic, never a bound),
the threat model ("final model only"), the canary and the initialisation.

Runs go through dpaudit's backends (this process, a process pool or Dask), one task per run (a train
function) or per fixed chunk of runs (:class:`~dpaudit.training.BatchedMLPTraining`); each run's seed is child
``index`` of the audit's seed sequence (:func:`~dpaudit.training.protocol.run_seed`), so results do not depend
on where runs execute.

With ``witness=True`` every run of a train function is trained under the training ledger
(:func:`~dpaudit.training.witness_run`: reads, steps, clipping, noise against the claim) and the very model it
witnessed is the one scored: the result lists the runs the ledger flagged (``witness``), ``flagged`` is true
if any, and the error is split evenly between the audit and the ledger (each run's ledger at its share over
the runs), so ``flagged`` still holds the stated false-alarm rate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._json import json_ready
from .._validation import (
    check_choice,
    check_flag,
    check_delta,
    check_epsilon,
    check_nonnegative_int,
    check_positive_int,
    check_probability,
)
from ..errors import InvalidArgument, InvalidArgumentType
from ..events import PrivacyEvent
from .final_canaries import FINAL_CANARIES, FINAL_MODEL_THREAT, FinalCanary, make_final_canary
from .final_model_stacks import as_stack, event_parameters
from .protocol import run_seed

__all__ = ["audit_final_model", "FinalModelAuditResult", "INITIALISATIONS", "GDP_LABEL"]

INITIALISATIONS = ("pretrained", "random")
GDP_LABEL = "assumes a Gaussian trade-off curve (mu_lower-GDP read at delta): not assumption-free"
_HEURISTIC = "last-iterate heuristic (Steinke et al. ICLR 2025): a heuristic target, not a bound"


@dataclass(frozen=True)
class FinalModelAuditResult:
    """Outcome of :func:`audit_final_model`.

    Lower bounds (rounded down, holding together with the curve verdict at ``confidence_level``):
    ``epsilon_lower`` at ``delta`` (no assumption) and ``mu_lower``; ``epsilon_gdp`` is mu_lower's epsilon at
    delta *assuming a Gaussian trade-off curve*. ``epsilon_claim``: the claim's epsilon (an upper bound).
    ``epsilon_last_iterate``: the last-iterate heuristic (not a bound). ``violated``: epsilon_lower >
    epsilon_claim, or a certified point of the runs' trade-off curve lies below the claimed curve.
    """

    epsilon_lower: float
    mu_lower: float
    epsilon_gdp: float
    delta: float
    epsilon_claim: float | None
    claim: str | None
    epsilon_last_iterate: float | None
    violated: bool
    curve_violated: bool
    threat_model: str
    canary: dict
    initialisation: dict
    runs: int
    confidence_level: float
    epsilon_ceiling: float
    mu_ceiling: float
    audit: dict
    curve: dict | None
    witness: dict | None
    seed: int
    seconds: float
    seconds_per_model: float
    warnings: tuple[str, ...] = ()
    scores_with: tuple[float, ...] = ()  # each run's score, in run order (re-certify or plot them)
    scores_without: tuple[float, ...] = ()

    @property
    def flagged(self) -> bool:
        """A finding: the claim violated, or a run the training ledger flagged."""
        return bool(self.violated or (self.witness is not None and self.witness.get("flagged_runs")))

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["flagged"] = self.flagged
        data["bounds"] = {"epsilon_lower": "lower bound (certified, no assumption)",
                          "mu_lower": "lower bound (certified, no assumption)",
                          "epsilon_gdp": GDP_LABEL,
                          "epsilon_claim": "upper bound (claimed)",
                          "epsilon_last_iterate": _HEURISTIC}
        return json_ready(data)

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        lines = [f"final-model audit ({self.runs} runs, {self.canary['kind']} canary, "
                 f"{self.initialisation['kind']} initialisation): {verdict}",
                 f"  certified epsilon >= {self.epsilon_lower:.4f} at delta {self.delta:g}, mu >= {self.mu_lower:.4f} "
                 f"(confidence {self.confidence_level:g}; ceilings {self.epsilon_ceiling:.3g} / {self.mu_ceiling:.3g})",
                 f"  assuming a Gaussian trade-off curve: epsilon >= {self.epsilon_gdp:.4f} (not assumption-free)"]
        if self.epsilon_claim is not None:
            lines.append(f"  claimed epsilon <= {self.epsilon_claim:.4f} ({self.claim})")
            if self.curve_violated:
                lines.append("  a certified point of the runs' trade-off curve lies below the claimed curve")
        if self.epsilon_last_iterate is not None:
            lines.append(f"  last-iterate heuristic epsilon {self.epsilon_last_iterate:.4f} (a heuristic, not a bound)")
        lines.append(f"  threat model: {self.threat_model}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ data
def _as_arrays(data: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(inputs float32, labels int64) from (inputs, labels) arrays or a map-style dataset of pairs."""
    from .canaries import as_numpy

    if isinstance(data, tuple) and len(data) == 2:
        inputs, labels = as_numpy(data[0]), as_numpy(data[1])
    else:
        try:
            size = len(data)
            items = [data[i] for i in range(size)]
            inputs = np.stack([as_numpy(x) for x, _ in items])
            labels = np.array([as_numpy(y) for _, y in items])
        except (TypeError, ValueError, IndexError) as exc:
            raise InvalidArgumentType(name, f"{name} must be (inputs, labels) arrays or a map-style dataset of (input, "
                                            f"label) pairs ({exc})") from None
    inputs, labels = np.asarray(inputs), np.asarray(labels).reshape(-1)
    if inputs.ndim < 2 or inputs.shape[0] != labels.shape[0] or labels.size == 0:
        raise InvalidArgument(name, f"{name}: {inputs.shape[0] if inputs.ndim else 0} inputs and {labels.size} labels; "
                                    "need one label per input, at least one record")
    if not np.issubdtype(labels.dtype, np.integer):
        if np.issubdtype(labels.dtype, np.floating) and np.all(labels == np.round(labels)):
            labels = labels.astype(np.int64)
        else:
            raise InvalidArgument(name, f"{name}: labels must be class indices (integers)")
    inputs = inputs.astype(np.float32)
    if not np.isfinite(inputs).all():
        raise InvalidArgument(name, f"{name}: inputs must be finite")
    return inputs, labels.astype(np.int64)


def _split(inputs: np.ndarray, labels: np.ndarray, public: Any, public_fraction: float, seed: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, str]:
    """(private x, y, public x, y, description): the public split given (checked disjoint from the private
    data) or a seeded ``public_fraction`` of the data kept out of the private set."""
    if public is not None:
        px, py = _as_arrays(public, "public")
        if px.shape[1:] != inputs.shape[1:]:
            raise InvalidArgument("public", f"public inputs have shape {px.shape[1:]}, the dataset's {inputs.shape[1:]}")
        private_rows = {row.tobytes(): i for i, row in enumerate(inputs.reshape(len(inputs), -1))}
        shared = [(i, private_rows[row.tobytes()]) for i, row in enumerate(px.reshape(len(px), -1))
                  if row.tobytes() in private_rows]
        if shared:
            i, j = shared[0]
            raise InvalidArgument("public", f"{len(shared)} public records also appear in the private dataset (first: "
                                            f"public[{i}] = dataset[{j}]): the public split must be disjoint from the "
                                            "data trained on privately")
        return inputs, labels, px, py, f"given public split of {len(py)} records"
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(43,)))
    order = rng.permutation(len(labels))
    cut = int(round(public_fraction * len(labels)))
    if cut < 1 or cut >= len(labels):
        raise InvalidArgument("public_fraction", f"public_fraction={public_fraction} leaves {cut} public and "
                                                 f"{len(labels) - cut} private records: both must be >= 1")
    pub, priv = np.sort(order[:cut]), np.sort(order[cut:])
    return (inputs[priv], labels[priv], inputs[pub], labels[pub],
            f"{cut} of {len(labels)} records kept out of the private set (seeded split)")


def _user_canary(canary: tuple, inputs: np.ndarray, classes: int | None) -> FinalCanary:
    from .canaries import as_numpy

    if len(canary) != 2:
        raise InvalidArgument("canary", "a canary of your own is an (input, label) pair")
    x = np.asarray(as_numpy(canary[0]), dtype=np.float32)
    if x.shape != inputs.shape[1:]:
        raise InvalidArgument("canary", f"the canary input has shape {x.shape}, the dataset's inputs {inputs.shape[1:]}")
    label = canary[1]
    if isinstance(label, bool) or not isinstance(label, (int, np.integer)) or label < 0 or (
            classes is not None and label >= classes):
        raise InvalidArgument("canary", f"the canary label {label!r} must be a class index in [0, {classes})")
    return FinalCanary("given", f"{FINAL_MODEL_THREAT}: the adversary inserts the given record and sees only the "
                                "released model's loss on it", x, int(label), None, "given by the caller")


def _resolve_claim(claim: Any, stack: Any, engines: list, delta: float) -> tuple[float | None, Any, str | None]:
    """(the claim's epsilon at delta, what the curve audit tests, its description)."""
    from ..accountant import epsilon_upper
    from ..guarantee import Guarantee

    if claim is None:
        event = getattr(stack, "event", None)
        engine = next((e for e in engines if e is not None), None)
        if event is None and engine is not None:
            from .engine import event_from_opacus

            event = event_from_opacus(engine)
        if event is None:
            return None, None, None
        claim = event
    if isinstance(claim, PrivacyEvent):
        return float(epsilon_upper(claim, delta).epsilon), claim, repr(claim)
    eps = check_epsilon(claim, "claim", allow_inf=True)
    if math.isinf(eps):
        return eps, None, "epsilon = inf"
    return eps, Guarantee(eps, delta), f"({eps:g}, {delta:g})-DP"


# ------------------------------------------------------------------------------------------ runs
@dataclass(frozen=True)
class _FinalRunsTask:
    """Runs ``[chunk * size, (chunk + 1) * size)`` of an audit (even runs with the canary): their scores and engines."""

    stack: Any
    inputs: np.ndarray
    labels: np.ndarray
    canary: FinalCanary
    initial: Any
    seed: int
    runs: int
    size: int

    def __call__(self, chunk: int) -> tuple[np.ndarray, list, list]:
        indices = range(chunk * self.size, min(self.runs, (chunk + 1) * self.size))
        seeds = [run_seed(self.seed, i) for i in indices]
        included = np.array([i % 2 == 0 for i in indices])
        return self.stack.train_and_score(self.inputs, self.labels, self.canary, included, seeds, self.initial)


def _map(task: _FinalRunsTask, chunks: int, workers: int, scheduler: Any) -> list:
    from ..auditor import DaskBackend, ProcessBackend, SerialBackend, resolve_scheduler

    address = resolve_scheduler(scheduler)
    if address is not None:
        from .protocol import _require_one_thread_per_worker

        with DaskBackend(address, blocks_per_task=1) as dask:  # one task per run (per chunk of batched runs)
            _require_one_thread_per_worker(dask.client)  # runs seed torch's process-wide generator
            return dask.map(task, list(range(chunks)))
    if workers > 1 and chunks > 1:
        backend: Any = ProcessBackend(workers)
    else:
        backend = SerialBackend()
    with backend:
        return backend.map(task, list(range(chunks)))


def _check_seed(stack: Any, inputs: np.ndarray, labels: np.ndarray, canary: FinalCanary, initial: Any, seed: int) -> None:
    """Run 0 trained twice from its seed (must agree) and once from another (must differ)."""
    s0 = run_seed(seed, 0)
    scores = stack.train_and_score(inputs, labels, canary, np.array([True, True, True]), [s0, s0, s0 + 1], initial)[0]
    if scores[0] != scores[1]:
        raise InvalidArgument("train", f"the train function is not reproducible from its seed (two runs with seed {s0} "
                                       f"scored {scores[0]!r} and {scores[1]!r}): draw every source of randomness from "
                                       "the seed argument (torch.manual_seed(seed), the loader's generator)")
    if scores[0] == scores[2]:
        raise InvalidArgument("train", "the train function ignores its seed (runs with different seeds gave identical "
                                       "models): draw the run's randomness from the seed argument")


# ------------------------------------------------------------------------------------------ the audit
def audit_final_model(
    train: Any,
    *,
    dataset: Any,
    runs: int,
    seed: int = 0,
    claim: float | PrivacyEvent | None = None,
    canary: str | tuple = "blank",
    initialisation: str = "pretrained",
    public: Any = None,
    public_fraction: float = 0.5,
    pretrain_epochs: int = 5,
    make_model: Any = None,
    score: Any = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    selection_fraction: float = 0.2,
    curve_share: float = 0.5,
    workers: int = 1,
    scheduler: Any = None,
    check_seed: bool = True,
    witness: bool = False,
) -> FinalModelAuditResult:
    """Certify what the final model alone reveals about one canary, from ``runs`` trainings (module docstring).

    Args:
        train: a :class:`~dpaudit.training.BatchedMLPTraining` (many small MLPs at once), or your
            ``train(dataset, seed, hooks) -> model`` (a torch TensorDataset of the private data, plus the canary
            in the even runs) calling ``hooks.initialise(model)`` before training and, with Opacus,
            ``hooks.attach(model, optimizer, privacy_engine)``.
        dataset: (inputs, labels) arrays or a map-style dataset of (input, label) pairs.
        runs: trainings (even ones with the canary); at least 8.
        seed: the audit's seed (runs, split, canary coordinate).
        claim: the claimed epsilon at ``delta`` or a privacy event; None: the stack's event (BatchedMLPTraining)
            or the runs' privacy engine; with none, nothing is compared.
        canary: "blank", "clipbkd", "crafted_gradient" (BatchedMLPTraining only; the upper reference) or your own
            (input, label) pair.
        initialisation: "pretrained" (worst case: ``make_model`` / the MLP trained ``pretrain_epochs`` epochs on
            the public data, the same in every run) or "random" (each run's own random initialisation).
        public: the public data (inputs, labels), disjoint from ``dataset``; None: a seeded ``public_fraction``
            of ``dataset`` is kept out of the private set (used for the pre-training and to craft the canary).
        make_model: builds the train function's model (for the pre-training and the canary's label).
        score: ``score(model, canary_input, canary_label) -> float``, higher = the canary more likely in;
            default minus the canary's cross-entropy loss.
        delta, confidence_level: where epsilon is read, and the probability all bounds hold together.
        selection_fraction: share of the runs of each side used to choose thresholds (held out of the
            certification).
        curve_share: share of the error given to the claim's curve test (the rest to the bounds).
        workers, scheduler: train in worker processes or on a Dask cluster (same numbers).
        check_seed: first train run 0 twice and with another seed, and refuse a train function that is not
            reproducible from its seed or ignores it.
        witness: train every run under the training ledger (Opacus train functions; module docstring).

    Returns:
        FinalModelAuditResult: ``epsilon_lower``, ``mu_lower``, ``epsilon_gdp`` (labelled), ``violated``,
        ``threat_model``, ``to_dict()``.
    """
    from ..accountant.curves import gdp_epsilon_lower
    from ..auditor import audit_scores
    from ..auditor.score_curve import audit_score_curve
    from ._torch import require_torch

    started = time.perf_counter()
    require_torch()
    runs = check_positive_int(runs, "runs")
    if runs < 8:
        raise InvalidArgument("runs", f"runs={runs} must be >= 8 (half with the canary, each side split into "
                                      "selection and certification)")
    seed = check_nonnegative_int(seed, "seed")
    initialisation = check_choice(initialisation, "initialisation", INITIALISATIONS)
    public_fraction = check_probability(public_fraction, "public_fraction", low_open=True, high_open=True)
    pretrain_epochs = check_nonnegative_int(pretrain_epochs, "pretrain_epochs")
    delta = check_delta(delta, "delta")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    selection_fraction = check_probability(selection_fraction, "selection_fraction", low_open=True, high_open=True)
    curve_share = check_probability(curve_share, "curve_share", low_open=True, high_open=True)
    workers = check_positive_int(workers, "workers")
    witness = check_flag(witness, "witness")
    check_seed = check_flag(check_seed, "check_seed")
    if claim is not None and not isinstance(claim, PrivacyEvent):
        check_epsilon(claim, "claim", allow_inf=True)
    if not (isinstance(canary, str) or isinstance(canary, tuple)):
        raise InvalidArgumentType("canary", f"canary={canary!r} must be one of {sorted(FINAL_CANARIES)} or an "
                                            "(input, label) pair")
    error = 1.0 - confidence_level
    audit_error = error / 2.0 if witness else error  # the rest: the ledger, split over the runs
    stack = as_stack(train, make_model, score, (error - audit_error) / runs if witness else None, claim)
    inputs, labels = _as_arrays(dataset, "dataset")
    x_priv, y_priv, x_pub, y_pub, public_how = _split(inputs, labels, public, public_fraction, seed)

    initial = None
    if initialisation == "pretrained":
        initial = stack.pretrain(x_pub, y_pub, epochs=pretrain_epochs, seed=seed)
    init_how = ({"kind": "pretrained", "public": public_how, "epochs": pretrain_epochs,
                 "note": "worst case: the same pre-trained parameters in every run"} if initial is not None else
                {"kind": "random", "public": public_how, "note": "average case: each run's own random initialisation"})

    if isinstance(canary, tuple):
        classes = getattr(getattr(stack, "trainer", None), "layers", (None,))[-1]
        planted = _user_canary(canary, inputs, classes)
        if classes is None:
            probabilities = stack.initial_proba(initial, planted.input[None], seed)
            if planted.label >= np.asarray(probabilities).shape[-1]:
                raise InvalidArgument("canary", f"the canary label {planted.label} does not fit the model's "
                                                f"{np.asarray(probabilities).shape[-1]} outputs")
    else:
        name = check_choice(canary, "canary", tuple(FINAL_CANARIES))
        coordinate = stack.crafted_coordinate(seed) if name == "crafted_gradient" else None
        planted = make_final_canary(name, x_pub, lambda x: stack.initial_proba(initial, x, seed), coordinate=coordinate)

    if check_seed:
        _check_seed(stack, x_priv, y_priv, planted, initial, seed)
    size = stack.runs_per_task
    chunks = -(-runs // size)
    trained = _map(_FinalRunsTask(stack, x_priv, y_priv, planted, initial, seed, runs, size), chunks, workers, scheduler)
    scores = np.concatenate([np.asarray(s, dtype=np.float64) for s, _, _ in trained])
    engines = [e for _, chunk, _ in trained for e in chunk]
    verdicts = [v for _, _, chunk in trained for v in chunk]
    bad = ~np.isfinite(scores)
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument("score", f"run {index} (seed {run_seed(seed, index)}) scored {scores[index]!r}: scores "
                                       "must be finite (a diverged training or a score function returning nan/inf)")
    inside = np.arange(runs) % 2 == 0

    epsilon_claim, curve_claim, claim_text = _resolve_claim(claim, stack, engines, delta)
    bounds_error = audit_error * (1.0 - curve_share) if curve_claim is not None else audit_error
    inner = audit_scores(scores[inside], scores[~inside], epsilon=epsilon_claim, delta=delta,
                         confidence_level=1.0 - bounds_error, seed=seed, selection_fraction=selection_fraction,
                         sequential=False)
    curve = None
    if curve_claim is not None:
        curve = audit_score_curve(scores[inside], scores[~inside], curve_claim, delta=delta,
                                  confidence_level=1.0 - audit_error * curve_share, seed=seed,
                                  selection_fraction=selection_fraction)
    warnings = list(inner.warnings)
    heuristic = None
    parameters = event_parameters(curve_claim if isinstance(curve_claim, PrivacyEvent) else getattr(stack, "event", None))
    if parameters is not None and delta > 0:
        from ..accountant import last_iterate_epsilon

        sigma, q, steps = parameters
        heuristic = last_iterate_epsilon(noise_multiplier=sigma, sampling_probability=q, steps=steps, delta=delta)
    if epsilon_claim is None:
        warnings.append("no claim (no claim given, no privacy engine in the runs): nothing was compared")
    if heuristic is not None and inner.epsilon_lower > heuristic:
        warnings.append(f"the certified epsilon {inner.epsilon_lower:.4f} exceeds the last-iterate heuristic "
                        f"{heuristic:.4f}: the training leaks more than DP-SGD with linear losses would")

    ledger = None
    if witness:
        flagged_runs = [i for i, v in enumerate(verdicts) if v is not None and v["flagged"]]
        ledger = {"checked_runs": runs, "flagged_runs": flagged_runs,
                  "failed": {str(i): verdicts[i]["failed"] for i in flagged_runs},
                  "false_alarm_rate_per_run": (error - audit_error) / runs}
        if flagged_runs:
            warnings.append(f"the training ledger flagged {len(flagged_runs)} of {runs} runs (first: run {flagged_runs[0]}, "
                            f"{', '.join(verdicts[flagged_runs[0]]['failed'])}): the runs audited are not the training "
                            "claimed")
    curve_violated = bool(curve is not None and curve.violated)
    violated = bool((epsilon_claim is not None and inner.epsilon_lower > epsilon_claim) or curve_violated)
    seconds = time.perf_counter() - started
    return FinalModelAuditResult(
        epsilon_lower=float(inner.epsilon_lower), mu_lower=float(inner.mu_lower),
        epsilon_gdp=float(gdp_epsilon_lower(inner.mu_lower, delta)) if inner.mu_lower > 0 else 0.0, delta=delta,
        epsilon_claim=epsilon_claim, claim=claim_text, epsilon_last_iterate=heuristic, violated=violated,
        curve_violated=curve_violated, threat_model=planted.threat_model,
        canary={"kind": planted.kind, **planted.to_dict()}, initialisation=init_how, runs=runs,
        confidence_level=confidence_level, epsilon_ceiling=float(inner.epsilon_ceiling),
        mu_ceiling=float(inner.mu_ceiling), audit=inner.to_dict(), curve=None if curve is None else curve.to_dict(),
        witness=ledger, seed=seed, seconds=seconds, seconds_per_model=seconds / (runs + (3 if check_seed else 0)),
        warnings=tuple(warnings), scores_with=tuple(scores[inside].tolist()),
        scores_without=tuple(scores[~inside].tolist()))

