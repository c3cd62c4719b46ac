"""``[[training_audit]]`` gate entries: train the team's real training stack with canaries and audit it.

```toml
[[training_audit]]
name = "opacus-mlp"
train = "stack:train"            # train(dataset, seed, hooks) -> model, calling hooks.attach(model, optimizer, engine)
dataset = "stack:dataset"        # a map-style dataset of (input, label), or a function returning one
canary = "dirac_gradient"        # or "mislabelled", "out_of_distribution"
canaries = 500                   # one run with 500 canaries; or runs = 200 (many runs, one canary)
# epsilon = 2.0                  # the claim; omit it to read the claim from the run's PrivacyEngine
delta = 1e-5
confidence_level = 0.99          # default: [gate] confidence_level (or the gate's false-alarm split)
gradient_norm_factor = 1.0       # Dirac canary gradient norm, in clipping norms
workers = 1                      # processes training runs
timeout = 600
```
The entry first witnesses one run without canaries (:func:`dpaudit.training.witness_run`: which records are
read and when, how often each is in a step, the noisy steps against the claim's, any update no noisy step
made, each example's clipped norm, the noise's level and independence). It fails (exit 1) when a witness
check flags, when the certified epsilon lower bound exceeds the claim or, with the white-box preset, when
the update-scale check rejects the declared noise (the released updates' noise is not sigma C after the
declared divisor, or depends on the realised batch size). The entry's false-alarm share is split evenly
over the statistical checks (the audit, the update-scale check, the witness's three); a deterministic
witness finding spends none. Its row names the checks that failed (``failed``) and lists every check
(``checks``). A training stack that
cannot run (torch or opacus missing, a model Opacus refuses, canaries that do not fit) is an entry that
could not be completed (exit 3). Its row joins the score-audit rows of every report format (it is scored
the same way), with ``entry = "training_audit"``, the train function as its source, the threat model and
the claim beside the bound.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from typing import Any

from .tables import CONFIDENCE, DELTA, EPSILON, POSITIVE_INT, Table, entry_timeout

__all__ = ["TrainingAuditSpec", "parse_training_audit", "run_training_audit"]

_KEYS = {"name", "train", "dataset", "canary", "runs", "canaries", "epsilon", "delta", "confidence_level", "seed",
         "gradient_norm_factor", "num_classes", "workers", "timeout"}


_NOTES = ("Secure RNG turned off", "Full backward hook is firing", "Optimal order is the")


@dataclass(frozen=True)
class TrainingAuditSpec:
    name: str
    train: str  # "module:function", resolved against the config's directory when run
    dataset: str
    base: str  # the config's directory
    canary: str
    runs: int | None
    canaries: int | None
    epsilon: float | None  # None: the claim is read from the engine
    delta: float
    confidence_level: float
    seed: int
    gradient_norm_factor: float
    num_classes: int | None
    workers: int
    timeout: float | None = None

    @property
    def scores(self) -> str:  # what the score-audit rows call their source
        return self.train

    @property
    def one_run(self) -> bool:
        return self.runs is None


def parse_training_audit(path: str, index: int, table: Any, settings: Any) -> TrainingAuditSpec:
    """Validate one [[training_audit]] table (errors name file, entry and key; nothing is imported yet)."""
    from pathlib import Path


    entry = Table(path, "training_audit", index, table, _KEYS)
    name = entry.get("name", str)
    train = entry.get("train", str, check=lambda v: v.count(":") == 1, rule="'package.module:function'")
    dataset = entry.get("dataset", str, check=lambda v: v.count(":") == 1, rule="'package.module:attribute'")
    from ..training import PRESETS

    canary = entry.get("canary", str, "dirac_gradient", check=lambda v: v in PRESETS, rule=f"one of {sorted(PRESETS)}")
    if entry.has("runs") == entry.has("canaries"):
        raise entry.error("runs", "give exactly one of runs (many runs, one canary) or canaries (one run, m canaries)")
    runs = entry.get("runs", int, None, check=lambda v: v >= 4, rule=">= 4")
    canaries = entry.get("canaries", int, None, check=lambda v: v >= 2, rule=">= 2")
    return TrainingAuditSpec(
        name=name, train=train, dataset=dataset, base=str(Path(path).parent), canary=canary, runs=runs, canaries=canaries,
        epsilon=entry.get("epsilon", float, None, **EPSILON), delta=entry.get("delta", float, 1e-5, **DELTA),
        confidence_level=entry.get("confidence_level", float, settings.confidence_level, **CONFIDENCE),
        seed=entry.get("seed", int, settings.seed, check=lambda v: v >= 0, rule=">= 0"),
        gradient_norm_factor=entry.get("gradient_norm_factor", float, 1.0, check=lambda v: 0 < v < float("inf"),
                                       rule="> 0 and finite"),
        num_classes=entry.get("num_classes", int, None, check=lambda v: v >= 2, rule=">= 2"),
        workers=entry.get("workers", int, 1, **POSITIVE_INT), timeout=entry_timeout(entry, settings))


def run_training_audit(spec: TrainingAuditSpec, alpha: float | None = None) -> dict[str, Any]:
    """Import the stack, train with canaries, audit; ``alpha`` (if given) replaces 1 - confidence_level."""
    from .._loading import load_object
    from ..training import audit_opacus

    started = time.perf_counter()
    share = 1.0 - spec.confidence_level if alpha is None else alpha
    train = load_object(spec.train, "train", spec.base)
    dataset = load_object(spec.dataset, "dataset", spec.base)
    if callable(dataset) and not hasattr(dataset, "__getitem__"):
        dataset = dataset()
    with warnings.catch_warnings():  # Opacus' and torch's advice notes would drown the gate's one-line report
        for note in _NOTES:
            warnings.filterwarnings("ignore", message=note)
        result = audit_opacus(train, dataset=dataset, canary=spec.canary, runs=spec.runs, canaries=spec.canaries,
                              num_classes=spec.num_classes, gradient_norm_factor=spec.gradient_norm_factor,
                              claim=spec.epsilon, delta=spec.delta, confidence_level=1.0 - share, seed=spec.seed,
                              workers=spec.workers, false_alarm_rate=share)
    opacus = "" if result.epsilon_opacus is None else f"; Opacus reports {result.epsilon_opacus:.4g}"
    scale = result.update_scale
    return {"name": spec.name, "kind": "score_audit", "entry": "training_audit", "passed": not result.flagged,
            "status": "FAILED" if result.flagged else "PASSED", "file": spec.train, "one_run": spec.one_run,
            "epsilon": result.epsilon_upper, "delta": spec.delta, "epsilon_lower": result.epsilon_lower,
            "mu_lower": result.mu_lower, "violated": result.violated, "confidence_level": result.confidence_level,
            "runs": result.canaries if spec.one_run else result.runs,
            "method": f"{result.preset} canaries, {result.mode}: {result.audit.get('method', '')}",
            "claim": f"{result.claim_source}{opacus}", "threat_model": result.threat_model, "sampling": result.sampling,
            "epsilon_opacus": result.epsilon_opacus, "seconds": time.perf_counter() - started, "source": spec.train,
            "update_scale": None if scale is None else ("FLAGGED" if scale.violated else "as declared")
            + f" (p = {scale.p_value:.3g}, noise scale {scale.noise_scale:.4f} of the declared)",
            "failed": list(result.failed), "checks": [check.to_dict() for check in result.checks],
            "warnings": list(result.warnings)}
