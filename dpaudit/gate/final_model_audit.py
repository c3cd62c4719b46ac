"""The ``final_model`` preset of ``[[training_audit]]`` gate entries: what the released model alone reveals.

```toml
[[training_audit]]
name = "digits-final-model"
preset = "final_model"
train = "stack:train"            # a BatchedMLPTraining, or train(dataset, seed, hooks) -> model calling hooks.initialise(model)
dataset = "stack:dataset"        # (inputs, labels) arrays, a map-style dataset, or a function returning one
make_model = "stack:make_model"  # the train function's model (pre-training, the canary's label); not for BatchedMLPTraining
runs = 200                       # half with the canary
canary = "blank"                 # or "clipbkd", "crafted_gradient" (BatchedMLPTraining: the upper reference)
initialisation = "pretrained"    # worst case (pre-trained on the public split); or "random"
public_fraction = 0.5
pretrain_epochs = 5
# epsilon = 2.0                  # the claim; omitted: the stack's event or the runs' PrivacyEngine
delta = 1e-5
```
The entry fails (exit 1) when the certified epsilon lower bound exceeds the claim or a certified point of the
runs' trade-off curve lies below the claimed curve (:func:`dpaudit.training.audit_final_model`); its row
joins the score-audit rows, with the GDP figure (labelled: it assumes a Gaussian trade-off) and the
last-iterate heuristic (not a bound) beside the bound.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .tables import CONFIDENCE, DELTA, EPSILON, POSITIVE_INT, Table, entry_timeout

__all__ = ["FinalModelAuditSpec", "FINAL_MODEL_KEYS", "parse_final_model_audit", "run_final_model_audit"]

#: Keys only the final-model preset takes (the plain entry rejects them).
FINAL_MODEL_KEYS = {"preset", "initialisation", "public_fraction", "pretrain_epochs", "make_model"}
_KEYS = {"name", "train", "dataset", "canary", "runs", "epsilon", "delta", "confidence_level", "seed", "workers",
         "timeout"} | FINAL_MODEL_KEYS


@dataclass(frozen=True)
class FinalModelAuditSpec:
    """A [[training_audit]] entry with preset = "final_model" (a score-audit row, like the plain entries)."""

    name: str
    train: str  # "module:attribute", resolved against the config's directory when run
    dataset: str
    base: str  # the config's directory
    canary: str
    runs: int
    epsilon: float | None  # None: the stack's event or the runs' engine
    delta: float
    confidence_level: float
    seed: int
    workers: int
    timeout: float | None
    initialisation: str = "pretrained"
    public_fraction: float = 0.5
    pretrain_epochs: int = 5
    make_model: str | None = None
    preset: str = "final_model"

    @property
    def scores(self) -> str:  # what the score-audit rows call their source
        return self.train

    @property
    def one_run(self) -> bool:
        return False


def reject_final_model_keys(entry: Table) -> None:
    """A plain [[training_audit]] entry using a key of the final-model preset: say which preset it needs."""
    for key in sorted(FINAL_MODEL_KEYS):
        if entry.has(key):
            rule = "'final_model' (the only preset)" if key == "preset" else "given only with preset = 'final_model'"
            raise entry.error(key, f"is {rule}")


def parse_final_model_audit(path: str, index: int, table: Any, settings: Any) -> FinalModelAuditSpec:
    """Validate one [[training_audit]] table with preset = "final_model" (nothing is imported yet)."""
    from pathlib import Path

    from ..training.final_canaries import FINAL_CANARIES
    from ..training.final_model import INITIALISATIONS

    entry = Table(path, "training_audit", index, table, _KEYS)
    entry.get("preset", str, check=lambda v: v == "final_model", rule="'final_model'")
    spec = lambda v: v.count(":") == 1  # noqa: E731
    return FinalModelAuditSpec(
        name=entry.get("name", str), train=entry.get("train", str, check=spec, rule="'package.module:attribute'"),
        dataset=entry.get("dataset", str, check=spec, rule="'package.module:attribute'"), base=str(Path(path).parent),
        canary=entry.get("canary", str, "blank", check=lambda v: v in FINAL_CANARIES, rule=f"one of {sorted(FINAL_CANARIES)}"),
        runs=entry.get("runs", int, check=lambda v: v >= 8, rule=">= 8"),
        epsilon=entry.get("epsilon", float, None, **EPSILON), delta=entry.get("delta", float, 1e-5, **DELTA),
        confidence_level=entry.get("confidence_level", float, settings.confidence_level, **CONFIDENCE),
        seed=entry.get("seed", int, settings.seed, check=lambda v: v >= 0, rule=">= 0"), workers=entry.get("workers", int, 1, **POSITIVE_INT), timeout=entry_timeout(entry, settings),
        initialisation=entry.get("initialisation", str, "pretrained", check=lambda v: v in INITIALISATIONS,
                                 rule=f"one of {list(INITIALISATIONS)}"),
        public_fraction=entry.get("public_fraction", float, 0.5, check=lambda v: 0 < v < 1, rule="in (0, 1)"),
        pretrain_epochs=entry.get("pretrain_epochs", int, 5, check=lambda v: v >= 0, rule=">= 0"),
        make_model=entry.get("make_model", str, None, check=spec, rule="'package.module:attribute'"))


def run_final_model_audit(spec: FinalModelAuditSpec, alpha: float | None = None) -> dict[str, Any]:
    """Import the stack, train the runs, audit the final models; ``alpha`` replaces 1 - confidence_level."""
    from .._loading import load_object
    from ..training import audit_final_model

    started = time.perf_counter()
    confidence = spec.confidence_level if alpha is None else 1.0 - alpha
    train = load_object(spec.train, "train", spec.base)
    dataset = load_object(spec.dataset, "dataset", spec.base)
    if callable(dataset) and not hasattr(dataset, "__getitem__"):
        dataset = dataset()
    make_model = None if spec.make_model is None else load_object(spec.make_model, "make_model", spec.base)
    result = audit_final_model(train, dataset=dataset, runs=spec.runs, seed=spec.seed, claim=spec.epsilon,
                               canary=spec.canary, initialisation=spec.initialisation,
                               public_fraction=spec.public_fraction, pretrain_epochs=spec.pretrain_epochs,
                               make_model=make_model, delta=spec.delta, confidence_level=confidence,
                               workers=spec.workers)
    heuristic = ("" if result.epsilon_last_iterate is None
                 else f"; last-iterate heuristic {result.epsilon_last_iterate:.4g} (not a bound)")
    return {"name": spec.name, "kind": "score_audit", "entry": "training_audit", "preset": "final_model",
            "passed": not result.flagged, "status": "FAILED" if result.flagged else "PASSED", "file": spec.train,
            "one_run": False, "epsilon": result.epsilon_claim, "delta": spec.delta,
            "epsilon_lower": result.epsilon_lower, "mu_lower": result.mu_lower,
            "epsilon_gdp": result.epsilon_gdp, "epsilon_gdp_note": "assumes a Gaussian trade-off curve",
            "epsilon_last_iterate": result.epsilon_last_iterate, "violated": result.violated,
            "curve_violated": result.curve_violated, "confidence_level": confidence, "runs": result.runs,
            "method": f"{result.canary['kind']} canary, {result.initialisation['kind']} initialisation, final model "
                      f"only: {result.audit.get('method', '')}",
            "claim": f"{result.claim}{heuristic}", "threat_model": result.threat_model,
            "seconds": time.perf_counter() - started, "source": spec.train}
