"""Certification blocks drawn ahead by the process backend's workers during the witness search: the same numbers as
drawing them after it, in this process or in any number of workers, whatever share was drawn ahead."""

from __future__ import annotations

import pytest

import dpaudit
from dpaudit.auditor.backends import Finish, ProcessBackend, SerialBackend
from dpaudit.errors import MechanismError

from . import mechanisms_for_tests as m


def _square(item):
    return item * item


def _drawn(item):
    return ("drawn", item * item)


def _kept(drawn, item):
    return ("kept", drawn)


def _every_draw_finished(backend):
    """Wait for every block drawn ahead before the witness is known (none is cancelled: all are kept)."""
    for _, future in backend._ahead.values():
        future.result()


def _nothing_drawn_yet(backend):
    """Cancel the blocks drawn ahead before any started: the map draws them all."""
    for _, future in backend._ahead.values():
        future.cancel()


@pytest.fixture(params=["as it comes", "all kept", "none kept"])
def ahead(request, monkeypatch):
    """The share of the certification drawn ahead: whatever the search left time for, all of it, or (nearly) none."""
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)  # every map of two blocks to the workers
    original = ProcessBackend._collect_ahead
    before = {"all kept": _every_draw_finished, "none kept": _nothing_drawn_yet}.get(request.param)

    kept = []  # blocks kept in the workers, per audit that drew ahead

    def collect(self, key):
        drew = bool(self._ahead) and key == self._ahead_key
        if drew and before is not None:
            before(self)
        original(self, key)
        if drew:
            kept.append(len(self._kept))

    monkeypatch.setattr(ProcessBackend, "_collect_ahead", collect)
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
    assert len(kept) == 2 and (share != "all kept" or min(kept) > 0)  # both process audits drew ahead


def test_a_violation_stopped_at_an_early_look_has_the_serial_numbers(ahead):
    one = dpaudit.audit(m.noisy_max_value, [0] * 5, [1] * 5, epsilon=1.0, samples=400_000, seed=1, workers=1)
    two = dpaudit.audit(m.noisy_max_value, [0] * 5, [1] * 5, epsilon=1.0, samples=400_000, seed=1, workers=2)
    assert one.stopped == "violation" and _without_time(two) == _without_time(one)


def test_kept_blocks_are_finished_where_they_were_drawn_and_the_rest_drawn_in_order(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    items = list(range(20))
    with ProcessBackend(2) as backend:
        backend.map(_square, [0, 1])  # measures a block here
        backend.draw_ahead("key", _square, items[:12], item_bytes=8)
        _every_draw_finished(backend)
        assert backend.map(Finish("key", _drawn, _kept), items) == [("kept", i * i) for i in items[:12]] + [
            ("drawn", i * i) for i in items[12:]]
        assert backend.map(Finish("key", _drawn, _kept), [3, 4]) == [("drawn", 9), ("drawn", 16)]  # finished once
    with SerialBackend() as serial:
        assert serial.map(Finish("key", _drawn, _kept), [3, 4]) == [("drawn", 9), ("drawn", 16)]


def test_what_is_drawn_ahead_is_bounded_in_memory(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    monkeypatch.setattr("dpaudit.auditor.backends.AHEAD_BYTES", 5 * 1000)
    with ProcessBackend(2) as backend:
        backend.map(_square, [0, 1])
        backend.draw_ahead("key", _square, range(100), item_bytes=1000)
        assert sum(len(future.result()) for _, future in backend._ahead.values()) == 5


def test_nothing_is_drawn_ahead_for_a_map_that_would_run_here(monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 1e6)
    with ProcessBackend(2) as backend:
        backend.map(_square, [0, 1])
        backend.draw_ahead("key", _square, range(100), item_bytes=8)
        assert not backend._ahead and not any(getattr(lane, "_processes", None) for lane in backend._lanes)


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
