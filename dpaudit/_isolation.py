"""Run user code in a child process: nothing it does can end, hang or outlive the caller.

The child (forked, so nothing needs to be pickled on the way in) starts its own process group, runs the
function and sends the result back through a pipe. Everything that can end a process is reported as an
:class:`IsolatedError` naming what was running: an exception, ``sys.exit`` of any code, a
``KeyboardInterrupt`` raised by the code (real interrupts are the parent's: the child ignores SIGINT),
``os._exit``, a fatal signal, the out-of-memory killer, a timeout. The parent then kills the whole group:
the child and every worker process it started. A command run with ``forward_output`` (the CLI) that is
interrupted first gets SIGTERM and ``STOP_GRACE_SECONDS`` to remove its temporary files.

Bounds. ``memory_limit`` (bytes) caps the data segment of the child and of every process it forks
(``RLIMIT_DATA``: heap and private writable mappings; allocations past it raise ``MemoryError``).
``phase(text, timeout)`` inside the child names what runs now (an import, a mechanism) for the parent's
messages, and gives that step its own deadline (``phase_timeout`` of :func:`run_isolated` by default), so a
module that hangs at import is stopped.

The child dies with the parent. Its parent-death signal is SIGKILL (``prctl(PR_SET_PDEATHSIG)``, Linux),
and a watchdog process in its group holds the read end of a pipe only the parent can write: when the
parent dies, however it dies (SIGKILL included), the pipe reaches end-of-file and the watchdog kills the
group. Where ``fork`` does not exist the function runs in this process (no hard bounds).

No descendant outlives the child, whatever it does (a new session, a double fork). On Linux the child is a
child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): an orphan anywhere below it is re-parented to it rather
than to init, so its tree, read from ``/proc``, holds every process it started. When the function returns
or raises, the child ends every descendant (its watchdog excepted) before it reports; when the parent stops
it (a timeout, an interrupt), the parent freezes it (SIGSTOP) and ends its whole tree, then the child. A
child that dies on its own (a crash) leaves its orphans to the nearest subreaper above it: a child that
runs children of its own ends the orphans it adopts that it did not start.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["IsolatedError", "run_isolated", "isolation_available", "phase", "HEARTBEAT_SECONDS", "describe_exit", "describe_exit_code"]

HEARTBEAT_SECONDS = 10.0
EXIT_POLL_SECONDS = 0.5  # how often a silent child is looked at: has it ended?
STOP_GRACE_SECONDS = 2.0  # an interrupted command's child may clean up (temporary files) this long
_DEFERRED = {signal.SIGINT, signal.SIGTERM}
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_ROUNDS = 100  # rounds of "list the tree, kill it": a process may fork between the two


class IsolatedError(Exception):
    """Isolated code could not be completed. ``kind`` is "error" (it raised or exited), "timeout" or "crash"."""

    def __init__(self, kind: str, error_type: str, message: str) -> None:
        super().__init__(message)
        self.kind, self.error_type, self.message = kind, error_type, message

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "type": self.error_type, "message": self.message}


def isolation_available() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


class _Channel:
    """The child's end of the pipe, shared by its threads; silent in processes forked from the child."""

    def __init__(self, connection: Any) -> None:
        self.connection, self.pid, self.lock = connection, os.getpid(), threading.Lock()

    def send(self, message: tuple) -> bool:
        if os.getpid() != self.pid:
            return False
        with self.lock:
            self.connection.send(message)
        return True


_channel: _Channel | None = None
_phases: list[str] = []
_failed_in: list[str] = []  # the innermost phase an exception left
_bounds: list[int] = []  # the memory limit set in this child, if any
_adopter: list[int] = []  # [watchdog pid] in a child that is a subreaper; empty elsewhere
_starting = threading.Lock()  # held while a child is forked: an orphan sweep never takes a child being started


def _process_table() -> dict[int, tuple[int, str]] | None:
    """pid -> (parent pid, state letter) of every process, from /proc (None where there is no /proc)."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                data = handle.read()
            fields = data[data.rindex(b")") + 2:].split()
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
        except (OSError, ValueError, IndexError):
            continue
    return table


def _tree(table: dict[int, tuple[int, str]], root: int) -> list[int]:
    """The descendants of ``root`` in ``table`` (not ``root`` itself)."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    found, stack = [], list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except OSError:
        pass


