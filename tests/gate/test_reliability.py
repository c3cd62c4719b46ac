"""Fault injection: the gate contains failures, its exit codes never cry wolf, its outputs are atomic."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import dpaudit
from dpaudit.auditor.backends import ProcessBackend
from dpaudit.auditor.sampling import PHASE_SELECT, SIDE_D, draw_raw_block
from dpaudit.cli import main

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
from gate import fault_mechanisms as faults  # noqa: E402

M = "gate.fault_mechanisms"


def _default_interrupts() -> None:
    """In the child: SIGINT handled as usual even when this process was started with it ignored (a
    background job of a non-interactive shell), so the interrupt scenarios test the command, not the shell."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def write(tmp_path: Path, text: str, name: str = "gate.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def entry(name: str, mechanism: str, extra: str = "") -> str:
    return f"""
[[audit]]
name = "{name}"
mechanism = "{M}:{mechanism}"
d = [0.0]
d_prime = [1.0]
epsilon = 2.0
samples = 2_000
{extra}
"""


GOOD = entry("good", "laplace")


# --- containment and exit codes -------------------------------------------------------------------

@pytest.mark.parametrize("mechanism, expected", [
    ("raises", "RuntimeError: mechanism on d (probe block 0, seed"),
    ("exits", "exited with code 7"),
    ("ragged", "not a rectangular array"),
])
def test_a_failing_entry_is_an_error_the_others_run_and_the_report_has_every_result(tmp_path, capsys, mechanism, expected):
    config = write(tmp_path, "[gate]\nworkers = 1\n" + entry("bad", mechanism) + GOOD)
    code, out, err = run(capsys, "check", config, "--json", "--report", tmp_path / "report")
    assert code == 3
    payload = json.loads(out)
    bad, good = payload["audits"]
    assert bad["error"]["message"].count(expected.split(":")[0]) and expected.split(": ", 1)[-1] in bad["error"]["message"]
    assert bad["passed"] is False and good["passed"] is True and good["epsilon_lower"] > 0
    assert payload["status"] == "ERROR"
    assert "[1/2] audit    bad: ERROR" in err and "[2/2] audit    good:" in err
    report = (tmp_path / "report" / "report.md").read_text()
    assert "ERROR" in report and "good" in report and "could not be completed" in report


def test_a_finding_beats_an_error_in_the_exit_code(tmp_path, capsys):
    violated = entry("leaky", "laplace").replace("epsilon = 2.0", "epsilon = 0.2")
    code, _, _ = run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + entry("bad", "raises") + violated))
    assert code == 1


def test_a_hung_mechanism_is_stopped_at_its_timeout(tmp_path, capsys):
    config = write(tmp_path, "[gate]\nworkers = 1\n" + entry("hung", "hangs", "timeout = 1.5") + GOOD)
    started = time.monotonic()
    code, out, err = run(capsys, "check", config, "--json")
    assert time.monotonic() - started < 60
    assert code == 3
    hung = json.loads(out)["audits"][0]
    assert hung["error"]["kind"] == "timeout" and "1.5 s" in hung["error"]["message"]


def test_command_line_timeout_applies_to_entries_without_their_own(tmp_path, capsys):
    code, out, _ = run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + entry("hung", "hangs")), "--timeout", "1", "--json")
    assert code == 3 and json.loads(out)["audits"][0]["error"]["kind"] == "timeout"


def test_hung_workers_are_killed_with_the_entry(tmp_path, capsys, monkeypatch):
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("DPAUDIT_TEST_PID_DIR", str(pids))
    config = write(tmp_path, "[gate]\nworkers = 2\n" + entry("hung", "hangs_in_workers", "timeout = 4").replace("2_000", "400_000"))
    code, out, _ = run(capsys, "check", config, "--json")
    assert code == 3 and json.loads(out)["audits"][0]["error"]["kind"] == "timeout"
    hung_workers = [int(p.name) for p in pids.iterdir()]
    assert hung_workers  # the hang happened in worker processes
    time.sleep(0.5)
    assert [pid for pid in hung_workers if _alive(pid)] == []


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_neighbours_callable_that_raises_is_that_entrys_error(tmp_path, capsys):
    config = write(tmp_path, f"""
[gate]
workers = 1
[[audit]]
name = "pairs-fail"
mechanism = "{M}:laplace"
neighbours = "{M}:pairs_raise"
epsilon = 2.0
samples = 2_000
""" + GOOD)
    code, out, _ = run(capsys, "check", config, "--json")
    assert code == 3
    failed = json.loads(out)["audits"][0]
    assert "KeyError" in failed["error"]["message"] and "neighbours could not be built" in failed["error"]["message"]


