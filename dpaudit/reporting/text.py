"""Text tables, strict JSON and escaping, shared by the command line and the report writers.

Names, mechanism reprs and exception texts come from users: ``visible`` shows their control characters
(ESC, newline, carriage return, bidirectional overrides, ...) as escapes so a terminal or a CI log can
neither be steered nor shown a faked line, and ``markdown_cell`` also keeps a Markdown table's layout
and renders no HTML."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import Any

from .._json import json_ready

__all__ = ["format_number", "format_table", "to_json", "json_ready", "visible", "markdown_cell", "file_slug", "unique_slugs"]


def file_slug(name: str) -> str:
    """An entry name as a safe part of a file name (letters, digits, ``_.-``; never empty)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-") or "entry"


def unique_slugs(names: Any) -> dict[str, str]:
    """Each of ``names`` (distinct entry names) -> a file-name part no other of them gets, even on a
    case-insensitive file system: :func:`file_slug`, and where two names share it (``"a b"`` and ``"a-b"``)
    each of them followed by the first 8 hex digits of the SHA-256 of the name itself."""
    import hashlib

    names = list(dict.fromkeys(names))
    plain = {name: file_slug(name) for name in names}
    groups: dict[str, int] = {}
    for slug in plain.values():
        groups[slug.lower()] = groups.get(slug.lower(), 0) + 1
    slugs = {name: slug if groups[slug.lower()] == 1 else f"{slug}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
             for name, slug in plain.items()}
    taken: set[str] = set()
    for name in names:  # a suffixed slug may equal another name's plain one ("a-b-1234abcd"): lengthen it
        slug, digits = slugs[name], 8
        while slug.lower() in taken:
            digits += 4
            slug = f"{plain[name]}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:digits]}"
        slugs[name] = slug
        taken.add(slug.lower())
    return slugs

_INVISIBLE = {0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C, 0xFEFF}


def visible(text: object) -> str:
    """``text`` on one line with every control character shown as an escape (``\\x1b``, ``\\n``, ...)."""
    out = []
    for char in str(text):
        code = ord(char)
        if code < 0x20 or 0x7F <= code < 0xA0 or code in _INVISIBLE:
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or
                       (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"))
        else:
            out.append(char)
    return "".join(out)


def markdown_cell(text: object) -> str:
    """``text`` safe inside a Markdown table cell: visible control characters, ``|`` escaped, HTML
    special characters as entities (no tag is rendered), backticks escaped."""
    escaped = visible(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")


def format_number(value: Any, digits: int = 6, rounding: str | None = None) -> str:
    """Compact human form of a number (``digits`` significant digits); None is shown as a dash. ``rounding``
    "up" (upper bounds: accountant numbers) or "down" (lower bounds: auditor numbers) rounds in the bound's
    safe direction, so the shown number is a bound too; default: to the nearest."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and (math.isinf(value) or math.isnan(value)):
            return f"{value}"
        if rounding in ("up", "down") and value != 0:
            from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

            context = Context(prec=digits, rounding=ROUND_CEILING if rounding == "up" else ROUND_FLOOR, Emax=10**6, Emin=-10**6)
            return f"{float(context.plus(Decimal(repr(value)))):.{digits}g}"  # the float as it reads back
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
