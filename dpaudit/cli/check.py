"""``dpaudit check CONFIG.toml``: run a gate configuration.

Exit codes: 0 every entry passed; 1 a privacy or accuracy finding (violation, regression, rejected theorem,
exceeded budget); 2 a usage or configuration error (nothing was run); 3 an entry could not be completed
(it raised, exited, crashed, timed out or ran out of memory) and nothing was found elsewhere; 130
interrupted. Every entry runs isolated; one line per entry is printed as it finishes (on stdout, or on
stderr with ``--json``), the verdict line closes the run, and the report carries every result.

Outputs for CI: ``--junit FILE`` (JUnit XML, one test case per entry), ``--report DIR`` (report.md,
self-contained report.html, report.json, figures) and, when ``$GITHUB_STEP_SUMMARY`` is set, a Markdown
summary appended to that file. Output paths are checked before anything runs: one that would replace the
config, the baseline being read, another output or a file dpaudit did not write is refused (exit 2); an
unwritable one is exit 3.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from .._io import atomic_write_text, check_output_file, check_report_directory
from .._limits import parse_memory
from ..reporting import visible
from ..errors import ConfigError
from ._output import emit, expand_paths, positive_seconds

__all__ = ["register", "entry_line", "EXIT_FINDING", "EXIT_INCOMPLETE"]

EXIT_FINDING, EXIT_INCOMPLETE = 1, 3


def _finite(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text} is not finite")
    return value


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _read_baseline(path: str) -> dict:
    """The baseline's JSON; any problem with the file or its content is a ConfigError naming the file."""
    try:
        document = json.loads(Path(path).read_text(), parse_float=_finite, parse_constant=_no_constant)
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: baseline file not found (create one with: dpaudit check CONFIG --write-baseline {path})") from exc
    except IsADirectoryError as exc:
        raise ConfigError(f"{path}: baseline is a directory, expected a JSON file") from exc
    except RecursionError:
        raise ConfigError(f"{path}: baseline is nested too deeply to be a dpaudit baseline") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{path}: baseline is not readable JSON: {exc}") from exc
    if not isinstance(document, dict) or not isinstance(document.get("audits"), list):
        raise ConfigError(f"{path}: not a dpaudit check result (expected a JSON object with an 'audits' list)")
    for index, record in enumerate(document["audits"]):
        problem = _record_problem(record)
        if problem:
            name = record.get("name") if isinstance(record, dict) else None
            raise ConfigError(f"{path}: audits[{index}]{f' ({visible(str(name)[:80])!r})' if name is not None else ''}: {problem}")
    return document


def _record_problem(record: Any) -> str | None:
    """What is wrong with one baseline audit record (None when it can be compared against)."""
    if not isinstance(record, dict):
        return "must be an object"
    if record.get("error") or not record.get("witness"):
        return None  # no witness: nothing is compared
    n = record.get("certification_samples")
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        return f"certification_samples={n!r} must be a positive integer"
    for key in ("count_p", "count_q", "count_alpha", "count_beta"):
        if key in record:
            count = record[key]
            if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= n:
                return f"{key}={count!r} must be an integer in [0, certification_samples={n}]"
    delta = record.get("delta", 0.0)
    if not isinstance(delta, (int, float)) or isinstance(delta, bool) or not 0.0 <= delta < 1.0:
        return f"delta={delta!r} must be a number in [0, 1)"
    from ..auditor.witness import witness_from_dict

    witness = record["witness"]
    if isinstance(witness, dict) and "event" in witness and "kind" not in witness:  # a curve audit's: its event
        witness = witness["event"]
    try:
        witness_from_dict(witness)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        detail = visible(" ".join(str(exc).split()))
        return f"its witness is not a dpaudit witness event ({type(exc).__name__}: {detail[:120]})"
    return None


def _error_text(row: dict[str, Any]) -> str:
    from ..reporting import visible

    error = row["error"]
    return f"ERROR ({visible(error['type'])}: {visible(error['message'])})"


