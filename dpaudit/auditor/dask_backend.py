"""A :class:`~dpaudit.auditor.backends.Backend` on a Dask cluster (``dask.distributed``).

Blocks keep their own seeds (``SeedSequence(seed, spawn_key=(side, phase, block))``), so a cluster draws
exactly the samples the serial and process backends draw, whatever the number of workers: results are
bit-for-bit identical. Work is shipped as *chunks* of consecutive blocks (one task each, so the
scheduler's per-task overhead stays small at 10^9+ samples); each task returns its blocks' results
already reduced on the worker (certification returns event counts per block, never raw outputs; only
the selection batch, at most 200,000 outputs per input, travels as outputs). At most ``in_flight``
tasks are outstanding, so the client holds a bounded number of results.

Faults. Tasks are pure functions of their block indices: when a worker dies, Dask reschedules its tasks
on the others and the result is unchanged. A mechanism that raises on a worker raises the same
:class:`~dpaudit.errors.MechanismError` (naming input, block and seed) as locally. An unreachable
scheduler, workers that cannot import the mechanism's module, or mismatched package versions raise
:class:`~dpaudit.errors.ClusterError` saying which and how to fix it. Ctrl-C cancels the futures.

Install with ``pip install "dpaudit[dask]"``.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._version import __version__
from ..errors import ClusterError, InvalidArgument, MechanismError
from .backends import close_progress

__all__ = ["DaskBackend", "resolve_scheduler", "SCHEDULER_VARIABLE", "CONNECT_TIMEOUT", "check_worker_versions"]

SCHEDULER_VARIABLE = "DPAUDIT_SCHEDULER"
CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler before giving up
MAX_BLOCKS_PER_TASK = 1024  # at most 1024 blocks of 65,536 samples (6.7 * 10^7) per task; at least 4 tasks per worker


def resolve_scheduler(scheduler: Any) -> Any:
    """The scheduler to use: the argument, else $DPAUDIT_SCHEDULER, else None (local backends); False
    means local whatever the environment says."""
    if scheduler is False:
        return None
    if scheduler is None:
        scheduler = os.environ.get(SCHEDULER_VARIABLE) or None
    if scheduler is None:
        return None
    if isinstance(scheduler, str):
        if not scheduler.strip():
            raise InvalidArgument("scheduler", "scheduler='' must be an address such as 'tcp://host:8786'")
        return scheduler.strip()
    if type(scheduler).__name__ != "Client" or not hasattr(scheduler, "submit"):
        raise InvalidArgument("scheduler", f"scheduler={scheduler!r} must be a scheduler address (str) or a dask.distributed Client")
    return scheduler


def _distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise ClusterError("running on a cluster needs dask.distributed: pip install 'dpaudit[dask]'") from exc
    return distributed


@dataclass(frozen=True)
class _Chunk:
    """Run a per-block task over consecutive blocks on one worker (picklable)."""

    task: Callable[[int], Any]
    blocks: tuple[int, ...]

    def __call__(self) -> list[Any]:
        return [self.task(block) for block in self.blocks]


def _worker_versions() -> dict[str, str]:
    import numpy

    return {"dpaudit": __version__, "numpy": numpy.__version__}


def check_worker_versions(local: dict[str, str], remote: dict[str, dict[str, str]]) -> None:
    """Raise ClusterError when a worker runs another dpaudit or numpy than the client (numbers would differ)."""
    for worker, versions in remote.items():
        for package, version in local.items():
            if versions.get(package) != version:
                raise ClusterError(f"worker {worker} has {package} {versions.get(package)} but this client has {version}: "
                                   f"install the same {package} version on the workers (pip install {package}=={version})")


def _explain(exc: BaseException) -> BaseException:
    """Turn what a worker raised into the error the caller should see."""
    if isinstance(exc, MechanismError):
        return exc
    if isinstance(exc, (ModuleNotFoundError, ImportError)):
        return ClusterError(f"the workers cannot import what the audit needs ({exc}); install the mechanism's package on "
                            "every worker (or client.upload_file the module) and try again")
    if isinstance(exc, (AttributeError,)) and "Can't get attribute" in str(exc):
        return ClusterError(f"the workers cannot unpickle the mechanism ({exc}); define it in an installed module")
    if type(exc).__name__ in ("KilledWorker", "CancelledError", "FutureCancelledError"):
        return ClusterError(f"the cluster gave up on a task ({type(exc).__name__}: {exc}); workers kept dying while running "
                            "it (out of memory, or a mechanism that crashes its process)")
    return exc


class DaskBackend:
    """Maps per-block tasks over a Dask cluster (same results as the local backends)."""

    def __init__(self, scheduler: Any, progress: Any = None, *, blocks_per_task: int | None = None,
                 in_flight: int | None = None, connect_timeout: float | None = None) -> None:
        self.scheduler = scheduler
        self.progress = progress
        self.blocks_per_task = blocks_per_task
        self.in_flight = in_flight
        self.connect_timeout = CONNECT_TIMEOUT if connect_timeout is None else connect_timeout
        self._client: Any = None
        self._owned = False

    @property
    def client(self) -> Any:
        if self._client is None:
            self.__enter__()
        return self._client

    def __enter__(self) -> DaskBackend:
        distributed = _distributed()
        if isinstance(self.scheduler, str):
            try:
                self._client = distributed.Client(self.scheduler, timeout=self.connect_timeout, set_as_default=False)
            except (OSError, TimeoutError) as exc:
                raise ClusterError(f"cannot reach the Dask scheduler at {self.scheduler} within {self.connect_timeout:g} s "
                                   f"({type(exc).__name__}: {exc}); start one with `dask scheduler` and `dask worker "
                                   f"{self.scheduler}`, or check the address") from exc
            self._owned = True
        else:
            self._client = self.scheduler
        try:
            answers = self._client.run(_worker_versions, on_error="return")
        except Exception as exc:  # noqa: BLE001 - any failure here is the cluster's
            raise _explain(exc) from exc
        remote = {}
        for worker, answer in answers.items():
            if isinstance(answer, OSError):  # the worker left while asked (its connection closed): it runs nothing
                continue
            if isinstance(answer, BaseException):
                raise _explain(answer) from answer
            remote[worker] = answer
        if not remote:
            raise ClusterError(f"the Dask scheduler at {self._client.scheduler.address} has no workers; start some with "
                               f"`dask worker {self._client.scheduler.address}`")
        check_worker_versions(_worker_versions(), remote)
        return self

    def __exit__(self, *exc_info: object) -> None:
        close_progress(self.progress)
        if self._owned and self._client is not None:
            self._client.close()
        self._client, self._owned = None, False

    def _chunks(self, blocks: Sequence[int], workers: int) -> list[tuple[int, ...]]:
        blocks = list(blocks)
        per_task = self.blocks_per_task or max(1, min(MAX_BLOCKS_PER_TASK, math.ceil(len(blocks) / (4 * max(workers, 1)))))
        return [tuple(blocks[i:i + per_task]) for i in range(0, len(blocks), per_task)]

    def map(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        distributed = _distributed()
        client = self.client
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = self._chunks(blocks, workers)
        limit = self.in_flight or 4 * workers
        results: dict[int, list[Any]] = {}
        pending: dict[Any, int] = {}
        queue = iter(enumerate(chunks))
        completed = distributed.as_completed(loop=client.loop)

        def submit_next() -> bool:
            try:
                index, chunk = next(queue)
            except StopIteration:
                return False
            future = client.submit(_Chunk(task, chunk), pure=False)
            pending[future] = index
            completed.add(future)
            return True

        started = time.perf_counter()
        # The first failure in block order is raised, as the serial backend raises it: after a chunk fails,
        # no later chunk is submitted and the earlier chunks still running are awaited (chunks are submitted
        # in order, so every chunk still queued comes after the failed one).
        failed: tuple[int, Exception] | None = None
        try:
            for _ in range(limit):
                if not submit_next():
                    break
            for future in completed:
                index = pending.pop(future)
                if failed is not None and index > failed[0]:
                    continue
                try:
                    results[index] = future.result()
                except Exception as exc:  # noqa: BLE001 - re-raised as the caller's error
                    failed = (index, exc)
                    client.cancel([f for f, i in pending.items() if i > index])
                    if not any(i < index for i in pending.values()):
                        break
                    continue
                future.release()
                if self.progress:
                    self.progress.advance(len(chunks[index]))
                if failed is None:
                    submit_next()
                elif not any(i < failed[0] for i in pending.values()):
                    break
            if failed is not None:
                raise _explain(failed[1]) from failed[1]
        except BaseException:
            client.cancel(list(pending))
            raise
        self.last_seconds = time.perf_counter() - started
        return [value for index in range(len(chunks)) for value in results[index]]
