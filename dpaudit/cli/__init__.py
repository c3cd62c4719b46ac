"""The ``dpaudit`` command line: argv -> library -> report -> exit code.

Exit codes of every command: 0 pass; 1 a privacy or accuracy finding (violation, regression, rejected
theorem, exceeded budget) and nothing else; 2 usage or configuration error; 3 a check could not be
completed (a mechanism raised or crashed, a timeout, an I/O error); 130 interrupted. Failures print one
line on stderr, never a traceback. Summaries go to stderr where a command also writes machine output to
stdout.

Every command runs in a child process (``dpaudit._isolation``) with a memory bound (``$DPAUDIT_MEMORY_LIMIT``,
default 2 GiB per process): whatever user code or an accountant does there (``sys.exit``, ``os._exit``, a
fatal signal, a ``KeyboardInterrupt`` it raises, a hang at import, exhausted memory) ends as exit 3 with one
line naming what was running, and the child dies with this process.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from .._isolation import IsolatedError, isolation_available, run_isolated
from ..errors import ClusterError, DPAuditError, MechanismError
from . import accuracy, audit, budget, check, replay, scores
from .._limits import IMPORT_TIMEOUT, memory_limit_note, process_memory_limit

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FINDING", "EXIT_USAGE", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED",
           "EXIT_CODES_HELP"]

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_VIOLATION = EXIT_FINDING  # the older name

EXIT_CODES_HELP = """exit codes:
  0    pass
  1    a privacy or accuracy finding: violation, regression, rejected theorem, exceeded budget
  2    usage or configuration error (nothing was run)
  3    a check could not be completed: a mechanism raised, exited or crashed, a timeout, exhausted memory,
       an I/O error
  130  interrupted (Ctrl-C)

limits: each command runs in a child process with at most $DPAUDIT_MEMORY_LIMIT of memory per process
(default 2GiB; e.g. 8GiB, or none); importing a user module may take at most --timeout seconds (default 300)."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpaudit", description="Differential-privacy accounting, auditing and CI gating.",
                                     epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    from .._version import __version__

    parser.add_argument("--version", action="version", version=f"dpaudit {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    budget.register(subparsers)
    audit.register(subparsers)
    accuracy.register(subparsers)
    check.register(subparsers)
    scores.register(subparsers)
    replay.register(subparsers)
    _add_exit_codes(parser)
    return parser


def _add_exit_codes(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command's --help ends with the exit codes."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                if not sub.epilog:
                    sub.epilog = EXIT_CODES_HELP
                    sub.formatter_class = argparse.RawDescriptionHelpFormatter
                _add_exit_codes(sub)


def _line(message: object, code: int) -> str:
    from ..reporting import visible

    text = visible(" ".join(str(message).split())) or "no message"
    return f"dpaudit: {'error' if code == EXIT_USAGE else 'could not complete'}: {text}"


def _fail(message: str, code: int) -> int:
    print(_line(message, code), file=sys.stderr)
    return code


def _classify(exc: BaseException) -> tuple[int, str]:
    """The exit code and the stderr line of an exception that ended a command."""
    if isinstance(exc, (MechanismError, ClusterError)):
        return EXIT_INCOMPLETE, _line(exc, EXIT_INCOMPLETE)
    if isinstance(exc, DPAuditError) and isinstance(exc.__context__, MemoryError):  # e.g. a grid past the memory limit
        return EXIT_INCOMPLETE, _line(f"out of memory: {exc}; {memory_limit_note()}", EXIT_INCOMPLETE)
    if isinstance(exc, (DPAuditError, ValueError, TypeError)):
        return EXIT_USAGE, _line(exc, EXIT_USAGE)
    if isinstance(exc, OSError):  # I/O: unwritable report, missing directory, full disk
        detail = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        return EXIT_INCOMPLETE, _line(f"I/O error: {detail}", EXIT_INCOMPLETE)
    if isinstance(exc, ImportError) and "cannot allocate memory" in str(exc).lower():  # a library mapped past the limit
        return EXIT_INCOMPLETE, _line(f"out of memory while importing ({exc}); {memory_limit_note()}", EXIT_INCOMPLETE)
    if isinstance(exc, MemoryError):
        return EXIT_INCOMPLETE, _line(f"out of memory{f' ({exc})' if str(exc) else ''}; {memory_limit_note()}", EXIT_INCOMPLETE)
    return EXIT_INCOMPLETE, _line(f"internal error ({type(exc).__name__}: {exc})", EXIT_INCOMPLETE)


_NUMERICS = (os.sep + "numpy" + os.sep, os.sep + "dpaudit" + os.sep)


def _show_warning(message: object, category: type, filename: str, lineno: int, file: object = None, line: object = None) -> None:
    """Python warnings as one plain line each, once per text; numpy's numeric RuntimeWarnings (NaN and
    infinite values, which dpaudit handles on purpose) are not shown."""
    if issubclass(category, RuntimeWarning) and any(part in filename for part in _NUMERICS):
        return
    from ..reporting import visible

    text = f"warning: {visible(message)} ({category.__name__})"
    if text not in _shown_warnings:
        _shown_warnings.add(text)
        print(text, file=sys.stderr)


_shown_warnings: set[str] = set()


def _command(args: argparse.Namespace) -> tuple[int, str | None]:
    """Run a parsed command (in the child): its exit code and the line to print, if any. SystemExit and
    KeyboardInterrupt can only come from user code here and are reported by the isolation as such."""
    import warnings

    warnings.showwarning = _show_warning
    try:
        return int(args.handler(args)), None
    except (SystemExit, KeyboardInterrupt):
        raise
    except BaseException as exc:  # noqa: BLE001 - every other failure is classified
        return _classify(exc)


def _in_process_scheduler(args: argparse.Namespace) -> bool:
    """Whether the command uses an in-process Dask scheduler (``inproc://``), reachable from this process only."""
    scheduler = getattr(args, "scheduler", None) or os.environ.get("DPAUDIT_SCHEDULER") or ""
    return str(scheduler).startswith("inproc://")


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command isolated in a child process (see the module docstring); the exit code. Where
    ``fork`` is missing, or the Dask scheduler lives in this very process (``inproc://``), it runs here."""
    if not isolation_available() or _in_process_scheduler(args):
        return int(args.handler(args))
    limit = getattr(args, "timeout", None)
    whole = limit if args.command in ("audit", "accuracy") else None  # check: --timeout is per entry
    code, line = run_isolated(_command, (args,), memory_limit=process_memory_limit(), forward_output=True,
                              timeout=whole, phase_timeout=limit or IMPORT_TIMEOUT)
    if line:
        print(line, file=sys.stderr)
    return code


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM (a cancelled CI job): the same clean stop as Ctrl-C


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (never raises, never prints a traceback). SIGTERM is
    handled like Ctrl-C: running entries and their worker processes are stopped, exit code 130."""
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        return _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: Sequence[str] | None) -> int:
    try:
        parser = build_parser()
        try:
            args = parser.parse_args(argv)
        except SystemExit as exc:  # argparse: --help (0) or a usage error (2)
            return int(exc.code or 0)
        return run_command(args)
    except KeyboardInterrupt:
        print("dpaudit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into `head`: not an error of ours
        try:
            sys.stderr.close()
        finally:
            return EXIT_OK
    except IsolatedError as exc:  # the command's child ended, crashed, hung or was ended by user code
        return _fail(f"{exc.error_type}: {exc.message}" if exc.kind == "error" else exc.message, EXIT_INCOMPLETE)
    except Exception as exc:  # anything else: never a traceback, never the finding code
        code, line = _classify(exc)
        print(line, file=sys.stderr)
        return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
