"""Fault injection against the real command line; writes reports/reliability.md and reliability.json.

Each scenario runs ``python -m dpaudit ...`` in a fresh process (a fault that kills the interpreter must
not take the benchmark with it) and records the exit code, the first line of stderr and the files left in
the output directory. The hostile-tester part runs every case of the "never loses a file, never passes
silently" list as a scenario with an expected exit code and records, per scenario: user files lost or
changed, a silent exit (no output at all, or a failure without a message line), a wrong exit code, a
traceback, processes left running after SIGKILL of dpaudit, and the peak memory (largest resident set of
dpaudit and its descendants, from ``wait4``). A last part measures the soundness of audits of a *correct*
Laplace mechanism that draws from the global ``numpy.random`` state, at 16 worker processes, with and
without the per-block seeding of the global state.

Run: python benchmarks/bench_reliability.py [--quick] [--time-tests [--added-load N] [--tests-only]]
"""

from __future__ import annotations

import argparse
import importlib
import contextlib
import datetime
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from _timing import machine_line

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the package of this checkout, installed or not
MECHANISMS = textwrap.dedent('''
    import os, time
    import numpy as np

    def laplace(data, size, rng):
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)

    def global_laplace(data, size, rng):
        return np.asarray(data, float)[0] + np.random.laplace(0.0, 1.0, size)

    _private = np.random.default_rng()

    def unseeded_laplace(data, size, rng):
        return np.asarray(data, float)[0] + _private.laplace(0.0, 1.0, size)

    def raises(data, size, rng):
        raise RuntimeError("boom")

    def exits(data, size, rng):
        os._exit(9)

    def exits_in_workers(data, size, rng):
        if size > 1000:
            os._exit(9)
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)

    def hangs(data, size, rng):
        time.sleep(3600)

    def all_nan(data, size, rng):
        return np.full(size, np.nan)

    def ragged(data, size, rng):
        return [[0.0]] * (size - 1) + [[0.0, 1.0]]

    def pairs_raise():
        raise KeyError("no pairs")

    def calls_sys_exit(data, size, rng):
        raise SystemExit(0)

    def exits7(data, size, rng):
        os._exit(7)

    def segfault(data, size, rng):
        import ctypes
        ctypes.string_at(0)

    def kills_itself(data, size, rng):
        import signal
        os.kill(os.getpid(), signal.SIGKILL)

    def raises_keyboard_interrupt(data, size, rng):
        raise KeyboardInterrupt

    def raises_in_workers(data, size, rng):
        if size > 1000:
            raise RuntimeError("boom in a worker")
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)

    def varying_width(data, size, rng):
        return rng.normal(size=(size, 1 + int(rng.integers(0, 2))))

    def laplace_pairs(data, size, rng):
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, (size, 2))

    def absolute_error(data, outputs):
        return np.abs(np.asarray(outputs, float) - np.asarray(data, float)[0])

    def appends(data, size, rng):
        data.append(1.0)  # changes its input: every later call sees another d
        return float(np.sum(data)) + rng.laplace(0.0, 1.0, size)

    def detached(data, size, rng):
        """Starts a child in its own session and a double-forked grandchild, each sleeping for an hour."""
        import subprocess, sys
        from pathlib import Path
        marks = Path(os.environ["PID_DIR"])
        if not list(marks.iterdir()):
            subprocess.Popen([sys.executable, "-c", "import os, sys, time; open(os.path.join(sys.argv[1], str(os.getpid())), "
                              "'w').close(); time.sleep(3600)", str(marks)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            middle = os.fork()
            if middle == 0:
                os.setsid()
                if os.fork() == 0:
                    (marks / str(os.getpid())).write_text("grandchild")
                    time.sleep(3600)
                os._exit(0)
            os.waitpid(middle, 0)
            time.sleep(0.5)
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)

    def detached_then_crash(data, size, rng):
        detached(data, size, rng)
        os._exit(9)

    def hog(data, size, rng):
        return np.ones(10**9) + rng.laplace(0.0, 1.0)  # 8 GB: past the 2 GiB limit

    def hangs_in_workers(data, size, rng):
        if size > 1000:
            from pathlib import Path
            Path(os.environ["PID_DIR"], str(os.getpid())).write_text("hanging")
            time.sleep(3600)
        return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)
''')

IMPORT_MODULES = {
    "exit_zero_at_import": "import sys\nsys.exit(0)\n",
    "exit_message_at_import": "import sys\nsys.exit('msg')\n",
    "os_exit_at_import": "import os\nos._exit(9)\n",
    "hangs_at_import": "import time\ntime.sleep(3600)\n",
}

