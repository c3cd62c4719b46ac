"""Run one gate entry in a child process: a crash, a hang or an exception stays inside the entry.

The child (forked, so nothing needs to be pickled on the way in) starts its own process group, runs the
entry and sends the result back through a pipe. The parent waits with a deadline: on timeout, on an
interrupt, or when the child dies without an answer (``os._exit``, a fatal signal, the out-of-memory
killer), the whole group — the entry and any worker processes it started — is killed and the entry is
reported as an error. Where ``fork`` does not exist the entry runs in this process (no hard timeout).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EntryError", "run_isolated", "isolation_available"]

HEARTBEAT_SECONDS = 10.0
_DEFERRED = {signal.SIGINT, signal.SIGTERM}


class EntryError(Exception):
    """A gate entry could not be completed. ``kind`` is "error" (it raised), "timeout" or "crash"."""

    def __init__(self, kind: str, error_type: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.error_type, self.message = kind, error_type, message

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "type": self.error_type, "message": self.message}


def isolation_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _child(connection: Any, function: Callable[..., Any], arguments: tuple) -> None:
    try:
        os.setsid()  # own process group: stopped as one with its workers; terminal Ctrl-C reaches the parent only
    except OSError:
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the parent's to handle: it stops this group
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _DEFERRED)
    try:
        message: tuple = ("ok", function(*arguments))
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
        message = ("error", type(exc).__name__, str(exc))
    try:
        connection.send(message)
    except Exception as exc:  # an unpicklable result
        connection.send(("error", type(exc).__name__, f"the entry's result could not be sent back: {exc}"))
    connection.close()


def _stop(process: Any) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        if process.is_alive():
            process.kill()
    process.join(5)


def run_isolated(function: Callable[..., Any], arguments: tuple, *, timeout: float | None = None,
                 heartbeat: Callable[[float], None] | None = None) -> Any:
    """``function(*arguments)`` in a child process; raises EntryError on an exception, a timeout or a crash.
    ``heartbeat(elapsed_seconds)`` is called about every HEARTBEAT_SECONDS while the entry runs."""
    if not isolation_available():
        try:
            return function(*arguments)
        except Exception as exc:
            raise EntryError("error", type(exc).__name__, str(exc)) from exc
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    started = time.monotonic()
    process = context.Process(target=_child, args=(sender, function, arguments), daemon=False)
    # An interrupt that lands while the child is being forked must not leave it running unowned in its own
    # session: this thread holds interrupts back until the child exists, and the cleanup below covers a child
    # started at all (another thread may take the signal and raise here while start() is still returning).
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    try:
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a held-back interrupt is raised here
        sender.close()
        while True:
            elapsed = time.monotonic() - started
            wait = HEARTBEAT_SECONDS if timeout is None else max(0.0, min(HEARTBEAT_SECONDS, timeout - elapsed))
            if receiver.poll(wait):
                try:
                    message = receiver.recv()
                except (EOFError, OSError):
                    message = None
                break
            elapsed = time.monotonic() - started
            if timeout is not None and elapsed >= timeout:
                _stop(process)
                raise EntryError("timeout", "TimeoutError", f"did not finish within its timeout of {timeout:g} s; "
                                 "the entry and its worker processes were stopped")
            if heartbeat is not None:
                heartbeat(elapsed)
        if message is None:
            process.join(5)
            code = process.exitcode
            how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
            raise EntryError("crash", "ProcessCrash", f"the process running the entry {how} before reporting a result "
                             "(the mechanism called os._exit, crashed the interpreter or ran out of memory)")
        if message[0] == "ok":
            return message[1]
        raise EntryError("error", message[1], message[2])
    finally:
        receiver.close()
        sender.close()
        if process.pid is not None:  # started, perhaps interrupted right after the fork
            if process.is_alive() and sys.exc_info()[0] is None:
                process.join(2)  # it reported: let it exit on its own
            _stop(process)
