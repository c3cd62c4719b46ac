"""One vocabulary for a gate run's entries in every CI-facing report (JUnit XML, HTML, step summary).

Each entry of a :class:`dpaudit.gate.GateResult` becomes an :class:`Entry` with a status:
``"passed"``, ``"failed"`` (a privacy, accuracy or budget finding), ``"error"`` (the entry could not be
completed) or ``"skipped"`` (an accuracy theorem that does not apply), a one-line ``verdict`` and the
detail lines (numbers, witness, counts) a reviewer needs to judge it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .replay_rows import replay_verdict
from .text import format_number

__all__ = ["Entry", "entries", "KIND_TITLES"]

KIND_TITLES = {"audit": "Audits", "accuracy": "Accuracy theorems", "budget": "Budgets", "score_audit": "Score audits (training runs)",
               "replay": "Record/replay"}


@dataclass(frozen=True)
class Entry:
    kind: str  # "audit", "accuracy" or "budget"
    name: str
    status: str  # "passed", "failed", "error" or "skipped"
    verdict: str  # one line: the numbers and the verdict
    details: tuple[str, ...]  # further lines: witness, counts, regression, warnings, error
    seconds: float
    row: dict[str, Any]


def _n(value: Any, digits: int = 4) -> str:
    return format_number(value, digits)


def _audit(row: dict[str, Any]) -> tuple[str, str, list[str]]:
    regression = row.get("regression") or {}
    state = "VIOLATED" if row["violated"] else ("REGRESSION" if not row["passed"] else "pass")
    verdict = (f"{state}: epsilon >= {_n(row['epsilon_lower'])} certified with confidence {row['confidence_level']:.6g} "
               f"(claimed epsilon {row['epsilon']:g}, delta {row['delta']:g})")
    if row.get("mode") == "curve":  # a trade-off curve audit: the certified point against the claimed curve
        details = [f"curve audit against {row.get('claim')}: mu >= {_n(row.get('mu_lower'))} (Gaussian DP; mu ceiling "
                   f"{_n(row.get('mu_ceiling'), 3)})",
                   f"worst test: {row['event']} [{row.get('direction', '-')}]: alpha <= {_n(row.get('alpha_upper'))}, "
                   f"beta <= {_n(row.get('beta_upper'))} vs claimed beta {_n(row.get('claimed_beta'))}",
                   f"counts: {row.get('count_alpha')} (type I) and {row.get('count_beta')} (type II) of "
                   f"{row.get('certification_samples')} certification samples per input"]
        if row.get("epsilon_gaussian_assumption") is not None:
            details.append(f"assuming a Gaussian trade-off curve (not assumption-free): epsilon ~ "
                           f"{_n(row['epsilon_gaussian_assumption'])} at delta {row['delta']:g}")
    else:
        details = [f"witness event: {row['event']} [{row.get('direction', '-')}]",
                   f"counts: {row.get('count_p')} (numerator) and {row.get('count_q')} (denominator) of "
                   f"{row.get('certification_samples')} certification samples "
                   f"{'of both inputs (a pooled pair)' if row.get('direction') == 'both, pooled' else 'per input'}; "
                   f"ceiling {_n(row.get('ceiling'), 3)}"]
    if row.get("samples_used") is not None:
        details.append(f"samples used: {row['samples_used']} of {row.get('samples')} per input ({row.get('looks')} look(s), "
                       f"stopped: {row.get('stopped')})")
    if row.get("pair") is not None:
        details.append(f"pair: d = {row['pair'][0]}, d_prime = {row['pair'][1]}")
    if regression.get("status"):
        text = f"baseline: {regression['status']}"
        if "epsilon_lower_now" in regression and "baseline_upper" in regression:
            text += f" (now >= {_n(regression['epsilon_lower_now'])} vs baseline <= {_n(regression['baseline_upper'])})"
        details.append(text)
    if row.get("support_proof"):
        details.append("the witness outputs can never occur under the other input (exact support): epsilon is infinite")
    details += [f"warning: {w}" for w in row.get("warnings") or ()]
    return ("passed" if row["passed"] else "failed"), verdict, details


def _accuracy(row: dict[str, Any]) -> tuple[str, str, list[str]]:
    if not row.get("applicable", True):
        return "skipped", f"not tested: {row.get('reason', 'not applicable')}", []
    state = "holds" if row["holds"] else "REJECTED"
    verdict = (f"{state}: P[error > {_n(row['alpha'])}] = {_n(row['failure_rate'])} vs beta {row['beta']:g} "
               f"(p-value {_n(row.get('p_value'))})")
    details = []
    if "rate_lower" in row:
        details.append(f"failure rate confidence interval [{_n(row['rate_lower'])}, {_n(row['rate_upper'])}] "
                       f"over {row.get('samples')} samples")
    if row.get("quantile") is not None:
        details.append(f"empirical (1 - beta)-quantile of the error {_n(row['quantile'])}, slack {_n(row.get('slack'))}")
    return ("passed" if row["passed"] else "failed"), verdict, details


def _budget(row: dict[str, Any]) -> tuple[str, str, list[str]]:
    state = "pass" if row["passed"] else "EXCEEDED"
    if row.get("max_delta") is not None:
        verdict = f"{state}: delta <= {_n(row.get('delta_upper'), 5)} ({row.get('method')}) vs max {row['max_delta']:g}"
    else:
        verdict = f"{state}: epsilon <= {_n(row.get('epsilon_upper'), 5)} ({row.get('method')}) vs max {row['max_epsilon']:g}"
    details = []
    if row.get("delta") is not None and row.get("max_delta") is None:
        details.append(f"at delta {row['delta']:g}")
    if row.get("parameters"):
        details.append("parameters: " + ", ".join(f"{k} = {v}" for k, v in row["parameters"].items()))
    details += [risk_detail(check) for check in row.get("risk") or ()]
    return ("passed" if row["passed"] else "failed"), verdict, details


def risk_detail(check: dict[str, Any]) -> str:
    """One attack-risk assertion of a budget row (upper bounds on any membership attack)."""
    state = "pass" if check["passed"] else "EXCEEDED"
    if check["target"] == "max_tpr_at_fpr":
        return f"attack risk {state}: TPR at FPR {check['fpr']:g} <= {_n(check['tpr_upper'], 4)} vs max {check['max']:g}"
    return f"attack risk {state}: advantage <= {_n(check['advantage_upper'], 4)} vs max {check['max']:g}"


def score_state(row: dict[str, Any]) -> str:
    """The verdict word of a completed score-audit row: a violation, a training stack flagged by another of its
    checks (named: the update-scale check, a check of the witnessed run), or a pass."""
    if row.get("violated"):
        return "VIOLATED"
    if row["passed"]:
        return "pass"
    failed = [str(name) for name in row.get("failed") or () if name != "audit"]
    return f"FLAGGED ({', '.join(failed)})" if failed else "UPDATE SCALE FLAGGED"


def _score_audit(row: dict[str, Any]) -> tuple[str, str, list[str]]:
    state = score_state(row)
    verdict = (f"{state}: epsilon >= {_n(row.get('epsilon_lower'))} certified with confidence {row.get('confidence_level', 0):.6g} "
               f"(claimed epsilon {_n(row.get('epsilon'))}, delta {row.get('delta', 0):g})")
    details = [f"scores: {row.get('file')} ({row.get('runs')} {'canaries, one run' if row.get('one_run') else 'runs'})"]
    if row.get("mu_lower") is not None:
        details.append(f"mu >= {_n(row['mu_lower'])} (Gaussian DP)")
    if row.get("method"):
        details.append(f"method: {row['method']}")
    if row.get("update_scale"):
        details.append(f"update-scale check: {row['update_scale']}")
    for check in row.get("checks") or ():  # every check of the witnessed run
        verdict_word = "FLAGGED" if check.get("flagged") else ("pass" if check.get("tested", True) else "not tested")
        details.append(f"witness {check.get('name')}: {verdict_word}: {check.get('sentence')}")
    details += [f"warning: {w}" for w in row.get("warnings") or ()]
    return ("passed" if row["passed"] else "failed"), verdict, details


def entry(kind: str, row: dict[str, Any]) -> Entry:
    """The report view of one gate row."""
    if row.get("error"):
        error = row["error"]
        verdict = f"ERROR: {error.get('type')}: {error.get('message')}"
        status, details = "error", [f"could not be completed ({error.get('kind', 'error')}): it certifies nothing"]
    else:
        status, verdict, details = {"audit": _audit, "accuracy": _accuracy, "budget": _budget, "score_audit": _score_audit,
                                    "replay": replay_verdict}[kind](row)
    return Entry(kind, str(row["name"]), status, verdict, tuple(details), float(row.get("seconds") or 0.0), row)


def entries(result: Any) -> Iterator[Entry]:
    """Every entry of a gate result: audits, accuracy checks, budgets, score audits, then replays."""
    for kind, rows in (("audit", result.audits), ("accuracy", result.accuracy), ("budget", result.budgets),
                       ("score_audit", getattr(result, "score_audits", None) or []),
                       ("replay", getattr(result, "replays", None) or [])):
        for row in rows:
            yield entry(kind, row)
