"""The gate's TOML configuration: parsed and validated up front, with errors that name file, entry and key.

```toml
[gate]                       # optional
seed = 0
false_alarm_rate = 0.01      # optional: bound on the whole gate's false-alarm probability, split over all checks
samples = 1_000_000          # default for audits
workers = 2                  # default: all cores (at most 4 per core)
timeout = 600                # per-entry time limit in seconds (an entry may set its own); default 1800
memory_limit = "4GiB"        # memory per process of an entry (and of its workers); default 2GiB; "none": no limit

[[audit]]
name = "laplace-count"
mechanism = "package.module:callable"     # or: example = "laplace" (dpaudit.mechanisms.examples())
neighbours = "package.module:pairs"        # or inline: neighbours = [[[0], [1]]]; or d = [...], d_prime = [...]
epsilon = 1.0
delta = 0.0
samples = 1_000_000
confidence_level = 0.99
timeout = 120                              # optional: seconds; a hung mechanism is stopped, the entry is an ERROR

[[accuracy]]
name = "laplace-theorem-3"
mechanism = "package.module:callable"     # or example = "laplace"
data = "package.module:data"               # or an inline value
beta = 0.05
alpha = 12.3                               # optional: default mechanism.accuracy(beta)
error = "package.module:error"             # optional: default mechanism.error
samples = 100_000
confidence_level = 0.99

[[budget]]
name = "dpsgd-within-8"
kind = "dpsgd"                             # or "composition"
noise_multiplier = 1.0
sampling_probability = 0.01
steps = 1000
delta = 1e-5
max_epsilon = 8.0
accountant = "pld"                         # or "rdp"

[[budget]]
name = "any-tree"                          # kind = "event" is inferred from the event key
event = "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)"   # any event tree as its repr (parsed, never evaluated)
accountant = "pld"                         # or "rdp", "zcdp"
neighbouring = "add_remove"                # or "replace_one"
delta = 1e-5
max_epsilon = 8.0                          # or: epsilon = 8.0 and max_delta = 1e-5
max_tpr_at_fpr = [0.05, 0.01]              # optional (event, dpsgd): any attack's TPR at FPR 0.01 <= 0.05
max_advantage = 0.2                        # optional (event, dpsgd): any attack's TPR - FPR <= 0.2
```
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .._limits import DEFAULT_MEMORY_LIMIT, parse_memory
from .._loading import pairs_from
from ..errors import ConfigError, DPAuditError
from .mechanism_fields import entry_mechanism, entry_pairs
from .replay_entries import parse_replay, replay_name
from .score_audit import parse_score_audit
from .training_audit import parse_training_audit
from .tables import AUDIT_SAMPLES, CONFIDENCE, DELTA, EPSILON, POSITIVE_INT, RUNS, TIMEOUT, Table, entry_event, entry_timeout

__all__ = ["GateSettings", "AuditSpec", "AccuracySpec", "BudgetSpec", "GateConfig", "load_config"]


@dataclass(frozen=True)
class GateSettings:
    seed: int = 0
    false_alarm_rate: float | None = None
    samples: int = 1_000_000
    accuracy_samples: int = 100_000
    confidence_level: float = 0.99
    workers: int | None = None
    timeout: float | None = None
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT
    sequential: bool = True  # audits stop early on a violation or for futility (``samples`` is their maximum budget)


@dataclass(frozen=True)
class AuditSpec:
    name: str
    mechanism: Any
    pairs: tuple[tuple[Any, Any], ...]
    epsilon: float
    delta: float
    samples: int
    confidence_level: float
    top: int
    source: str  # where the mechanism came from, for reports
    timeout: float | None = None
    neighbours: Any = None  # a callable returning the pairs: called when the entry runs (its failure is the entry's)
    claim: Any = None  # the claimed trade-off curve (event, Guarantee or GDP mu); None: the mechanism's .event
    curve: bool | None = None  # audit the whole curve; None: when there is a claim (or .event) and one pair
    sequential: bool = True  # certify in looks and stop early; False: the whole budget
    replay: bool = False  # also record/replay the mechanism on the pairs, before the audits (a "NAME (replay)" row)

    def audits_curve(self) -> bool:
        """Whether this entry audits the privacy curve (``audit_curve``) rather than one point (``audit``)."""
        if self.curve is not None:
            return self.curve
        return (self.claim is not None or getattr(self.mechanism, "event", None) is not None) and len(self.pairs) == 1

    def resolved(self) -> AuditSpec:
        """This spec with ``pairs`` filled in from a neighbours callable (raises MechanismError if it fails)."""
        if self.neighbours is None:
            return self
        from dataclasses import replace

        return replace(self, pairs=tuple(pairs_from(self.neighbours, self.source_neighbours)), neighbours=None)

    @property
    def source_neighbours(self) -> str:
        return f"neighbours of {self.name!r}"


@dataclass(frozen=True)
class AccuracySpec:
    name: str
    mechanism: Any
    data: Any
    beta: float
    alpha: float | None
    error: Any
    samples: int
    confidence_level: float
    source: str
    timeout: float | None = None


@dataclass(frozen=True)
class BudgetSpec:
    name: str
    kind: str
    max_epsilon: float | None  # None when the entry checks max_delta instead
    parameters: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    max_delta: float | None = None  # kind "event": delta (upper bound) at ``epsilon`` must stay within it
    # kinds "event" and "dpsgd": attack-risk targets ("max_tpr_at_fpr": (tpr, fpr), "max_advantage"), asserted too
    risk: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GateConfig:
    path: str
    settings: GateSettings
    audits: tuple[AuditSpec, ...]
    accuracy: tuple[AccuracySpec, ...]
    budgets: tuple[BudgetSpec, ...]
    score_audits: tuple[Any, ...] = ()  # ScoreAuditSpec (dpaudit.gate.score_audit)  # and TrainingAuditSpec (.training_audit)
    replays: tuple[Any, ...] = ()  # ReplaySpec (dpaudit.gate.replay_entries)

    @property
    def check_count(self) -> int:
        return len(self.audits) + len(self.accuracy) + len(self.score_audits)

    def with_fixed_budget(self) -> GateConfig:
        """This configuration with every audit at its whole budget (``dpaudit check --fixed-budget``)."""
        from dataclasses import replace

        return replace(self, settings=replace(self.settings, sequential=False),
                       audits=tuple(replace(spec, sequential=False) for spec in self.audits),
                       score_audits=tuple(replace(spec, sequential=False) if hasattr(spec, "sequential") else spec
                                          for spec in self.score_audits))


def _audit(path: str, index: int, table: Any, settings: GateSettings) -> AuditSpec:
    entry = Table(path, "audit", index, table, {"name", "mechanism", "example", "neighbours", "d", "d_prime", "epsilon",
                                                   "delta", "samples", "confidence_level", "top", "timeout", "claim", "curve",
                                                   "sequential", "replay"})
    name = entry.get("name", str)
    mechanism, example, source = entry_mechanism(entry)
    pairs = entry_pairs(entry, example)
    claim = _claim(entry)
    curve = entry.get("curve", bool, None)
    if curve and claim is None and getattr(mechanism, "event", None) is None:
        raise entry.error("curve", "a curve audit needs a claim: give claim = ... (an event, a GDP mu, or {epsilon, delta}) "
                                   "or a mechanism with .event")
    if curve and not callable(pairs) and len(pairs) != 1:
        raise entry.error("curve", f"a curve audit needs exactly one pair (d, d_prime), got {len(pairs)}")
    return AuditSpec(
        name=name,
        mechanism=mechanism,
        pairs=() if callable(pairs) else pairs,
        neighbours=pairs if callable(pairs) else None,
        epsilon=entry.get("epsilon", float, **EPSILON) if (entry.has("epsilon") or example is None) else example.mechanism.privacy.epsilon,
        delta=entry.get("delta", float, example.mechanism.privacy.delta if example is not None else 0.0, **DELTA),
        samples=entry.get("samples", int, settings.samples, **AUDIT_SAMPLES),
        confidence_level=entry.get("confidence_level", float, settings.confidence_level, **CONFIDENCE),
        top=entry.get("top", int, 3, **POSITIVE_INT),
        source=source,
        timeout=entry_timeout(entry, settings),
        claim=claim,
        curve=curve,
        sequential=entry.get("sequential", bool, settings.sequential),
        replay=entry.get("replay", bool, False),
    )


def _claim(entry: Table) -> Any:
    """``claim``: a GDP mu (number), an event tree written as its repr (string, parsed safely), or a table
    {epsilon, delta} (a Guarantee); None when absent."""
    if not entry.has("claim"):
        return None
    value = entry.table["claim"]
    if isinstance(value, bool):
        raise entry.error("claim", "must be a GDP mu, an event string or a table {epsilon, delta}, got a boolean")
    if isinstance(value, (int, float)):
        if not (math.isfinite(value) and value > 0):
            raise entry.error("claim", f"{value!r} must be a GDP mu > 0 and finite")
        return float(value)
    if isinstance(value, str):
        return entry_event(entry, "claim", value)
    if isinstance(value, dict):
        from ..guarantee import Guarantee

        unknown = sorted(set(value) - {"epsilon", "delta"})
        if unknown or "epsilon" not in value:
            raise entry.error("claim", "a table claim is {epsilon = ..., delta = ...}" + (f" (unknown key {unknown[0]!r})" if unknown else ""))
        try:
            return Guarantee(float(value["epsilon"]), float(value.get("delta", 0.0)))
        except (TypeError, ValueError) as exc:
            raise entry.error("claim", str(exc)) from None
    raise entry.error("claim", f"must be a GDP mu, an event string or a table {{epsilon, delta}}, got {type(value).__name__}")


def _accuracy(path: str, index: int, table: Any, settings: GateSettings) -> AccuracySpec:
    entry = Table(path, "accuracy", index, table, {"name", "mechanism", "example", "data", "beta", "alpha", "error",
                                                      "samples", "confidence_level", "timeout"})
    name = entry.get("name", str)
    mechanism, example, source = entry_mechanism(entry)
    if entry.has("data"):
        value = entry.table["data"]
        data = entry.load("data") if isinstance(value, str) and ":" in value else value
    elif example is not None:
        data = example.data
    else:
        raise entry.error("data", "is required (or example)")
    alpha = entry.get("alpha", float, None, **EPSILON)
    error = entry.load("error") if entry.has("error") else None
    if alpha is None and not callable(getattr(mechanism, "accuracy", None)):
        raise entry.error("alpha", "is required: the mechanism has no .accuracy(beta) theorem")
    if error is None and not callable(getattr(mechanism, "error", None)):
        raise entry.error("error", "is required: the mechanism has no .error(data, outputs)")
    return AccuracySpec(
        name=name, mechanism=mechanism, data=data,
        beta=entry.get("beta", float, 0.05, check=lambda v: 0 < v < 1, rule="in (0, 1)"),
        alpha=alpha, error=error,
        samples=entry.get("samples", int, settings.accuracy_samples, **RUNS),
        confidence_level=entry.get("confidence_level", float, settings.confidence_level, **CONFIDENCE),
        source=source,
        timeout=entry_timeout(entry, settings),
    )


_BUDGET_KEYS = {
    "composition": {"epsilon": (float, EPSILON), "k": (int, POSITIVE_INT), "delta": (float, DELTA),
                    "theorem": (str, dict(check=lambda v: v in ("basic", "advanced", "optimal"), rule="basic, advanced or optimal")),
                    "step_delta": (float, DELTA),
                    "sampling_probability": (float, dict(check=lambda v: 0 < v <= 1, rule="in (0, 1]"))},
    "dpsgd": {"noise_multiplier": (float, dict(check=lambda v: math.isfinite(v) and v > 0, rule="> 0")),
              "sampling_probability": (float, dict(check=lambda v: 0 < v <= 1, rule="in (0, 1]")),
              "steps": (int, POSITIVE_INT), "delta": (float, DELTA),
              "accountant": (str, dict(check=lambda v: v in ("pld", "rdp"), rule="pld or rdp")),
              "neighbouring": (str, dict(check=lambda v: v in ("add_remove", "replace_one"), rule="add_remove or replace_one"))},
    # any event tree written as its repr, e.g. "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)"
    "event": {"event": (str, {}),
              "accountant": (str, dict(check=lambda v: v in ("pld", "rdp", "zcdp"), rule="pld, rdp or zcdp")),
              "neighbouring": (str, dict(check=lambda v: v in ("add_remove", "replace_one"), rule="add_remove or replace_one")),
              "delta": (float, DELTA), "epsilon": (float, EPSILON)},
}
_BUDGET_REQUIRED = {"composition": ("epsilon", "k", "delta"), "dpsgd": ("noise_multiplier", "sampling_probability", "steps", "delta"),
                    "event": ("event",)}


def _budget(path: str, index: int, table: Any, settings: GateSettings | None = None) -> BudgetSpec:
    default_kind = "event" if isinstance(table, dict) and "event" in table else "composition"
    kind = table.get("kind", default_kind) if isinstance(table, dict) else None
    keys = _BUDGET_KEYS.get(kind, {}) if isinstance(kind, str) else {}
    extra = {"max_delta"} if kind == "event" else set()
    extra |= set(_RISK_KEYS) if kind in ("event", "dpsgd") else set()
    entry = Table(path, "budget", index, table, {"name", "kind", "max_epsilon", "timeout", *keys, *extra})
    name = entry.get("name", str)
    if kind not in _BUDGET_KEYS:
        raise entry.error("kind", f"{kind!r} must be one of {sorted(_BUDGET_KEYS)}")
    parameters = {}
    for key, (kind_type, rule) in keys.items():
        if entry.has(key) or key in _BUDGET_REQUIRED[kind]:
            parameters[key] = entry.get(key, kind_type, **rule)
    if kind == "event":
        return replace(_event_budget(entry, name, parameters, settings), risk=_risk_targets(entry))
    max_epsilon = entry.get("max_epsilon", float, **EPSILON)
    return BudgetSpec(name, kind, max_epsilon, parameters, timeout=entry_timeout(entry, settings), risk=_risk_targets(entry))


_RISK_KEYS = ("max_tpr_at_fpr", "max_advantage")


def _risk_targets(entry: Table) -> dict[str, Any]:
    """Attack-risk targets of a budget entry: ``max_tpr_at_fpr = [tpr, fpr]`` (every membership attack with
    false-positive rate fpr has true-positive rate <= tpr; 0 < fpr < 1, fpr <= tpr < 1) and
    ``max_advantage`` in [0, 1) (TPR - FPR of every attack)."""
    targets: dict[str, Any] = {}
    if entry.has("max_tpr_at_fpr"):
        pair = entry.get("max_tpr_at_fpr", list)
        if len(pair) != 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair):
            raise entry.error("max_tpr_at_fpr", f"{pair!r} must be a pair of numbers [tpr, fpr]")
        tpr, fpr = float(pair[0]), float(pair[1])
        if not (0.0 < fpr < 1.0 and fpr <= tpr < 1.0):
            raise entry.error("max_tpr_at_fpr", f"{pair!r} must be [tpr, fpr] with 0 < fpr < 1 and fpr <= tpr < 1 "
                                                "(no attack is held below a random guess, TPR = FPR)")
        targets["max_tpr_at_fpr"] = (tpr, fpr)
    if entry.has("max_advantage"):
        targets["max_advantage"] = entry.get("max_advantage", float, check=lambda v: 0.0 <= v < 1.0, rule="in [0, 1)")
    return targets


def _event_budget(entry: Table, name: str, parameters: dict[str, Any], settings: GateSettings | None) -> BudgetSpec:
    """A budget over any event tree: max_epsilon at delta, or max_delta at epsilon; the event string is
    parsed safely (never evaluated) and must be supported by the chosen accountant."""
    event = entry_event(entry, "event", parameters["event"])
    if entry.has("max_epsilon") == entry.has("max_delta"):
        raise entry.error("max_epsilon", "give exactly one of max_epsilon (with delta) or max_delta (with epsilon)")
    if entry.has("max_epsilon"):
        if not entry.has("delta"):
            raise entry.error("delta", "is required with max_epsilon")
        if entry.has("epsilon"):
            raise entry.error("epsilon", "is not used with max_epsilon (give delta)")
        max_epsilon, max_delta = entry.get("max_epsilon", float, **EPSILON), None
    else:
        if not entry.has("epsilon"):
            raise entry.error("epsilon", "is required with max_delta")
        if entry.has("delta"):
            raise entry.error("delta", "is not used with max_delta (give epsilon)")
        max_epsilon, max_delta = None, entry.get("max_delta", float, **DELTA)
    from ..accountant import PLDAccountant, RDPAccountant, ZCDPAccountant

    accountant_name = parameters.get("accountant", "pld")
    accountant = {"pld": PLDAccountant, "rdp": RDPAccountant, "zcdp": ZCDPAccountant}[accountant_name](
        neighbouring=parameters.get("neighbouring", "add_remove"))
    if not accountant.supports(event):
        try:
            accountant.compose(event)
        except DPAuditError as exc:
            raise entry.error("accountant", f"{accountant_name!r} cannot account for this event: {exc}") from None
    return BudgetSpec(name, "event", max_epsilon, parameters, timeout=entry_timeout(entry, settings), max_delta=max_delta)


def _settings(path: str, table: Any) -> GateSettings:
    entry = Table(path, "gate", None, table, {"seed", "false_alarm_rate", "samples", "accuracy_samples", "confidence_level", "workers",
                                                 "timeout", "memory_limit", "sequential"})
    memory_limit = DEFAULT_MEMORY_LIMIT
    if entry.has("memory_limit"):
        try:
            memory_limit = parse_memory(entry.table["memory_limit"])
        except DPAuditError as exc:
            raise entry.error("memory_limit", str(exc)) from None
    return GateSettings(
        seed=entry.get("seed", int, 0, check=lambda v: v >= 0, rule=">= 0"),
        false_alarm_rate=entry.get("false_alarm_rate", float, None, check=lambda v: 0 < v < 1, rule="in (0, 1)"),
        samples=entry.get("samples", int, 1_000_000, **AUDIT_SAMPLES),
        accuracy_samples=entry.get("accuracy_samples", int, 100_000, **RUNS),
        confidence_level=entry.get("confidence_level", float, 0.99, **CONFIDENCE),
        workers=entry.get("workers", int, None, **POSITIVE_INT),
        timeout=entry.get("timeout", float, None, **TIMEOUT),
        memory_limit=memory_limit,
        sequential=entry.get("sequential", bool, True),
    )


def load_config(path: str | Path) -> GateConfig:
    """Read and validate a gate configuration; raises ConfigError naming file, entry and key."""
    path = Path(path)
    label = str(path)
    try:
        document = tomllib.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{label}: file not found") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{label}: not valid TOML: {exc}") from exc
    except RecursionError:  # arrays or inline tables nested thousands deep: no gate file looks like that
        raise ConfigError(f"{label}: not a gate file: its arrays or tables are nested too deeply to be read") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: cannot read: {exc}") from exc
    unknown = sorted(set(document) - {"gate", "audit", "accuracy", "budget", "score_audit", "training_audit", "replay"})
    if unknown:
        raise ConfigError(f"{label}: unknown section {unknown[0]!r} (allowed: [gate], [[audit]], [[accuracy]], [[budget]], "
                          "[[score_audit]], [[training_audit]], [[replay]])")
    for section in ("audit", "accuracy", "budget", "score_audit", "training_audit", "replay"):
        if section in document and not isinstance(document[section], list):
            raise ConfigError(f"{label}: [{section}] must be an array of tables: write [[{section}]]")
    settings = _settings(label, document.get("gate", {}))
    audits = tuple(_audit(label, i, t, settings) for i, t in enumerate(document.get("audit", [])))
    accuracy = tuple(_accuracy(label, i, t, settings) for i, t in enumerate(document.get("accuracy", [])))
    budgets = tuple(_budget(label, i, t, settings) for i, t in enumerate(document.get("budget", [])))
    score_audits = tuple(parse_score_audit(label, i, t, settings) for i, t in enumerate(document.get("score_audit", [])))
    score_audits += tuple(parse_training_audit(label, i, t, settings) for i, t in enumerate(document.get("training_audit", [])))
    replays = tuple(parse_replay(label, i, t, settings) for i, t in enumerate(document.get("replay", [])))
    names = [spec.name for spec in (*audits, *accuracy, *budgets, *score_audits, *replays)]
    names += [replay_name(spec.name) for spec in audits if spec.replay]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"{label}: entry name {duplicates[0]!r} is used more than once; names must be unique")
    if not names:
        raise ConfigError(f"{label}: no [[audit]], [[accuracy]], [[budget]], [[score_audit]], [[training_audit]] or [[replay]] entries")
    return GateConfig(label, settings, audits, accuracy, budgets, score_audits, replays)
