"""Run a gate configuration: audits (with baseline regression tests), accuracy checks, budget assertions.

False alarms. A check fails falsely when a certified bound that holds with probability >= 1 - a_i
does not hold. With ``false_alarm_rate = a`` in ``[gate]``, the gate gives every audit and accuracy check
a = a / m (m checks); otherwise each entry keeps its own confidence_level. Either way the probability
that an unchanged, correct configuration fails is at most the reported ``false_alarm_bound`` =
sum of the a_i (union bound). With a baseline, an audit's a_i is split in half between its violation
test and its regression test, and accuracy checks are corrected together with Holm's method.

Containment. Every entry runs in its own child process (``dpaudit._isolation``), up to ``[gate] workers``
entries at once (default and at most: the cores), each with its share of the workers for its blocks (an entry's
numbers depend on its seed only; rows are reported in the config's order): an entry that raises,
exits, crashes, exceeds its ``timeout`` (default ``DEFAULT_ENTRY_TIMEOUT`` = 1800 s) or its memory limit
(``[gate] memory_limit``, default 2 GiB per process) is reported as an ERROR with its file, name and the
exception, and the other entries still run; the false-alarm split does not change (an entry that errs
simply certifies nothing).

Regression. The baseline records each audit's witness event and certification counts. The new run
certifies a lower bound L on that same event's privacy loss (fresh samples), and the baseline counts
give an upper bound U on it for the old mechanism; L > U means the event leaks significantly more
than before: a regression, even if L is still below the claimed epsilon.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..auditor import audit, check_accuracy, holm_adjust, preload_boosting, search_pairs
from ..errors import ConfigError, InvalidArgument, InvalidArgumentType
from ..reporting import json_ready
from ..stats import clopper_pearson_lower, clopper_pearson_upper
from .config import AccuracySpec, AuditSpec, BudgetSpec, GateConfig
from .curve_entries import curve_entry, sequential_fields
from .executors import Job, LocalEntries, entry_executor
from .._isolation import IsolatedError
from .._limits import DEFAULT_ENTRY_TIMEOUT
from .read_only_inputs import read_only_inputs
from .replay_entries import audit_replay, replay_error_row, run_replay_entry
from .score_audit import run_score_audit
from .seeds import entry_seed

__all__ = ["GateResult", "BaselineError", "run_gate", "sequential_fields", "baseline_upper_bound", "evaluate_budget", "budget_curve",
           "EntryReport"]


@dataclass
class GateResult:
    """Everything a gate run found; ``passed`` is False on any violation, regression, rejected accuracy
    theorem or exceeded budget."""

    config: str
    seed: int
    audits: list[dict[str, Any]]
    accuracy: list[dict[str, Any]]
    budgets: list[dict[str, Any]]
    false_alarm_bound: float
    seconds: float
    audit_results: dict[str, Any] = field(default_factory=dict, repr=False)  # name -> AuditResult (details for reports)
    accuracy_results: dict[str, Any] = field(default_factory=dict, repr=False)
    budget_curves: dict[str, tuple] = field(default_factory=dict, repr=False)  # name -> (x, {label: y}, x label)
    score_audits: list[dict[str, Any]] = field(default_factory=list)  # [[score_audit]] rows
    replays: list[dict[str, Any]] = field(default_factory=list)  # [[replay]] rows

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [*self.audits, *self.accuracy, *self.budgets, *self.score_audits, *self.replays]

    @property
    def errors(self) -> list[dict[str, Any]]:
        """Entries that could not be completed (they raised, crashed or timed out)."""
        return [row for row in self.rows if row.get("error")]

    @property
    def findings(self) -> list[dict[str, Any]]:
        """Entries that completed and failed: a violation, a regression, a rejected theorem, an exceeded budget."""
        return [row for row in self.rows if not row.get("error") and not row["passed"]]

    @property
    def passed(self) -> bool:
        return all(row["passed"] for row in self.rows)

    @property
    def status(self) -> str:
        """"FAILED" on any finding, else "ERROR" when an entry could not be completed, else "PASSED"."""
        return "FAILED" if self.findings else ("ERROR" if self.errors else "PASSED")

    def baseline(self) -> dict[str, Any]:
        """What a later run compares against (``--baseline``): the audits with their witness events and counts."""
        return json_ready({"config": self.config, "audits": self.audits})

    def to_dict(self) -> dict[str, Any]:
        return json_ready({"config": self.config, "seed": self.seed, "passed": self.passed, "status": self.status,
                           "false_alarm_bound": self.false_alarm_bound, "seconds": self.seconds,
                           "audits": self.audits, "accuracy": self.accuracy, "budgets": self.budgets,
                           **({"score_audits": self.score_audits} if self.score_audits else {}),
                           **({"replays": self.replays} if self.replays else {})})


def baseline_upper_bound(record: dict[str, Any], alpha: float) -> float:
    """Upper confidence bound (level 1 - alpha) on the baseline witness's privacy loss ln((p - delta)/q),
    from the baseline's certification counts; inf when the event was never seen under the denominator."""
    n = int(record["certification_samples"])
    alpha_side = alpha / 2.0
    p_high = float(clopper_pearson_upper(int(record["count_p"]), n, alpha_side))
    q_low = float(clopper_pearson_lower(int(record["count_q"]), n, alpha_side))
    excess = p_high - float(record.get("delta", 0.0))
    if q_low <= 0.0:
        return math.inf
    if excess <= 0.0:
        return -math.inf
    return math.log(excess) - math.log(q_low)


