"""Certification blocks drawn ahead by the process backend's workers during the witness search and then streamed: the
same numbers as drawing them after it, in this process or in any number of workers, whatever share was drawn ahead and
however the maps split the blocks."""

from __future__ import annotations

import multiprocessing
import os
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.auditor.backends import Finish, ProcessBackend, SerialBackend
from dpaudit.auditor.draw_stream import DrawStream
from dpaudit.errors import MechanismError

from . import mechanisms_for_tests as m


def _square(item):
    return item * item


def _drawn(item):
    return ("drawn", item * item)


def _kept(drawn, item):
    return ("kept", drawn)


def _fails_from_seven(item):
    if item >= 7:
        raise ValueError(f"item {item} failed")
    return ("drawn", item * item)


def _draw_fails_from_seven(item):
    return _fails_from_seven(item)[1]


def _all_drawn_ahead(stream, timeout=30.0):
    """Wait until every worker has drawn all it may before the task is known."""
    until = time.monotonic() + timeout
    while not stream.drawn_ahead():
        assert time.monotonic() < until, "the workers did not finish drawing ahead"
        time.sleep(0.002)


@pytest.fixture(params=["as it comes", "all kept", "none kept"])
def ahead(request, monkeypatch):
    """The share of the certification drawn ahead: whatever the search left time for, all of it, or none."""
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)  # every map of two blocks to the workers
    if request.param == "none kept":
        monkeypatch.setattr("dpaudit.auditor.backends.AHEAD_BYTES", 0)
    original = DrawStream.map
    kept = []  # blocks kept in the workers when the witness was known, per audit that drew ahead

    def map_(self, task, items, progress=None):
        if self.task is None:
            if request.param == "all kept":
                _all_drawn_ahead(self)
            kept.append(self.kept())
        return original(self, task, items, progress)

    monkeypatch.setattr(DrawStream, "map", map_)
    return request.param, kept


def _without_time(result):
    data = result.to_dict()
    data.pop("seconds")
    return data


@pytest.mark.parametrize(("mechanism", "d", "d_prime", "delta"), [
    (m.laplace_unit, [0.0], [1.0], 0.0),
    (m.noisy_max_value, [0, 1, 0], [1, 1, 1], 1e-4),  # with the tails streamed before the search
])
def test_audits_are_identical_in_this_process_and_in_two_or_three_workers(ahead, mechanism, d, d_prime, delta):
    runs = {workers: dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, delta=delta, samples=200_000, seed=3,
                                   workers=workers) for workers in (1, 2, 3)}
    assert _without_time(runs[2]) == _without_time(runs[1]) == _without_time(runs[3])
    assert runs[1].looks > 1  # the blocks drawn ahead are counted over several looks
    share, kept = ahead
    assert len(kept) == 2  # both process audits streamed their certification
    assert min(kept) > 0 if share == "all kept" else max(kept) == 0 if share == "none kept" else True


def test_a_violation_stopped_at_an_early_look_has_the_serial_numbers(ahead):
    one = dpaudit.audit(m.noisy_max_value, [0] * 5, [1] * 5, epsilon=1.0, samples=400_000, seed=1, workers=1)
    two = dpaudit.audit(m.noisy_max_value, [0] * 5, [1] * 5, epsilon=1.0, samples=400_000, seed=1, workers=2)
    assert one.stopped == "violation" and _without_time(two) == _without_time(one)


def _measured(backend):
    backend.map(_square, [0, 1])  # measures a block here