def _default_interrupts() -> None:
    """In the child: SIGINT handled as usual even when this process was started with it ignored (a
    background job of a non-interactive shell), so the interrupt scenarios test the command, not the shell."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)



def entry(name: str, mechanism: str, extra: str = "", samples: int = 20_000) -> str:
    return (f'[[audit]]\nname = "{name}"\nmechanism = "mechs:{mechanism}"\nd = [0.0]\nd_prime = [1.0]\nepsilon = 2.0\n'
            f"samples = {samples}\n{extra}\n")


GOOD = entry("good", "laplace")
GATE = "[gate]\nworkers = 1\n"


def scenarios(work: Path) -> list[tuple[str, list[str], str | None]]:
    """(scenario, dpaudit arguments, gate file text or None)."""
    occupied = work / "occupied-file"
    occupied.write_text("x")
    report = str(work / "report")
    return [
        ("correct mechanism, report", ["check", "{config}", "--report", report], GATE + GOOD),
        ("violation (claimed epsilon 0.5 for a 1-DP mechanism)", ["check", "{config}"],
         GATE + entry("leaky", "laplace").replace("epsilon = 2.0", "epsilon = 0.5")),
        ("mechanism raises, beside a good entry", ["check", "{config}", "--report", report], GATE + entry("bad", "raises") + GOOD),
        ("mechanism calls os._exit (serial)", ["check", "{config}", "--report", report], GATE + entry("bad", "exits") + GOOD),
        ("worker process dies (os._exit in a pool worker)", ["check", "{config}"],
         "[gate]\nworkers = 2\n" + entry("bad", "exits_in_workers", samples=400_000)),
        ("mechanism hangs, timeout = 3", ["check", "{config}", "--report", report],
         GATE + entry("hung", "hangs", "timeout = 3") + GOOD),
        ("neighbours callable raises", ["check", "{config}"],
         GATE + '[[audit]]\nname = "p"\nmechanism = "mechs:laplace"\nneighbours = "mechs:pairs_raise"\nepsilon = 2.0\nsamples = 2000\n' + GOOD),
        ("ragged list output", ["check", "{config}"], GATE + entry("ragged", "ragged")),
        ("all-NaN output", ["check", "{config}", "--report", report], GATE + entry("nan", "all_nan")),
        ("global numpy.random mechanism, 2 workers", ["check", "{config}"],
         "[gate]\nworkers = 2\n" + entry("global", "global_laplace", samples=400_000)),
        ("unseeded private generator, 2 workers", ["check", "{config}"],
         "[gate]\nworkers = 2\n" + entry("unseeded", "unseeded_laplace", samples=400_000)),
        ("--report at an existing file", ["check", "{config}", "--report", str(occupied)], GATE + entry("hung", "hangs")),
        ("--report under a file", ["check", "{config}", "--report", str(occupied / "report")], GATE + entry("hung", "hangs")),
        ("--write-baseline into a missing directory", ["check", "{config}", "--write-baseline", str(work / "missing" / "b.json")],
         GATE + entry("hung", "hangs")),
        ("baseline that matches no entry", ["check", "{config}", "--baseline", str(work / "foreign.json")], GATE + GOOD),
        ("unknown key in the gate file", ["check", "{config}"], GATE + GOOD + "bogus = 1\n"),
        ("config file missing", ["check", str(work / "nope.toml")], None),
        ("budget optimal, k = 10^9", ["budget", "optimal", "--epsilon", "0.001", "-k", "1000000000", "--target-delta", "1e-5"], None),
        ("budget optimal, k = 10^12", ["budget", "optimal", "--epsilon", "0.001", "-k", "1000000000000", "--target-delta", "1e-5"], None),
        ("budget dpsgd --plot into a missing directory", ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability",
         "0.01", "--steps", "100", "--target-delta", "1e-5", "--plot", str(work / "missing" / "eps.png")], None),
        ("audit --samples 1e4 with --d and --neighbours", ["audit", "mechs:laplace", "--d", "[0]", "--d-prime", "[1]",
         "--neighbours", "mechs:pairs_raise", "--epsilon", "1", "--samples", "1e4"], None),
    ]


def run_scenario(work: Path, argv: list[str], config_text: str | None, interrupt_after: float | None = None) -> dict:
    config = work / "gate.toml"
    if config_text is not None:
        config.write_text(config_text)
    (work / "foreign.json").write_text(json.dumps({"audits": [{"name": "someone-else"}]}))
    argv = [a.replace("{config}", str(config)) for a in argv]
    env = {**os.environ, "PYTHONPATH": str(work) + os.pathsep + str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "dpaudit", *argv], cwd=work, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_default_interrupts)
    if interrupt_after is not None:
        time.sleep(interrupt_after)
        os.kill(process.pid, signal.SIGINT)
    try:
        out, err = process.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
    seconds = time.perf_counter() - started
    out, err = out.replace(str(work), "."), err.replace(str(work), ".")  # no machine paths in the report
    lines = [line for line in err.splitlines() if line.strip()]
    final = next((line for line in reversed(lines) if line.startswith("dpaudit:")), None)
    summary = final or next((line for line in lines if "ERROR" in line or "warning" in line), lines[-1] if lines else out.strip()[:120])
    report = work / "report"
    files = sorted(p.name for p in report.iterdir()) if report.is_dir() else []
    leftovers = sorted(p.name for p in work.iterdir() if p.name.startswith("."))
    return {"exit_code": process.returncode, "message": summary, "traceback": "Traceback" in out + err, "seconds": seconds,
            "report_files": files, "leftover_temporaries": leftovers}


# --- the hostile tester's list: every case, an expected exit code, and what must not happen ---------------

USER_FILES = {"audit-mine.png": "x", "sub/f": "y", "manifest.json": '{"files":["sub"]}', "report.md": "my notes",
              "baseline.json": "{}"}
HOSTILE_NAME = r"evil<script>alert(1)</script>|col\u001b[2K\rbudget   ok: pass\nnext"


def _budget(name: str, body: str) -> str:
    return f'[[budget]]\nname = "{name}"\n{body}\ndelta = 1e-5\nmax_epsilon = 8.0\n'


def _audit_args(mechanism: str, extra: tuple[str, ...] = ()) -> list[str]:
    return ["audit", f"mechs:{mechanism}", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1", "--samples", "2000",
            "--workers", "1", *extra]


def _accuracy_args(mechanism: str) -> list[str]:
    return ["accuracy", f"mechs:{mechanism}", "--data", "[0]", "--alpha", "1", "--error", "mechs:absolute_error",
            "--samples", "1000"]


def _import_gate(module: str) -> str:
    return f'[[audit]]\nname = "a"\nmechanism = "{module}:m"\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1.0\n'


def _issue_cases(work: Path) -> list[dict]:
    """The second hostile tester's list: output targets, mutating mechanisms, orphans, extreme budgets, exit codes
    and the smaller items (the number is the item of that list)."""
    config = work / "gate.toml"
    out, user = work / "out", work / "user.xml"
    budget_only = _budget("b", 'kind = "composition"\nepsilon = 0.1\nk = 10\ntheorem = "basic"')

    def user_file(path: Path, text: str = "the user's own file\n") -> Callable[[Path], None]:
        return lambda work: path.write_text(text)

    def baseline_of_config(work: Path) -> None:
        (work / "one.toml").write_text(GATE + GOOD)
        written = _run_measured(["check", str(work / "one.toml"), "--write-baseline", str(work / "good.json")], work,
                                {**os.environ, "PYTHONPATH": str(work) + os.pathsep + str(ROOT)}, None)
        assert written[0] == 0, written[2]

    def forged_manifest(work: Path) -> None:
        out.mkdir()
        (out / "report.md").write_text("my notes")
        (out / "budget-b.png").write_text("my picture")
        (out / "manifest.json").write_text(json.dumps({"written_by": "dpaudit", "files": ["report.md", "budget-b.png"]}))

    def tampered(work: Path) -> None:
        baseline_of_config(work)
        document = json.loads((work / "good.json").read_text())
        document["audits"][0]["witness"] = {"kind": "region", "projection": {"kind": "nonsense"}, "low": 0, "high": 1}
        (work / "bad.json").write_text(json.dumps(document))

    def shadowing(work: Path) -> None:
        (work / "matplotlib.py").write_text("raise RuntimeError('the user module, not the plotting library')\n")

    def bom_csv(work: Path) -> None:
        rows = "".join(f"{i},{(i % 2) * 3.0 + (i % 7) / 7},{i % 2}\n" for i in range(400))
        (work / "bom.csv").write_text("run,score,included\n" + rows, encoding="utf-8-sig")

    def figures_of_two(out_dir: Path) -> list[str]:
        figures = sorted(p.name for p in out_dir.glob("budget-*.png"))
        return [] if len(figures) == 2 else [f"figures {figures}"]

    def per_step_delta(text: str) -> list[str]:
        import re

        values = [float(v) for v in re.findall(r"delta0=([0-9.e+-]+)", text)]
        return [] if values and all(0 < v <= 1 for v in values) else [f"per-step deltas {values}"]

    dpsgd = ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "10", "--target-delta", "1e-5"]
    return [
        dict(name="8.1 --junit onto the config being run", argv=["check", "{config}", "--junit", "{config}"], gate=GATE + GOOD,
             expect={2}, watch=[config]),
        dict(name="8.1 --write-baseline onto the config being run", argv=["check", "{config}", "--write-baseline", "{config}"],
             gate=GATE + GOOD, expect={2}, watch=[config]),
        dict(name="8.1 --junit onto a user's file", argv=["check", "{config}", "--junit", str(user)], gate=GATE + GOOD, expect={2},
             setup=user_file(user), watch=[user]),
        dict(name="8.1 --write-baseline onto the baseline being read", argv=["check", "{config}", "--baseline", str(work / "good.json"),
             "--write-baseline", str(work / "good.json")], gate=GATE + GOOD, expect={2}, setup=baseline_of_config,
             watch=[work / "good.json"]),
        dict(name="8.1 --junit and --write-baseline onto one file", argv=["check", "{config}", "--junit", str(work / "x.json"),
             "--write-baseline", str(work / "x.json")], gate=GATE + GOOD, expect={2}),
        dict(name="8.1 budget dpsgd --plot onto a TOML file", argv=[*dpsgd, "--plot", str(work / "settings.toml")], expect={2},
             setup=user_file(work / "settings.toml", "x = 1\n"), watch=[work / "settings.toml"]),
        dict(name="8.1 forged manifest.json naming the user's files", argv=["check", "{config}", "--report", str(out)],
             gate=budget_only, expect={2}, setup=forged_manifest, watch=[out / "report.md", out / "budget-b.png"], before_run=True),
        dict(name="8.2 mechanism appends to its input (list)", argv=["check", "{config}"],
             gate=GATE + entry("mutates", "appends").replace("epsilon = 2.0", "epsilon = 1.0"), expect={3}, mutating=True),
        dict(name="8.2 audit: mechanism appends to its input", argv=_audit_args("appends"), expect={3}, mutating=True),
        dict(name="8.3 entry starts a new-session child and a double-forked grandchild", argv=["check", "{config}"],
             gate=GATE + entry("detached", "detached", samples=2000), expect={0}, orphan_check=True),
        dict(name="8.3 the same, then the entry crashes", argv=["check", "{config}"],
             gate=GATE + entry("detached", "detached_then_crash", samples=2000), expect={3}, orphan_check=True),
        dict(name="8.3 audit command: new-session child and double fork", argv=_audit_args("detached"), expect={0},
             orphan_check=True),
        dict(name="8.4 budgets named 'a b' and 'a-b' (one passes, one exceeds)", argv=["check", "{config}", "--report", str(out)],
             gate=_budget("a b", 'kind = "composition"\nepsilon = 0.1\nk = 10\ntheorem = "basic"')
             + _budget("a-b", 'kind = "composition"\nepsilon = 1.0\nk = 10\ntheorem = "basic"'), expect={1},
             report_check=figures_of_two),
        dict(name="8.5 gate: SelfComposed(Laplace(1.0), 10^15)", argv=["check", "{config}"], budget=True, giant=True, expect={1},
             gate=_budget("laplace", 'event = "SelfComposed(Laplace(1.0), 1000000000000000)"')),
        dict(name="8.5 gate: DP-SGD budget of 10^15 steps", argv=["check", "{config}"], budget=True, giant=True, expect={1},
             gate=_budget("dpsgd", 'kind = "dpsgd"\nnoise_multiplier = 1.0\nsampling_probability = 0.01\nsteps = 1_000_000_000_000_000')),
        dict(name="8.5 gate: max_delta of 10^15 DP-SGD steps", argv=["check", "{config}"], budget=True, giant=True, expect={1},
             gate='[[budget]]\nname = "d"\nevent = "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000000000000000)"\n'
                  'epsilon = 8.0\nmax_delta = 1e-5\n'),
        dict(name="8.5 budget dpsgd --steps 10^15", argv=[*dpsgd[:-4], "--steps", "1e15", "--target-delta", "1e-5"], budget=True,
             giant=True, expect={0}),
        dict(name="8.5 budget dpsgd --steps 10^7 (the PLD's largest)", argv=[*dpsgd[:-4], "--steps", "1e7", "--target-delta", "1e-5"],
             budget=True, giant=True, expect={0}),
        dict(name="8.6 audit: mechanism exhausts memory", argv=_audit_args("hog"), expect={3}),
        dict(name="8.6 budget dpsgd at 10^7 steps under a 100 MiB limit", argv=[*dpsgd[:-4], "--steps", "1e7", "--target-delta", "1e-5"],
             expect={0, 3}, env={"DPAUDIT_MEMORY_LIMIT": "100MiB"}),
        dict(name="8.6 TOML nested 3,000 deep", argv=["check", "{config}"], gate="a = " + "[" * 3000 + "]" * 3000 + "\n", expect={2},
             names_file=True),
        dict(name="8.6 tampered baseline witness", argv=["check", "{config}", "--baseline", str(work / "bad.json")], gate=GATE + GOOD,
             expect={2}, setup=tampered, before_run=True),
        dict(name="8.6 report folder holding a user file named like a new figure",
             argv=["check", "{config}", "--report", str(out)], gate=budget_only, expect={2},
             setup=lambda work: (out.mkdir(), (out / "manifest.json").write_text('{"written_by": "dpaudit", "files": []}'),
                                 (out / "budget-b.png").write_text("mine")), watch=[out / "budget-b.png"], before_run=True),
        dict(name="8.8 --version", argv=["--version"], expect={0}),
        dict(name="8.8 scores: UTF-8 CSV with a byte-order mark", argv=["scores", str(work / "bom.csv")], expect={0}, setup=bom_csv),
        dict(name="8.8 --report '~' (quoted)", argv=["check", "{config}", "--report", "~"], gate=budget_only, expect={2},
             env={"HOME": str(work / "home")}, setup=lambda work: (work / "home").mkdir(), no_tilde_dir=True),
        dict(name="8.8 name = \"\"", argv=["check", "{config}"], gate=_budget("", 'kind = "composition"\nepsilon = 0.1\nk = 10'),
             expect={2}),
        dict(name="8.8 budget dpsgd --target-delta 0", argv=[*dpsgd[:-1], "0"], expect={2}),
        dict(name="8.8 budget dpsgd --sampling-probability 1e-12", argv=["budget", "dpsgd", "--noise-multiplier", "1",
             "--sampling-probability", "1e-12", "--steps", "100", "--target-delta", "1e-5"], expect={0}, text_check=per_step_delta),
        dict(name="8.8 samples = 1e15", argv=["check", "{config}"], gate=GATE + entry("big", "laplace").replace("samples = 20000",
             "samples = 1e15"), expect={2}, before_run=True),
        dict(name="8.8 a matplotlib.py beside the config, --report", argv=["check", "{config}", "--report", str(out)], gate=GATE + GOOD,
             expect={0}, setup=shadowing),
        dict(name="8.8 scores nope.csv (missing file)", argv=["scores", str(work / "nope.csv")], expect={2}),
    ]


def hostile_cases(work: Path) -> list[dict]:
    """Each case: name, argv, gate text, expected exit codes, and optional setup/check hooks and flags."""
    out = work / "out"
    home = work / "home"
    linked = work / "linked"
    cases = [
        dict(name="1 --report into a directory of user files (the issue's reproduction)", argv=["check", "{config}", "--report", str(out)],
             gate=GATE + GOOD, expect={2}, user_dir=out),
        dict(name="1 --report ~ (the home directory)", argv=["check", "{config}", "--report", str(home)], gate=GATE + GOOD,
             expect={2}, user_dir=home, env={"HOME": str(home)}),
        dict(name="1 --report / (the root directory)", argv=["check", "{config}", "--report", "/"], gate=GATE + GOOD, expect={2}),
        dict(name="1 --report . (the working directory)", argv=["check", "{config}", "--report", "."], gate=GATE + GOOD, expect={2}),
        dict(name="1 --report a relative symlink to a user directory", argv=["check", "{config}", "--report", str(linked)],
             gate=GATE + GOOD, expect={2}, user_dir=work / "real", link=(linked, "real")),
        dict(name="1 --report an absolute symlink to a user directory", argv=["check", "{config}", "--report", str(linked)],
             gate=GATE + GOOD, expect={2}, user_dir=work / "real", link=(linked, str(work / "real"))),
        dict(name="1 --report into an earlier dpaudit report holding a user's notes", argv=["check", "{config}", "--report", str(out)],
             gate=GATE + GOOD, expect={0}, earlier_report=out),
        dict(name="2 audit: mechanism calls sys.exit(0)", argv=_audit_args("calls_sys_exit"), expect={3}),
        dict(name="2 accuracy: mechanism calls sys.exit(0)", argv=_accuracy_args("calls_sys_exit"), expect={3}),
        dict(name="2 check: gate module calls sys.exit(0) at import", argv=["check", "{config}"], gate=_import_gate("exit_zero_at_import"),
             expect={3}),
        dict(name="2 check: gate module calls sys.exit('msg') at import", argv=["check", "{config}"],
             gate=_import_gate("exit_message_at_import"), expect={3}),
        dict(name="2 check: gate module calls os._exit(9) at import", argv=["check", "{config}"], gate=_import_gate("os_exit_at_import"),
             expect={3}),
        dict(name="2 check: gate module hangs at import, --timeout 5", argv=["check", "{config}", "--timeout", "5"],
             gate=_import_gate("hangs_at_import"), expect={3}),
        dict(name="2 audit: segfault in the first block", argv=_audit_args("segfault"), expect={3}),
        dict(name="2 audit: SIGKILL of itself in the first block", argv=_audit_args("kills_itself"), expect={3}),
        dict(name="2 audit: os._exit(7) in the first block", argv=_audit_args("exits7"), expect={3}),
        dict(name="2 accuracy: os._exit(7)", argv=_accuracy_args("exits7"), expect={3}),
        dict(name="2 check: mechanism raises KeyboardInterrupt", argv=["check", "{config}"],
             gate=GATE + entry("kbd", "raises_keyboard_interrupt") + GOOD, expect={3}),
        dict(name="3 SIGKILL of dpaudit check while its workers hang", argv=["check", "{config}"],
             gate="[gate]\nworkers = 2\n" + entry("hung", "hangs_in_workers", samples=400_000), expect={-9}, sigkill=True),
        dict(name="3 SIGKILL of dpaudit audit while its workers hang", argv=["audit", "mechs:hangs_in_workers", "--d", "[0]", "--d-prime",
             "[1]", "--epsilon", "1", "--samples", "400000", "--workers", "2"], expect={-9}, sigkill=True),
        dict(name="4 gate budget: dpsgd steps = 10^18", argv=["check", "{config}"], budget=True, expect={1, 3},
             gate=_budget("steps", 'kind = "dpsgd"\nnoise_multiplier = 1.0\nsampling_probability = 0.01\nsteps = 1_000_000_000_000_000_000')),
        dict(name="4 gate budget: SelfComposed(Laplace(1.0), 10^15)", argv=["check", "{config}"], budget=True, expect={1, 3},
             gate=_budget("laplace", 'event = "SelfComposed(Laplace(1.0), 1000000000000000)"')),
        dict(name="4 gate budget: Gaussian(1e-6)", argv=["check", "{config}"], budget=True, expect={1, 3},
             gate=_budget("tiny", 'event = "Gaussian(1e-6)"')),
        dict(name="4 budget dpsgd --noise-multiplier 1e-6", argv=["budget", "dpsgd", "--noise-multiplier", "1e-6",
             "--sampling-probability", "0.01", "--steps", "100", "--target-delta", "1e-5"], budget=True, expect={0, 3}),
        dict(name="4 budget dpsgd --steps 10^18", argv=["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01",
             "--steps", "1000000000000000000", "--target-delta", "1e-5"], budget=True, expect={0, 3}),
        dict(name="4 audit --workers 10000 (capped, with a note)", argv=["audit", "mechs:laplace", "--d", "[0]", "--d-prime", "[1]",
             "--epsilon", "2", "--samples", "20000", "--workers", "10000"], expect={0}),
        dict(name="5 hostile entry name: report.md, report.html and the terminal", argv=["check", "{config}", "--report", str(out)],
             gate=_budget(HOSTILE_NAME, 'kind = "composition"\nepsilon = 0.1\nk = 10\ntheorem = "basic"').replace(
                 "max_epsilon = 8.0", "max_epsilon = 0.5"), expect={1}, hostile=out),
        dict(name="5 umask 022: report directory 0755, files 0644, an existing 0640 file keeps its mode",
             argv=["check", "{config}", "--report", str(out), "--junit", str(work / "junit.xml")], gate=GATE + GOOD, expect={0},
             modes=out),
        dict(name="6 baseline holding 1e999", argv=["check", "{config}", "--baseline", str(work / "bad.json")], gate=GATE + GOOD,
             expect={2}, baseline='{"audits": [{"name": "good", "witness": {"a": 1}, "certification_samples": 1e999}]}'),
        dict(name="6 baseline holding NaN", argv=["check", "{config}", "--baseline", str(work / "bad.json")], gate=GATE + GOOD,
             expect={2}, baseline='{"audits": [{"name": "good", "delta": NaN}]}'),
        dict(name="6 baseline nested 10^5 deep", argv=["check", "{config}", "--baseline", str(work / "bad.json")], gate=GATE + GOOD,
             expect={2}, baseline="[" * 100_000 + "]" * 100_000),
        dict(name="6 baseline witness for another output width", argv=["check", "{config}", "--baseline", str(work / "bad.json")],
             gate=GATE + entry("good", "laplace_pairs"), expect={2}, width_baseline=True),
        dict(name="6 foreign baseline of 200k entries (error line < 1000 characters)",
             argv=["check", "{config}", "--baseline", str(work / "bad.json")], gate=GATE + GOOD, expect={2},
             baseline=json.dumps({"audits": [{"name": f"other-{i}"} for i in range(200_000)]}), short=True),
        dict(name="6 samples = 10^15", argv=["check", "{config}"], gate=GATE + entry("big", "laplace", samples=10**15), expect={2}),
        dict(name="6 DPAUDIT_SCHEDULER=nonsense", argv=_audit_args("laplace"), expect={2, 3}, env={"DPAUDIT_SCHEDULER": "nonsense"}),
        dict(name="6 mechanism raises in a worker (2 workers)", argv=["audit", "mechs:raises_in_workers", "--d", "[0]", "--d-prime", "[1]",
             "--epsilon", "1", "--samples", "400000", "--workers", "2"], expect={3}),
        dict(name="6 output width varies between calls", argv=_audit_args("varying_width"), expect={3}),
        dict(name="7 main command: dpaudit check examples/dpaudit.toml", argv=["check", str(ROOT / "examples" / "dpaudit.toml")],
             expect={0}, main_command=True, cwd=ROOT),
    ]
    return cases + _issue_cases(work)


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def _run_measured(argv: list[str], cwd: Path, env: dict, sigkill_when: Path | None) -> tuple[int, str, str, int, list[int]]:
    """Run dpaudit; (exit code, stdout, stderr, peak RSS in KiB of it and its descendants, hung pids after SIGKILL)."""
    import threading

    process = subprocess.Popen([sys.executable, "-m", "dpaudit", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True, preexec_fn=_default_interrupts)
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}
    readers = [threading.Thread(target=lambda s=stream, k=key: chunks[k].append(s.read()), daemon=True)
               for stream, key in ((process.stdout, "out"), (process.stderr, "err"))]
    for reader in readers:
        reader.start()
    hung: list[int] = []
    if sigkill_when is not None:
        deadline = time.monotonic() + 120
        while not list(sigkill_when.iterdir()) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        hung = [int(p.name) for p in sigkill_when.iterdir()]
        os.kill(process.pid, signal.SIGKILL)
    deadline = time.monotonic() + 900
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            os.killpg(process.pid, signal.SIGKILL)
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join(30)
    return (process.returncode, b"".join(chunks["out"]).decode(errors="replace"), b"".join(chunks["err"]).decode(errors="replace"),
            usage.ru_maxrss, hung)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[-1][0] != "Z"
    except OSError:
        return False


def run_hostile_case(work: Path, case: dict) -> dict:
    import shutil

    for leftover in ("out", "home", "real", "linked", "pids", "junit.xml", "bad.json", "good.json", "user.xml", "x.json",
                     "settings.toml", "matplotlib.py", "bom.csv", "~"):
        path = work / leftover
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
    config = work / "gate.toml"
    config.write_text(case.get("gate") or "")
    env = {**os.environ, "PYTHONPATH": str(work) + os.pathsep + str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           **case.get("env", {})}
    watched: list[Path] = []
    if case.get("user_dir"):
        for name, text in USER_FILES.items():
            (case["user_dir"] / name).parent.mkdir(parents=True, exist_ok=True)
            (case["user_dir"] / name).write_text(text)
        watched.append(case["user_dir"])
    if case.get("link"):
        case["link"][0].symlink_to(case["link"][1])
    if case.get("earlier_report"):
        first = _run_measured([a.replace("{config}", str(config)) for a in case["argv"]], work, env, None)
        assert first[0] == 0, first[2]
        (case["earlier_report"] / "NOTES.txt").write_text("mine")
        watched.append(case["earlier_report"])
    if case.get("baseline"):
        (work / "bad.json").write_text(case["baseline"])
    if case.get("width_baseline"):
        (work / "one.toml").write_text(GATE + GOOD)
        written = _run_measured(["check", str(work / "one.toml"), "--write-baseline", str(work / "bad.json")], work, env, None)
        assert written[0] == 0, written[2]
    if case.get("setup"):
        case["setup"](work)
    watch = {path: path.read_bytes() for path in case.get("watch", ()) if path.exists()}
    pids = None
    if case.get("orphan_check"):
        (work / "pids").mkdir()
        env["PID_DIR"] = str(work / "pids")
    if case.get("sigkill"):
        pids = work / "pids"
        pids.mkdir()
        env["PID_DIR"] = str(pids)
    if case.get("modes"):
        os.umask(0o022)
        first = _run_measured([a.replace("{config}", str(config)) for a in case["argv"]], work, env, None)
        assert first[0] == 0, first[2]
        (case["modes"] / "report.md").chmod(0o640)
    before = {str(d): _snapshot(d) for d in watched if d.exists()}
    before_notes = {str(d): (d / "NOTES.txt").read_bytes() for d in watched if (d / "NOTES.txt").exists()}
    argv = [a.replace("{config}", str(config)) for a in case["argv"]]
    started = time.perf_counter()
    code, out, err, peak_kib, hung = _run_measured(argv, case.get("cwd", work), env, pids)
    seconds = time.perf_counter() - started
    orphans = 0
    problems = ["no hanging worker started: nothing to orphan"] if case.get("sigkill") and not hung else []
    if hung:
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in hung) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [pid for pid in hung if _alive(pid)]
        orphans = len(left)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    lost = sum(1 for path, data in watch.items() if not path.exists() or path.read_bytes() != data)
    if case.get("orphan_check"):
        marks = [int(p.name) for p in (work / "pids").iterdir()]
        if not marks:
            problems.append("no detached process started: nothing to orphan")
        time.sleep(1.0)
        left = [pid for pid in marks if _alive(pid)]
        orphans += len(left)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    if case.get("report_check"):
        problems += case["report_check"](work / "out")
    if case.get("text_check"):
        problems += case["text_check"](out + err)
    if case.get("giant") and seconds > 10:
        problems.append(f"{seconds:.1f} s > 10 s")
    if case.get("before_run") and any(line.startswith("[1/") for line in (out + err).splitlines()):
        problems.append("refused only after an entry ran")
    if case.get("names_file") and str(config) not in err:
        problems.append("the message does not name the file")
    if case.get("no_tilde_dir") and (work / "~").exists():
        problems.append("a folder named ~ was created")
    false_finding = bool(case.get("mutating")) and (code == 1 or "VIOLATED" in out + err)
    for directory, files in before.items():
        after = _snapshot(Path(directory)) if Path(directory).exists() else {}
        if case.get("earlier_report"):  # dpaudit's own report: only the user's file must survive unchanged
            lost += sum(1 for d, notes in before_notes.items() if not (Path(d) / "NOTES.txt").exists()
                        or (Path(d) / "NOTES.txt").read_bytes() != notes)
        else:
            lost += sum(1 for name, data in files.items() if after.get(name) != data)
    if case.get("hostile"):
        markdown = (case["hostile"] / "report.md").read_text() if (case["hostile"] / "report.md").exists() else ""
        table = [line for line in markdown.splitlines() if line.startswith("| ")]
        columns = {line.replace("\\|", "").count(" | ") for line in table}
        if "<script>" in markdown or len(columns) > 1 or not markdown:
            problems.append("report.md layout or HTML")
        if "<script>" in ((case["hostile"] / "report.html").read_text() if (case["hostile"] / "report.html").exists() else "<script>"):
            problems.append("report.html")
        if "\x1b" in out + err or "\r" in out + err or any(line.startswith("budget   ok") for line in (out + err).splitlines()):
            problems.append("terminal")
    if case.get("modes"):
        import stat

        directory = case["modes"]
        wanted = [(directory, 0o755), (directory / "baseline.json", 0o644), (directory / "report.md", 0o640),
                  (work / "junit.xml", 0o644)]
        problems += [f"{path.name} mode {oct(stat.S_IMODE(path.stat().st_mode))}" for path, mode in wanted
                     if not path.exists() or stat.S_IMODE(path.stat().st_mode) != mode]
    if case.get("short") and len(err) >= 1000:
        problems.append(f"error line of {len(err)} characters")
    if case.get("main_command"):
        lines = [line for line in (out + err).splitlines() if line.strip() and not line.startswith("... still running")]
        if any("warning" in line.lower() for line in lines):
            problems.append("warnings")
        if len(lines) != len(set(lines)):
            problems.append("repeated lines")
    lines = [line for line in err.splitlines() if line.strip()]
    message = next((line for line in reversed(lines) if line.startswith("dpaudit:")), None) or \
        next((line for line in (out + err).splitlines() if "ERROR" in line or "refused" in line), None) or \
        (lines[-1] if lines else out.strip().splitlines()[-1] if out.strip() else "")
    expected = case["expect"]
    verdict = any(word in out for word in ("ERROR", "FAILED", "EXCEEDED", "VIOLATED", "REGRESSION", "REJECTED"))
    silent = not case.get("sigkill") and (not (out + err).strip() or (code not in (0,) and not lines and not verdict))
    return {"scenario": case["name"], "command": " ".join(["dpaudit", *argv]).replace(str(work), ".").replace(str(ROOT), "<repo>"),
            "exit_code": code, "expected": sorted(expected), "wrong_exit_code": code not in expected, "silent": bool(silent),
            "traceback": "Traceback" in out + err, "files_lost": lost, "orphans": orphans, "hung_workers": len(hung),
            "false_finding": false_finding, "giant": bool(case.get("giant")),
            "peak_memory_mib": round(peak_kib / 1024, 1), "budget_scenario": bool(case.get("budget")), "problems": problems,
            "message": message.replace(str(work), ".").replace(str(ROOT), "<repo>")[:300], "seconds": seconds}


def rng_soundness(audits: int, workers: int, samples: int, seeded: bool) -> dict:
    """How often a correct 1-DP Laplace that draws from numpy's global state is certified above 1."""
    import numpy as np

    import dpaudit
    from dpaudit.auditor import sampling

    def mechanism(data, size, rng):
        return np.asarray(data, float)[0] + np.random.laplace(0.0, 1.0, size)

    audit_module = importlib.import_module("dpaudit.auditor.audit")  # the module, not the function it exports

    saved = sampling.seeded_global_state, audit_module.probe_randomness
    if not seeded:  # the sampler as it was: no per-block seeding, and no probe that would fall back to one process
        sampling.seeded_global_state = lambda *args: contextlib.nullcontext()
        audit_module.probe_randomness = lambda *args, **kwargs: sampling.RandomnessProbe(False, False, ())
    try:
        bounds = [dpaudit.audit(mechanism, [0.0], [1.0], epsilon=1.0, samples=samples, confidence_level=0.95, seed=seed,
                                workers=workers).epsilon_lower for seed in range(audits)]
    finally:
        sampling.seeded_global_state, audit_module.probe_randomness = saved
    return {"audits": audits, "workers": workers, "samples": samples, "seeded": seeded,
            "above_truth": int(sum(b > 1.0 for b in bounds)), "max_bound": max(bounds)}


