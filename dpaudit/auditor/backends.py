"""Backends that run an audit's per-block tasks: in this process or in worker processes, with a progress bar.

A backend maps a picklable per-block task over block indices and returns the per-block results in order;
the statistics never see which backend ran them (each block seeds itself, ``sampling.py``). A cluster
backend (``dask_backend.py``) implements the same :class:`Backend` protocol; ``sampling.choose_backend``
picks one per audit.
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any, Protocol

from .cores import core_free
from .draw_stream import SLOTS, DrawStream, start_worker, worker_died
from .threads import one_numeric_thread

__all__ = ["BLOCK_SIZE", "Backend", "SerialBackend", "ProcessBackend", "Progress", "close_progress", "map_both", "BothInputs",
           "Finish"]

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

    def finish(self, drawn: Any, item: int) -> Any:
        """``finish(drawn, block)`` of the input's task, on what was drawn ahead for this item."""
        return (self.on_d_prime if item % 2 else self.on_d).finish(drawn, item // 2)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Finish:
    """A per-item task that can also complete an item drawn ahead (``ProcessBackend.draw_ahead``) under ``key``:
    ``task(item)`` draws and finishes the item, ``finish(drawn, item)`` finishes what was drawn ahead. A backend that
    draws nothing ahead just calls it; the result is the same either way (the item seeds its own draw)."""

    key: str
    task: Callable[[int], Any]
    finish: Callable[[Any, int], Any]

    def __call__(self, item: int) -> Any:
        return self.task(item)


def map_both(backend: Backend, on_d: Callable[[int], Any], on_d_prime: Callable[[int], Any], blocks: Sequence[int],
             ahead: str | None = None) -> tuple[list[Any], list[Any]]:
    """The per-block results of ``on_d`` and of ``on_d_prime`` over ``blocks``, from one map of the backend.
    ``ahead``: the key under which the backend may have drawn these blocks ahead (both tasks then have
    ``finish(drawn, block)``, see :class:`Finish`)."""
    both = BothInputs(on_d, on_d_prime)
    task: Callable[[int], Any] = both if ahead is None else Finish(ahead, both, both.finish)
    results = backend.map(task, [2 * b + side for b in blocks for side in (0, 1)])
    return results[0::2], results[1::2]


class ProcessBackend:
    """Spreads blocks over ``workers`` processes, this one and ``workers - 1`` worker processes (the task and mechanism
    must be picklable; this process works while it waits, so two workers are two processes on two cores), only where
    that pays: until the worker processes are started a map runs here when its blocks would take under
    MIN_PARALLEL_SECONDS here (the time per block measured on the blocks run here: the first map's first block, then
    every map run here), since starting workers and sending them work costs about that; once they run, only maps
    under MIN_STARTED_SECONDS stay here. A sequential audit's early looks and a cheap mechanism's small audits stay
    here; a large certification is shared; and no worker starts while no core is free of other work (``cores.py``:
    a busy machine gives a second process nothing, so it would only add its costs). Blocks to be counted once a witness
    is known are drawn ahead by the workers
    while this process searches it (:meth:`draw_ahead`; other maps meanwhile run here) and then streamed
    (``draw_stream.py``): the workers claim the blocks from the low end, keep what they drew until the witness arrives,
    then count as they draw, and every map of the counting task takes from the top of its range here, with no round
    trip per chunk or per look. Other maps go in
    chunks (about CHUNKS_PER_WORKER per worker per map: few round trips) to whichever worker process is free, or else
    run here. Only what the task returns comes back (counts, for certification). The block seeds itself, so the numbers
    are the same wherever it runs.

    Once worker processes start, this process runs its BLAS/OpenMP pools with one thread until the backend closes
    (``threads.py``): ``workers`` processes on ``workers`` cores leave no core for a second thread, and a fork shuts
    OpenBLAS's threads down (its ``pthread_atfork`` handler), so every later change of its thread count (leaving the
    witness search's one-thread block) started new threads that spun on the core a worker needed: 0.07-0.10 CPU
    seconds per 10^7-sample Laplace audit before this limit. The workers keep their counts (``_start_worker``)."""

    def __init__(self, workers: int, progress: Progress | None = None) -> None:
        self.workers = workers
        self.progress = progress
        self._lanes: list[ProcessPoolExecutor] | None = None
        self._started = False  # whether any work was sent to the workers
        self._block_seconds: float | None = None  # time per block measured in this process
        self._stream: DrawStream | None = None
        self._pending: tuple | None = None  # a stream asked for before any block was measured here
        self._streams = 0  # streams started (their ids)
        self._channels: list[Any] = []  # this process's end of each worker's pipe
        self._pipes: list[Any] = []  # both ends of every pipe (closed with the backend)
        self._claims: Any = None
        self._lock: Any = None
        self._threads: ExitStack | None = None

    def __enter__(self) -> ProcessBackend:
        context = multiprocessing.get_context()
        self._claims, self._lock = context.RawArray("q", SLOTS), context.Lock()
        pipes = [context.Pipe() for _ in range(self.workers - 1)]
        self._channels, self._pipes = [here for here, _ in pipes], [end for pipe in pipes for end in pipe]
        self._lanes = [ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=_start_worker,
                                           initargs=(there, self._claims, self._lock)) for _, there in pipes]
        return self

    def __exit__(self, exc_type: object = None, *exc_info: object) -> None:
        close_progress(self.progress)
        if self._lanes is None:
            return
        lanes, self._lanes = self._lanes, None
        stream, self._stream, self._started, self._pending = self._stream, None, False, None
        try:
            if stream is not None:
                stream.close()  # the workers claim nothing more
                if exc_type is None:
                    stream.stop()
        except BaseException:
            exc_type = True
            raise
        finally:
            for pool in lanes:
                if exc_type is not None:  # failed or interrupted: stop the workers now rather than finish their blocks
                    for process in list(getattr(pool, "_processes", {}).values()):
                        process.terminate()
                # an idle worker exits on its own (the pool's thread reaps it): no need to wait for it here
                pool.shutdown(wait=exc_type is not None, cancel_futures=True)
            for end in self._pipes:
                end.close()
            threads, self._threads = self._threads, None
            if threads is not None:
                threads.close()

    def _here(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        started = time.perf_counter()
        results = SerialBackend(self.progress).map(task, blocks)
        if blocks:
            self._block_seconds = (time.perf_counter() - started) / len(blocks)
            if self._pending is not None:  # a block is measured now: decide on the stream waiting for it
                pending, self._pending = self._pending, None
                self.draw_ahead(*pending)
        return results

    def draw_ahead(self, key: str, draw: Callable[[int], Any], items: Sequence[int], item_bytes: int) -> None:
        """Start the workers drawing ``items`` (consecutive) ahead (``draw(item)``, kept in the memory of the worker that
        drew it, at most AHEAD_BYTES in all at ``item_bytes`` each), to be finished by the maps of a :class:`Finish`
        task with this ``key``, which the workers then also draw and finish as a stream (``draw_stream.py``). Nothing
        is drawn ahead where those maps would run in this process anyway; before a block was measured here, or while no
        core is free (``cores.py``), the decision waits for the next block run here (the next selection block), until a
        map of the task itself begins."""
        items = range(items[0], items[-1] + 1) if len(items) else range(0)
        if self._lanes and items and self._block_seconds is None:
            self._pending = (key, draw, items, item_bytes)
            return
        if not self._lanes or not items or self._block_seconds * len(items) < MIN_PARALLEL_SECONDS:
            return
        if not self._started and not self._core_for_workers():  # asked again at the next block run here
            self._pending = (key, draw, items, item_bytes)
            return
        self._end_stream()
        self._started, self._streams = True, self._streams + 1
        keep = AHEAD_BYTES // max(1, item_bytes) // len(self._lanes)
        self._one_thread()
        self._stream = DrawStream(self._streams, key, draw, items, keep, self._lanes, self._channels, self._claims,
                                  self._lock)

    def _end_stream(self) -> None:
        """Stop the stream of blocks drawn ahead (its workers become free for other maps)."""
        stream, self._stream = self._stream, None
        if stream is not None:
            stream.stop()

    def map(self, task: Callable[[int], Any], blocks: Sequence[int]) -> list[Any]:
        blocks = list(blocks)
        if self._pending is not None and getattr(task, "key", None) == self._pending[0]:
            self._pending = None  # its maps begin: nothing is drawn ahead any more (the workers may take later maps)
        if self._stream is not None and self._stream.serves(task, blocks):
            return self._stream.map(task, blocks, self.progress)
        if len(blocks) < 2:
            return self._here(task, blocks)
        if self._block_seconds is None:  # measure one block here first
            return self._here(task, blocks[:1]) + self.map(task, blocks[1:])
        if self._stream is not None and self._stream.task is None:  # the workers draw ahead: this map runs here
            return self._here(task, blocks)
        if self._block_seconds * len(blocks) < (MIN_STARTED_SECONDS if self._started else MIN_PARALLEL_SECONDS):
            return self._here(task, blocks)
        if self._lanes is None:
            with self:
                return self.map(task, blocks)
        if not self._started and not self._core_for_workers():
            return self._here(task, blocks)
        self._end_stream()  # its workers are needed for this map
        self._started = True
        self._one_thread()
        return self._spread(task, blocks)

    @staticmethod
    def _core_for_workers() -> bool:
        """Whether to start the worker processes now: only where a core is free of other work (``cores.py``); until
        then every map runs here, and each map asks again."""
        return not REQUIRE_FREE_CORE or core_free()

    def _one_thread(self) -> None:
        """From now until the backend closes, one BLAS/OpenMP thread in this process (the workers start)."""
        if self._threads is None:
            self._threads = ExitStack()
            self._threads.enter_context(one_numeric_thread())

    def _spread(self, task: Callable[[int], Any], blocks: list[int]) -> list[Any]:
        """Run ``blocks`` in the worker processes and in this process: in chunks handed to whichever worker process has
        the least work queued (at most two chunks each) or else run here; results in the order of ``blocks`` (after a
        failure nothing more is started, and the failure of the first failed chunk in that order is raised)."""
        lanes = self._lanes
        assert lanes is not None
        size = max(1, len(blocks) // (CHUNKS_PER_WORKER * self.workers))
        pending: dict[Future, tuple[int, list[int]]] = {}  # future -> (lane, chunk)
        queued = [0] * len(lanes)
        sent: list[tuple[list[int], Future | None, Any, BaseException | None]] = []  # chunk, future | (results, error)
        failed = False

        def submit(lane: int, chunk: list[int]) -> None:
            future = lanes[lane].submit(_run_chunk, task, chunk)
            pending[future] = (lane, chunk)
            queued[lane] += 1
            sent.append((chunk, future, None, None))

        def collect(block: bool) -> None:
            nonlocal failed
            done = wait(list(pending), return_when=FIRST_COMPLETED)[0] if block else [f for f in pending if f.done()]
            for future in done:
                lane, chunk = pending.pop(future)
                queued[lane] -= 1
                if future.exception() is not None:
                    failed = True
                elif self.progress:
                    self.progress.advance(len(chunk))

        chunks = [blocks[i:i + size] for i in range(0, len(blocks), size)][::-1]
        while chunks and not failed:
            while chunks and lanes and min(queued) < 2:
                submit(queued.index(min(queued)), chunks.pop())
            if chunks:  # this process takes a chunk too
                chunk = chunks.pop()
                try:
                    sent.append((chunk, None, _run_chunk(task, chunk), None))
                    if self.progress:
                        self.progress.advance(len(chunk))
                except Exception as exc:  # raised below, in the order of the blocks
                    sent.append((chunk, None, None, exc))
                    failed = True
            collect(block=False)
        while pending:
            collect(block=True)
        position = {block: i for i, block in enumerate(blocks)}
        results: dict[int, Any] = {}
        for chunk, future, here, error in sorted(sent, key=lambda entry: position[entry[0][0]]):
            if error is not None:
                raise error
            results.update(zip(chunk, here if future is None else self._result(future, chunk)))
        return [results[block] for block in blocks]

    @staticmethod
    def _result(future: Future, chunk: Sequence[int]) -> Any:
        try:
            return future.result()
        except BrokenProcessPool as exc:
            raise worker_died(chunk[0], chunk[-1]) from exc


#: Until the workers are started, a map whose blocks would take less than this here (seconds, measured) runs here.
MIN_PARALLEL_SECONDS = 0.3
#: Once the workers run, a map whose blocks would take less than this here (seconds, measured) runs here.
MIN_STARTED_SECONDS = 0.02
#: Start the worker processes only while a core is free of other work (``cores.py``). The results never depend on it;
#: tests of the workers' machinery switch it off so that the workers run whatever the machine's load.
REQUIRE_FREE_CORE = True
#: Chunks per worker in one map of the process backend.
CHUNKS_PER_WORKER = 4
#: At most this many bytes of blocks drawn ahead are kept in the workers' memory (all workers together) until the task
#: that finishes them is known.
AHEAD_BYTES = 256 << 20


def _run_chunk(task: Callable[[int], Any], chunk: Sequence[int]) -> list[Any]:
    return [task(block) for block in chunk]


def close_progress(progress: Any) -> None:
    """Remove a backend's progress bar when the backend is done (also after an error or Ctrl-C)."""
    close = getattr(progress, "close", None)
    if close is not None:
        close()


def _start_worker(channel: Any, claims: Any, lock: Any) -> None:
    """In a new worker process: leave Ctrl-C to the parent, which stops the workers (no traceback from every worker),
    and keep the pipe and the shared claims of the streams of blocks drawn ahead (``draw_stream.start_worker``). Its
    numeric libraries keep their thread counts: in a forked process, setting OpenBLAS's count (even to one) starts a new
    thread that spins, which made a worker's numpy sampling take 2.4 times the CPU."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    start_worker(channel, claims, lock)


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
