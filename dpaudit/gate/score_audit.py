"""``[[score_audit]]`` gate entries: audit score files written by a team's training job.

```toml
[[score_audit]]
name = "dpsgd-canary"
scores = "runs/canary_scores.csv"   # relative to this TOML; .csv/.npy/.npz/.parquet (see dpaudit.auditor.score_files)
epsilon = 2.0                       # the claimed epsilon at delta, or instead:
# event = "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)"   # claimed epsilon = PLD accountant's at delta
delta = 1e-5
one_run = false                     # true: one run, one row per canary (Steinke et al. 2023)
# method = "fdp"                    # one run: also the f-DP test (Mahloujifar et al. 2024) of the event's whole
# mu = 1.0                          # curve, or of a claimed GDP mu (the entry fails if the curve is rejected)
confidence_level = 0.99             # default: [gate] confidence_level
score_column = "score"              # optional column names
label_column = "included"
timeout = 60
```
Many-run files hold one row per training run: its score and whether the canary was in it
(:func:`dpaudit.audit_scores`); one-run files one row per canary (:func:`dpaudit.audit_one_run`). The entry
fails (exit 1) when the certified epsilon lower bound exceeds the claimed epsilon.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .tables import CONFIDENCE, DELTA, EPSILON, Table, entry_event, entry_timeout

__all__ = ["ScoreAuditSpec", "parse_score_audit", "run_score_audit", "score_audit_row"]


@dataclass(frozen=True)
class ScoreAuditSpec:
    name: str
    scores: str  # the file, resolved against the config's directory
    epsilon: float
    delta: float
    one_run: bool
    confidence_level: float
    seed: int
    score_column: str
    label_column: str
    source: str  # the claim's origin: "epsilon" or the event text
    timeout: float | None = None
    method: str = "steinke"  # one run: "steinke" or "fdp"
    claim: Any = None  # method "fdp": the claimed curve (a GDP mu or the parsed event)
    sequential: bool = True  # [gate] sequential: certify on growing prefixes of the runs and stop early


def parse_score_audit(path: str, index: int, table: Any, settings: Any) -> ScoreAuditSpec:
    """Validate one [[score_audit]] table (errors name file, entry and key)."""
    entry = Table(path, "score_audit", index, table, {"name", "scores", "epsilon", "event", "delta", "one_run",
                                                         "confidence_level", "seed", "score_column", "label_column",
                                                         "timeout", "method", "mu"})
    name = entry.get("name", str)
    scores = entry.get("scores", str, check=lambda v: bool(v.strip()), rule="a file name")
    resolved = Path(scores) if Path(scores).is_absolute() else Path(path).parent / scores
    delta = entry.get("delta", float, 1e-5, **DELTA)
    if entry.has("epsilon") == entry.has("event"):
        raise entry.error("epsilon", "give exactly one of epsilon (the claimed epsilon at delta) or event (a privacy "
                                     "event whose PLD epsilon at delta is the claim)")
    if entry.has("epsilon"):
        epsilon, source = entry.get("epsilon", float, **EPSILON), "epsilon"
    else:
        from ..accountant import PLDAccountant
        from ..errors import DPAuditError

        text, event = entry.get("event", str), entry_event(entry)
        if delta <= 0:
            raise entry.error("delta", "must be > 0 with an event (a Gaussian event is never pure DP)")
        try:
            epsilon = float(PLDAccountant().compose(event).epsilon(delta))
        except DPAuditError as exc:
            raise entry.error("event", f"the PLD accountant cannot account for it: {exc}") from None
        source = text
    method = entry.get("method", str, "steinke", check=lambda v: v in ("steinke", "fdp"), rule='"steinke" or "fdp"')
    one_run = entry.get("one_run", bool, False)
    if method == "fdp" and not one_run:
        raise entry.error("method", '"fdp" audits one run: set one_run = true')
    claim: Any = None
    if entry.has("mu"):
        if method != "fdp":
            raise entry.error("mu", 'a claimed GDP mu is tested by method = "fdp"')
        claim = entry.get("mu", float, check=lambda v: 0 < v < float("inf"), rule="> 0 and finite")
    elif method == "fdp" and entry.has("event"):
        claim = event
    return ScoreAuditSpec(
        name=name, scores=str(resolved), epsilon=epsilon, delta=delta,
        one_run=one_run,
        confidence_level=entry.get("confidence_level", float, settings.confidence_level, **CONFIDENCE),
        seed=entry.get("seed", int, settings.seed, check=lambda v: v >= 0, rule=">= 0"),
        score_column=entry.get("score_column", str, "score"), label_column=entry.get("label_column", str, "included"),
        source=source, timeout=entry_timeout(entry, settings), method=method, claim=claim,
        sequential=getattr(settings, "sequential", True))


def run_score_audit(spec: ScoreAuditSpec, alpha: float | None = None) -> dict[str, Any]:
    """Read the file and audit it; ``alpha`` (if given) replaces 1 - confidence_level (the gate's split)."""
    from .training_audit import TrainingAuditSpec, run_training_audit

    if isinstance(spec, TrainingAuditSpec):  # [[training_audit]] rows are score-audit rows too
        return run_training_audit(spec, alpha)
    from ..auditor.score_files import read_score_file
    from ..auditor import audit_one_run, audit_scores
    from ..errors import InvalidArgument

    started = time.perf_counter()
    confidence = spec.confidence_level if alpha is None else 1.0 - alpha
    data = read_score_file(spec.scores, spec.score_column, spec.label_column)
    if spec.one_run:
        result = audit_one_run(data.scores, data.included, delta=spec.delta, confidence_level=confidence,
                               epsilon=spec.epsilon, seed=spec.seed, method=spec.method, claim=spec.claim)
    else:
        for part, what in ((data.scores_with, "with the canary (included = 1)"), (data.scores_without, "without it (included = 0)")):
            if part.size < 2:
                raise InvalidArgument("file", f"{spec.scores}: column {spec.label_column!r}: {part.size} runs {what}; "
                                              "at least 2 of each are needed")
        result = audit_scores(data.scores_with, data.scores_without, epsilon=spec.epsilon, delta=spec.delta,
                              confidence_level=confidence, seed=spec.seed)  # every score in the file
    return score_audit_row(spec, result, confidence, time.perf_counter() - started)


def score_audit_row(spec: ScoreAuditSpec, result: Any, confidence: float, seconds: float) -> dict[str, Any]:
    row = {"name": spec.name, "kind": "score_audit", "passed": not result.violated,
           "status": "FAILED" if result.violated else "PASSED", "file": spec.scores, "one_run": spec.one_run,
           "epsilon": spec.epsilon, "delta": spec.delta, "epsilon_lower": result.epsilon_lower,
           "mu_lower": getattr(result, "mu_lower", None), "violated": result.violated, "confidence_level": confidence,
           "runs": (result.canaries if spec.one_run else result.n_with + result.n_without), "method": result.method,
           "claim": spec.source, "seconds": seconds, "source": spec.scores}
    if getattr(result, "method_name", None) == "fdp":
        row.update(claim_rejected=result.claim_rejected, epsilon_steinke=result.epsilon_steinke)
    if getattr(result, "samples_used", None) is not None:  # runs (with, without) a sequential score audit used
        row.update({"samples_used": list(result.samples_used), "looks": result.looks, "stopped": result.stopped})
    return row
