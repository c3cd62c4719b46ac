"""``dpaudit check CONFIG.toml``: run a gate configuration.

Exit codes: 0 every entry passed; 1 a privacy or accuracy finding (violation, regression, rejected theorem,
exceeded budget); 2 a usage or configuration error (nothing was run); 3 an entry could not be completed
(it raised, crashed or timed out) and nothing was found elsewhere; 130 interrupted. Every entry runs
isolated; one line per entry is printed on stderr as it finishes, and the report carries every result.

Outputs for CI: ``--junit FILE`` (JUnit XML, one test case per entry), ``--report DIR`` (report.md,
self-contained report.html, report.json, figures) and, when ``$GITHUB_STEP_SUMMARY`` is set, a Markdown
summary appended to that file. Output paths are checked before anything runs (an unwritable one: exit 3).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, check_writable_directory, check_writable_file
from ..errors import ConfigError
from ._output import emit, positive_seconds

__all__ = ["register", "entry_line", "EXIT_FINDING", "EXIT_INCOMPLETE"]

EXIT_FINDING, EXIT_INCOMPLETE = 1, 3


def _read_baseline(path: str) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: baseline file not found (create one with: dpaudit check CONFIG --write-baseline {path})") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: baseline is a directory, expected a JSON file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: baseline is not readable JSON: {exc}") from exc


def _error_text(row: dict[str, Any]) -> str:
    error = row["error"]
    return f"ERROR ({error['type']}: {error['message']})"


def entry_line(kind: str, row: dict[str, Any], config: str = "") -> str:
    """One line for a finished gate entry: its numbers and verdict, or ERROR with the exception."""
    from ..reporting import format_number

    where = f"{config}: " if config else ""
    if row.get("error"):
        return f"{kind:<8} {where}{row['name']}: {_error_text(row)}"
    if kind == "audit":
        regression = (row.get("regression") or {}).get("status")
        state = "VIOLATED" if row["violated"] else ("REGRESSION" if not row["passed"] else "pass")
        curve = f", curve vs {row['claim']}: mu >= {format_number(row['mu_lower'], 4)}" if row.get("mode") == "curve" else ""
        line = (f"audit    {where}{row['name']}: epsilon >= {format_number(row['epsilon_lower'], 4)} (claimed {row['epsilon']:g}, "
                f"confidence {row['confidence_level']:.4g}{curve}) {state}" + (f" [baseline: {regression}]" if regression else ""))
        return line + "".join(f"\n         warning: {w}" for w in row.get("warnings") or ())
    if kind == "accuracy":
        state = "not tested: " + row["reason"] if not row["applicable"] else ("holds" if row["holds"] else "REJECTED")
        return (f"accuracy {where}{row['name']}: P[error > {format_number(row['alpha'], 4)}] = {format_number(row['failure_rate'], 4)} "
                f"vs beta {row['beta']:g}: {state}")
    if kind == "score_audit":
        state = "VIOLATED" if row["violated"] else "pass"
        return (f"scores   {where}{row['name']}: epsilon >= {format_number(row['epsilon_lower'], 4)} (claimed {row['epsilon']:g}, "
                f"delta {row['delta']:g}, confidence {row['confidence_level']:.4g}, {row['runs']} "
                f"{'canaries' if row['one_run'] else 'runs'}) {state}")
    if "max_delta" in row and row.get("max_delta") is not None:
        return (f"budget   {where}{row['name']}: delta <= {format_number(row['delta_upper'], 5)} ({row['method']}) vs max "
                f"{row['max_delta']:g}{_risk_text(row)}: {'pass' if row['passed'] else 'EXCEEDED'}")
    return (f"budget   {where}{row['name']}: epsilon <= {format_number(row['epsilon_upper'], 5)} ({row['method']}) vs max "
            f"{row['max_epsilon']:g}{_risk_text(row)}: {'pass' if row['passed'] else 'EXCEEDED'}")


def _risk_text(row: dict[str, Any]) -> str:
    """The attack-risk assertions of a budget row, e.g. '; TPR at FPR 0.01 <= 0.031 vs max 0.05'."""
    from ..reporting import format_number

    parts = []
    for check in row.get("risk") or ():
        if check["target"] == "max_tpr_at_fpr":
            parts.append(f"TPR at FPR {check['fpr']:g} <= {format_number(check['tpr_upper'], 4)} vs max {check['max']:g}")
        else:
            parts.append(f"advantage <= {format_number(check['advantage_upper'], 4)} vs max {check['max']:g}")
    return "".join(f"; {part}" for part in parts)


def _summary(result: Any) -> str:
    lines = [entry_line("audit", row) for row in result.audits]
    lines += [entry_line("accuracy", row) for row in result.accuracy]
    lines += [entry_line("budget", row) for row in result.budgets]
    lines += [entry_line("score_audit", row) for row in getattr(result, "score_audits", ())]
    errors = f", {len(result.errors)} entr{'y' if len(result.errors) == 1 else 'ies'} could not be completed" if result.errors else ""
    lines.append(f"{result.status} (false-alarm bound {result.false_alarm_bound:.3g}, {result.seconds:.1f} s{errors})")
    return "\n".join(lines)


def _streamer(config: str) -> tuple[Any, Any]:
    """Callbacks printing one line per finished entry, and a still-running line at most every 10 s when
    stderr is not a terminal (CI logs), on stderr."""
    interactive = sys.stderr.isatty()

    def on_entry(report: Any) -> None:
        print(f"[{report.index}/{report.total}] {entry_line(report.kind, report.row)}", file=sys.stderr, flush=True)

    def heartbeat(label: str, seconds: float) -> None:
        if not interactive:
            print(f"... still running {label} ({seconds:.0f} s)", file=sys.stderr, flush=True)

    return on_entry, heartbeat


def _write_baseline(result: Any, path: str, to_json: Any) -> None:
    """Write the run's baseline atomically, and say what it holds; an incomplete run leaves the old file."""
    baseline = result.baseline()
    failed = [row["name"] for row in baseline["audits"] if row.get("error")]
    if failed:
        print(f"baseline NOT written to {path}: audit(s) {', '.join(failed)} could not be completed; "
              "the previous file (if any) is unchanged", file=sys.stderr)
        return
    atomic_write_text(path, to_json(baseline) + "\n")
    names = [row["name"] for row in baseline["audits"]]
    print(f"baseline written to {path}: {len(names)} audit(s) with their witness events"
          + (f" ({', '.join(names)})" if names else ""), file=sys.stderr)


