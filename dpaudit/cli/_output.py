"""Shared command-line plumbing: JSON arguments in; JSON on stdout with the summary on stderr, or the summary alone, out."""

from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import InvalidArgument
from ..reporting import to_json, visible

__all__ = ["emit", "json_argument", "positive_seconds", "sample_count", "capped_workers", "expand_paths"]


def expand_paths(args: Any, *names: str) -> None:
    """Expand a leading ``~`` in the path arguments ``names`` of ``args`` (a quoted ``'~/out'`` reaches dpaudit
    unexpanded: it means the home directory there too, never a folder named ``~``)."""
    import os

    for name in names:
        value = getattr(args, name, None)
        if isinstance(value, str) and value.startswith("~"):
            setattr(args, name, os.path.expanduser(value))


def capped_workers(workers: int | None) -> int | None:
    """``--workers`` capped at a few per core (dpaudit._limits.cap_workers), with the note on stderr."""
    from .._limits import cap_workers

    if workers is not None and workers < 1:
        raise InvalidArgument("workers", f"--workers={workers} must be >= 1")
    capped, note = cap_workers(workers)
    if note:
        print(note.replace("workers =", "--workers"), file=sys.stderr)
    return capped


def json_argument(text: str, name: str) -> Any:
    """Parse a command-line value given as JSON; a ValueError naming the option otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidArgument(name, f"{name}={text!r} must be JSON (e.g. '[0, 1, 2]')") from exc


def emit(payload: dict[str, Any], summary: str, as_json: bool) -> None:
    """Print ``payload`` as JSON on stdout and ``summary`` on stderr, or just ``summary`` on stdout. Each
    line of the summary has its control characters shown as escapes (names and events come from users)."""
    summary = "\n".join(visible(line) for line in summary.split("\n"))
    if as_json:
        print(to_json(payload))
        print(summary, file=sys.stderr)
    else:
        print(summary)


def positive_seconds(text: str) -> float:
    """argparse type: a finite number of seconds > 0."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} must be > 0 seconds and finite")
    return value


def sample_count(text: str) -> int:
    """argparse type: a positive whole count, also written 1e6 or 1_000_000."""
    import argparse

    cleaned = text.strip().replace("_", "")
    try:
        value = float(cleaned) if any(c in cleaned for c in ".eE") else int(cleaned)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (examples: 1000000, 1e6, 1_000_000)") from None
    if isinstance(value, float) and not (value.is_integer() and value < 2**63):
        raise argparse.ArgumentTypeError(f"{text!r} must be a whole number")
    from .._limits import MAX_SAMPLES

    if int(value) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    if int(value) > MAX_SAMPLES:
        raise argparse.ArgumentTypeError(f"{text!r} must be at most {MAX_SAMPLES:.0e} (an audit's plan of blocks must fit in memory)")
    return int(value)
