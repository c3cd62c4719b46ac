"""Fields shared by the gate's mechanism entries ([[audit]], [[replay]]): the mechanism, its example, its pairs."""

from __future__ import annotations

from typing import Any

from .._loading import pairs_from
from ..errors import DPAuditError
from .tables import Table

__all__ = ["entry_example", "entry_mechanism", "entry_pairs"]


def entry_example(entry: Table) -> Any:
    """The catalog example named in ``example``."""
    from ..mechanisms import examples

    name = entry.get("example", str)
    found = {example.name: example for example in examples()}
    if name not in found:
        raise entry.error("example", f"no example named {name!r} (known: {', '.join(sorted(found))})")
    return found[name]


def entry_pairs(entry: Table, example: Any) -> tuple[tuple[Any, Any], ...]:
    """The adjacent pairs: ``neighbours`` (pairs, or a callable called when the entry runs), ``d``/``d_prime``,
    or the example's own."""
    given = [key for key in ("neighbours", "d") if entry.has(key)]
    if entry.has("d_prime") and not entry.has("d"):
        raise entry.error("d", "is required with d_prime")
    if len(given) > 1:
        raise entry.error("neighbours", "give either neighbours or d/d_prime, not both")
    if entry.has("d"):
        if not entry.has("d_prime"):
            raise entry.error("d_prime", "is required with d")
        return ((entry.table["d"], entry.table["d_prime"]),)
    if entry.has("neighbours"):
        value = entry.table["neighbours"]
        if isinstance(value, str):
            loaded = entry.load("neighbours")
            if callable(loaded):
                return loaded  # called when the entry runs: an exception there is that entry's error
            try:
                return tuple(pairs_from(loaded, value))
            except DPAuditError as exc:
                raise entry.error("neighbours", str(exc)) from exc
        if isinstance(value, list) and value and all(isinstance(p, list) and len(p) == 2 for p in value):
            return tuple((p[0], p[1]) for p in value)
        raise entry.error("neighbours", "must be 'module:attribute' or a list of [d, d_prime] pairs")
    if example is not None:
        return tuple(tuple(pair) for pair in example.neighbours)
    raise entry.error("neighbours", "is required (or d and d_prime, or example)")


def entry_mechanism(entry: Table) -> tuple[Any, Any, str]:
    """(mechanism, example or None, a description of its source) from ``mechanism`` or ``example``."""
    if entry.has("example") == entry.has("mechanism"):
        raise entry.error("mechanism", "give exactly one of mechanism = 'module:callable' or example = 'name'")
    if entry.has("example"):
        example = entry_example(entry)
        return example.mechanism, example, f"dpaudit example {example.name!r}"
    mechanism = entry.load("mechanism")
    if not callable(mechanism):
        raise entry.error("mechanism", "must name a callable mechanism(data, size, rng)")
    return mechanism, None, entry.table["mechanism"]