def _step_summary(result: Any) -> None:
    """Append a Markdown summary to $GITHUB_STEP_SUMMARY when set (GitHub Actions' job page). The file is
    the CI's, not the user's: a failure to write it is a warning and never changes the exit code."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from ..reporting.step_summary import append_step_summary

    try:
        append_step_summary(result, path)
    except OSError as exc:
        print(f"warning: could not append the summary to $GITHUB_STEP_SUMMARY ({path}): {exc.strerror or exc}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    from ..gate import load_config, run_gate
    from ..reporting import to_json
    from ..reporting.gate_report import write_gate_report

    config = load_config(args.config)
    baseline = _read_baseline(args.baseline) if args.baseline else None
    # Outputs are checked before anything runs: a disk problem is found in a second, not after the audits.
    if args.report:
        check_writable_directory(args.report, "report")
    if args.write_baseline:
        check_writable_file(args.write_baseline, "baseline")
    if args.junit:
        check_writable_file(args.junit, "JUnit report")
    on_entry, heartbeat = _streamer(config.path)
    result = run_gate(config, baseline, seed=args.seed, keep_details=args.report is not None, timeout=args.timeout,
                      on_entry=on_entry, heartbeat=heartbeat, scheduler=args.scheduler)
    if args.report:
        report = write_gate_report(result, args.report)
        print(f"report written to {report}", file=sys.stderr)
    if args.write_baseline:
        _write_baseline(result, args.write_baseline, to_json)
    if args.junit:
        from ..reporting.junit import write_junit

        print(f"JUnit report written to {write_junit(result, args.junit)}", file=sys.stderr)
    _step_summary(result)
    emit(result.to_dict(), _summary(result), args.json)
    if result.findings:
        return EXIT_FINDING
    return EXIT_INCOMPLETE if result.errors else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("check", help="run every audit, accuracy check and budget assertion of a TOML config",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="gate configuration (TOML)")
    p.add_argument("--baseline", help="a previous run's JSON (--json output, or baseline.json of --report): regressions fail")
    p.add_argument("--report", metavar="DIR", help="write report.md, report.html (self-contained), report.json, baseline.json and PNG figures here "
                   "(built beside DIR and swapped in; files of an older report that this one does not produce are removed)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document on stdout")
    p.add_argument("--seed", type=int, default=None, help="override the config's [gate] seed")
    p.add_argument("--write-baseline", metavar="FILE", help="also write this run as a baseline file (atomically)")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML here (one test case per audit, accuracy check and "
                   "budget; for CI test views), atomically")
    p.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time limit per entry (an entry's own `timeout` wins); a hung entry is stopped and reported as ERROR")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run every entry as a task on a Dask cluster, e.g. tcp://host:8786 (default: $DPAUDIT_SCHEDULER)")
    p.set_defaults(handler=_run)