def _busy_loop() -> None:
    while True:
        pass


def time_test_command(added_load: int = 0) -> dict:
    """Run the README's test command once (``python -m pytest``: testpaths tests and proofs, on every core) and
    record its wall time, the load average around it and its summary line; ``added_load`` busy processes run
    beside it (a load of that many on top of whatever else the machine does)."""
    import multiprocessing
    import re

    spinners = [multiprocessing.Process(target=_busy_loop, daemon=True) for _ in range(added_load)]
    for spinner in spinners:
        spinner.start()
    try:
        if spinners:
            time.sleep(60)  # let the load average see them
        before = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider"], cwd=ROOT,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        seconds = time.perf_counter() - started
        after = os.getloadavg()[0]
    finally:
        for spinner in spinners:
            spinner.terminate()
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    return {"seconds": round(seconds, 1), "load_before": round(before, 1), "load_after": round(after, 1),
            "added_load": added_load, "summary": summary.strip("= "), "exit_code": done.returncode,
            "cores": os.cpu_count(), "stamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--time-tests", action="store_true", help="also time the test command (appended to the earlier timings)")
    parser.add_argument("--added-load", type=int, default=0, metavar="N",
                        help="with --time-tests: N busy processes run beside the test command")
    parser.add_argument("--tests-only", action="store_true",
                        help="with --time-tests: keep the last run's scenarios and only time the test command")
    args = parser.parse_args()
    previous = ROOT / "reports" / "reliability.json"
    if args.tests_only:
        saved = json.loads(previous.read_text())
        timings = saved.get("test_command", []) + [time_test_command(args.added_load)]
        write_report(saved["scenarios"], saved["soundness"], saved.get("hostile", []), timings)
        return
    rows = []
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        (work / "mechs.py").write_text(MECHANISMS)
        for name, argv, config in scenarios(work):
            for stale in ("report",):
                if (work / stale).exists():
                    import shutil

                    shutil.rmtree(work / stale)
            rows.append({"scenario": name, "command": " ".join(["dpaudit", *argv]).replace(str(work), "."),
                         **run_scenario(work, argv, config)})
            print(rows[-1]["exit_code"], name, file=sys.stderr)
        (work / "gate.toml").write_text(GATE + entry("hung", "hangs"))
        rows.append({"scenario": "SIGINT to the gate's pid while an entry runs", "command": "kill -INT <pid of dpaudit check>",
                     **run_scenario(work, ["check", "{config}"], None, interrupt_after=4.0)})
    hostile = []
    previous_umask = os.umask(0o022)
    try:
        with tempfile.TemporaryDirectory() as directory:
            work = Path(directory)
            (work / "mechs.py").write_text(MECHANISMS)
            for module, text in IMPORT_MODULES.items():
                (work / f"{module}.py").write_text(text)
            for case in hostile_cases(work):
                hostile.append(run_hostile_case(work, case))
                row = hostile[-1]
                print(row["exit_code"], f"{row['peak_memory_mib']} MiB", row["problems"] or "", case["name"], file=sys.stderr)
    finally:
        os.umask(previous_umask)
    audits = 10 if args.quick else 40
    soundness = [rng_soundness(audits, 16, 1_000_000, seeded) for seeded in (False, True)]
    timings = json.loads(previous.read_text()).get("test_command", []) if previous.exists() else []
    if args.time_tests:
        timings.append(time_test_command(args.added_load))
    write_report(rows, soundness, hostile, timings)