def test_module_paths_resolve_relative_to_the_config_file(tmp_path, capsys, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "local_mechs_for_gate.py").write_text(
        "import numpy as np\ndef lap(data, size, rng):\n    return data[0] + rng.laplace(0, 1, size)\n")
    config = write(tmp_path / "sub", GOOD.replace(f"{M}:laplace", "local_mechs_for_gate:lap"))
    monkeypatch.chdir(tmp_path)  # not the config's directory
    code, _, _ = run(capsys, "check", config)
    assert code == 0


# --- outputs: checked first, written atomically -----------------------------------------------------

def test_unwritable_outputs_are_refused_before_anything_runs(tmp_path, capsys):
    config = write(tmp_path, entry("hung", "hangs"))  # would hang if it ran
    a_file = tmp_path / "occupied"
    a_file.write_text("x")
    for argv in (["--report", a_file / "report"], ["--write-baseline", tmp_path / "missing" / "baseline.json"],
                 ["--write-baseline", tmp_path]):
        code, _, err = run(capsys, "check", config, *argv)
        assert code == 3 and err.startswith("dpaudit: could not complete: I/O error") and err.count("\n") == 1
    code, _, err = run(capsys, "check", config, "--report", a_file)  # a file in the way: refused, it is not ours
    assert code == 2 and "not a directory" in err and str(a_file) in err and err.count("\n") == 1


def test_a_failed_write_keeps_the_previous_baseline_whole(tmp_path, capsys, monkeypatch):
    config = write(tmp_path, "[gate]\nworkers = 1\n" + GOOD)
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config, "--write-baseline", baseline)[0] == 0
    before = baseline.read_text()
    import dpaudit._io as io

    def full_disk(path, text):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(Path, "write_text", lambda self, text, encoding=None: full_disk(self, text))
    code, _, err = run(capsys, "check", config, "--write-baseline", baseline)
    monkeypatch.undo()
    assert code == 3 and "No space left on device" in err
    assert baseline.read_text() == before and json.loads(before)["audits"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    del io


def test_an_incomplete_run_does_not_overwrite_the_baseline(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + GOOD), "--write-baseline", baseline)[0] == 0
    before = baseline.read_text()
    code, _, err = run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + GOOD + entry("bad", "raises")),
                       "--write-baseline", baseline)
    assert code == 3 and "baseline NOT written" in err and baseline.read_text() == before


def test_write_baseline_confirms_what_it_wrote(tmp_path, capsys):
    code, _, err = run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + GOOD), "--write-baseline", tmp_path / "b.json")
    assert code == 0 and "baseline written to" in err and "1 audit(s)" in err and "(good)" in err


def test_a_baseline_that_matches_no_entry_is_a_config_error(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"audits": [{"name": "something-else"}]}))
    code, _, err = run(capsys, "check", write(tmp_path, GOOD), "--baseline", other)
    assert code == 2 and "none of its audits" in err


