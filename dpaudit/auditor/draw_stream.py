"""Items drawn ahead and then counted by worker processes as one stream, without a round trip per chunk or per look.

The process backend (``backends.py``) starts a stream over a range of items (the certification blocks of both inputs)
while this process searches the witness: every worker process claims the next unclaimed item from the low end of the
range and draws it; before the task that finishes an item is known (the witness), it keeps what it drew (at most
``keep`` items per worker), and once it receives the task it finishes what it kept and then draws and finishes further
items as it claims them, sending back only what the task returns (counts), in batches sent as soon as this process
waits for one of their items. Each map of the task over a contiguous range of items takes the items not yet claimed
from the top of that range here, so this process and the workers meet in the middle with no barrier but the item in
progress (which this process spends drawing the next map's lowest item rather than waiting), and the workers go on
into the next map's items while this process reads the counts of the last. The claims are shared integers under one
lock: the low end the workers take from, and the part of the current map's range this process took (the workers skip
it).

An item seeds its own draw, so its result is the same whichever process finishes it. A worker whose draw or finish of
an item fails reports the item as failed and claims no more; the map then finishes that item here and so raises the
failure itself, in the order of the items (the first failing item of the map), as drawing everything here would.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from multiprocessing.connection import Connection, wait
from typing import Any

from ..errors import MechanismError

__all__ = ["DrawStream", "SLOTS", "start_worker", "run_stream"]

# The shared integers (one array, one lock per backend):
STREAM, LOW, HIGH, END, LIMIT, KEPT, WAITING = range(7)
SLOTS = 7  # STREAM: the running stream's id (0: none); LOW: the next item the workers claim; [HIGH, END): the items
# this process took in its current map (the workers skip them); LIMIT: the end of the stream's range; KEPT: items kept
# so far by the workers before the task was known; WAITING: workers that drew all they may before the task is known

_STOP = "stop"
_FAILED = "failed"  # an item's draw or finish failed in a worker: finish it here (which raises the failure)
BATCH = 32  # at most this many results per message from a worker
DRAIN_SECONDS = 0.005  # while this process draws its own items, it reads the workers' results this often
_WAIT_SECONDS = 0.05  # longest wait for a worker's message before checking whether its process is still alive

# In a worker process: its end of its lane's pipe and the shared claims (set by ``start_worker``).
_channel: Connection | None = None
_claims: Any = None
_lock: Any = None


def start_worker(channel: Connection, claims: Any, lock: Any) -> None:
    """In a new worker process: remember its end of the pipe to this process and the shared claims."""
    global _channel, _claims, _lock
    _channel, _claims, _lock = channel, claims, lock


def _claim(stream: int) -> tuple[int | None, int]:
    """In a worker: the next item of ``stream`` from the low end, or None; and the end of the map this process runs now
    (the items it waits for are below it)."""
    return claim_low(_claims, _lock, stream)


def claim_low(claims: Any, lock: Any, stream: int) -> tuple[int | None, int]:
    """The next item of ``stream`` from the low end (skipping the items this process took in its current map), or None;
    and the end of that map."""
    with lock:
        end = int(claims[END])
        if claims[STREAM] != stream:
            return None, end
        item = claims[LOW]
        if claims[HIGH] <= item < end:
            item = end
        if item >= claims[LIMIT]:
            return None, end
        claims[LOW] = item + 1
        return int(item), end


def _receive(stream: int, block: bool) -> Any:
    """In a worker: the next message of ``stream`` from this process (the task or _STOP), or None when none is waiting
    and ``block`` is false; messages of earlier streams are skipped."""
    assert _channel is not None
    while block or _channel.poll():
        sent_for, message = _channel.recv()
        if sent_for == stream:
            return message
    return None


def run_stream(stream: int, draw: Callable[[int], Any], keep: int) -> None:
    """In a worker: claim and draw the items of ``stream`` until they run out or this process closes the claims or
    says stop. Before the task arrives, keep at most ``keep`` drawn items (then wait for it); once it arrives, finish
    the kept items with it and every further one as claimed, sending the result of each claimed item (in batches,
    each sent as soon as this process waits for one of its items). After a failure no more items are claimed."""
    kept: dict[int, Any] = {}
    failed: list[int] = []
    task = message = None
    results = _Results(stream)
    while task is None:  # drawing ahead
        if message is None:
            message = _receive(stream, block=False)
        if message is None and (failed or len(kept) >= keep):
            message = _wait_for_task(stream)
        if isinstance(message, str):  # _STOP
            return
        if message is not None:
            task = message
            break
        item, _ = _claim(stream)
        if item is None:
            message = _wait_for_task(stream)  # nothing left to keep
            continue
        try:
            kept[item] = draw(item)
        except Exception:
            failed.append(item)
            continue
        with _lock:
            _claims[KEPT] += 1
    order = sorted(kept)  # the task: finish what was kept
    for index, item in enumerate(order):
        results.add(item, _finish(task, kept.pop(item), item))
        with _lock:
            end = int(_claims[END])
        if index + 1 == len(order) or order[index + 1] >= end:
            results.flush()
    for item in failed:
        results.add(item, _FAILED)
    if failed:
        results.flush()
        return
    following = None  # the item after the last one claimed
    while True:
        item, end = _claim(stream)
        if item is None or item != following or item >= end:  # this process may be waiting for what was sent before
            results.flush()
        if item is None:
            return
        result = _finish(task, None, item)
        results.add(item, result)
        if result is _FAILED:
            results.flush()
            return
        following = item + 1


class _Results:
    """In a worker: the results of a stream's items waiting to be sent to this process."""

    def __init__(self, stream: int) -> None:
        self.stream, self.items = stream, []  # type: tuple[int, list]

    def add(self, item: int, result: Any) -> None:
        self.items.append((item, result is not _FAILED, None if result is _FAILED else result))
        if len(self.items) >= BATCH:
            self.flush()

    def flush(self) -> None:
        if self.items:
            assert _channel is not None
            _channel.send((self.stream, self.items))
            self.items = []


