"""Audits and gates on a Dask LocalCluster: identical numbers, lost workers, clear errors."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
pytestmark = pytest.mark.xdist_group("dask-cluster")  # one worker starts the module's cluster once

import dpaudit  # noqa: E402
from dpaudit.auditor.dask_backend import DaskBackend, check_worker_versions  # noqa: E402
from dpaudit.cli import main  # noqa: E402
from dpaudit.errors import ClusterError, MechanismError  # noqa: E402
from dpaudit.mechanisms import examples  # noqa: E402
from dpaudit.mechanisms.buggy import NoisyMaxReturnsValue  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))  # gate.gate_mechanisms

LAPLACE = {example.name: example for example in examples()}["laplace"].mechanism


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as local:
        yield local


def _numbers(result) -> dict:
    data = result.to_dict()
    data.pop("seconds")
    return data


@pytest.mark.parametrize("mechanism, d, d_prime, samples", [
    (LAPLACE, [0], [1], 300_000),
    (NoisyMaxReturnsValue(1.0, k=5), [0] * 5, [1] * 5, 200_000),
])
def test_same_numbers_as_serial_and_process_backends(cluster, mechanism, d, d_prime, samples):
    for sequential in (True, False):  # looks are whole seeded blocks: the same stop at the same look everywhere
        common = dict(epsilon=1.0, samples=samples, seed=11, sequential=sequential)
        on_cluster = dpaudit.audit(mechanism, d, d_prime, scheduler=cluster.scheduler_address, **common)
        serial = dpaudit.audit(mechanism, d, d_prime, workers=1, **common)
        processes = dpaudit.audit(mechanism, d, d_prime, workers=2, **common)
        assert _numbers(on_cluster) == _numbers(serial) == _numbers(processes)
        assert (serial.samples_used < samples) == (sequential and serial.stopped != "budget")


def test_chunking_and_wave_size_do_not_change_results(cluster):
    task_results = []
    for blocks_per_task, in_flight in ((1, 1), (3, 2), (64, 8)):
        with DaskBackend(cluster.scheduler_address, blocks_per_task=blocks_per_task, in_flight=in_flight) as backend:
            task_results.append(backend.map(_square, list(range(23))))
    assert task_results[0] == task_results[1] == task_results[2] == [b * b for b in range(23)]


def _square(block: int) -> int:
    return block * block


def test_client_object_and_environment_variable(cluster, monkeypatch):
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        with_client = dpaudit.audit(LAPLACE, [0], [1], samples=150_000, seed=2, scheduler=client)
    monkeypatch.setenv("DPAUDIT_SCHEDULER", cluster.scheduler_address)
    from_env = dpaudit.audit(LAPLACE, [0], [1], samples=150_000, seed=2)
    monkeypatch.delenv("DPAUDIT_SCHEDULER")
    assert _numbers(with_client) == _numbers(from_env) == _numbers(dpaudit.audit(LAPLACE, [0], [1], samples=150_000, seed=2, workers=1))


def test_a_worker_killed_mid_audit_changes_nothing(cluster):
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        pids = list(client.run(os.getpid).values())
        expected = dpaudit.audit(SlowLaplace(), [0], [1], samples=1_500_000, seed=5, workers=1)
        killer = threading.Timer(1.5, os.kill, args=(pids[0], signal.SIGKILL))
        killer.start()
        result = dpaudit.audit(SlowLaplace(), [0], [1], samples=1_500_000, seed=5, scheduler=client)
        killer.join()
        client.wait_for_workers(2, timeout=60)
    assert _numbers(result) == _numbers(expected)
    with pytest.raises(ProcessLookupError):
        os.kill(pids[0], 0)  # the worker really died


class SlowLaplace:
    """Laplace that takes a while per block, so a kill lands mid-audit."""

    def __call__(self, data, size, rng):
        time.sleep(0.05)
        return data[0] + rng.laplace(0.0, 1.0, size)


def test_a_mechanism_that_raises_on_a_worker_gives_the_local_message(cluster):
    messages = []
    for where in (dict(scheduler=cluster.scheduler_address), dict(workers=1)):
        with pytest.raises(MechanismError) as caught:
            dpaudit.audit(FailsOnBigBlocks(), [0], [1], samples=300_000, seed=3, **where)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "selection block 0, seed 3" in messages[0]


class FailsOnBigBlocks:
    def __call__(self, data, size, rng):
        if size > 1000:
            raise ValueError("no big blocks")
        return data[0] + rng.laplace(0.0, 1.0, size)


def test_unreachable_scheduler_is_a_clear_error_within_the_timeout():
    started = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        with DaskBackend("tcp://127.0.0.1:9", connect_timeout=2):
            pass
    assert time.monotonic() - started < 30


def test_mismatched_versions_say_which_and_how_to_fix():
    with pytest.raises(ClusterError, match=r"worker tcp://w:1 has numpy 1.0 .* \(pip install numpy==2\)"):
        check_worker_versions({"dpaudit": "0.1.0", "numpy": "2"}, {"tcp://w:1": {"dpaudit": "0.1.0", "numpy": "1.0"}})


class _AnsweringClient:
    """A client whose workers answer the version check with the given results (an exception: that worker's error)."""

    def __init__(self, answers):
        self.answers = answers

    def run(self, function, on_error="raise"):
        assert on_error == "return"
        return {worker: function() if answer is None else answer for worker, answer in self.answers.items()}


def test_a_worker_that_leaves_during_the_version_check_is_left_out_and_other_errors_are_raised():
    from distributed.comm.core import CommClosedError

    with DaskBackend(_AnsweringClient({"tcp://w:1": None, "tcp://w:2": CommClosedError("Stream is closed")})):
        pass  # the worker that left runs nothing; the one that answered is checked
    with pytest.raises(ClusterError, match="cannot import"):
        DaskBackend(_AnsweringClient({"tcp://w:1": None, "tcp://w:2": ImportError("no numpy")})).__enter__()


def test_invalid_scheduler_argument():
    with pytest.raises(ValueError, match="scheduler"):
        dpaudit.audit(LAPLACE, [0], [1], samples=1_000, scheduler=42)


def test_command_line_audit_and_gate_on_the_cluster(cluster, tmp_path, capsys):
    gate = tmp_path / "gate.toml"
    gate.write_text("""
[gate]
seed = 3
[[audit]]
name = "laplace"
example = "laplace"
samples = 100_000
[[audit]]
name = "rr"
example = "randomized_response"
samples = 100_000
[[budget]]
name = "b"
epsilon = 0.1
k = 100
delta = 1e-5
max_epsilon = 10
""")
    local_code = main(["check", str(gate), "--json"])
    local = json.loads(capsys.readouterr().out)
    cluster_code = main(["check", str(gate), "--json", "--scheduler", cluster.scheduler_address])
    remote = json.loads(capsys.readouterr().out)
    for payload in (local, remote):
        payload.pop("seconds")
        for row in payload["audits"] + payload["budgets"]:
            row.pop("seconds", None)
    assert local_code == cluster_code == 0 and local == remote


def test_unreachable_scheduler_on_the_command_line_exits_3(capsys, monkeypatch):
    import dpaudit.auditor.dask_backend as backend

    monkeypatch.setattr(backend, "CONNECT_TIMEOUT", 2.0)
    code = main(["audit", "gate.gate_mechanisms:laplace", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1",
                 "--samples", "1000", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 3 and "cannot reach the Dask scheduler" in err and err.count("\n") == 1


class _InterruptAfter:
    """A progress callback that raises KeyboardInterrupt after some blocks (as Ctrl-C would)."""

    def __init__(self, blocks: int) -> None:
        self.left = blocks

    def advance(self, count: int = 1) -> None:
        self.left -= count
        if self.left <= 0:
            raise KeyboardInterrupt


def test_ctrl_c_cancels_the_clusters_futures(cluster):
    with distributed.Client(cluster.scheduler_address, set_as_default=False) as client:
        with DaskBackend(client, _InterruptAfter(2), blocks_per_task=1, in_flight=6) as backend:
            with pytest.raises(KeyboardInterrupt):
                backend.map(_sleepy_square, list(range(40)))
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and any(client.processing().values()):
            time.sleep(0.2)
        assert not any(client.processing().values())


def _sleepy_square(block: int) -> int:
    time.sleep(0.5)
    return block * block


def test_a_hung_gate_entry_on_the_cluster_times_out_and_the_rest_run(cluster, tmp_path, capsys):
    gate = tmp_path / "gate.toml"
    gate.write_text(f"""
[[audit]]
name = "hung"
mechanism = "gate.fault_mechanisms:hangs"
d = [0.0]
d_prime = [1.0]
epsilon = 2.0
samples = 2_000
timeout = 3
[[audit]]
name = "good"
example = "laplace"
samples = 50_000
""")
    code = main(["check", str(gate), "--json", "--scheduler", cluster.scheduler_address])
    payload = json.loads(capsys.readouterr().out)
    hung, good = payload["audits"]
    assert code == 3 and hung["error"]["kind"] == "timeout" and good["passed"] is True
