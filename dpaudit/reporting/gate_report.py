"""The gate's report directory: report.md (readable on GitHub), report.html (self-contained: figures inline),
report.json, baseline.json and PNG figures.

The directory is dpaudit's own (``dpaudit._io.report_directory``): new, empty, or holding an earlier
dpaudit report (its ``manifest.json``); the report is built inside it and moved in file by file, so an
interrupted or failed run leaves the previous report whole; files of a previous report that this one does
not produce are removed, and a file dpaudit did not write is never touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .._io import report_directory
from .replay_rows import replay_markdown
from ._entries import risk_detail, score_state
from .plots import plot_audit_outputs, plot_bound_curve, plot_curve_audit, plot_curves
from .html_report import render_html
from .text import format_number, markdown_cell, to_json, unique_slugs

REPORT_FILES = ("report.md", "report.html", "report.json", "baseline.json", "audit-*.png", "budget-*.png", "curve-*.png")

__all__ = ["write_gate_report"]


def _cell(value: Any) -> str:
    return markdown_cell(format_number(value, 4))


_t = markdown_cell  # user text (names, events, messages) inside Markdown: no HTML, no column or line break


def write_gate_report(result: Any, directory: str | Path) -> Path:
    """Write the report of a gate run into ``directory`` (atomically, as a whole) and return the Markdown
    file's path."""
    with report_directory(directory, REPORT_FILES) as out:
        _write(result, out)
    return Path(directory) / "report.md"


def _error_cell(row: dict[str, Any]) -> str:
    error = row["error"]
    return _t(f"ERROR: {error['type']}: {error['message']}")