def _pair_index(pairs: tuple, pair: Any) -> int | None:
    for index, candidate in enumerate(pairs):
        if json_ready(np.asarray(candidate[0]).tolist()) == json_ready(np.asarray(pair[0]).tolist()) and \
           json_ready(np.asarray(candidate[1]).tolist()) == json_ready(np.asarray(pair[1]).tolist()):
            return index
    return None


def _run_audit(spec: AuditSpec, alpha: float, seed: int, workers: int | None, keep: bool) -> tuple[Any, Any]:
    # scheduler=False: an entry draws its blocks where it runs (a local child process or one cluster task).
    common = dict(epsilon=spec.epsilon, delta=spec.delta, samples=spec.samples, confidence_level=1.0 - alpha, workers=workers,
                  scheduler=False, sequential=spec.sequential, stop_for_futility=spec.sequential)  # verdict only
    if len(spec.pairs) == 1:
        d, d_prime = spec.pairs[0]
        return audit(spec.mechanism, d, d_prime, seed=seed, keep_details=keep, **common), spec.pairs[0]
    found = search_pairs(spec.mechanism, spec.pairs, top=min(spec.top, len(spec.pairs)), seed=seed, keep_details=keep, **common)
    return found.result, found.pair


class BaselineError(ConfigError):
    """A baseline record that cannot belong to this entry (the baseline's fault, not the mechanism's)."""


