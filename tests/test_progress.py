"""The audit progress bar: tqdm, the same on the local, process and Dask backends, silent unless enabled."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import tqdm.auto

import dpaudit
from dpaudit.auditor.backends import ProcessBackend, Progress, SerialBackend


class RecordingTqdm(tqdm.auto.tqdm):
    """tqdm that remembers every bar it drew: total, updates and whether it was closed."""

    bars: list[RecordingTqdm] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.updates: list[int] = []
        self.closed = False
        RecordingTqdm.bars.append(self)

    def update(self, n=1):
        self.updates.append(n)
        return super().update(n)

    def close(self):
        self.closed = True
        return super().close()


@pytest.fixture
def recorded(monkeypatch):
    RecordingTqdm.bars = []
    monkeypatch.setattr(tqdm.auto, "tqdm", RecordingTqdm)
    return RecordingTqdm.bars


def _square(block: int) -> int:
    return block * block


def test_disabled_progress_writes_nothing_and_draws_no_bar(capsys, recorded):
    bar = Progress(5, enabled=False)
    for _ in range(5):
        bar.advance()
    assert bar.done == 5 and capsys.readouterr().err == "" and recorded == []


def test_the_bar_is_tqdm_and_closes_at_the_last_block(capsys, recorded):
    bar = Progress(4, label="audit", enabled=True)
    for _ in range(4):
        bar.advance()
    assert len(recorded) == 1 and recorded[0].total == 4 and sum(recorded[0].updates) == 4 and recorded[0].closed
    assert bar._bar is None
    assert "audit:" in capsys.readouterr().err  # tqdm's format ("audit:  50%|...| 2/4 [...]")


def test_a_progress_bar_pickles_without_its_terminal_state(recorded):
    bar = Progress(3, enabled=True)
    copy = pickle.loads(pickle.dumps(bar))
    assert copy.total == 3 and copy._bar is None
    bar.close()
    assert recorded[0].closed


@pytest.mark.parametrize("backend", [SerialBackend, lambda progress: ProcessBackend(2, progress)], ids=["local", "process"])
def test_local_and_process_backends_advance_one_bar_per_block(backend, recorded, monkeypatch):
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    bar = Progress(12, enabled=True)
    with backend(bar) as running:
        assert running.map(_square, list(range(12))) == [b * b for b in range(12)]
    assert sum(recorded[0].updates) == 12 and recorded[0].closed


def test_the_dask_backend_advances_the_same_bar(recorded):
    distributed = pytest.importorskip("distributed")
    from dpaudit.auditor.dask_backend import DaskBackend

    bar = Progress(12, enabled=True)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster:
        with DaskBackend(cluster.scheduler_address, bar, blocks_per_task=5) as backend:
            assert backend.map(_square, list(range(12))) == [b * b for b in range(12)]
    assert sorted(recorded[0].updates) == [2, 5, 5] and sum(recorded[0].updates) == 12 and recorded[0].closed


def test_a_failing_backend_still_removes_its_bar(recorded):
    def fails(block: int) -> int:
        raise ValueError("mechanism failed")

    bar = Progress(3, enabled=True)
    with pytest.raises(ValueError), SerialBackend(bar) as backend:
        backend.map(fails, [0, 1, 2])
    assert recorded[0].closed


def test_an_audit_with_progress_draws_the_bar_and_closes_it(recorded):
    def laplace(data, size, rng):
        return data[0] + rng.laplace(0.0, 1.0, size)

    result = dpaudit.audit(laplace, [0.0], [1.0], epsilon=1.0, samples=2000, workers=1, progress=True)
    assert not result.violated and np.isfinite(result.epsilon_lower)
    assert len(recorded) == 1 and recorded[0].desc == "audit" and sum(recorded[0].updates) > 0 and recorded[0].closed


def _side(block):
    return ("d", block)


def _other_side(block):
    return ("d_prime", block)


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_one_map_over_both_inputs_keeps_each_inputs_blocks_in_order(workers, monkeypatch):
    from dpaudit.auditor.backends import map_both

    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.0)
    blocks = list(range(5, 40))
    with (SerialBackend() if workers == 1 else ProcessBackend(workers)) as running:
        on_d, on_dp = map_both(running, _side, _other_side, blocks)
    assert on_d == [("d", b) for b in blocks] and on_dp == [("d_prime", b) for b in blocks]


def _slow(block):
    import time

    time.sleep(0.01)
    return block


def test_a_map_too_small_to_pay_for_workers_runs_in_this_process(monkeypatch):
    """The process backend measures a block here first and sends a map to its workers only when it would take at
    least MIN_PARALLEL_SECONDS here (no pool is started for small maps)."""
    monkeypatch.setattr("dpaudit.auditor.backends.MIN_PARALLEL_SECONDS", 0.5)
    with ProcessBackend(2) as running:
        assert running.map(_slow, list(range(5))) == list(range(5))  # about 0.05 s: here
        assert not any(getattr(lane, "_processes", None) for lane in running._lanes)
        assert running.map(_slow, list(range(60))) == list(range(60))  # at least 0.6 s: the workers
        assert all(getattr(lane, "_processes", None) for lane in running._lanes)
