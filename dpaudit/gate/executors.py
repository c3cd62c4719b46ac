"""Where gate entries run: isolated child processes here, or independent tasks on a Dask cluster.

Both take every entry up front (``submit``) and hand back outcomes in the config's order (``wait``), so
the runner's false-alarm accounting, rows and report are the same either way. Locally each entry runs in
its own process group (``isolation.py``): when it is waited for, or, with ``parallel`` > 1, up to that many
at once, started in the config's order by daemon threads (each entry seeds itself, so its numbers do not
depend on what runs beside it; the gate gives each entry ``[gate] workers`` / ``parallel`` worker
processes, so the processes stay within the workers setting). On a cluster all entries are
submitted at once and run in parallel on the workers (each audit draws its blocks serially there: the
blocks' seeds make the numbers identical to a local run); an entry past its timeout is cancelled and
the worker running it restarted, so a hung mechanism does not hold the cluster.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._isolation import HEARTBEAT_SECONDS, IsolatedError, phase, run_isolated

__all__ = ["Job", "LocalEntries", "ClusterEntries", "entry_executor"]


@dataclass
class Job:
    kind: str
    name: str
    function: Callable[..., Any]
    arguments: tuple
    timeout: float | None
    handle: Any = None
    memory_limit: int | None = None
    what: str = ""  # what runs, for messages: the entry and its mechanism


def _named(what: str, function: Callable[..., Any], arguments: tuple) -> Any:
    with phase(what):
        return function(*arguments)


class _Pending:
    """A submitted entry's outcome, set by the thread that ran it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.outcome: tuple[Any, IsolatedError | None, float] | None = None


class LocalEntries:
    """Each entry in its own child process: one after the other, or up to ``parallel`` at once."""

    workers_per_entry: int | None = None  # the gate's [gate] workers setting applies (divided by ``parallel``)

    def __init__(self, heartbeat: Callable[[str, float], None] | None = None, parallel: int = 1) -> None:
        self.heartbeat = heartbeat
        self.parallel = max(1, parallel)
        self._queue: queue.Queue[Job | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stopping = threading.Event()

    def __enter__(self) -> LocalEntries:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stopping.set()  # entries not started yet are not started (an error or interrupt ended the run)
        for _ in self._threads:
            self._queue.put(None)

    def submit(self, job: Job) -> Job:
        if self.parallel == 1:
            return job
        job.handle = _Pending()
        self._queue.put(job)
        if len(self._threads) < self.parallel:  # daemon: an interrupted run does not wait for them
            thread = threading.Thread(target=self._serve, name=f"dpaudit-entries-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()
        return job

    def _serve(self) -> None:
        while (job := self._queue.get()) is not None:
            if self._stopping.is_set():
                continue
            try:
                job.handle.outcome = self._run(job)
            except BaseException as exc:  # noqa: BLE001 - reported where the entry is waited for
                job.handle.outcome = (None, IsolatedError("error", type(exc).__name__, str(exc)), 0.0)
            job.handle.done.set()

    def wait(self, job: Job) -> tuple[Any, IsolatedError | None, float]:
        if job.handle is None:
            return self._run(job)
        job.handle.done.wait()
        return job.handle.outcome

    def _run(self, job: Job) -> tuple[Any, IsolatedError | None, float]:
        label = f"{job.kind} {job.name!r}"
        beat = (lambda elapsed: self.heartbeat(label, elapsed)) if self.heartbeat else None
        began = time.perf_counter()
        try:
            value = run_isolated(_named, (job.what or label, job.function, job.arguments), timeout=job.timeout, heartbeat=beat,
                                 memory_limit=job.memory_limit)
            return value, None, time.perf_counter() - began
        except IsolatedError as error:
            return None, error, time.perf_counter() - began


class ClusterEntries:
    """Every entry as one task on a Dask cluster, all submitted at once."""

    workers_per_entry = 1  # blocks are drawn serially inside the task (worker processes are daemonic)

    def __init__(self, scheduler: Any, heartbeat: Callable[[str, float], None] | None = None) -> None:
        from ..auditor.dask_backend import DaskBackend

        self._backend = DaskBackend(scheduler)
        self.heartbeat = heartbeat

    def __enter__(self) -> ClusterEntries:
        self._backend.__enter__()
        self.client = self._backend.client
        return self

    def __exit__(self, exc_type: object = None, *exc_info: object) -> None:
        self._backend.__exit__(exc_type, *exc_info)

    def submit(self, job: Job) -> Job:
        job.handle = self.client.submit(job.function, *job.arguments, pure=False, key=f"dpaudit-{job.kind}-{job.name}-{time.time_ns()}")
        return job

    def wait(self, job: Job) -> tuple[Any, IsolatedError | None, float]:
        from ..auditor.dask_backend import _explain

        began = time.perf_counter()
        label = f"{job.kind} {job.name!r}"
        while True:
            elapsed = time.perf_counter() - began
            step = HEARTBEAT_SECONDS if job.timeout is None else max(0.0, min(HEARTBEAT_SECONDS, job.timeout - elapsed))
            try:
                return job.handle.result(timeout=step), None, time.perf_counter() - began
            except TimeoutError:
                elapsed = time.perf_counter() - began
                if job.timeout is not None and elapsed >= job.timeout:
                    self._stop(job)
                    return None, IsolatedError("timeout", "TimeoutError", f"did not finish within its timeout of {job.timeout:g} s "
                                            "on the cluster; the task was cancelled and its worker restarted"), elapsed
                if self.heartbeat:
                    self.heartbeat(label, elapsed)
            except Exception as exc:  # noqa: BLE001 - the entry's own failure
                error = _explain(exc)
                return None, IsolatedError("error", type(error).__name__, str(error)), time.perf_counter() - began

    def _stop(self, job: Job) -> None:
        key = job.handle.key
        busy = [worker for worker, keys in self.client.processing().items() if key in keys]
        self.client.cancel([job.handle], force=True)
        if busy:
            try:
                self.client.restart_workers(busy, raise_for_error=False)
            except Exception:  # noqa: BLE001 - best effort: the entry is reported as timed out either way
                pass


def entry_executor(scheduler: Any, heartbeat: Callable[[str, float], None] | None, parallel: int = 1) -> LocalEntries | ClusterEntries:
    """The cluster named by ``scheduler`` (or $DPAUDIT_SCHEDULER), else child processes here, ``parallel`` at once."""
    from ..auditor.dask_backend import resolve_scheduler

    resolved = resolve_scheduler(scheduler)
    return ClusterEntries(resolved, heartbeat) if resolved is not None else LocalEntries(heartbeat, parallel)
