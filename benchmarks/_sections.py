"""A benchmark report made of sections: run the chosen ones, and with ``--only`` put them into the existing report."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _timing import machine_line

from dpaudit._io import atomic_write_text
from dpaudit.reporting import json_ready

Section = tuple[str, Callable[[], tuple[list[str], object]]]


def merge_sections(old: str, fresh: dict[str, list[str]], note: str, headings: dict[str, str]) -> str:
    """The report ``old`` with the sections in ``fresh`` (name -> lines, each section found by the start of its
    heading in ``headings``) replaced and ``note`` after its header."""
    blocks: list[list[str]] = [[]]
    for line in old.rstrip("\n").split("\n"):
        if line.startswith("## ") or line.startswith("Total "):
            blocks.append([])
        blocks[-1].append(line)
    for name, lines in fresh.items():
        index = next((i for i, block in enumerate(blocks) if block[0].startswith(headings[name])), None)
        if index is None:
            blocks.insert(len(blocks) - 1 if blocks[-1][0].startswith("Total ") else len(blocks), lines)
        else:
            blocks[index] = lines
    while blocks[0] and not blocks[0][-1]:
        blocks[0].pop()
    blocks[0] += ["", note, ""]
    return "\n".join("\n".join(block) for block in blocks) + "\n"


def write_sections(path: Path, header: list[str], data: dict, sections: Sequence[Section], headings: dict[str, str],
                   skip: Sequence[str], only: Sequence[str] | None) -> str:
    """Run ``sections`` (name, function -> (lines, data)) but those in ``skip`` or, with ``only``, those not in it;
    write ``path`` (a .md report, beside it its .json) and return the report's text. With ``only`` and an existing
    report, the sections run replace theirs (``merge_sections``) and their data replace theirs in the JSON."""
    started = time.perf_counter()
    lines = list(header)
    fresh: dict[str, list[str]] = {}
    for name, section in sections:
        if name in skip or (only is not None and name not in only):
            continue
        section_lines, data[name] = section()
        lines += section_lines
        fresh[name] = section_lines
    json_path = path.with_suffix(".json")
    if only is not None and path.exists():
        note = (f"Re-run {datetime.date.today()} with `--only {' '.join(only)}` ({machine_line()}): those sections; "
                "the others are from the run above.")
        text = merge_sections(path.read_text(), fresh, note, headings)
        data = {**json.loads(json_path.read_text()), **{name: data[name] for name in fresh}}
    else:
        lines.append(f"Total {time.perf_counter() - started:.0f} s.")
        text = "\n".join(lines) + "\n"
    atomic_write_text(path, text)
    atomic_write_text(json_path, json.dumps(json_ready(data), indent=1) + "\n")
    return text
