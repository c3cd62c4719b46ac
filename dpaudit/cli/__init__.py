"""The ``dpaudit`` command line: argv -> library -> report -> exit code.

Exit codes of every command: 0 pass; 1 a privacy or accuracy finding (violation, regression, rejected
theorem, exceeded budget) and nothing else; 2 usage or configuration error; 3 a check could not be
completed (a mechanism raised or crashed, a timeout, an I/O error); 130 interrupted. Failures print one
line on stderr, never a traceback. Summaries go to stderr where a command also writes machine output to
stdout.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from ..errors import ClusterError, DPAuditError, MechanismError
from . import accuracy, audit, budget, check, replay, scores

__all__ = ["main", "build_parser", "EXIT_OK", "EXIT_FINDING", "EXIT_USAGE", "EXIT_INCOMPLETE", "EXIT_INTERRUPTED",
           "EXIT_CODES_HELP"]

EXIT_OK, EXIT_FINDING, EXIT_USAGE, EXIT_INCOMPLETE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
EXIT_VIOLATION = EXIT_FINDING  # the older name

EXIT_CODES_HELP = """exit codes:
  0    pass
  1    a privacy or accuracy finding: violation, regression, rejected theorem, exceeded budget
  2    usage or configuration error (nothing was run)
  3    a check could not be completed: a mechanism raised or crashed, a timeout, an I/O error
  130  interrupted (Ctrl-C)"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dpaudit", description="Differential-privacy accounting, auditing and CI gating.",
                                     epilog=EXIT_CODES_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
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


def _fail(message: str, code: int) -> int:
    text = " ".join(str(message).split()) or "no message"
    print(f"dpaudit: {'error' if code == EXIT_USAGE else 'could not complete'}: {text}", file=sys.stderr)
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
        return int(args.handler(args))
    except KeyboardInterrupt:
        print("dpaudit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into `head`: not an error of ours
        try:
            sys.stderr.close()
        finally:
            return EXIT_OK
    except (MechanismError, ClusterError) as exc:
        return _fail(exc, EXIT_INCOMPLETE)
    except (DPAuditError, ValueError, TypeError) as exc:
        return _fail(exc, EXIT_USAGE)
    except OSError as exc:  # I/O: unwritable report, missing directory, full disk
        detail = f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename else str(exc)
        return _fail(f"I/O error: {detail}", EXIT_INCOMPLETE)
    except MemoryError:
        return _fail("out of memory", EXIT_INCOMPLETE)
    except Exception as exc:  # anything else: never a traceback, never the finding code
        return _fail(f"internal error ({type(exc).__name__}: {exc})", EXIT_INCOMPLETE)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