def _widths(value: Any) -> set[int]:
    """Output widths a witness event is written for (every ``width``, and the length of every ``weights``
    vector of a linear score, in its description)."""
    if isinstance(value, dict):
        own = {value["width"]} if isinstance(value.get("width"), int) else set()
        if isinstance(value.get("weights"), list):
            own.add(len(value["weights"]))
        return own.union(*(_widths(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_widths(v) for v in value))
    return set()


def _column_widths(value: Any) -> set[int]:
    """Output widths named by the columns (``width``) of a witness event's description."""
    if isinstance(value, dict):
        own = {value["width"]} if isinstance(value.get("width"), int) and not isinstance(value.get("width"), bool) else set()
        return own.union(*(_column_widths(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_column_widths(v) for v in value))
    return set()


def _probe_widths(spec: AuditSpec) -> tuple[int, int]:
    """Values per output of the mechanism on the first pair's d and d_prime (16 outputs each, fixed seed)."""
    from ..auditor.sampling import canonical_outputs

    spec = spec.resolved()
    widths = []
    for data in spec.pairs[0]:
        mechanism = read_only_inputs(spec.mechanism, f"audit {spec.name!r}")
        widths.append(canonical_outputs(mechanism(data, 16, np.random.default_rng(0)), 16, "probe").shape[1])
    return widths[0], widths[1]


def _check_baseline_widths(audits: tuple[AuditSpec, ...], records: dict[str, Any], memory: Any, timeout: float | None) -> None:
    """Before any entry runs: a baseline witness written for outputs of another width than this mechanism's
    (a baseline of another mechanism) is the baseline's error (BaselineError), found by one small isolated
    call of each audited mechanism; a mechanism that fails here is left to its entry to report."""
    from .._isolation import run_isolated

    for spec in audits:
        record = records.get(spec.name) or {}
        old = _column_widths(record.get("witness")) if record.get("witness") else set()
        if not old:
            continue
        limit = min(spec.timeout or timeout or DEFAULT_ENTRY_TIMEOUT, 120.0)
        try:
            width, other = run_isolated(_probe_widths, (spec,), timeout=limit, memory_limit=memory)
        except IsolatedError:
            continue
        if width == other and width not in old:
            raise BaselineError(f"baseline: audit {spec.name!r}: its witness event is for outputs of width "
                                f"{', '.join(map(str, sorted(old)))}, this mechanism's outputs have width {width}: it was "
                                "written for another mechanism")


def _regression(spec: AuditSpec, record: dict[str, Any] | None, alpha: float, seed: int, workers: int | None,
                result: Any = None) -> dict[str, Any]:
    if record is None:
        return {"status": "no baseline entry"}
    if not record.get("witness"):
        return {"status": "baseline has no witness event"}
    old, new = _widths(record["witness"]), _widths(getattr(result, "witness", None))
    if old and new and old != new:
        raise BaselineError(f"baseline: audit {spec.name!r}: its witness event is for outputs of width "
                            f"{', '.join(map(str, sorted(old)))}, this mechanism's outputs have width "
                            f"{', '.join(map(str, sorted(new)))}: it was written for another mechanism")
    index = _pair_index(spec.pairs, (record["pair"][0], record["pair"][1])) if record.get("pair") else 0
    if index is None:
        return {"status": "the baseline's pair is not among this entry's neighbours"}
    upper = baseline_upper_bound(record, alpha / 2.0)
    if not math.isfinite(upper):
        return {"status": "baseline event too rare to compare", "baseline_upper": upper}
    d, d_prime = spec.pairs[index]
    try:
        again = audit(spec.mechanism, d, d_prime, spec.epsilon, spec.delta, spec.samples, 1.0 - alpha / 2.0,
                      seed=entry_seed(seed, spec.name + "/regression"), witness=record["witness"],
                      direction=record.get("direction"), workers=workers, scheduler=False,
                      sequential=False)  # the regression test compares with the baseline's upper bound, not the claim
    except (InvalidArgument, InvalidArgumentType) as exc:
        if exc.argument not in ("witness", "direction"):
            raise
        raise BaselineError(f"baseline: audit {spec.name!r}: {exc}") from None  # the baseline's record, not the mechanism
    n = int(record["certification_samples"])
    p_hat = int(record["count_p"]) / n - float(record.get("delta", 0.0))
    q_hat = int(record["count_q"]) / n
    estimate = math.inf if q_hat == 0 else (math.log(p_hat / q_hat) if p_hat > 0 else 0.0)
    regressed = again.epsilon_lower > upper
    return {"status": "REGRESSION" if regressed else "ok", "regressed": regressed, "event": again.event,
            "epsilon_lower_now": again.epsilon_lower, "baseline_estimate": estimate, "baseline_upper": upper}


def _audit_row(spec: AuditSpec, result: Any, pair: Any, regression: dict[str, Any] | None, alpha: float) -> dict[str, Any]:
    regressed = bool(regression and regression.get("regressed"))
    return {
        "name": spec.name, "epsilon": spec.epsilon, "delta": spec.delta, "epsilon_lower": result.epsilon_lower,
        "violated": result.violated, "event": result.event, "samples": spec.samples,
        "confidence_level": result.confidence_level, "seconds": result.seconds,
        "passed": not result.violated and not regressed, "regression": regression, "source": spec.source,
        "ceiling": result.ceiling, "direction": result.direction, "count_p": result.count_p, "count_q": result.count_q,
        "certification_samples": result.certification_samples, "witness": result.witness,
        "pair": [np.asarray(pair[0]).tolist(), np.asarray(pair[1]).tolist()], "false_alarm_share": alpha,
        "warnings": list(result.warnings), "support_proof": result.support_proof,
        **sequential_fields(result),
    }


def _accuracy_rows(specs: tuple[AccuracySpec, ...], alphas: list[float], outcomes: list[Any],
                   kept: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of the accuracy checks from their results (or error rows), Holm-adjusted together."""
    results = list(outcomes)
    tested = [i for i, r in enumerate(results) if not isinstance(r, dict) and r.applicable]
    if len(tested) > 1 and len({alphas[i] for i in tested}) == 1:
        # Equal shares: Holm's step-down at the family's total level is valid and more powerful.
        family = alphas[tested[0]] * len(tested)
        adjusted = holm_adjust([results[i].p_value for i in tested])
        for i, p in zip(tested, adjusted):
            results[i] = replace(results[i], p_value=p, holds=p >= family)
    rows = []
    for spec, result, a in zip(specs, results, alphas):
        if isinstance(result, dict):  # the entry could not be completed
            rows.append(result)
            continue
        row = result.to_dict()
        row.update({"passed": result.holds is not False, "source": spec.source, "false_alarm_share": a})
        rows.append(row)
        kept[spec.name] = result
    return rows


#: Compositions above which the gate does not build a PLD: its grid, time and memory grow with the composed
#: loss (about 5 s for 10^8 subsampled Gaussian steps, 17 s for 10^9, minutes beyond). Past it, and whenever the
#: PLD accountant refuses a tree (a grid it cannot bound), the gate answers with the tightest sound bound of the
#: other accountants and closed forms (:func:`dpaudit.accountant.epsilon_upper` without the PLD: RDP, basic
#: composition, exact Gaussian DP) and names it in the row's method.
GATE_PLD_MAX_COMPOSITIONS = 10**8


def _pld_too_large(accountant: Any) -> str | None:
    """Why the gate does not build this PLD accountant's grid (None: it does): its composition count."""
    count = sum(accountant.leaves.values())  # the composed leaves and their counts
    if count > GATE_PLD_MAX_COMPOSITIONS:
        return f"{count:.3g} compositions exceed the gate's limit of {GATE_PLD_MAX_COMPOSITIONS:.0e} for it"
    return None


_FALLBACK_NAMES = {"rdp": "RDP accountant", "pure": "basic composition (closed form)", "gdp": "Gaussian DP (closed form)"}


def _without_pld(event: Any, neighbouring: str, reason: str, epsilon: float | None = None,
                 delta: float | None = None) -> tuple[float, str, Any]:
    """(bound, method, accountant for the risk read-outs) where the PLD is not built: at ``delta`` the
    smallest epsilon of every other sound bound; at ``epsilon`` the RDP accountant's delta."""
    from ..accountant import RDPAccountant, epsilon_upper

    rdp = RDPAccountant(neighbouring=neighbouring)
    if epsilon is not None:
        rdp.compose(event)
        try:
            return rdp.delta(epsilon), f"RDP accountant (PLD not built: {reason})", rdp
        except OverflowError:  # its bound exp(...) exceeds the float range, so 1: every delta is at most 1
            return 1.0, f"delta <= 1 (the RDP accountant's bound exceeds 1; PLD not built: {reason})", rdp
    best = epsilon_upper(event, delta, neighbouring=neighbouring, methods=("gdp", "pure", "rdp"))
    if rdp.supports(event):
        rdp.compose(event)
    return best.epsilon, f"{_FALLBACK_NAMES.get(best.method, best.method)} (PLD not built: {reason})", rdp


def _pld_or_fallback(accountant: Any, event: Any, neighbouring: str, *, epsilon: float | None = None,
                     delta: float | None = None) -> tuple[float, str, Any]:
    """The PLD accountant's bound (delta at ``epsilon``, else epsilon at ``delta``), or, where its grid is too
    large for the gate or it refuses the tree, the tightest bound of the others (:func:`_without_pld`)."""
    from ..errors import UnsupportedEventError

    reason = _pld_too_large(accountant)
    if reason is None:
        try:
            value = accountant.delta(epsilon) if epsilon is not None else accountant.epsilon(delta)
            return value, "PLD accountant", accountant
        except UnsupportedEventError as exc:  # the PLD refuses the grid (too many cells, losses beyond floats)
            reason = " ".join(str(exc).split())
    return _without_pld(event, neighbouring, reason, epsilon=epsilon, delta=delta)


def evaluate_budget(spec: BudgetSpec) -> dict[str, Any]:
    """The accountant's upper bound for a budget entry and whether it stays within max_epsilon (or, for an
    event budget with max_delta, the delta upper bound at ``epsilon`` within max_delta). A PLD the gate cannot
    build in bounded time and memory is replaced by the tightest other sound bound, named in ``method``."""
    from ..accountant import advanced, amplify, basic, optimal

    p = spec.parameters
    if spec.kind == "event":  # any event tree, parsed safely (never evaluated)
        from ..accountant import PLDAccountant, RDPAccountant, ZCDPAccountant
        from ..events_parser import parse_event

        name = p.get("accountant", "pld")
        neighbouring = p.get("neighbouring", "add_remove")
        accountant = {"pld": PLDAccountant, "rdp": RDPAccountant, "zcdp": ZCDPAccountant}[name](neighbouring=neighbouring)
        event = parse_event(p["event"])
        accountant.compose(event)
        method = f"{name.upper()} accountant"
        row = {"name": spec.name, "kind": spec.kind, "method": method, "parameters": dict(p), "event": p["event"],
               "max_epsilon": spec.max_epsilon, "max_delta": spec.max_delta}
        if spec.max_delta is not None:
            if name == "pld":
                value, row["method"], accountant = _pld_or_fallback(accountant, event, neighbouring, epsilon=p["epsilon"])
            else:
                value = accountant.delta(p["epsilon"])
            row.update({"delta_upper": value, "epsilon": p["epsilon"], "delta": None, "epsilon_upper": None,
                        "passed": value <= spec.max_delta})
        else:
            if name == "pld":
                value, row["method"], accountant = _pld_or_fallback(accountant, event, neighbouring, delta=p["delta"])
            else:
                value = accountant.epsilon(p["delta"])
            row.update({"epsilon_upper": value, "delta": p["delta"], "passed": value <= spec.max_epsilon})
        return _with_risk(row, spec, accountant)
    if spec.kind == "composition":
        epsilon, step_delta = p["epsilon"], p.get("step_delta", 0.0)
        if "sampling_probability" in p:
            step = amplify(epsilon, step_delta, p["sampling_probability"])
            epsilon, step_delta = step.epsilon, step.delta
        theorem = p.get("theorem", "optimal")
        if theorem == "basic":
            bound = basic(epsilon, step_delta, k=p["k"])  # O(1) in k
        elif theorem == "advanced":
            bound = advanced(epsilon, p["k"], p["delta"] - p["k"] * step_delta, step_delta)
        else:
            bound = optimal(epsilon, p["k"], p["delta"], step_delta)
        value, method = bound.epsilon, f"{theorem} composition"
    else:
        from ..accountant import PLDAccountant, RDPAccountant
        from ..events import Gaussian, PoissonSampled, SelfComposed

        neighbouring = p.get("neighbouring", "add_remove")
        accountant_type = PLDAccountant if p.get("accountant", "pld") == "pld" else RDPAccountant
        accountant = accountant_type(neighbouring=neighbouring)
        event = SelfComposed(PoissonSampled(p["sampling_probability"], Gaussian(p["noise_multiplier"])), p["steps"])
        accountant.compose(event)
        if accountant_type is PLDAccountant:
            value, method, accountant = _pld_or_fallback(accountant, event, neighbouring, delta=p["delta"])
        else:
            value, method = accountant.epsilon(p["delta"]), "RDP accountant"
        return _with_risk({"name": spec.name, "kind": spec.kind, "epsilon_upper": value, "max_epsilon": spec.max_epsilon,
                           "delta": p["delta"], "passed": value <= spec.max_epsilon, "method": method,
                           "parameters": dict(p)}, spec, accountant)
    return {"name": spec.name, "kind": spec.kind, "epsilon_upper": value, "max_epsilon": spec.max_epsilon,
            "delta": p["delta"], "passed": value <= spec.max_epsilon, "method": method, "parameters": dict(p)}


def _with_risk(row: dict[str, Any], spec: BudgetSpec, accountant: Any) -> dict[str, Any]:
    """Add the entry's attack-risk assertions (upper bounds from the accountant's curve; Kulynych et al. 2024)
    to its row: ``risk`` lists each target, its bound and whether it holds; the entry passes only if all do."""
    checks = []
    if "max_tpr_at_fpr" in spec.risk:
        tpr, fpr = spec.risk["max_tpr_at_fpr"]
        value = float(accountant.tpr_at_fpr(fpr))
        checks.append({"target": "max_tpr_at_fpr", "fpr": fpr, "max": tpr, "tpr_upper": value, "passed": value <= tpr})
    if "max_advantage" in spec.risk:
        value = accountant.advantage()
        checks.append({"target": "max_advantage", "max": spec.risk["max_advantage"], "advantage_upper": value,
                       "passed": value <= spec.risk["max_advantage"]})
    if checks:
        row["risk"] = checks
        row["passed"] = row["passed"] and all(check["passed"] for check in checks)
    return row


def budget_curve(spec: BudgetSpec, points: int = 12) -> tuple[np.ndarray, dict[str, list[float]], str]:
    """epsilon (upper bound) against the number of steps of a budget entry, up to its configured length
    (event budgets: epsilon, or delta for max_delta, against the count of the top-level SelfComposed)."""
    if spec.kind == "event":
        from ..events import SelfComposed
        from ..events_parser import parse_event

        event = parse_event(spec.parameters["event"])
        total = event.count if isinstance(event, SelfComposed) else 1
        xs = np.unique(np.geomspace(1, total, points).round().astype(int))
        variants = [repr(SelfComposed(event.event, int(x))) if isinstance(event, SelfComposed) else repr(event) for x in xs]
        rows = [evaluate_budget(replace(spec, parameters={**spec.parameters, "event": text})) for text in variants]
        key = "delta_upper" if spec.max_delta is not None else "epsilon_upper"
        return xs, {rows[-1]["method"]: [row[key] for row in rows]}, "count"
    length_key = "steps" if spec.kind == "dpsgd" else "k"
    total = int(spec.parameters[length_key])
    xs = np.unique(np.geomspace(1, total, points).round().astype(int))
    rows = [evaluate_budget(replace(spec, parameters={**spec.parameters, length_key: int(x)})) for x in xs]
    return xs, {rows[-1]["method"]: [row["epsilon_upper"] for row in rows]}, length_key


@dataclass(frozen=True)
class EntryReport:
    """Passed to ``run_gate``'s ``on_entry`` callback as each entry finishes (for streamed output)."""

    kind: str  # "audit", "accuracy" or "budget"
    index: int  # 1-based position among all entries
    total: int
    row: dict[str, Any]


def _error_row(kind: str, spec: Any, error: IsolatedError, seconds: float, alpha: float | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"name": spec.name, "kind": kind, "passed": False, "status": "ERROR", "error": error.to_dict(),
                           "seconds": seconds, "source": getattr(spec, "source", None)}
    if kind == "audit":
        row.update({"epsilon": spec.epsilon, "delta": spec.delta, "epsilon_lower": None, "violated": False, "event": None,
                    "samples": spec.samples, "confidence_level": 1.0 - alpha if alpha is not None else spec.confidence_level,
                    "false_alarm_share": alpha})
    elif kind == "accuracy":
        row.update({"alpha": spec.alpha, "beta": spec.beta, "samples": spec.samples, "applicable": True, "holds": None,
                    "false_alarm_share": alpha})
    else:
        row.update({"max_epsilon": spec.max_epsilon, "parameters": dict(spec.parameters)})
    return row


def _audit_entry(spec: AuditSpec, share: float, alpha: float, entry_seed: int, seed: int, workers: int | None, keep: bool,
                 record: dict[str, Any] | None, with_baseline: bool) -> tuple[dict[str, Any], Any]:
    spec = replace(spec.resolved(), mechanism=read_only_inputs(spec.mechanism, f"audit {spec.name!r} (mechanism {spec.source})"))
    if spec.audits_curve():
        return curve_entry(spec, share, alpha, entry_seed, seed, workers, record, with_baseline)
    result, pair = _run_audit(spec, share, entry_seed, workers, keep)
    regression = _regression(spec, record, share, seed, workers, result) if with_baseline else None
    return _audit_row(spec, result, pair, regression, alpha), result


def _accuracy_entry(spec: AccuracySpec, alpha: float, seed: int) -> Any:
    mechanism = read_only_inputs(spec.mechanism, f"accuracy {spec.name!r} (mechanism {spec.source})")
    return check_accuracy(mechanism, spec.data, alpha=spec.alpha, beta=spec.beta, error=spec.error, samples=spec.samples,
                          confidence_level=1.0 - alpha, seed=entry_seed(seed, spec.name), name=spec.name)


def _budget_entry(spec: BudgetSpec, keep: bool) -> tuple[dict[str, Any], Any]:
    return evaluate_budget(spec), (budget_curve(spec) if keep else None)


def _some(names: Any, shown: int = 5) -> str:
    """A few names for a message (a foreign baseline may hold thousands), each shortened and made visible."""
    from ..reporting import visible

    ordered = sorted(map(str, names))
    text = ", ".join(visible(name if len(name) <= 60 else name[:57] + "...") for name in ordered[:shown])
    return text + (f" and {len(ordered) - shown} more" if len(ordered) > shown else "")


def _baseline_records(baseline: dict[str, Any] | None, config: GateConfig) -> dict[str, dict[str, Any]]:
    if baseline is None:
        return {}
    if not isinstance(baseline, dict) or not isinstance(baseline.get("audits"), list):
        raise ConfigError("baseline: not a dpaudit check result (expected a JSON object with an 'audits' list)")
    records = {row.get("name"): row for row in baseline["audits"] if isinstance(row, dict)}
    names = {spec.name for spec in config.audits}
    if config.audits and not names & set(records):
        raise ConfigError(f"baseline: none of its audits ({_some(records) or 'none'}) matches an "
                          f"[[audit]] entry of {config.path} ({_some(names)}); was it written for another config?")
    return records


def resolve_local(scheduler: Any) -> bool:
    """Whether entries run here (no Dask cluster named by ``scheduler`` or $DPAUDIT_SCHEDULER)."""
    from ..auditor.dask_backend import resolve_scheduler

    return resolve_scheduler(scheduler) is None


def run_gate(config: GateConfig, baseline: dict[str, Any] | None = None, *, seed: int | None = None,
             keep_details: bool = False, timeout: float | None = None,
             on_entry: Callable[[EntryReport], None] | None = None,
             heartbeat: Callable[[str, float], None] | None = None, scheduler: Any = None,
             memory_limit: int | None | str = "config") -> GateResult:
    """Run every entry of ``config``; ``baseline`` is a previous run's ``to_dict()`` (for regressions).

    Each entry runs isolated (a child process here, or one task on the Dask cluster named by ``scheduler``
    or $DPAUDIT_SCHEDULER), with its own ``timeout`` (else ``timeout`` here, else DEFAULT_ENTRY_TIMEOUT) and
    at most ``memory_limit`` bytes per process (default: the config's ``[gate] memory_limit``; None: no
    limit); ``on_entry`` is called as each entry finishes and ``heartbeat(label, seconds)`` about every 10 s
    while one runs.
    """
    started = time.perf_counter()
    settings = config.settings
    seed = settings.seed if seed is None else seed
    m = config.check_count
    audit_alphas = [settings.false_alarm_rate / m if settings.false_alarm_rate else 1.0 - s.confidence_level for s in config.audits]
    accuracy_alphas = [settings.false_alarm_rate / m if settings.false_alarm_rate else 1.0 - s.confidence_level for s in config.accuracy]
    records = _baseline_records(baseline, config)
    score_specs = getattr(config, "score_audits", ())
    score_alphas = [settings.false_alarm_rate / m if settings.false_alarm_rate else 1.0 - s.confidence_level for s in score_specs]
    # [[replay]] entries, then the replays of [[audit]] entries with replay = true (their audits run as usual)
    replay_specs = (*getattr(config, "replays", ()), *(audit_replay(spec, seed) for spec in config.audits if spec.replay))
    total = len(config.audits) + len(config.accuracy) + len(config.budgets) + len(score_specs) + len(replay_specs)
    position = 0

    def report(kind: str, row: dict[str, Any]) -> None:
        nonlocal position
        position += 1
        if on_entry is not None:
            on_entry(EntryReport(kind, position, total, row))

    memory = settings.memory_limit if memory_limit == "config" else memory_limit
    # Local entries share the [gate] workers (default: the cores): up to that many entries at once, up to the cores,
    # each with its share of worker processes for its blocks (the numbers do not depend on either).
    cores = os.cpu_count() or 1
    parallel = max(1, min(settings.workers or cores, cores, total))
    if records and getattr(config, "audits", ()) and resolve_local(scheduler):  # before any entry runs
        _check_baseline_widths(config.audits, records, memory, timeout)
    with entry_executor(scheduler, heartbeat, parallel) as executor:
        workers = executor.workers_per_entry or (max(1, (settings.workers or cores) // parallel) if parallel > 1 else settings.workers)

        def job(kind: str, spec: Any, function: Callable[..., Any], arguments: tuple) -> Job:
            limit = spec.timeout if getattr(spec, "timeout", None) is not None else (timeout or DEFAULT_ENTRY_TIMEOUT)
            source = getattr(spec, "source", None) if kind in ("audit", "accuracy", "replay") else None
            what = f"running {kind} {spec.name!r}" + (f" (mechanism {source})" if source else "")
            return executor.submit(Job(kind, spec.name, function, arguments, limit, memory_limit=memory, what=what))

        if isinstance(executor, LocalEntries) and len(config.audits) > 1:
            preload_boosting()  # the audits' witness search may fit boosted trees: forked entries inherit the import
        # replays first: deterministic and fast, their findings come before the statistical audits'
        replay_jobs = [job("replay", spec, run_replay_entry, (spec,)) for spec in replay_specs]
        replay_rows = []
        for spec, pending in zip(replay_specs, replay_jobs):
            value, error, seconds = executor.wait(pending)
            row = value if error is None else replay_error_row(spec, error, seconds)
            replay_rows.append(row)
            report("replay", row)
        audit_jobs = [job("audit", spec, _audit_entry, (spec, alpha / 2.0 if baseline is not None else alpha, alpha,
                                                          entry_seed(seed, spec.name), seed, workers, keep_details,
                                                          records.get(spec.name), baseline is not None))
                      for spec, alpha in zip(config.audits, audit_alphas)]
        accuracy_jobs = [job("accuracy", spec, _accuracy_entry, (spec, alpha, seed)) for spec, alpha in zip(config.accuracy, accuracy_alphas)]
        budget_jobs = [job("budget", spec, _budget_entry, (spec, keep_details)) for spec in config.budgets]
        score_jobs = [job("score_audit", spec, run_score_audit, (spec, alpha)) for spec, alpha in zip(score_specs, score_alphas)]

        rows, results = [], {}
        for spec, alpha, pending in zip(config.audits, audit_alphas, audit_jobs):
            value, error, seconds = executor.wait(pending)
            if error is None:
                row, results[spec.name] = value
            else:
                row = _error_row("audit", spec, error, seconds, alpha)
            rows.append(row)
            report("audit", row)

        accuracy_results: dict[str, Any] = {}
        outcomes: list[Any] = []
        for spec, alpha, pending in zip(config.accuracy, accuracy_alphas, accuracy_jobs):
            value, error, seconds = executor.wait(pending)
            outcomes.append(value if error is None else _error_row("accuracy", spec, error, seconds, alpha))
        accuracy_rows = _accuracy_rows(config.accuracy, accuracy_alphas, outcomes, accuracy_results)
        for row in accuracy_rows:
            report("accuracy", row)

        budgets, curves = [], {}
        for spec, pending in zip(config.budgets, budget_jobs):
            value, error, seconds = executor.wait(pending)
            if error is None:
                row, curve = value
                if curve is not None:
                    curves[spec.name] = curve
            else:
                row = _error_row("budget", spec, error, seconds)
            budgets.append(row)
            report("budget", row)

        score_rows = []
        for spec, alpha, pending in zip(score_specs, score_alphas, score_jobs):
            value, error, seconds = executor.wait(pending)
            row = value if error is None else _score_error_row(spec, error, seconds, alpha)
            score_rows.append(row)
            report("score_audit", row)
    return GateResult(config.path, seed, rows, accuracy_rows, budgets,
                      float(sum(audit_alphas) + sum(accuracy_alphas) + sum(score_alphas)),
                      time.perf_counter() - started, results, accuracy_results, curves, score_rows, replay_rows)


def _score_error_row(spec: Any, error: IsolatedError, seconds: float, alpha: float) -> dict[str, Any]:
    return {"name": spec.name, "kind": "score_audit", "passed": False, "status": "ERROR", "error": error.to_dict(),
            "seconds": seconds, "source": spec.scores, "file": spec.scores, "one_run": spec.one_run,
            "epsilon": spec.epsilon, "delta": spec.delta, "epsilon_lower": None, "mu_lower": None, "violated": False,
            "confidence_level": 1.0 - alpha}
