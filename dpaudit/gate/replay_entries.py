"""``[[replay]]`` gate entries: record/replay a mechanism on adjacent pairs before the statistical audits.

```toml
[[replay]]
name = "mean-replay"
mechanism = "mypackage.stats:dp_mean"     # or example = "laplace"
neighbours = "mypackage.stats:pairs"      # or d = [...] and d_prime = [...], or generated = "datasets" / "statdp"
epsilon = 1.0                             # the claim (default: the mechanism's .privacy), or instead:
# event = "Gaussian(2.0)"
delta = 0.0
generated = "datasets"                    # hypothesis-generated pairs: "datasets" (records) or "statdp" (query vectors)
count = 200                               # how many generated pairs; length = 8 (records or answers per pair)
neighbouring = "add_remove"               # of the generated datasets
seeds = 3
timeout = 60
```
The entry fails (exit 1) when a measured shift implies an epsilon (a lower bound) above the claim; a
mechanism that cannot be instrumented is an error (exit 3). Diverging draws are reported, not failed.

An ``[[audit]]`` entry with ``replay = true`` gets the same replay of its own mechanism, pairs and claim
(``audit_replay``), as a row named "NAME (replay)"; its statistical audit runs as usual after it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .mechanism_fields import entry_mechanism, entry_pairs
from .tables import DELTA, EPSILON, Table, entry_event, entry_timeout

__all__ = ["ReplaySpec", "parse_replay", "audit_replay", "replay_name", "run_replay_entry", "replay_error_row"]


@dataclass(frozen=True)
class ReplaySpec:
    name: str
    mechanism: Any
    pairs: tuple[tuple[Any, Any], ...]
    epsilon: float | None
    delta: float | None
    event: Any
    seed: int
    seeds: int
    source: str
    claim_text: str
    timeout: float | None = None
    neighbours: Any = None  # a callable returning the pairs (called when the entry runs)
    generated: tuple[str, int, int, str] | None = None  # (kind, count, length, neighbouring)


def parse_replay(path: str, index: int, table: Any, settings: Any) -> ReplaySpec:
    """Validate one [[replay]] table (errors name file, entry and key)."""
    entry = Table(path, "replay", index, table, {"name", "mechanism", "example", "neighbours", "d", "d_prime", "epsilon",
                                                   "delta", "event", "generated", "count", "length", "neighbouring", "seed",
                                                   "seeds", "timeout"})
    name = entry.get("name", str)
    mechanism, example, source = entry_mechanism(entry)
    generated = None
    if entry.has("generated"):
        if entry.has("neighbours") or entry.has("d") or entry.has("d_prime"):
            raise entry.error("generated", "give generated pairs or neighbours / d and d_prime, not both")
        kind = entry.get("generated", str, check=lambda v: v in ("datasets", "statdp"), rule='"datasets" or "statdp"')
        generated = (kind, entry.get("count", int, 200, check=lambda v: v >= 1, rule=">= 1"),
                     entry.get("length", int, 8, check=lambda v: v >= 1, rule=">= 1"),
                     entry.get("neighbouring", str, "add_remove", check=lambda v: v in ("add_remove", "replace_one"),
                               rule='"add_remove" or "replace_one"'))
        pairs: Any = ()
    else:
        pairs = entry_pairs(entry, example)
    if entry.has("epsilon") and entry.has("event"):
        raise entry.error("event", "give epsilon (with delta) or event, not both")
    event, claim_text = None, ""
    if entry.has("event"):
        event, claim_text = entry_event(entry), entry.get("event", str)
    epsilon = entry.get("epsilon", float, **EPSILON) if entry.has("epsilon") else None
    delta = entry.get("delta", float, **DELTA) if entry.has("delta") else None
    if event is None and epsilon is None:
        privacy = example.mechanism.privacy if example is not None else getattr(mechanism, "privacy", None)
        if privacy is None:
            raise entry.error("epsilon", "the claim is missing: give epsilon (and delta) or event; the mechanism declares "
                                         "no .privacy")
        epsilon, delta = privacy.epsilon, privacy.delta if delta is None else delta
    if event is None:
        claim_text = f"epsilon {epsilon:g}, delta {0.0 if delta is None else delta:g}"
    return ReplaySpec(name=name, mechanism=mechanism, pairs=() if callable(pairs) else tuple(pairs),
                      neighbours=pairs if callable(pairs) else None, epsilon=epsilon, delta=delta, event=event,
                      seed=entry.get("seed", int, settings.seed, check=lambda v: v >= 0, rule=">= 0"),
                      seeds=entry.get("seeds", int, 3, check=lambda v: v >= 2, rule=">= 2"), source=source,
                      claim_text=claim_text, timeout=entry_timeout(entry, settings), generated=generated)


def replay_name(audit_name: str) -> str:
    """The name of the replay row of an ``[[audit]]`` entry with ``replay = true``."""
    return f"{audit_name} (replay)"


def audit_replay(spec: Any, seed: int) -> ReplaySpec:
    """The replay of an ``[[audit]]`` entry (an AuditSpec with ``replay = true``): its mechanism, its pairs (or
    neighbours callable) and its (epsilon, delta) claim, seeded with the gate seed."""
    return ReplaySpec(name=replay_name(spec.name), mechanism=spec.mechanism, pairs=tuple(spec.pairs),
                      neighbours=spec.neighbours, epsilon=spec.epsilon, delta=spec.delta, event=None, seed=seed,
                      seeds=3, source=spec.source, claim_text=f"epsilon {spec.epsilon:g}, delta {spec.delta:g}",
                      timeout=spec.timeout)


def _pairs_of(spec: ReplaySpec) -> list[tuple[Any, Any]]:
    if spec.generated is not None:
        from ..replay import generated_pairs

        kind, count, length, neighbouring = spec.generated
        return generated_pairs(kind, count, length=length, neighbouring=neighbouring, seed=spec.seed)
    if spec.neighbours is not None:
        from .._loading import pairs_from

        return pairs_from(spec.neighbours, f"neighbours of {spec.name!r}")
    return list(spec.pairs)


def run_replay_entry(spec: ReplaySpec) -> dict[str, Any]:
    """Replay the entry's pairs; the row the reports show."""
    from ..replay import replay_pairs

    started = time.perf_counter()
    claim = {"event": spec.event} if spec.event is not None else {"epsilon": spec.epsilon, "delta": spec.delta}
    result = replay_pairs(spec.mechanism, _pairs_of(spec), seed=spec.seed, seeds=spec.seeds, **claim)
    worst = result.worst
    return {"name": spec.name, "kind": "replay", "passed": not result.violated,
            "status": "FAILED" if result.violated else "PASSED", "violated": result.violated,
            "control_flow_diverges": result.control_flow_diverges, "verdict": result.verdict,
            "max_shift": result.max_shift, "epsilon_lower": result.epsilon_lower, "claim": spec.claim_text,
            "pairs": len(result.pairs), "decided": result.decided, "diverging": result.diverging,
            "undecided": result.undecided, "divergence": worst.divergence, "reason": worst.reason,
            "bound": worst.bound, "worst_pair": [worst.to_dict()["d"], worst.to_dict()["d_prime"]],
            "seconds": time.perf_counter() - started, "source": spec.source}


def replay_error_row(spec: ReplaySpec, error: Any, seconds: float) -> dict[str, Any]:
    return {"name": spec.name, "kind": "replay", "passed": False, "status": "ERROR", "error": error.to_dict(),
            "seconds": seconds, "source": spec.source, "violated": False, "control_flow_diverges": False,
            "claim": spec.claim_text, "max_shift": None, "epsilon_lower": None}