def write_report(rows: list[dict], soundness: list[dict], hostile: list[dict], timings: list[dict] | None = None) -> None:
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Reliability: fault injection against the command line",
        "",
        f"Generated by `benchmarks/bench_reliability.py` on {stamp} ({machine_line()}). Each scenario is a fresh",
        "`python -m dpaudit` process; *report files* lists what the report directory held afterwards, *temporaries* any",
        "hidden temporary file or directory left beside the outputs (there should be none).",
        "",
        "Exit codes: 0 pass, 1 a privacy or accuracy finding only, 2 usage or configuration error, 3 a check could not be",
        "completed, 130 interrupted.",
        "",
        "| scenario | exit | message (last line of stderr) | traceback | report files | temporaries | seconds |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        message = " ".join(row["message"].split()).replace("|", "/")
        if len(message) > 160:
            message = message[:157] + "..."
        lines.append(f"| {row['scenario']} | {row['exit_code']} | {message} | {'yes' if row['traceback'] else 'no'} | "
                     f"{', '.join(row['report_files']) or '-'} | {', '.join(row['leftover_temporaries']) or '-'} | {row['seconds']:.1f} |")
    totals = {"files lost or overwritten that dpaudit did not write": sum(r["files_lost"] for r in hostile),
              "silent exits": sum(r["silent"] for r in hostile), "wrong exit codes": sum(r["wrong_exit_code"] for r in hostile),
              "tracebacks": sum(r["traceback"] for r in hostile),
              "orphans (after SIGKILL of dpaudit, or left by an entry: new sessions, double forks)": sum(r["orphans"] for r in hostile),
              "false findings from mechanisms that change their input": sum(r.get("false_finding", False) for r in hostile),
              "giant budgets not answered or refused within 10 s": sum(r.get("giant", False) and r["seconds"] > 10 for r in hostile),
              "other problems (layout, modes, warnings, repeated lines, long lines)": sum(bool(r["problems"]) for r in hostile)}
    budget_peaks = [r["peak_memory_mib"] for r in hostile if r["budget_scenario"]]
    lines += [
        "",
        "## The hostile tester's list",
        "",
        "Every case of the list \"the gate never loses a user's file and never passes silently\" (the number is the item",
        "of that list), each a fresh `python -m dpaudit` process with the default limits (2 GiB of memory per process,",
        "1800 s per gate entry, imports bounded by `--timeout`). *Expected* is the exit code (or set: refused or answered)",
        "a correct tool gives; -9 is the SIGKILL sent by the benchmark. *Lost* counts user files deleted or changed;",
        "*orphans* processes still running 10 s after SIGKILL of dpaudit; *peak* the largest resident set of dpaudit and",
        "its descendants (`wait4`).",
        "",
        "| total | count |",
        "|---|---|",
        *[f"| {name} | {value} |" for name, value in totals.items()],
        f"| peak memory of the budget scenarios (largest) | {max(budget_peaks, default=0):.0f} MiB |",
        "",
        "| scenario | exit | expected | silent | traceback | lost | orphans | peak MiB | problems | message | seconds |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in hostile:
        message = " ".join(row["message"].split()).replace("|", "/").replace("`", "'")
        if len(message) > 150:
            message = message[:147] + "..."
        lines.append(f"| {row['scenario']} | {row['exit_code']} | {', '.join(map(str, row['expected']))} | "
                     f"{'YES' if row['silent'] else 'no'} | {'YES' if row['traceback'] else 'no'} | {row['files_lost']} | "
                     f"{row['orphans']} | {row['peak_memory_mib']:.0f} | {', '.join(row['problems']) or '-'} | {message} | "
                     f"{row['seconds']:.1f} |")
    lines += [
        "",
        "## Soundness with the global numpy.random state",
        "",
        "A *correct* Laplace mechanism (epsilon = 1) that ignores its `rng` and draws from `numpy.random`, audited at 10^6",
        "samples per input, confidence 0.95, with 16 worker processes. A sound auditor certifies above the true epsilon in",
        "at most 5% of audits. *Without seeding* switches off the per-block seeding of the global state and the randomness",
        "probe (which would otherwise fall back to one process). It is not a faithful replay of the sampler before the fix:",
        "the issue measured 23 of 40 audits above the truth there (forked workers replaying one global state), while the",
        "current process pool draws differently, so a clean row here does not show that the old failure is gone; the",
        "per-block seeding is what makes such a mechanism reproducible and independent across workers (tested in",
        "`tests/gate/test_reliability.py`).",
        "",
        "| global state seeded per block | audits | certified above the true epsilon 1 | largest bound |",
        "|---|---|---|---|",
    ]
    for row in soundness:
        lines.append(f"| {'yes' if row['seeded'] else 'no (seeding and probe switched off)'} | {row['audits']} | {row['above_truth']} | {row['max_bound']:.4f} |")
    if timings:
        lines += ["", "## The test command", "",
                  "The README's test command (`python -m pytest`: `tests` and `proofs`, on every core), timed whole",
                  "(`--time-tests`; `--added-load N` runs N busy processes beside it). The load average (1 minute) before",
                  "and after the run says how busy the machine was (the target: 4 minutes on two idle cores, 10 minutes",
                  "under a load of 8). Rows before 2026-11-28 10:00 UTC ran the tests in one process.", "",
                  "| when | cores | added load | load before / after | seconds | exit | summary |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {t['stamp']} | {t['cores']} | {t.get('added_load', 0)} | {t['load_before']} / {t['load_after']} | "
                  f"{t['seconds']:.0f} | {t['exit_code']} | {t['summary']} |" for t in timings]
    path = ROOT / "reports" / "reliability.md"
    memory = ROOT / "reports" / "optimal_memory.json"
    if memory.exists():  # measured by bench_accountant.py; quoted here, not re-measured
        measured = json.loads(memory.read_text())
        lines += ["", "## Bounded memory in k", "",
                  f"Exact optimal composition (`optimal`), peak traced memory and time, from `reports/optimal_memory.json`",
                  f"(benchmark `bench_accountant.py`, {measured['machine']}); the full table is in [accountant.md](accountant.md).", "",
                  "| eps0 | k | delta | epsilon_upper | peak memory (MiB) | seconds |", "|---|---|---|---|---|---|"]
        for m in measured["measurements"]:
            if m["k"] >= 10**9:
                lines.append(f"| {m['eps0']:g} | {m['k']:.0e} | {m['delta']:g} | {m['epsilon_upper']:.6g} | "
                             f"{m['peak_bytes'] / 2**20:.2f} | {m['seconds']:.2f} |")
        if (ROOT / "reports" / "optimal_memory.png").exists():
            lines += ["", "![peak memory of optimal against k](optimal_memory.png)"]
    (ROOT / "reports" / "reliability.json").write_text(json.dumps({"scenarios": rows, "soundness": soundness, "hostile": hostile,
                                                                   "test_command": timings or []}, indent=1) + "\n")
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--render"]:  # rewrite the Markdown from the last run's JSON
        saved = json.loads((ROOT / "reports" / "reliability.json").read_text())
        write_report(saved["scenarios"], saved["soundness"], saved.get("hostile", []), saved.get("test_command", []))
    else:
        main()