def end_descendants(root: int | None = None, spare: set[int] | frozenset[int] = frozenset()) -> int:
    """SIGKILL every live descendant of ``root`` (default: this process) but those in ``spare`` and their trees,
    until none is left (processes that fork meanwhile are found in the next round); reap the ones that were
    this process's children. Returns how many processes were ended (0 where there is no /proc)."""
    root = os.getpid() if root is None else root
    ended: set[int] = set()
    for _ in range(_SWEEP_ROUNDS):
        table = _process_table()
        if table is None:
            return 0
        spared = set(spare)
        for pid in spare:
            spared.update(_tree(table, pid))
        alive = [pid for pid in _tree(table, root) if pid not in spared and table[pid][1] not in "ZX"]
        for pid in [pid for pid in _tree(table, root) if pid not in spared and table[pid][1] in "ZX"]:
            if table[pid][0] == os.getpid():
                _reap(pid)
        if not alive:
            break
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL)
                ended.add(pid)
            except OSError:
                pass
        for pid in alive:
            if table[pid][0] == os.getpid():
                _reap(pid)
    return len(ended)


def _adopted_orphans() -> None:
    """In a subreaper child: end the processes re-parented to it (orphans of a child that crashed), sparing
    the children it started itself (its watchdog, the children of multiprocessing, a child being started)."""
    if not _adopter or os.getpid() != (_channel.pid if _channel is not None else None):
        return
    with _starting:
        own = {_adopter[0], *(child.pid for child in multiprocessing.active_children() if child.pid)}
        end_descendants(spare=frozenset(own))


@contextmanager
def phase(text: str, timeout: float | None = None, *, bounded: bool = False) -> Iterator[None]:
    """Name the step that runs inside this block (for the parent's messages) and bound its time to
    ``timeout`` seconds (with ``bounded``, the parent's ``phase_timeout`` when no timeout is given);
    a no-op outside an isolated child."""
    channel = _channel
    if channel is None or os.getpid() != channel.pid:
        yield
        return
    _phases.append(text)
    channel.send(("phase", text, timeout, bounded))
    try:
        yield
    except BaseException:
        if not _failed_in:
            _failed_in.append(text)
        raise
    finally:
        _phases.pop()
        channel.send(("phase", _phases[-1] if _phases else None, None, False))


class _Forward:
    """sys.stdout / sys.stderr of the child: text goes to the parent's streams (which may be captured);
    a process forked from the child writes to the file descriptor instead."""

    def __init__(self, channel: _Channel, stream: str, original: Any) -> None:
        self.channel, self.stream, self.original = channel, stream, original
        self.encoding = getattr(original, "encoding", "utf-8") or "utf-8"

    def write(self, text: str) -> int:
        if text and not self.channel.send(("output", self.stream, text)):
            try:
                os.write(1 if self.stream == "stdout" else 2, text.encode(self.encoding, "replace"))
            except OSError:
                pass
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return bool(getattr(self.original, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.original.fileno()


def _set_parent_death_signal(parent: int) -> None:
    """SIGKILL this process when the thread that forked it ends (Linux); exit now if that already happened."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(1)


def _become_subreaper() -> bool:
    """Make this process the child subreaper of its tree (Linux): orphans below it are re-parented to it."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _start_watchdog(read_fd: int) -> int | None:
    """Fork a process into this group that kills the group when ``read_fd`` reaches end-of-file (the
    parent, the only writer, is gone); its pid."""
    try:
        pid = os.fork()
    except OSError:
        return None
    if pid:
        return pid
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, signal.SIG_DFL)
        os.closerange(0, read_fd)
        os.closerange(read_fd + 1, 65536)
        while os.read(read_fd, 64):
            pass
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)