def _write(result: Any, out: Path) -> None:
    verdict = getattr(result, "status", "PASSED" if result.passed else "FAILED")
    lines = [
        f"# dpaudit gate report: {verdict}",
        "",
        f"Configuration {_t(result.config)}, seed {result.seed}, {result.seconds:.1f} s.",
        f"False-alarm bound of the whole gate: {result.false_alarm_bound:.3g} (union bound over every audit and accuracy check).",
        "Audit numbers are **lower bounds** on epsilon holding with the stated confidence; budget numbers are **upper bounds**.",
        "",
    ]
    if result.audits:
        lines += ["## Audits", "",
                  "| name | claimed (eps, delta) | epsilon_lower | ceiling | confidence | verdict | regression | witness event |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in result.audits:
            if row.get("error"):
                lines.append(f"| {_t(row['name'])} | ({_cell(row['epsilon'])}, {_cell(row['delta'])}) | - | - | - | {_error_cell(row)} | - | - |")
                continue
            regression = row.get("regression") or {}
            status = regression.get("status", "-")
            if "baseline_upper" in regression and "epsilon_lower_now" in regression:
                status += f" (now >= {regression['epsilon_lower_now']:.3f} vs baseline <= {regression['baseline_upper']:.3f})"
            verdict_cell = "VIOLATED" if row["violated"] else ("REGRESSION" if not row["passed"] else "pass")
            event = _t(row["event"])
            if row.get("mode") == "curve":  # the ceiling column is then the mu ceiling
                event = (f"curve audit against {_t(row['claim'])}: mu >= {_cell(row['mu_lower'])} (mu ceiling); worst test {event}, "
                         f"alpha <= {_cell(row['alpha_upper'])}, beta <= {_cell(row['beta_upper'])} vs claimed "
                         f"{_cell(row['claimed_beta'])}")
            lines.append(f"| {_t(row['name'])} | ({_cell(row['epsilon'])}, {_cell(row['delta'])}) | {_cell(row['epsilon_lower'])} | "
                         f"{_cell(row['ceiling'])} | {row['confidence_level']:.4g} | {verdict_cell} | {_t(status)} | {event} |")
        lines.append("")
    if result.accuracy:
        lines += ["## Accuracy theorems", "",
                  "| name | alpha | beta | failure rate [CI] | p-value | empirical (1-beta)-quantile | slack | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in result.accuracy:
            if row.get("error"):
                lines.append(f"| {_t(row['name'])} | {_cell(row['alpha'])} | {_cell(row['beta'])} | - | - | - | - | {_error_cell(row)} |")
                continue
            if not row["applicable"]:
                lines.append(f"| {_t(row['name'])} | {_cell(row['alpha'])} | {_cell(row['beta'])} | - | - | - | - | not tested: {_t(row['reason'])} |")
                continue
            lines.append(f"| {_t(row['name'])} | {_cell(row['alpha'])} | {_cell(row['beta'])} | {_cell(row['failure_rate'])} "
                         f"[{_cell(row['rate_lower'])}, {_cell(row['rate_upper'])}] | {_cell(row['p_value'])} | {_cell(row['quantile'])} | "
                         f"{_cell(row['slack'])} | {'holds' if row['holds'] else 'REJECTED'} |")
        lines.append("")
    if result.budgets:
        lines += ["## Budgets", "", "| name | method | epsilon_upper | max_epsilon | delta | verdict |", "|---|---|---|---|---|---|"]
        for row in result.budgets:
            if row.get("error"):
                lines.append(f"| {_t(row['name'])} | - | - | {_cell(row['max_epsilon'])} | - | {_error_cell(row)} |")
                continue
            if row.get("max_delta") is not None:  # an event budget checking delta at epsilon
                lines.append(f"| {_t(row['name'])} | {_t(row['method'])} | delta_upper = {_cell(row['delta_upper'])} at epsilon = "
                             f"{_cell(row['epsilon'])} | max_delta = {_cell(row['max_delta'])} | - | "
                             f"{'pass' if row['passed'] else 'EXCEEDED'} |")
                continue
            lines.append(f"| {_t(row['name'])} | {_t(row['method'])} | {_cell(row['epsilon_upper'])} | {_cell(row['max_epsilon'])} | "
                         f"{_cell(row['delta'])} | {'pass' if row['passed'] else 'EXCEEDED'} |")
        lines.append("")
        risks = [(row["name"], check) for row in result.budgets if not row.get("error") for check in row.get("risk") or ()]
        lines += [f"- {name}: {risk_detail(check)}" for name, check in risks] + ([""] if risks else [])
    score_rows = getattr(result, "score_audits", None) or []
    if score_rows:
        lines += ["## Score audits (training runs)", "",
                  "| name | file | mode | claimed (eps, delta) | epsilon_lower | mu_lower | confidence | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in score_rows:
            mode = "one run" if row.get("one_run") else "many runs"
            verdict_cell = _error_cell(row) if row.get("error") else score_state(row)
            lines.append(f"| {_t(row['name'])} | {_t(row['file'])} | {mode} | ({_cell(row['epsilon'])}, {_cell(row['delta'])}) | "
                         f"{_cell(row['epsilon_lower']) if row.get('epsilon_lower') is not None else '-'} | "
                         f"{_cell(row['mu_lower']) if row.get('mu_lower') is not None else '-'} | "
                         f"{row['confidence_level']:.4g} | {verdict_cell} |")
        lines.append("")
        checks = [(row["name"], check) for row in score_rows for check in row.get("checks") or ()]  # witnessed runs
        lines += [f"- {_t(name)}: `{_t(check['name'])}` {'FLAGGED' if check['flagged'] else 'pass'}: {_t(check['sentence'])}"
                  for name, check in checks] + ([""] if checks else [])
    warned = [(row["name"], w) for row in (*result.audits, *score_rows) for w in (row.get("warnings") or ())]
    if warned:
        lines += ["## Warnings", "", *[f"- **{_t(name)}**: {_t(warning)}" for name, warning in warned], ""]
    replay_rows = getattr(result, "replays", None) or []
    lines += replay_markdown(replay_rows, _error_cell)
    errors = [row for row in (*result.audits, *result.accuracy, *result.budgets, *score_rows, *replay_rows) if row.get("error")]
    if errors:
        lines += ["## Entries that could not be completed", "",
                  "They certify nothing; the rest of the gate ran normally (exit code 3 unless something else was found).", ""]
        lines += [f"- **{_t(row['name'])}** ({_t(row['error']['kind'])}): {_t(row['error']['type'])}: {_t(row['error']['message'])}"
                  for row in errors]
        lines.append("")
    figures = []
    slugs = unique_slugs(row["name"] for row in (*result.audits, *result.budgets))  # one file name per entry
    for row in result.audits:
        audit_result = result.audit_results.get(row["name"])
        slug = slugs[row["name"]]
        if row.get("mode") == "curve":
            path = plot_curve_audit(audit_result, out / f"curve-{slug}.png", f"{row['name']}: certified trade-off points vs claim")
            if path:
                figures += [f"### {_t(row['name'])}", "", f"Pair d = {_t(row['pair'][0])}, d_prime = {_t(row['pair'][1])}; "
                            f"claim: {_t(row['claim'])}.", "", f"![{slug} curve]({path.name})", ""]
            continue
        outputs = plot_audit_outputs(audit_result, out / f"audit-{slug}-outputs.png", f"{row['name']}: outputs and witness event")
        curve = plot_bound_curve(audit_result, out / f"audit-{slug}-bound.png", f"{row['name']}: certified bound vs samples")
        if outputs or curve:
            figures += [f"### {_t(row['name'])}", "", f"Pair d = {_t(row['pair'][0])}, d_prime = {_t(row['pair'][1])}; witness: "
                        f"{_t(row['event'])} ({_t(row['direction'])}).", ""]
            figures += [f"![{slug} {kind}]({path.name})" for kind, path in (("outputs", outputs), ("bound", curve)) if path]
            figures.append("")
    for row in result.budgets:
        if row["name"] not in result.budget_curves:
            continue
        xs, curves, length_key = result.budget_curves[row["name"]]
        quantity, limit = ("delta", row["max_delta"]) if row.get("max_delta") is not None else ("epsilon", row["max_epsilon"])
        path = plot_curves(xs, curves, out / f"budget-{slugs[row['name']]}.png", f"{row['name']}: {quantity} upper bound vs {length_key}",
                           length_key, f"{quantity} (upper bound)", limit=limit, limit_label=f"max_{quantity} = {limit:g}")
        figures += [f"### {_t(row['name'])}", "", f"![{slugs[row['name']]} budget]({path.name})", ""]
    if figures:
        lines += ["## Figures", "", *figures]
    (out / "report.md").write_text("\n".join(lines).rstrip() + "\n")
    (out / "report.json").write_text(to_json(result.to_dict()) + "\n")
    (out / "baseline.json").write_text(to_json(result.baseline()) + "\n")
    (out / "report.html").write_text(render_html(result, out, slugs.__getitem__), encoding="utf-8")
