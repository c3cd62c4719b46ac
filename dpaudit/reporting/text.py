"""Text tables and strict JSON, shared by the command line and the report writers."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

from .._json import json_ready

__all__ = ["format_number", "format_table", "to_json", "json_ready"]


def format_number(value: Any, digits: int = 6) -> str:
    """Compact human form of a number; None is shown as a dash."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return f"{value:.{digits}g}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain-text table with left-aligned columns."""
    cells = [[format_number(c) for c in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    return "\n".join(lines)


def to_json(value: Any) -> str:
    """Strict JSON (no NaN/Infinity literals), indented."""
    return json.dumps(json_ready(value), indent=2, allow_nan=False)
