"""Typed access to the tables of a gate file, with errors that name file, entry and key, and the value
rules the entry parsers share (``config.py`` and every entry kind's own parser use them)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .._limits import MAX_SAMPLES
from .._loading import load_object
from ..errors import ConfigError, DPAuditError, MechanismError

__all__ = ["Table", "EPSILON", "DELTA", "CONFIDENCE", "POSITIVE_INT", "TIMEOUT", "AUDIT_SAMPLES", "RUNS", "entry_timeout"]


class Table:
    """Typed access to one table of the config; every error names file, entry and key."""

    def __init__(self, path: str, section: str, index: int | None, table: Any, allowed: set[str]) -> None:
        self.path, self.section, self.index = path, section, index
        if not isinstance(table, dict):
            raise self.error(None, f"must be a table, got {type(table).__name__}")
        self.table = table
        unknown = sorted(set(table) - allowed)
        if unknown:
            raise self.error(unknown[0], f"unknown key (allowed: {', '.join(sorted(allowed))})")

    @property
    def label(self) -> str:
        if self.index is None:
            return f"[{self.section}]"
        name = self.table.get("name") if isinstance(self.table, dict) else None
        return f"[[{self.section}]] #{self.index + 1}" + (f" ({name!r})" if isinstance(name, str) else "")

    def error(self, key: str | None, message: str) -> ConfigError:
        where = f"{self.path}: {self.label}" + (f", key {key!r}" if key else "")
        return ConfigError(f"{where}: {message}")

    def has(self, key: str) -> bool:
        return key in self.table

    def get(self, key: str, kind: type | tuple, default: Any = ..., *, check=None, rule: str = "") -> Any:
        if key not in self.table:
            if default is ...:
                raise self.error(key, "is required")
            return default
        value = self.table[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if isinstance(value, bool) and bool not in kinds:
            raise self.error(key, f"must be {' or '.join(k.__name__ for k in kinds)}, got a boolean")
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if int in kinds and float not in kinds and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kinds):
            raise self.error(key, f"must be {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__} {value!r}")
        if key == "name" and isinstance(value, str) and not value.strip():  # every entry kind: a name must say something
            raise self.error(key, f"{value!r} must be a non-empty name (it labels the entry's row, report and figures)")
        if check is not None and not check(value):
            raise self.error(key, f"{value!r} must be {rule}")
        return value

    def load(self, key: str) -> Any:
        spec = self.get(key, str)
        try:
            return load_object(spec, key, Path(self.path).parent)
        except MechanismError as exc:  # user code failed at import: it could not be loaded, the config is fine
            raise MechanismError(str(self.error(key, str(exc)))) from exc
        except DPAuditError as exc:
            raise self.error(key, str(exc)) from exc


EPSILON = dict(check=lambda v: math.isfinite(v) and v >= 0, rule=">= 0 and finite")
DELTA = dict(check=lambda v: 0 <= v < 1, rule="in [0, 1)")
CONFIDENCE = dict(check=lambda v: 0 < v < 1, rule="in (0, 1)")
POSITIVE_INT = dict(check=lambda v: v >= 1, rule="a positive integer")
TIMEOUT = dict(check=lambda v: math.isfinite(v) and v > 0, rule="> 0 seconds and finite")
AUDIT_SAMPLES = dict(check=lambda v: 200 <= v <= MAX_SAMPLES, rule=f"an integer in [200, {MAX_SAMPLES:.0e}]")
RUNS = dict(check=lambda v: 1 <= v <= MAX_SAMPLES, rule=f"an integer in [1, {MAX_SAMPLES:.0e}]")


def entry_timeout(entry: Table, settings: Any) -> float | None:
    """An entry's ``timeout``, else the ``[gate]`` settings' (None: the gate's default applies)."""
    return entry.get("timeout", float, settings.timeout if settings is not None else None, **TIMEOUT)




def entry_event(entry: Table, key: str = "event", text: str | None = None) -> Any:
    """The privacy event written in ``key`` (or the given ``text``), parsed safely, never evaluated; a parse
    error names the key and the column."""
    from ..events_parser import EventParseError, parse_event

    text = entry.get(key, str) if text is None else text
    try:
        return parse_event(text)
    except EventParseError as exc:
        column = f"column {exc.column}: " if exc.column is not None else ""
        raise entry.error(key, f"{column}{exc.detail} in {text!r}") from None