@pytest.fixture
def interrupts_handled():
    """SIGINT raises KeyboardInterrupt in this process during the test, even when the test run was started with
    it ignored (a background job of a non-interactive shell ignores SIGINT, and Python then keeps it ignored)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_interrupted_report_leaves_the_previous_report_whole(tmp_path, capsys, monkeypatch, interrupts_handled):
    config = write(tmp_path, "[gate]\nworkers = 1\n" + GOOD)
    report = tmp_path / "report"
    assert run(capsys, "check", config, "--report", report)[0] == 0
    before = {p.name: p.read_bytes() for p in report.iterdir()}
    import dpaudit.reporting.gate_report as gate_report

    parent = os.getpid()

    def interrupted(*args, **kwargs):  # Ctrl-C while the report is being written (in the command's process)
        os.kill(parent, signal.SIGINT)
        time.sleep(30)

    monkeypatch.setattr(gate_report, "plot_bound_curve", interrupted)
    code, _, err = run(capsys, "check", config, "--report", report)
    assert code == 130 and err.strip().endswith("dpaudit: interrupted")
    assert {p.name: p.read_bytes() for p in report.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".report")] == []


def test_stale_report_files_are_removed_and_the_users_files_kept(tmp_path, capsys):
    report = tmp_path / "report"
    two = write(tmp_path, "[gate]\nworkers = 1\n" + GOOD + entry("second", "laplace"))
    assert run(capsys, "check", two, "--report", report)[0] == 0
    assert (report / "audit-second-bound.png").exists()
    (report / "NOTES.txt").write_text("mine")
    assert run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + GOOD, "one.toml"), "--report", report)[0] == 0
    names = {p.name for p in report.iterdir()}
    assert "audit-second-bound.png" not in names and "audit-good-bound.png" in names
    assert (report / "NOTES.txt").read_text() == "mine"
    assert json.loads((report / "manifest.json").read_text())["files"]


# --- RNG discipline -----------------------------------------------------------------------------------

def test_global_rng_mechanisms_are_reproducible_and_independent_across_workers():
    # Blocks drawn in forked worker processes would replay one copy of the global state without seeding.
    with ProcessBackend(2) as backend:
        blocks = backend.map(_draw_global_block, list(range(8)))
    assert len({b.tobytes() for b in blocks}) == 8
    assert all(np.array_equal(a, b) for a, b in zip(blocks, [_draw_global_block(i) for i in range(8)]))
    one = dpaudit.audit(faults.global_numpy_laplace, [0.0], [1.0], samples=300_000, seed=5, workers=1)
    two = dpaudit.audit(faults.global_numpy_laplace, [0.0], [1.0], samples=300_000, seed=5, workers=2)
    assert (one.epsilon_lower, one.count_p, one.count_q) == (two.epsilon_lower, two.count_p, two.count_q)
    assert one.warnings == () and one.epsilon_lower <= 1.0


def _draw_global_block(block: int) -> np.ndarray:
    return draw_raw_block(faults.global_python_bits, [0.0], 64, 11, SIDE_D, PHASE_SELECT, block)


def test_the_callers_global_state_is_restored():
    np.random.seed(123)
    expected = np.random.random()
    np.random.seed(123)
    dpaudit.audit(faults.global_numpy_laplace, [0.0], [1.0], samples=2_000, seed=1, workers=1)
    assert np.random.random() == expected


def test_an_unseeded_source_is_run_in_one_process_and_said_so():
    state = np.random.default_rng()

    def unseeded(data, size, rng):
        return data[0] + state.laplace(0.0, 1.0, size)

    result = dpaudit.audit(unseeded, [0.0], [1.0], samples=4_000, seed=1, workers=2)
    assert any("single process" in w for w in result.warnings)
    assert "single process" in result.summary() and "single process" in json.dumps(result.to_dict())


def test_a_mechanism_that_ignores_every_seed_is_refused():
    def fixed(data, size, rng):
        return data[0] + np.random.default_rng(42).laplace(0.0, 1.0, size)

    with pytest.raises(dpaudit.errors.MechanismError, match="ignores the rng"):
        dpaudit.audit(fixed, [0.0], [1.0], samples=2_000, workers=1)


def test_degenerate_outputs_warn_instead_of_passing_silently(tmp_path, capsys):
    result = dpaudit.audit(faults.all_nan, [0.0], [1.0], samples=2_000, workers=1)
    assert any("same value (NaN)" in w for w in result.warnings)
    code, out, err = run(capsys, "check", write(tmp_path, "[gate]\nworkers = 1\n" + entry("nan", "all_nan")), "--json",
                         "--report", tmp_path / "r")
    assert code == 0 and json.loads(out)["audits"][0]["warnings"] and "warning:" in err
    assert "## Warnings" in (tmp_path / "r" / "report.md").read_text()


# --- interrupts ------------------------------------------------------------------------------------------

def _wait_for_pid_file(directory: Path, process: subprocess.Popen, seconds: float = 120.0) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        files = list(directory.iterdir())
        if files:
            return int(files[0].name)
        time.sleep(0.05)
    raise AssertionError("the hanging entry never started")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie is dead
        return stat.read().split(") ")[-1][0] != "Z"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_by_pid_exits_130_with_one_line_and_stops_the_entry(tmp_path, signum):
    config = write(tmp_path, "[gate]\nworkers = 1\n" + entry("hung", "hangs"))
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, "PYTHONPATH": str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "DPAUDIT_TEST_PID_DIR": str(pids)}
    process = subprocess.Popen([sys.executable, "-m", "dpaudit", "check", str(config)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                               preexec_fn=_default_interrupts)
    try:
        entry_pid = _wait_for_pid_file(pids, process)
        os.kill(process.pid, signum)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130
    assert err.strip() == "dpaudit: interrupted" and "Traceback" not in out + err
    deadline = time.monotonic() + 10
    while _alive(entry_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(entry_pid), "the interrupted entry's process is still running"


@pytest.mark.parametrize("how", ["signal", "raised"])
def test_an_interrupt_while_the_entry_process_starts_still_stops_it(tmp_path, monkeypatch, how):
    """The child is forked into its own session; an interrupt landing during the fork must not orphan it, whether
    this thread receives it (held back, then raised) or another thread does (raised while start() returns)."""
    import multiprocessing.context

    from dpaudit._isolation import run_isolated

    monkeypatch.setenv("DPAUDIT_TEST_PID_DIR", str(tmp_path))
    original = multiprocessing.context.ForkProcess.start

    children = []

    def start_then_interrupt(self):
        original(self)
        children.append(self.pid)
        if how == "raised":
            raise KeyboardInterrupt
        os.kill(os.getpid(), signal.SIGINT)  # arrives before run_isolated has returned from start()

    monkeypatch.setattr(multiprocessing.context.ForkProcess, "start", start_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # even if this run was started ignoring it
    try:
        with pytest.raises(KeyboardInterrupt):
            run_isolated(faults.hangs, ([0.0], 10, None), timeout=120)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert len(children) == 1
    deadline = time.monotonic() + 10
    while _alive(children[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    alive = _alive(children[0])
    if alive:
        os.killpg(children[0], signal.SIGKILL)
    assert not alive, "the entry's process survived the interrupt"


# --- entries side by side ([gate] workers > 1) -----------------------------------------------------------

def _side_by_side(tmp_path: Path, capsys, workers: int) -> tuple[int, dict, str]:
    budget = '\n[[budget]]\nname = "budget"\nepsilon = 0.1\nk = 100\ndelta = 1e-5\nmax_epsilon = 20\n'
    config = write(tmp_path, f"[gate]\nseed = 3\nworkers = {workers}\n" + entry("first", "laplace") + entry("bad", "raises")
                   + entry("hung", "hangs", "timeout = 1.5") + entry("last", "laplace").replace("epsilon = 2.0", "epsilon = 0.2")
                   + budget, f"gate-{workers}.toml")
    code, out, err = run(capsys, "check", config, "--json")
    return code, json.loads(out), err


def test_entries_side_by_side_give_the_rows_of_entries_one_by_one(tmp_path, capsys):
    code_serial, serial, _ = _side_by_side(tmp_path, capsys, 1)
    code_parallel, parallel, err = _side_by_side(tmp_path, capsys, 2)

    def rows(payload: dict) -> list[dict]:
        return [{key: value for key, value in row.items() if key != "seconds"} for kind in ("audits", "budgets")
                for row in payload[kind]]

    assert code_serial == code_parallel == 1  # "last" claims 0.2: a finding beats the errors
    assert rows(parallel) == rows(serial)
    assert [row["name"] for row in parallel["audits"]] == ["first", "bad", "hung", "last"]
    first, bad, hung, last = parallel["audits"]
    assert first["passed"] and "RuntimeError" in bad["error"]["message"] and hung["error"]["kind"] == "timeout"
    assert last["violated"] and parallel["budgets"][0]["passed"]
    lines = [line for line in err.splitlines() if line.startswith("[")]
    assert [line.split("]")[0] for line in lines] == [f"[{i}/5" for i in range(1, 6)]  # streamed in the config's order


def _start_a_thread() -> str:
    import threading

    box = []
    thread = threading.Thread(target=lambda: box.append(bytearray(1 << 20)) or None)
    thread.start()
    thread.join()
    return f"thread ran: {len(box)}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_DATA and /proc are Linux's")
def test_a_child_forked_from_a_large_process_is_limited_beyond_what_it_inherits():
    """A gate run from a process already holding more data than the memory limit (a notebook, a test session)
    must not start its child above the limit, where even a thread's start fails and the entries hang."""
    from dpaudit._isolation import run_isolated

    held = np.empty(400 * 2**20 // 8)  # 400 MiB of address space, above the 256 MiB limit below
    assert run_isolated(_start_a_thread, (), timeout=60, memory_limit=256 * 2**20) == "thread ran: 1"
    del held