def test_kept_blocks_are_finished_where_they_were_drawn_and_the_rest_drawn_here(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    items = list(range(20))
    with ProcessBackend(2) as backend:
        _measured(backend)
        backend.draw_ahead("key", _square, range(12), item_bytes=8)
        _all_drawn_ahead(backend._stream)
        assert backend.map(Finish("key", _drawn, _kept), items) == [("kept", i * i) for i in items[:12]] + [
            ("drawn", i * i) for i in items[12:]]
        assert backend.map(Finish("key", _drawn, _kept), [3, 4]) == [("drawn", 9), ("drawn", 16)]  # finished once
    with SerialBackend() as serial:
        assert serial.map(Finish("key", _drawn, _kept), [3, 4]) == [("drawn", 9), ("drawn", 16)]


def test_what_is_drawn_ahead_is_bounded_in_memory(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr("dpaudit.auditor.backends.AHEAD_BYTES", 5 * 1000)
    with ProcessBackend(2) as backend:
        _measured(backend)
        backend.draw_ahead("key", _square, range(100), item_bytes=1000)
        _all_drawn_ahead(backend._stream)
        assert backend._stream.kept() == 5
        assert backend.map(Finish("key", _drawn, _kept), range(100)) == [("kept", i * i) for i in range(5)] + [
            ("drawn", i * i) for i in range(5, 100)]  # then the rest, counted as drawn


def test_nothing_is_drawn_ahead_for_a_map_that_would_run_here(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 1e6)
    with ProcessBackend(2) as backend:
        _measured(backend)
        backend.draw_ahead("key", _square, range(100), item_bytes=8)
        assert backend._stream is None and not any(getattr(lane, "_processes", None) for lane in backend._lanes)


@settings(max_examples=8, deadline=None)
@given(cuts=st.lists(st.integers(1, 59), max_size=6, unique=True), keep_bytes=st.sampled_from([0, 80, 10**6]),
       workers=st.sampled_from([2, 3]), wait=st.booleans())
def test_any_split_of_the_stream_into_maps_gives_the_items_in_order(cuts, keep_bytes, workers, wait):
    ends = sorted(cuts) + [60]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
        patch.setattr("dpaudit.auditor.backends.AHEAD_BYTES", keep_bytes)
        with ProcessBackend(workers) as backend:
            _measured(backend)
            backend.draw_ahead("key", _square, range(60), item_bytes=8)
            if wait:
                _all_drawn_ahead(backend._stream)
            results, start = [], 0
            for end in ends:
                results += backend.map(Finish("key", _drawn, _kept), range(start, end))
                start = end
            assert backend._stream is not None  # every map was served by the stream
    assert [value for _, value in results] == [i * i for i in range(60)]
    assert all(how == "drawn" for how, _ in results[10:]) or keep_bytes == 10**6  # at most 80 / 8 kept


@pytest.mark.parametrize("wait", [True, False])
def test_the_first_failing_item_of_a_map_fails_whoever_drew_it(monkeypatch, wait):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    with ProcessBackend(2) as backend:
        _measured(backend)
        backend.draw_ahead("key", _draw_fails_from_seven, range(20), item_bytes=8)
        if wait:
            _all_drawn_ahead(backend._stream)
        assert [value for _, value in backend.map(Finish("key", _fails_from_seven, _kept), range(0, 5))] == [
            0, 1, 4, 9, 16]
        with pytest.raises(ValueError, match="item 7 failed"):
            backend.map(Finish("key", _fails_from_seven, _kept), range(5, 20))


def _crashes_on_large_blocks(data, size, rng):
    if size > 20_000:  # the certification blocks only (probes and the selection are smaller)
        raise ZeroDivisionError("boom")
    return m.laplace_unit(data, size, rng)


def test_a_block_that_fails_when_drawn_ahead_fails_in_its_map_as_in_this_process(ahead):
    errors = []
    for workers in (1, 2):
        with pytest.raises(MechanismError) as caught:
            dpaudit.audit(_crashes_on_large_blocks, [0.0], [1.0], samples=200_000, seed=0, workers=workers)
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "certification block" in errors[0]


def _exits_in_a_worker(data, size, rng):
    if size > 20_000 and multiprocessing.parent_process() is not None:
        os._exit(7)
    return m.laplace_unit(data, size, rng)


def test_a_worker_process_that_dies_while_streaming_is_a_mechanism_error(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    with pytest.raises(MechanismError, match="worker process died"):
        dpaudit.audit(_exits_in_a_worker, [0.0], [1.0], samples=200_000, seed=0, workers=2)


class _Bar:
    def __init__(self):
        self.done = 0

    def advance(self, count=1):
        self.done += count

    def close(self):
        pass


def test_the_progress_bar_advances_once_per_streamed_item(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    bar = _Bar()
    with ProcessBackend(3, bar) as backend:
        _measured(backend)
        backend.draw_ahead("key", _square, range(40), item_bytes=8)
        for start, end in ((0, 2), (2, 5), (5, 40)):
            backend.map(Finish("key", _drawn, _kept), range(start, end))
    assert bar.done == 2 + 40


def _slow_square(item):
    time.sleep(0.002)
    return item * item


def test_a_stream_asked_for_before_a_block_was_measured_starts_after_the_next_and_small_maps_leave_it(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.05)
    with ProcessBackend(2) as backend:
        backend.draw_ahead("key", _slow_square, range(60), item_bytes=8)  # 60 x 2 ms: worth the workers, once measured
        assert backend._stream is None
        assert backend.map(_slow_square, [0, 1, 2]) == [0, 1, 4]  # the first block measured here starts it
        stream = backend._stream
        assert stream is not None
        assert backend.map(_square, list(range(40))) == [i * i for i in range(40)]  # any map runs here meanwhile
        assert backend._stream is stream
        assert [value for _, value in backend.map(Finish("key", _drawn, _kept), range(60))] == [i * i for i in range(60)]
        assert backend._stream is stream


def test_an_audit_whose_selection_is_drawn_beside_the_stream_has_the_serial_numbers(monkeypatch):
    """The workers start with the selection (several blocks per input, drawn here while they draw ahead)."""
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.005)
    streamed = []
    original = DrawStream.map

    def map_(self, task, items, progress=None):
        streamed.append(len(items))
        return original(self, task, items, progress)

    monkeypatch.setattr(DrawStream, "map", map_)
    one = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=1_000_000, seed=2, workers=1)
    two = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=1_000_000, seed=2, workers=2)
    assert _without_time(two) == _without_time(one)
    assert len(streamed) == two.looks  # every look was served by the stream


def _blas_threads(item):
    from dpaudit.auditor.threads import thread_pools

    return sorted({library.get_num_threads() for library in thread_pools().lib_controllers if library.user_api == "blas"})


def test_this_process_runs_one_numeric_thread_while_workers_run_and_the_limit_is_restored(monkeypatch):
    """A fork shuts OpenBLAS's threads down; raising the count again mid-audit would start threads spinning on the
    core a worker needs. So one thread here once workers start, and this process's setting back afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from dpaudit.auditor.threads import thread_pools

    if not [lib for lib in thread_pools().lib_controllers if lib.user_api == "blas"]:
        pytest.skip("no BLAS library with a thread pool loaded")
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        before = _blas_threads(0)
        with ProcessBackend(2) as backend:
            assert backend.map(_blas_threads, [0]) == [before]  # one block: runs here, no worker started
            backend.map(_blas_threads, list(range(8)))  # the workers start
            assert _blas_threads(0) == [1]
            if os.path.isdir("/proc/self/task"):  # a nested block sets no count: no new (spinning) thread after the fork
                from dpaudit.auditor.threads import one_numeric_thread

                threads = len(os.listdir("/proc/self/task"))
                with one_numeric_thread():
                    pass
                assert len(os.listdir("/proc/self/task")) <= threads
        assert _blas_threads(0) == before == [2]


@pytest.mark.parametrize("free", [False, True])
def test_workers_start_only_while_a_core_is_free_and_the_numbers_are_the_same(monkeypatch, free):
    """On a busy machine a worker process only adds its costs: no worker starts while no core is free, and each later
    map asks again."""
    monkeypatch.setattr("dpaudit.auditor.backends.REQUIRE_FREE_CORE", True)
    monkeypatch.setattr("dpaudit.auditor.backends.core_free", lambda: free)
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    earlier = {process.pid for process in multiprocessing.active_children()}  # earlier tests' workers, exiting

    def started():
        return bool({process.pid for process in multiprocessing.active_children()} - earlier)

    with ProcessBackend(2) as backend:
        assert backend.map(_square, list(range(12))) == [i * i for i in range(12)]
        assert started() == free
        monkeypatch.setattr("dpaudit.auditor.backends.core_free", lambda: True)
        assert backend.map(_square, list(range(12, 20))) == [i * i for i in range(12, 20)]
        assert started()  # a core came free: the next map starts the workers
    result = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=300_000, seed=4, workers=2)
    monkeypatch.setattr("dpaudit.auditor.backends.REQUIRE_FREE_CORE", False)
    again = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=300_000, seed=4, workers=2)
    assert _without_time(again) == _without_time(result)


def test_the_count_of_tasks_running_elsewhere_leaves_out_this_process_and_its_children(tmp_path, monkeypatch):
    from dpaudit.auditor import cores

    assert cores.usable_cores() >= 1 and cores.running_elsewhere() >= 0 and isinstance(cores.core_free(), bool)
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("no /proc: every core counts as free")
    assert cores._running_threads("self") >= 1  # this thread, reading
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("0.50 0.40 0.30 7/300 12345\n")
    children = [multiprocessing.get_context().Process(target=time.sleep, args=(3.0,)) for _ in range(2)]
    for process in children:
        process.start()
    try:
        running = {"self": 2, **{child.pid: 1 for child in children}}  # as if two threads here and both children ran
        monkeypatch.setattr(cores, "_running_threads", lambda pid: running.get(pid, 0))
        assert cores.running_elsewhere(str(loadavg)) == 7 - 2 - 2
        monkeypatch.setattr(cores, "usable_cores", lambda: 6)
        assert cores.core_free() is (6 - cores.running_elsewhere() >= 2)
    finally:
        for process in children:
            process.terminate()
            process.join()
    loadavg.write_text("garbage")
    assert cores.running_elsewhere(str(loadavg)) == 0


def test_a_core_that_comes_free_during_the_selection_still_gets_the_draws_ahead(monkeypatch):
    """Busy at the first measured block, free at a later selection block: the workers start drawing ahead then; once
    the certification's own maps begin, nothing is drawn ahead any more."""
    answers = iter([False, False, True])
    monkeypatch.setattr("dpaudit.auditor.backends.REQUIRE_FREE_CORE", True)
    monkeypatch.setattr("dpaudit.auditor.backends.core_free", lambda: next(answers, True))
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    with ProcessBackend(2) as backend:
        backend.draw_ahead("key", _drawn, range(0, 40), item_bytes=8)
        assert backend._stream is None and backend._pending is not None  # no block measured yet
        backend._here(_square, [1])  # measured; busy: still pending
        assert backend._stream is None and backend._pending is not None
        backend._here(_square, [2])  # busy
        assert backend._stream is None
        backend._here(_square, [3])  # free: the stream starts
        assert backend._stream is not None and backend._pending is None
    with ProcessBackend(2) as backend:
        monkeypatch.setattr("dpaudit.auditor.backends.core_free", lambda: False)
        backend.draw_ahead("key", _drawn, range(0, 40), item_bytes=8)
        backend._here(_square, [1])
        assert backend._pending is not None
        finish = Finish("key", _square, _kept)
        assert backend.map(finish, list(range(4))) == [0, 1, 4, 9]
        assert backend._pending is None and backend._stream is None
