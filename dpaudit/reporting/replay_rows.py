"""How a ``[[replay]]`` gate row reads in every report: the verdict line, the details, the Markdown table."""

from __future__ import annotations

from typing import Any

from .text import format_number, markdown_cell, visible

__all__ = ["replay_verdict", "replay_markdown", "replay_line"]


def _state(row: dict[str, Any]) -> str:
    if row.get("violated"):
        return "VIOLATED"
    return "pass (draws diverge: audit statistically)" if row.get("control_flow_diverges") else "pass"


def replay_verdict(row: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(status, verdict, details) of a completed replay row."""
    verdict = (f"{_state(row)}: measured shift implies epsilon >= {format_number(row.get('epsilon_lower'), 4)} "
               f"(claim: {row.get('claim')}); max shift {format_number(row.get('max_shift'), 4)}")
    details = [f"pairs: {row.get('pairs')} ({row.get('decided')} decided, {row.get('diverging')} diverging, "
               f"{row.get('undecided')} undecided)"]
    if row.get("divergence"):
        details.append(f"draws diverge: {row['divergence']}")
    if row.get("bound"):
        details.append(f"worst pair d = {row['worst_pair'][0]}, d_prime = {row['worst_pair'][1]} ({row['bound']})")
    elif row.get("reason"):
        details.append(f"worst pair: {row['reason']}")
    return ("passed" if row["passed"] else "failed"), verdict, details


def replay_markdown(rows: list[dict[str, Any]], error_cell: Any) -> list[str]:
    """The Markdown section of the replay rows (empty without rows)."""
    if not rows:
        return []
    lines = ["## Record/replay", "", "| name | claim | pairs (decided / diverging / undecided) | max shift | epsilon_lower "
             "| verdict |", "|---|---|---|---|---|---|"]
    for row in rows:
        if row.get("error"):
            lines.append(f"| {markdown_cell(row['name'])} | {markdown_cell(row.get('claim'))} | - | - | - | {error_cell(row)} |")
            continue
        lines.append(f"| {markdown_cell(row['name'])} | {markdown_cell(row['claim'])} | {row['pairs']} ({row['decided']} / {row['diverging']} / "
                     f"{row['undecided']}) | {format_number(row['max_shift'], 4)} | "
                     f"{format_number(row['epsilon_lower'], 4)} | {_state(row)} |")
    return lines + [""]


def replay_line(row: dict[str, Any], where: str) -> str:
    """One line for the command line's summary of a completed replay row."""
    return (f"replay   {where}{visible(row['name'])}: epsilon >= {format_number(row['epsilon_lower'], 4)} from a max shift of "
            f"{format_number(row['max_shift'], 4)} over {row['pairs']} pairs ({visible(row['claim'])}) {_state(row)}")