def _inherited_data() -> int:
    """Bytes of data (VmData) this process holds right after the fork: what it inherited, not what it ran."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _limit_memory(limit: int | None) -> None:
    """RLIMIT_DATA at ``limit`` bytes beyond the data inherited from the forking process: a child forked from
    a large process (a notebook, a test session) must not start above its limit, where every allocation,
    even a thread's, would fail."""
    if not limit:
        return
    try:
        import resource

        which = getattr(resource, "RLIMIT_DATA", None) or resource.RLIMIT_AS
        _, hard = resource.getrlimit(which)
        limit += _inherited_data() if which == getattr(resource, "RLIMIT_DATA", None) else 0
        soft = limit if hard == resource.RLIM_INFINITY else min(limit, hard)
        resource.setrlimit(which, (soft, hard))
    except (ImportError, ValueError, OSError):
        pass


def describe_exit(error: BaseException) -> tuple[str, str]:
    """(type, message) of an exception that ended isolated code; SystemExit and KeyboardInterrupt say that
    the code tried to end the process."""
    where = f" while {(_failed_in or _phases)[-1]}" if _failed_in or _phases else ""
    if isinstance(error, SystemExit):
        return "SystemExit", f"called sys.exit({error.code!r}){where}: it may not end the process"
    if isinstance(error, KeyboardInterrupt):
        return "KeyboardInterrupt", f"raised KeyboardInterrupt{where} (not an interrupt from the user)"
    if isinstance(error, MemoryError):
        from ._limits import format_bytes

        bound = f"; the memory limit of this process is {format_bytes(_bounds[0])}" if _bounds else ""
        return "MemoryError", f"ran out of memory{where}" + (f" ({error})" if str(error) else "") + bound
    return type(error).__name__, f"{error}"


class _Stopped(BaseException):
    """Raised in a child asked to stop (SIGTERM from its parent, which was interrupted): its clean-up runs."""


def _stopped(signum: int, frame: object) -> None:
    if _channel is not None and os.getpid() != _channel.pid:  # a worker forked from the child: stop as usual
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise _Stopped


