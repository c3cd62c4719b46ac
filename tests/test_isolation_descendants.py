"""No descendant outlives isolated code: a grandchild in a new session (a double fork) is ended when the
function returns, when it raises, when it crashes and when it is stopped at its timeout."""

from __future__ import annotations

import os
import sys
import time

import pytest

from dpaudit._isolation import IsolatedError, end_descendants, run_isolated

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subreaper and /proc: Linux")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2:].split()[0] not in (b"Z", b"X")


def _detached_grandchild(path: str) -> None:
    """Double fork: a grandchild in its own session, whose parent exits at once (it is orphaned)."""
    pid = os.fork()
    if pid == 0:
        os.setsid()
        if os.fork() == 0:
            with open(path + ".tmp", "w") as handle:
                handle.write(str(os.getpid()))
            os.replace(path + ".tmp", path)
            time.sleep(120)
        os._exit(0)
    os.waitpid(pid, 0)
    while not os.path.exists(path):
        time.sleep(0.01)


def _returns(path: str) -> int:
    _detached_grandchild(path)
    return 1


def _raises(path: str) -> None:
    _detached_grandchild(path)
    raise RuntimeError("boom")


def _crashes(path: str) -> None:
    _detached_grandchild(path)
    os._exit(9)


def _hangs(path: str) -> None:
    _detached_grandchild(path)
    time.sleep(120)


def _gone_soon(pid: int) -> bool:
    deadline = time.monotonic() + 10  # generous: only a survivor fails, never a slow machine
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


def _nested(function_name: str, path: str) -> str:
    """Isolated code that runs isolated code (the gate: the command's child runs each entry's child)."""
    try:
        run_isolated(globals()[function_name], (path,))
    except IsolatedError as exc:
        return exc.kind
    return "ok"


@pytest.mark.parametrize("function, kind", [(_returns, None), (_raises, "error"), (_hangs, "timeout")])
def test_a_detached_grandchild_does_not_outlive_the_call(tmp_path, function, kind):
    path = str(tmp_path / "pid")
    if kind is None:
        assert run_isolated(function, (path,)) == 1
    else:
        with pytest.raises(IsolatedError) as caught:
            run_isolated(function, (path,), timeout=1.0 if kind == "timeout" else None)
        assert caught.value.kind == kind
    pid = int(open(path).read())
    assert _gone_soon(pid)


def test_orphans_of_a_crashed_child_are_ended_by_the_isolated_code_that_ran_it(tmp_path):
    path = str(tmp_path / "pid")
    assert run_isolated(_nested, ("_crashes", path)) == "crash"
    assert _gone_soon(int(open(path).read()))


def _sweep_sparing_one() -> tuple[bool, bool]:
    import subprocess

    kept = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    from dpaudit import _isolation

    end_descendants(spare=frozenset({kept.pid, *_isolation._adopter}))
    survived = _alive(kept.pid) and not _alive(ended.pid)
    kept.kill()
    return survived, True


def test_end_descendants_spares_what_it_is_told_to():
    assert run_isolated(_sweep_sparing_one, ()) == (True, True)
