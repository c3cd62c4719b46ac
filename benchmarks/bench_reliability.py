"""Fault injection against the real command line; writes reports/reliability.md and reliability.json.

Each scenario runs ``python -m dpaudit ...`` in a fresh process (a fault that kills the interpreter must
not take the benchmark with it) and records the exit code, the first line of stderr and the files left in
the output directory. A second part measures the soundness of audits of a *correct* Laplace mechanism that
draws from the global ``numpy.random`` state, at 16 worker processes, with and without the per-block
seeding of the global state.

Run: python benchmarks/bench_reliability.py [--quick]
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
from pathlib import Path

from _timing import machine_line

ROOT = Path(__file__).resolve().parents[1]
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
''')

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
    env = {**os.environ, "PYTHONPATH": str(work) + os.pathsep + os.environ.get("PYTHONPATH", "")}
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
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
    audits = 10 if args.quick else 40
    soundness = [rng_soundness(audits, 16, 1_000_000, seeded) for seeded in (False, True)]
    write_report(rows, soundness)


def write_report(rows: list[dict], soundness: list[dict]) -> None:
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
        message = row["message"].replace("|", "/")
        if len(message) > 160:
            message = message[:157] + "..."
        lines.append(f"| {row['scenario']} | {row['exit_code']} | {message} | {'yes' if row['traceback'] else 'no'} | "
                     f"{', '.join(row['report_files']) or '-'} | {', '.join(row['leftover_temporaries']) or '-'} | {row['seconds']:.1f} |")
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
    (ROOT / "reports" / "reliability.json").write_text(json.dumps({"scenarios": rows, "soundness": soundness}, indent=1) + "\n")
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--render"]:  # rewrite the Markdown from the last run's JSON
        saved = json.loads((ROOT / "reports" / "reliability.json").read_text())
        write_report(saved["scenarios"], saved["soundness"])
    else:
        main()
