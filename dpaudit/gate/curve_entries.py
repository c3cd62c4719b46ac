"""Gate audits of the whole privacy curve (``audit_curve``): rows, baselines and regressions.

An ``[[audit]]`` entry audits the curve when it has a claim (``claim = ...``, else the mechanism's
``.event``) and one pair, unless ``curve = false``. Its row carries the contract's fields
(``epsilon_lower`` at the claimed delta, ``violated`` = a certified trade-off point lies below the claimed
curve) plus ``mu_lower`` and the worst point.

Regression. The baseline records the worst point's test and its certification counts. The new run
re-certifies that same test on fresh samples and takes the lower confidence bound of its GDP separation
mu = Phi^-1(1 - alpha) - Phi^-1(beta); the baseline counts give an upper confidence bound on the same
quantity for the old mechanism (Clopper-Pearson lower bounds on alpha and beta). A new lower bound above
the old upper bound means the test separates the inputs significantly better than before: a regression,
even when no point is below the claim.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..stats import clopper_pearson_lower
from .config import AuditSpec
from .seeds import entry_seed

__all__ = ["curve_entry", "baseline_mu_upper"]


def sequential_fields(result: Any) -> dict[str, Any]:
    """How much of its budget an audit drew: samples per input used, looks made, why it stopped."""
    return {"samples_used": result.samples_used, "looks": result.looks, "stopped": result.stopped}


def baseline_mu_upper(record: dict[str, Any], alpha: float) -> float:
    """Upper confidence bound (level 1 - alpha) on the baseline test's mu = Phi^-1(1 - a) - Phi^-1(b),
    from its certification counts; inf when a count was zero (no upper bound)."""
    from scipy.stats import norm

    n = int(record["certification_samples"])
    a_low = float(clopper_pearson_lower(int(record["count_alpha"]), n, alpha / 2.0))
    b_low = float(clopper_pearson_lower(int(record["count_beta"]), n, alpha / 2.0))
    if a_low <= 0.0 or b_low <= 0.0:
        return math.inf
    return float(norm.isf(a_low) - norm.ppf(b_low))


def _run(spec: AuditSpec, alpha: float, seed: int, workers: int | None, **extra: Any) -> Any:
    from ..auditor import audit_curve

    d, d_prime = spec.pairs[0]
    extra.setdefault("sequential", spec.sequential)
    extra.setdefault("stop_for_futility", extra["sequential"])  # the gate reads the verdict only
    return audit_curve(spec.mechanism, d, d_prime, claim=spec.claim, samples=spec.samples, confidence_level=1.0 - alpha,
                       seed=seed, delta=spec.delta, workers=workers, scheduler=False, **extra)


def _regression(spec: AuditSpec, record: dict[str, Any] | None, alpha: float, seed: int, workers: int | None) -> dict[str, Any]:
    if record is None:
        return {"status": "no baseline entry"}
    if record.get("mode") != "curve" or not record.get("witness") or "count_alpha" not in record:
        return {"status": "baseline has no curve test for this entry (it was a point audit)"}
    upper = baseline_mu_upper(record, alpha / 2.0)
    if not math.isfinite(upper):
        return {"status": "baseline test too extreme to compare", "baseline_upper": upper}
    again = _run(spec, alpha / 2.0, entry_seed(seed, spec.name + "/regression"), workers, witness=record["witness"],
                 sequential=False)  # compared with the baseline's upper bound, not the claim: the whole budget
    now = max((point.mu_bound for point in again.points), default=0.0)
    regressed = now > upper
    return {"status": "REGRESSION" if regressed else "ok", "regressed": regressed,
            "event": again.worst.event if again.worst else None, "mu_lower_now": now, "baseline_mu_upper": upper}


def curve_entry(spec: AuditSpec, share: float, alpha: float, entry_seed: int, seed: int, workers: int | None,
                record: dict[str, Any] | None, with_baseline: bool) -> tuple[dict[str, Any], Any]:
    """Run one curve-audit entry; returns its row and the result (for the report's figure)."""

    result = _run(spec, share, entry_seed, workers)
    regression = _regression(spec, record, share, seed, workers) if with_baseline else None
    regressed = bool(regression and regression.get("regressed"))
    worst = result.worst
    pair = spec.pairs[0]
    row = {
        "name": spec.name, "mode": "curve", "epsilon": spec.epsilon, "delta": result.delta,
        "epsilon_lower": result.epsilon_lower, "violated": result.violated,
        "event": worst.event if worst else "none (the outputs did not separate the inputs)",
        "samples": spec.samples, "confidence_level": result.confidence_level, "seconds": result.seconds,
        "passed": not result.violated and not regressed, "regression": regression, "source": spec.source,
        "claim": result.claim, "mu_lower": result.mu_lower, "mu_ceiling": result.mu_ceiling,
        "epsilon_gaussian_assumption": result.epsilon_gaussian_assumption, "points": len(result.points),
        "ceiling": result.mu_ceiling, "direction": worst.direction if worst else None,
        "count_alpha": worst.count_alpha if worst else None, "count_beta": worst.count_beta if worst else None,
        "alpha_upper": worst.alpha_upper if worst else None, "beta_upper": worst.beta_upper if worst else None,
        "claimed_beta": worst.claimed_beta if worst else None,
        "certification_samples": result.certification_samples, "witness": result.witness,
        "pair": [np.asarray(pair[0]).tolist(), np.asarray(pair[1]).tolist()], "false_alarm_share": alpha,
        "warnings": list(result.warnings),
        **sequential_fields(result),
    }
    return row, result