def _child(connection: Any, watch: tuple[int, int], parent: int, main_thread: bool, memory_limit: int | None,
           forward_output: bool, function: Callable[..., Any], arguments: tuple) -> None:
    global _channel, _starting
    _starting = threading.Lock()  # forked while the parent held it: a fresh one here
    read_fd, write_fd = watch
    os.close(write_fd)  # the parent alone may hold the write end: its death is the watchdog's end-of-file
    try:
        os.setsid()  # own process group: stopped as one with its workers; terminal Ctrl-C reaches the parent only
    except OSError:
        pass
    if main_thread:
        _set_parent_death_signal(parent)
    subreaper = _become_subreaper()
    watchdog = _start_watchdog(read_fd)
    _adopter[:] = [watchdog] if subreaper and watchdog is not None else []
    os.close(read_fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupts are the parent's to handle: it stops this group
    signal.signal(signal.SIGTERM, _stopped if forward_output else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _DEFERRED)
    _channel = _Channel(connection)
    _phases.clear()
    _failed_in.clear()
    if forward_output:
        sys.stdout, sys.stderr = _Forward(_channel, "stdout", sys.stdout), _Forward(_channel, "stderr", sys.stderr)
    _limit_memory(memory_limit)
    _bounds[:] = [memory_limit] if memory_limit else []
    try:
        message: tuple = ("ok", function(*arguments))
    except BaseException as exc:  # noqa: BLE001 - everything is reported to the parent
        message = ("error", *describe_exit(exc))
    if _adopter:  # nothing it started outlives it: new sessions and double forks included (they were re-parented here)
        end_descendants(spare=frozenset(_adopter))
    try:
        _channel.send(message)
    except Exception as exc:  # an unpicklable result
        _channel.send(("error", type(exc).__name__, f"the result could not be sent back: {exc}"))
    connection.close()


def _stop(process: Any) -> None:
    """End the child and everything below it: frozen first (it cannot start more), its tree ended (new
    sessions included), then its group and itself."""
    if process.is_alive():  # not yet reaped: its pid is still its own
        try:
            os.kill(process.pid, signal.SIGSTOP)
            end_descendants(process.pid)
        except OSError:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        if process.is_alive():
            process.kill()
    process.join(5)


def _write(stream: str, text: str) -> None:
    target = sys.stdout if stream == "stdout" else sys.stderr
    target.write(text)
    target.flush()


def run_isolated(function: Callable[..., Any], arguments: tuple, *, timeout: float | None = None,
                 heartbeat: Callable[[float], None] | None = None, memory_limit: int | None = None,
                 phase_timeout: float | None = None, forward_output: bool = False) -> Any:
    """``function(*arguments)`` in a child process; raises IsolatedError on an exception, an exit, a
    timeout or a crash. ``heartbeat(elapsed_seconds)`` is called about every HEARTBEAT_SECONDS while it
    runs; ``forward_output`` sends the child's sys.stdout/sys.stderr text to this process's streams."""
    if not isolation_available():
        try:
            return function(*arguments)
        except Exception as exc:
            raise IsolatedError("error", type(exc).__name__, str(exc)) from exc
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    watch = os.pipe()
    started = time.monotonic()
    main_thread = threading.current_thread() is threading.main_thread()
    process = context.Process(target=_child, args=(sender, watch, os.getpid(), main_thread, memory_limit, forward_output,
                                                   function, arguments), daemon=False)
    # An interrupt that lands while the child is being forked must not leave it running unowned in its own
    # session: this thread holds interrupts back until the child exists, and the cleanup below covers a child
    # started at all (another thread may take the signal and raise here while start() is still returning).
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _DEFERRED)
    current, phase_deadline, phase_limit = None, None, None
    try:
        try:
            with _starting:
                process.start()
        finally:
            os.close(watch[0])
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)  # a held-back interrupt is raised here
        sender.close()
        last_beat = started
        while True:
            now = time.monotonic()
            limits = [last_beat + HEARTBEAT_SECONDS - now] + ([started + timeout - now] if timeout is not None else []) + \
                     ([phase_deadline - now] if phase_deadline is not None else [])
            # the child's exit is looked for too (a descendant that inherited the pipe, or the sentinel, holds back
            # the end-of-file that tells of a crash): every EXIT_POLL_SECONDS while nothing arrives
            ready = receiver.poll(max(0.0, min(limits + [EXIT_POLL_SECONDS])))
            if not ready and not process.is_alive():
                ready = receiver.poll(0) or "ended"
            if ready is True:
                try:
                    message = receiver.recv()
                except (EOFError, OSError):
                    message = None
                if message is None or message[0] not in ("output", "phase"):
                    break
                if message[0] == "output":
                    _write(message[1], message[2])
                else:
                    current = message[1]
                    phase_limit = message[2] if message[2] is not None else (phase_timeout if message[3] else None)
                    phase_deadline = time.monotonic() + phase_limit if current is not None and phase_limit is not None else None
            elif ready == "ended":  # the child ended without a result
                message = None
                break
            now = time.monotonic()  # deadlines hold even while the child keeps writing output
            if phase_deadline is not None and now >= phase_deadline:
                _stop(process)
                raise IsolatedError("timeout", "TimeoutError", f"{current} did not finish within {phase_limit:g} s; it was stopped")
            if timeout is not None and now - started >= timeout:
                _stop(process)
                raise IsolatedError("timeout", "TimeoutError", f"{current + ' ' if current else ''}did not finish within its timeout "
                                    f"of {timeout:g} s; it and its worker processes were stopped")
            if now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                if heartbeat is not None:
                    heartbeat(now - started)
        if message is None:
            process.join(5)
            how = describe_exit_code(process.exitcode)
            while_ = f" while {current}" if current else ""
            raise IsolatedError("crash", "ProcessCrash", f"the process {how}{while_} before reporting a result (os._exit, "
                                "a fatal signal or the out-of-memory killer)")
        if message[0] == "ok":
            return message[1]
        raise IsolatedError("error", message[1], message[2])
    finally:
        receiver.close()
        sender.close()
        if process.pid is not None:  # started, perhaps interrupted right after the fork
            if process.is_alive() and sys.exc_info()[0] is None:
                process.join(2)  # it reported: let it exit on its own
            elif process.is_alive() and forward_output:  # interrupted: a command gets a moment to clean up
                try:
                    os.kill(process.pid, signal.SIGTERM)
                except OSError:
                    pass
                process.join(STOP_GRACE_SECONDS)
            _stop(process)
        os.close(watch[1])  # last: its end-of-file makes the watchdog kill whatever is left of the group
        _adopted_orphans()  # a child that crashed left its orphans to this process (when it is a subreaper)


def describe_exit_code(code: int | None) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it)."""
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"