def entry_line(kind: str, row: dict[str, Any], config: str = "") -> str:
    """One line for a finished gate entry: its numbers and verdict, or ERROR with the exception. Text that
    comes from the user (names, events, messages) has its control characters shown as escapes, so no name
    can move the cursor, colour the log or start a line of its own."""
    from ..reporting import format_number, visible

    where = f"{visible(config)}: " if config else ""
    name = visible(row["name"])
    label = {"score_audit": "training" if row.get("entry") == "training_audit" else "scores"}.get(kind, kind)
    if row.get("error"):
        return f"{label:<8} {where}{name}: {_error_text(row)}"
    if kind == "audit":
        regression = (row.get("regression") or {}).get("status")
        state = "VIOLATED" if row["violated"] else ("REGRESSION" if not row["passed"] else "pass")
        curve = f", curve vs {visible(row['claim'])}: mu >= {format_number(row['mu_lower'], 4, 'down')}" if row.get("mode") == "curve" else ""
        line = (f"audit    {where}{name}: epsilon >= {format_number(row['epsilon_lower'], 4, 'down')} (claimed {row['epsilon']:g}, "
                f"confidence {row['confidence_level']:.4g}{curve}) {state}" + (f" [baseline: {visible(regression)}]" if regression else ""))
        return line + "".join(f"\n         warning: {visible(w)}" for w in row.get("warnings") or ())
    if kind == "accuracy":
        state = "not tested: " + visible(row["reason"]) if not row["applicable"] else ("holds" if row["holds"] else "REJECTED")
        return (f"accuracy {where}{name}: P[error > {format_number(row['alpha'], 4)}] = {format_number(row['failure_rate'], 4)} "
                f"vs beta {row['beta']:g}: {state}")
    if kind == "replay":
        from ..reporting.replay_rows import replay_line

        return replay_line(row, where)
    if kind == "score_audit":
        failed = [visible(str(check)) for check in row.get("failed") or () if check != "audit"]
        state = "VIOLATED" if row["violated"] else ("pass" if row.get("passed", True) else "FAILED")
        if failed and not row.get("passed", True):
            state += f" (failed: {', '.join(failed)})"
        line = (f"{label:<8} {where}{name}: epsilon >= {format_number(row['epsilon_lower'], 4, 'down')} (claimed {row['epsilon']:g}, "
                f"delta {row['delta']:g}, confidence {row['confidence_level']:.4g}, {row['runs']} "
                f"{'canaries' if row['one_run'] else 'runs'}) {state}")
        for check in row.get("checks") or ():  # the witnessed run's findings, each on its own line
            if check.get("flagged"):
                line += f"\n         {visible(str(check['name']))}: {visible(str(check['sentence']))}"
        if "update_scale" in failed:
            line += f"\n         update_scale: {visible(str(row.get('update_scale')))}"
        return line + "".join(f"\n         warning: {visible(str(w))}" for w in row.get("warnings") or ())
    if "max_delta" in row and row.get("max_delta") is not None:
        return (f"budget   {where}{name}: delta <= {format_number(row['delta_upper'], 5, 'up')} ({visible(row['method'])}) vs max "
                f"{row['max_delta']:g}{_risk_text(row)}: {'pass' if row['passed'] else 'EXCEEDED'}")
    return (f"budget   {where}{name}: epsilon <= {format_number(row['epsilon_upper'], 5, 'up')} ({visible(row['method'])}) vs max "
            f"{row['max_epsilon']:g}{_risk_text(row)}: {'pass' if row['passed'] else 'EXCEEDED'}")


def _risk_text(row: dict[str, Any]) -> str:
    """The attack-risk assertions of a budget row, e.g. '; TPR at FPR 0.01 <= 0.031 vs max 0.05'."""
    from ..reporting import format_number

    parts = []
    for check in row.get("risk") or ():
        if check["target"] == "max_tpr_at_fpr":
            parts.append(f"TPR at FPR {check['fpr']:g} <= {format_number(check['tpr_upper'], 4, 'up')} vs max {check['max']:g}")
        else:
            parts.append(f"advantage <= {format_number(check['advantage_upper'], 4, 'up')} vs max {check['max']:g}")
    return "".join(f"; {part}" for part in parts)


def _summary(result: Any) -> str:
    """The closing verdict line (every entry's line was already streamed as it finished)."""
    errors = f", {len(result.errors)} entr{'y' if len(result.errors) == 1 else 'ies'} could not be completed" if result.errors else ""
    return f"{result.status} (false-alarm bound {result.false_alarm_bound:.3g}, {result.seconds:.1f} s{errors})"


def _streamer(as_json: bool) -> tuple[Any, Any]:
    """Callbacks printing one line per finished entry (on stdout, or on stderr when stdout carries JSON),
    and a still-running line on stderr at most every 10 s when stderr is not a terminal (CI logs)."""
    interactive = sys.stderr.isatty()

    def on_entry(report: Any) -> None:
        position = f"[{report.index:>{len(str(report.total))}}/{report.total}]"
        print(f"{position} {entry_line(report.kind, report.row)}", file=sys.stderr if as_json else sys.stdout,
              flush=True)

    def heartbeat(label: str, seconds: float) -> None:
        if not interactive:
            print(f"... still running {visible(label)} ({seconds:.0f} s)", file=sys.stderr, flush=True)

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