def _wait_for_task(stream: int) -> Any:
    """In a worker that may draw no more before the task is known: the next message (the task or _STOP)."""
    with _lock:
        _claims[WAITING] += 1
    try:
        return _receive(stream, block=True)
    finally:
        with _lock:
            _claims[WAITING] -= 1


def _finish(task: Any, drawn: Any, item: int) -> Any:
    try:
        return task(item) if drawn is None else task.finish(drawn, item)
    except Exception:
        return _FAILED


def worker_died(first: int, last: int) -> MechanismError:
    """The error of a map whose worker process died while drawing items ``first..last``."""
    return MechanismError(f"a worker process died while drawing blocks {first}..{last} (the mechanism crashed its "
                          "process: os._exit, a fatal signal or out of memory)")


class DrawStream:
    """This process's side of one stream over ``items`` (a range) in the worker processes behind ``lanes``, each with
    its pipe in ``channels``; ``claims`` and ``lock`` are the shared integers (see the module docstring)."""

    def __init__(self, stream: int, key: str, draw: Callable[[int], Any], items: range, keep: int,
                 lanes: Sequence[ProcessPoolExecutor], channels: Sequence[Connection], claims: Any, lock: Any) -> None:
        self.stream, self.key, self.items = stream, key, items
        self.channels, self.claims, self.lock = list(channels), claims, lock
        self.task: Any = None
        self.closed = False  # after a failure or a stop: serves no more maps
        self._served = items.start  # items below were handed out by a map (a later map cannot have them again)
        self._results: dict[int, tuple[bool, Any]] = {}  # item -> (ok, result) sent by a worker, not yet handed out
        self._progress: Any = None
        self._range = range(0)  # the items of the map running now (for the progress bar)
        with lock:
            claims[STREAM], claims[LOW], claims[HIGH], claims[END] = stream, items.start, items.start, items.start
            claims[LIMIT], claims[KEPT], claims[WAITING] = items.stop, 0, 0
        self._futures: list[Future] = [lane.submit(run_stream, stream, draw, keep) for lane in lanes]

    def kept(self) -> int:
        """How many items the workers have kept so far (drawn before the task was known)."""
        with self.lock:
            return int(self.claims[KEPT])

    def drawn_ahead(self) -> bool:
        """Whether every worker has drawn all it may before the task is known (all items, its share of the memory
        bound, or up to a failure)."""
        with self.lock:
            return self.task is None and self.claims[WAITING] == len(self._futures)

    def serves(self, task: Any, items: Sequence[int]) -> bool:
        """Whether this stream can run a map of ``task`` (a ``backends.Finish``) over ``items``: its key, the same task
        as its earlier maps, and a contiguous ascending range not handed out before."""
        if self.closed or getattr(task, "key", None) != self.key or not items or items[0] < self._served:
            return False
        if any(later != earlier + 1 for earlier, later in zip(items, items[1:])):
            return False
        try:
            return self.task is None or bool(task.task == self.task.task)
        except Exception:  # fields that do not compare (arrays): a new task
            return False

    def map(self, task: Any, items: Sequence[int], progress: Any = None) -> list[Any]:
        """The results of ``task`` on ``items`` (see :meth:`serves`), in order: this process finishes the items the
        workers have not claimed, from the top down, and takes the workers' results for the others."""
        first, end = items[0], items[-1] + 1
        self._progress, self._range = progress, range(first, end)
        if self.task is None:
            self.task = task
            for channel in self.channels:
                channel.send((self.stream, task))
        done = sum(1 for item in self._range if item in self._results)
        if progress and done:
            progress.advance(done)
        claims, here, failure = self.claims, {}, None
        with self.lock:
            if claims[HIGH] <= claims[LOW] < claims[END]:  # the workers skip what this process took in its last map
                claims[LOW] = claims[END]
            claims[HIGH] = claims[END] = end
        try:
            drained = time.perf_counter()
            while True:
                if time.perf_counter() - drained > DRAIN_SECONDS:  # keep the pipes from filling (and the bar moving)
                    self._drain()
                    drained = time.perf_counter()
                with self.lock:
                    item = claims[HIGH] - 1
                    if item < max(claims[LOW], first):
                        workers_end = claims[HIGH]
                        break
                    claims[HIGH] = item
                try:
                    here[item] = task(item)
                except Exception as exc:
                    failure = (item, exc)
                    with self.lock:  # claims close: the workers finish what they hold and stop
                        workers_end = min(claims[LOW], item)
                        claims[STREAM] = 0
                    self.closed = True
                    break
                if progress:
                    progress.advance()
            results = []
            for item in self._range:  # in order: the first failing item raises, as drawn here in order
                if item in here:
                    results.append(here[item])
                elif failure is not None and item == failure[0]:
                    raise failure[1]
                else:
                    ok, result = self._await(item, end, task) if item < workers_end else (False, None)
                    if not ok:  # failed in a worker (it fails here again, with its error) or not claimed before the
                        result = task(item)  # claims closed
                        if progress and item >= workers_end:
                            progress.advance()
                    results.append(result)
            self._served = end
            return results
        except BaseException:
            self.close()
            raise
        finally:
            self._progress, self._range = None, range(0)

    def close(self) -> None:
        """Close the claims (the workers claim nothing more) without waiting."""
        self.closed = True
        with self.lock:
            if self.claims[STREAM] == self.stream:
                self.claims[STREAM] = 0

    def stop(self) -> None:
        """Close the claims, tell the workers to stop and wait until they have (reading what they send meanwhile)."""
        self.close()
        for channel in self.channels:
            channel.send((self.stream, _STOP))
        while not all(future.done() for future in self._futures):
            self._drain()
            wait_futures(self._futures, timeout=0.01)
        self._drain()
        self._results.clear()

    def _drain(self) -> None:
        """Read every message the workers have sent so far."""
        for channel in self.channels:
            while channel.poll():
                stream, batch = channel.recv()
                if stream == self.stream:
                    for item, ok, result in batch:
                        self._results[item] = (ok, result)
                        if self._progress and item in self._range:
                            self._progress.advance()

    def _await(self, item: int, end: int, task: Any) -> tuple[bool, Any]:
        """A worker's result for ``item``; (False, None) when no worker will send it (finish it here). While none has
        come, this process draws the next item from the low end (a later map's) with ``task`` rather than wait."""
        while item not in self._results:
            self._drain()
            if item in self._results:
                break
            working = not any(future.done() for future in self._futures)  # (none has died or ended)
            ahead = claim_low(self.claims, self.lock, self.stream)[0] if working else None
            if ahead is not None:
                try:
                    self._results[ahead] = (True, task(ahead))
                except Exception:  # its own map finishes it here again, in order
                    self._results[ahead] = (False, None)
                continue
            if not wait(self.channels, timeout=_WAIT_SECONDS):
                for future in self._futures:
                    if future.done() and future.exception() is not None:
                        raise worker_died(item, end - 1) from future.exception()
                if all(future.done() for future in self._futures):
                    self._drain()
                    if item not in self._results:
                        return False, None
        return self._results.pop(item)
