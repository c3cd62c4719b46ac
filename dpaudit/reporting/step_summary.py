"""A compact Markdown summary of a gate run for a CI job page (GitHub's ``$GITHUB_STEP_SUMMARY``).

The summary has no images or relative links (the job page cannot show them): the verdict, the whole
gate's false-alarm bound and one table row per entry, failures first, with the witness of each finding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._entries import entries
from .text import markdown_cell

__all__ = ["markdown_summary", "append_step_summary"]

_ICONS = {"passed": "pass", "failed": "**FAIL**", "error": "**ERROR**", "skipped": "skipped"}
_ORDER = {"failed": 0, "error": 1, "skipped": 2, "passed": 3}


def _cell(text: str) -> str:
    return markdown_cell(" ".join(str(text).split(" ")))


def markdown_summary(result: Any) -> str:
    """Markdown: a heading with the verdict, one line of totals and a table of every entry."""
    cases = sorted(entries(result), key=lambda c: _ORDER[c.status])
    count = {s: sum(1 for c in cases if c.status == s) for s in _ORDER}
    status = getattr(result, "status", "PASSED" if result.passed else "FAILED")
    lines = [f"### dpaudit check {_cell(result.config)}: {status}", "",
             f"{count['passed']} passed, {count['failed']} failed, {count['error']} could not be completed, {count['skipped']} skipped "
             f"in {float(result.seconds):.1f} s; seed {result.seed}; false-alarm bound of the whole gate "
             f"{float(result.false_alarm_bound):.3g}. Audit numbers are lower bounds, budget numbers upper bounds.", "",
             "| entry | kind | result | verdict |", "|---|---|---|---|"]
    for case in cases:
        detail = case.verdict
        if case.status == "failed" and case.details:
            detail += " — " + case.details[0]
        lines.append(f"| {_cell(case.name)} | {case.kind} | {_ICONS[case.status]} | {_cell(detail)} |")
    return "\n".join(lines) + "\n"


def append_step_summary(result: Any, path: str | Path) -> Path:
    """Append the summary to ``path`` (the file GitHub Actions shows on the job page)."""
    target = Path(path)
    with target.open("a", encoding="utf-8") as handle:
        handle.write(markdown_summary(result) + "\n")
    return target
