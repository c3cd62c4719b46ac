"""Backends that run an audit's per-block tasks: in this process or in worker processes, with a progress bar.

A backend maps a picklable per-block task over block indices and returns the per-block results in order;
the statistics never see which backend ran them (each block seeds itself, ``sampling.py``). A cluster
backend (``dask_backend.py``) implements the same :class:`Backend` protocol; ``sampling.choose_backend``
picks one per audit.
"""

from __future__ import annotations

import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from ..errors import MechanismError

__all__ = ["BLOCK_SIZE", "Backend", "SerialBackend", "ProcessBackend", "Progress", "close_progress", "map_both", "BothInputs"]

BLOCK_SIZE = 1 << 16


class Backend(Protocol):
    """Maps a picklable task over block indices and returns the results in order; used as a context
    manager so that workers live for one audit."""

    def __enter__(self) -> Backend: ...

    def __exit__(self, *exc_info: object) -> None: ...

    def map(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]: ...


class SerialBackend:
    """Runs every block in this process."""

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress

    def __enter__(self) -> SerialBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        close_progress(self.progress)

    def map(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        results = []
        for block in blocks:
            results.append(task(block))
            if self.progress:
                self.progress.advance()
        return results


@dataclass(frozen=True)
class BothInputs:
    """One task over the blocks of both inputs: item 2 b runs ``on_d`` on block b, item 2 b + 1 ``on_d_prime``
    (picklable when both are). One map over both inputs keeps every worker busy up to the end of a look, where two
    maps would wait twice for their slowest block."""

    on_d: Callable[[int], Any]
    on_d_prime: Callable[[int], Any]

    def __call__(self, item: int) -> Any:
        return (self.on_d_prime if item % 2 else self.on_d)(item // 2)


def map_both(backend: Backend, on_d: Callable[[int], Any], on_d_prime: Callable[[int], Any], blocks: Sequence[int]
             ) -> tuple[list[Any], list[Any]]:
    """The per-block results of ``on_d`` and of ``on_d_prime`` over ``blocks``, from one map of the backend."""
    results = backend.map(BothInputs(on_d, on_d_prime), [2 * b + side for b in blocks for side in (0, 1)])
    return results[0::2], results[1::2]


class ProcessBackend:
    """Spreads blocks over worker processes (the task and mechanism must be picklable), only where that pays: a map
    runs in this process when its blocks would take under MIN_PARALLEL_SECONDS here (the time per block measured on
    the blocks run here: the first map's first block, then every map run here), since starting workers and sending
    them work costs about that. A sequential audit's early looks and a cheap mechanism's small audits stay here; a
    large certification goes to the workers. Blocks travel in chunks (about CHUNKS_PER_WORKER per worker per map:
    fewer round trips, every worker still busy to the end), and only what the task returns comes back (counts, for
    certification). The block seeds itself, so the numbers are the same wherever it runs."""

    def __init__(self, workers: int, progress: Progress | None = None) -> None:
        self.workers = workers
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None
        self._block_seconds: float | None = None  # time per block measured in this process

    def __enter__(self) -> ProcessBackend:
        self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=_ignore_interrupts)
        return self

    def __exit__(self, exc_type: object = None, *exc_info: object) -> None:
        close_progress(self.progress)
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if exc_type is not None:  # failed or interrupted: stop the workers now rather than finish their blocks
            for process in list(getattr(pool, "_processes", {}).values()):
                process.terminate()
        pool.shutdown(wait=True, cancel_futures=True)

    def _here(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        started = time.perf_counter()
        results = SerialBackend(self.progress).map(task, blocks)
        if blocks:
            self._block_seconds = (time.perf_counter() - started) / len(blocks)
        return results

    def map(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        blocks = list(blocks)
        if len(blocks) < 2:
            return self._here(task, blocks)
        if self._block_seconds is None:  # measure one block here first
            return self._here(task, blocks[:1]) + self.map(task, blocks[1:])
        if self._block_seconds * len(blocks) < MIN_PARALLEL_SECONDS:
            return self._here(task, blocks)
        if self._pool is None:
            with self:
                return self.map(task, blocks)
        size = max(1, len(blocks) // (CHUNKS_PER_WORKER * self.workers))
        chunks = [blocks[i:i + size] for i in range(0, len(blocks), size)]
        futures = [self._pool.submit(_run_chunk, task, chunk) for chunk in chunks]
        results = []
        for chunk, future in zip(chunks, futures):
            try:
                results += future.result()
            except BrokenProcessPool as exc:
                raise MechanismError(f"a worker process died while drawing blocks {chunk[0]}..{chunk[-1]} (the mechanism "
                                     "crashed its process: os._exit, a fatal signal or out of memory)") from exc
            if self.progress:
                self.progress.advance(len(chunk))
        return results


#: A map whose blocks would take less than this here (seconds, measured) runs in this process.
MIN_PARALLEL_SECONDS = 0.3
#: Chunks per worker in one map of the process backend.
CHUNKS_PER_WORKER = 4


def _run_chunk(task: Callable[[int], Any], chunk: Sequence[int]) -> list[Any]:
    return [task(block) for block in chunk]


def close_progress(progress: Any) -> None:
    """Remove a backend's progress bar when the backend is done (also after an error or Ctrl-C)."""
    close = getattr(progress, "close", None)
    if close is not None:
        close()


def _ignore_interrupts() -> None:
    """Worker processes leave Ctrl-C to the parent, which stops them (no traceback from every worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class Progress:
    """A tqdm progress bar on stderr for an audit's blocks, shown only when stderr is a terminal and the job
    is long (``enabled=None``) or when asked (``enabled=True``).

    Every backend (local, process or Dask) calls ``advance`` in the calling process once per finished block
    (or chunk of blocks), so the bar is the same whatever runs the blocks. tqdm is a core dependency and is
    imported only when a bar is shown. Closed when the last block is done.
    """

    def __init__(self, total: int, label: str = "audit", enabled: bool | None = None) -> None:
        self.total, self.label, self.done = int(total), label, 0
        self.enabled = (sys.stderr.isatty() and self.total > 8) if enabled is None else bool(enabled)
        self._bar: Any = None
        if self.enabled:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=self.total, desc=self.label, unit="block", file=sys.stderr, leave=False,
                             dynamic_ncols=True)

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
            if self.done >= self.total:
                self.close()

    def close(self) -> None:
        """Remove the bar (idempotent)."""
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.close()

    def __getstate__(self) -> dict[str, Any]:  # a bar never travels to worker processes
        return {**self.__dict__, "_bar": None}
