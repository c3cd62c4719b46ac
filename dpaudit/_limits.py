"""Resource bounds shared by the command line and the gate: memory per process, time, worker processes.

Defaults (each overridable): ``DEFAULT_MEMORY_LIMIT`` = 2 GiB of data segment per process, beyond what a
forked process inherits
(``$DPAUDIT_MEMORY_LIMIT``, ``[gate] memory_limit``, an entry's ``memory_limit``, ``check --memory-limit``;
"none" removes it); ``DEFAULT_ENTRY_TIMEOUT`` = 1800 s per gate entry (``[gate] timeout``, an entry's
``timeout``, ``check --timeout``); ``IMPORT_TIMEOUT`` = 300 s to import a user module (``--timeout`` of
``check`` also bounds imports); worker processes at most ``WORKERS_PER_CORE`` per core.
"""

from __future__ import annotations

import math
import os
import re

from .errors import InvalidArgument

__all__ = ["DEFAULT_MEMORY_LIMIT", "DEFAULT_ENTRY_TIMEOUT", "IMPORT_TIMEOUT", "WORKERS_PER_CORE", "MAX_SAMPLES", "parse_memory",
           "process_memory_limit", "memory_limit_note", "format_bytes", "cap_workers"]

DEFAULT_MEMORY_LIMIT = 2 * 2**30
DEFAULT_ENTRY_TIMEOUT = 1800.0
IMPORT_TIMEOUT = 300.0
WORKERS_PER_CORE = 4
#: Most samples per input an audit or accuracy check may be given: its blocks are planned up front (one entry
#: per 65,536 samples), and at 10^11 an audit already runs for hours; beyond it the plan alone exhausts memory.
MAX_SAMPLES = 10**11
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


def parse_memory(value: object, name: str = "memory_limit") -> int | None:
    """Bytes from 2147483648, "2GiB", "512MB" or "1.5 GiB"; None for "none", "0" or 0 (no limit)."""
    if isinstance(value, bool):
        raise InvalidArgument(name, f"{name}={value!r} must be a size such as '2GiB' or 'none'")
    if isinstance(value, (int, float)):
        number, unit = float(value), ""
    else:
        match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:[eE][0-9]+)?)\s*([A-Za-z]*)\s*", str(value))
        if str(value).strip().lower() in ("none", "unlimited"):
            return None
        if not match or match.group(2).lower() not in _UNITS:
            raise InvalidArgument(name, f"{name}={value!r} must be a size such as '2GiB', '512MB' or 'none'")
        number, unit = float(match.group(1)), match.group(2).lower()
    if not math.isfinite(number) or number < 0:
        raise InvalidArgument(name, f"{name}={value!r} must be a size >= 0 (0 or 'none': no limit)")
    size = int(number * _UNITS[unit])
    if 0 < size < 64 * 2**20:
        raise InvalidArgument(name, f"{name}={value!r} is below 64 MiB: no Python process fits")
    return size or None


def process_memory_limit() -> int | None:
    """The memory bound of a command's process: $DPAUDIT_MEMORY_LIMIT, else DEFAULT_MEMORY_LIMIT."""
    text = os.environ.get("DPAUDIT_MEMORY_LIMIT")
    return DEFAULT_MEMORY_LIMIT if text is None or not text.strip() else parse_memory(text, "DPAUDIT_MEMORY_LIMIT")


def format_bytes(size: int | None) -> str:
    if size is None:
        return "no limit"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} bytes"


def memory_limit_note(limit: int | None = None) -> str:
    """What the memory bound is and how to raise it, for error messages."""
    limit = process_memory_limit() if limit is None else limit
    return (f"the memory limit is {format_bytes(limit)} per process (raise it with $DPAUDIT_MEMORY_LIMIT, e.g. 8GiB, "
            "or memory_limit in the gate file)")


def cap_workers(workers: int | None) -> tuple[int | None, str | None]:
    """``workers`` capped at WORKERS_PER_CORE x the cores, and a note when it was capped."""
    cores = os.cpu_count() or 1
    if workers is None or workers <= WORKERS_PER_CORE * cores:
        return workers, None
    capped = WORKERS_PER_CORE * cores
    return capped, (f"note: workers = {workers} capped at {capped} ({WORKERS_PER_CORE} per core, {cores} "
                    f"core{'s' if cores != 1 else ''}): more processes than that only compete for the same cores")