def _capped(config: Any) -> Any:
    """The config with ``[gate] workers`` capped at a few per core (a note on stderr when it was)."""
    from dataclasses import replace

    from .._limits import cap_workers

    workers, note = cap_workers(config.settings.workers)
    if note is None:
        return config
    print(f"{config.path}: [gate] {note}", file=sys.stderr)
    return replace(config, settings=replace(config.settings, workers=workers))


def _check_outputs(args: argparse.Namespace) -> None:
    """Every output target, before anything runs (exit 2 naming the path, or 3 for a disk problem, in a second
    rather than after the audits): none may replace the config, the baseline being read, another output or a
    file dpaudit did not write."""
    from ..reporting.gate_report import REPORT_FILES

    inputs = {"the config being run": args.config, "the baseline being read (--baseline)": args.baseline}
    if args.report:
        check_report_directory(args.report, REPORT_FILES, inputs=inputs)
    files = {"--write-baseline": (args.write_baseline, "baseline"), "--junit": (args.junit, "JUnit report")}
    for flag, (path, what) in files.items():
        if path is None:
            continue
        if args.report and Path(path).parent.resolve() == Path(args.report).resolve():
            raise ConfigError(f"{flag} {path}: refused: it is inside the --report directory, which holds dpaudit's report "
                              "files only; nothing was run")
        others = {other: value for other, (value, _) in files.items() if other != flag}
        check_output_file(path, what, flag, inputs, others)


def _run(args: argparse.Namespace) -> int:
    from ..gate import load_config, run_gate
    from ..reporting import to_json

    expand_paths(args, "config", "baseline", "report", "write_baseline", "junit")
    config = load_config(args.config)
    config = _capped(config)
    if args.fixed_budget or args.write_baseline:  # a baseline records counts of the whole budget (regressions compare with them)
        config = config.with_fixed_budget()
    baseline = _read_baseline(args.baseline) if args.baseline else None
    _check_outputs(args)
    on_entry, heartbeat = _streamer(args.json)
    memory_limit = config.settings.memory_limit if args.memory_limit is None else parse_memory(args.memory_limit, "--memory-limit")
    try:
        result = run_gate(config, baseline, seed=args.seed, keep_details=args.report is not None, timeout=args.timeout,
                          on_entry=on_entry, heartbeat=heartbeat, scheduler=args.scheduler, memory_limit=memory_limit)
    except ConfigError as exc:  # the baseline does not fit this config: name its file
        if baseline is not None and str(exc).startswith("baseline:"):
            raise ConfigError(f"{args.baseline}: {str(exc).removeprefix('baseline: ')}") from None
        raise
    misfit = next((row["error"]["message"] for row in result.errors if row["error"]["type"] == "BaselineError"), None)
    if misfit is not None:  # the baseline's fault, found when the entry ran: a usage error naming the file
        raise ConfigError(f"{args.baseline}: {misfit.removeprefix('baseline: ')}")
    if args.report:
        from ..reporting.gate_report import write_gate_report  # matplotlib: imported only for a report

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
                   "(DIR must be new, empty or an earlier dpaudit report: anything else is refused; the report is built inside it and "
                   "moved in when complete; files of an older report that this one does not produce are removed, no other file is touched)")
    p.add_argument("--json", action="store_true", help="print the result as one JSON document on stdout")
    p.add_argument("--seed", type=int, default=None, help="override the config's [gate] seed")
    p.add_argument("--fixed-budget", action="store_true",
                   help="every audit draws its whole sample budget (no early stop; as [gate] sequential = false; "
                        "implied by --write-baseline)")
    p.add_argument("--write-baseline", metavar="FILE", help="also write this run as a baseline file (atomically)")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML here (one test case per audit, accuracy check and "
                   "budget; for CI test views), atomically")
    p.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time limit per entry (an entry's own `timeout` wins; default 1800) and per import of a user module; "
                   "a hung entry is stopped and reported as ERROR")
    p.add_argument("--memory-limit", metavar="SIZE", default=None,
                   help="memory per process of each entry, e.g. 8GiB or none (default: [gate] memory_limit, else 2GiB); an "
                   "entry past it is stopped and reported as ERROR")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run every entry as a task on a Dask cluster, e.g. tcp://host:8786 (default: $DPAUDIT_SCHEDULER)")
    p.set_defaults(handler=_run)
