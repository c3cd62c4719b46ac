"""Nothing user code does ends dpaudit silently or outlives it: every exit is an ERROR (exit 3) naming what ran."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpaudit.cli import main

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))
M = "gate.fault_mechanisms"
PAIR = ["--d", "[0]", "--d-prime", "[1]", "--epsilon", "1", "--samples", "2000", "--workers", "1"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("mechanism, expected", [
    ("calls_sys_exit", "called sys.exit(0)"),
    ("exits", "exited with code 7"),
    ("segfault", "killed by SIGSEGV"),
    ("raises_keyboard_interrupt", "raised KeyboardInterrupt"),
])
def test_audit_and_accuracy_report_every_way_a_mechanism_ends_the_process(capsys, mechanism, expected):
    code, out, err = run(capsys, "audit", f"{M}:{mechanism}", *PAIR)
    assert code == 3 and out == "" and expected in err and f"{M}:{mechanism}" in err and err.count("\n") == 1
    code, out, err = run(capsys, "accuracy", f"{M}:{mechanism}", "--data", "[0]", "--alpha", "1",
                          "--error", f"{M}:absolute_error", "--samples", "1000")
    assert code == 3 and expected in err and f"{M}:{mechanism}" in err


MODULES = {
    "exits_zero_at_import": ("import sys\nsys.exit(0)\n", "called sys.exit(0)"),
    "exits_message_at_import": ("import sys\nsys.exit('msg')\n", "called sys.exit('msg')"),
    "os_exit_at_import": ("import os\nos._exit(9)\n", "exited with code 9 while importing module 'os_exit_at_import'"),
    "hangs_at_import": ("import time\ntime.sleep(3600)\n", "importing module 'hangs_at_import'"),
}


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_that_ends_or_hangs_at_import_is_an_error_in_check_and_audit(tmp_path, capsys, module):
    text, expected = MODULES[module]
    (tmp_path / f"{module}.py").write_text(text)
    config = tmp_path / "gate.toml"
    config.write_text(f'[[audit]]\nname = "a"\nmechanism = "{module}:m"\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1.0\n')
    started = time.monotonic()
    code, out, err = run(capsys, "check", config, "--timeout", "8")
    assert code == 3 and expected in err and err.count("\n") == 1
    sys.path.insert(0, str(tmp_path))
    try:
        code, out, err = run(capsys, "audit", f"{module}:m", *PAIR, "--timeout", "8")
    finally:
        sys.path.remove(str(tmp_path))
    assert code == 3 and expected in err
    assert time.monotonic() - started < 60


def test_a_gate_entry_that_calls_sys_exit_is_that_entrys_error(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(f'[gate]\nworkers = 1\n[[audit]]\nname = "a"\nmechanism = "{M}:calls_sys_exit"\nd = [0.0]\n'
                      'd_prime = [1.0]\nepsilon = 1.0\nsamples = 2000\n')
    code, out, err = run(capsys, "check", config)
    assert code == 3 and "called sys.exit(0)" in out and f"{M}:calls_sys_exit" in out


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and parent-death signals are Linux's")
@pytest.mark.parametrize("command", ["check", "audit"])
def test_sigkill_of_dpaudit_leaves_no_process_behind(tmp_path, command):
    pids = tmp_path / "pids"
    pids.mkdir()
    config = tmp_path / "gate.toml"
    config.write_text(f'[gate]\nworkers = 2\n[[audit]]\nname = "hung"\nmechanism = "{M}:hangs_in_workers"\nd = [0.0]\n'
                      'd_prime = [1.0]\nepsilon = 1.0\nsamples = 400_000\n')
    argv = ["check", str(config)] if command == "check" else ["audit", f"{M}:hangs_in_workers", "--d", "[0]", "--d-prime",
                                                               "[1]", "--epsilon", "1", "--samples", "400000", "--workers", "2"]
    env = {**os.environ, "PYTHONPATH": str(HERE.parent) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "DPAUDIT_TEST_PID_DIR": str(pids)}
    process = subprocess.Popen([sys.executable, "-m", "dpaudit", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(pids.iterdir()) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        hung = [int(p.name) for p in pids.iterdir()]
        assert hung, "the hanging workers never started"
        os.kill(process.pid, signal.SIGKILL)
        process.communicate(timeout=30)  # the pipes close: nothing else holds them
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in hung) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in hung if _alive(pid)]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert left == [], "worker processes outlived the killed dpaudit"


def test_a_mechanism_that_prints_without_pause_is_still_stopped_at_the_timeout(capsys):
    started = time.monotonic()
    code = main(["audit", f"{M}:chatters_forever", *PAIR, "--timeout", "3"])
    capsys.readouterr()
    assert code == 3 and time.monotonic() - started < 60
