"""The auditor on the benchmark catalog: detection, tightness, soundness and speed; writes reports/auditor.md.

Run: python benchmarks/bench_auditor.py [--quick] [--no-structure] [--false-alarm-samples N]
     python benchmarks/bench_auditor.py --only throughput   (that section alone, put into the existing report)
"""

from __future__ import annotations

import argparse
import datetime
import math
import time
from pathlib import Path

import numpy as np
from _timing import machine_line

import dpaudit
from dpaudit.mechanisms.catalog import CATALOG, CATALOG_EPSILONS, catalog_entry

ROOT = Path(__file__).resolve().parents[1]


def run(entry, epsilon: float, samples: int, confidence: float, seed: int):
    d, d_prime = entry.pair
    return dpaudit.audit(entry.factory(epsilon), d, d_prime, epsilon=epsilon, delta=entry.delta, samples=samples,
                         confidence_level=confidence, seed=seed, sequential=False)  # the estimator at its whole budget


def detection(seeds: int) -> tuple[list[str], float]:
    lines = ["## Detection: every catalog entry at 10^6 samples per input, confidence 0.99", "",
             f"Flag rate over {seeds} seeds (a flag is a certified epsilon_lower above the claim). Buggy entries should be",
             "flagged, correct ones never. `true eps` is the entry's true epsilon at the claimed delta.", "",
             "| entry | buggy | claimed eps | true eps | pair eps | flagged | mean epsilon_lower | seconds (seed 0) |",
             "|---|---|---|---|---|---|---|---|"]
    first_pass = 0.0
    for entry in CATALOG:
        for epsilon in CATALOG_EPSILONS:
            results, seconds = [], 0.0
            for seed in range(seeds):
                started = time.perf_counter()
                results.append(run(entry, epsilon, 1_000_000, 0.99, seed))
                if seed == 0:
                    seconds = time.perf_counter() - started
            first_pass += seconds
            true = entry.true_epsilon(epsilon)
            pair = entry.pair_epsilon(epsilon)
            flagged = sum(r.violated for r in results)
            lines.append(f"| {entry.name} | {'yes' if entry.buggy else 'no'} | {epsilon:g} | {_num(true)} | {_num(pair)} | "
                         f"{flagged}/{seeds} | {np.mean([r.epsilon_lower for r in results]):.4f} | {seconds:.2f} |")
            print(lines[-1], flush=True)
    lines += ["", f"One pass over the whole catalog (both epsilons, seed 0): **{first_pass:.1f} s** on this machine (target: under 2 minutes on 2 cores).",
              "", "Not flagged by design: histogram_wrong_scale at claimed epsilon 1 (scale epsilon = 1/epsilon: no bug at 1).",
              "gaussian_half_sigma at claimed epsilon 0.5 sits at the edge of what 10^6 samples can certify at 99%: even the",
              "best half-line, known in advance, certifies 0.528 on average against the claim 0.5; at 4*10^6 samples it is",
              "flagged in every seed.", ""]
    return lines, first_pass


def _num(value) -> str:
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:.4g}"


def tightness(sizes: list[int]) -> list[str]:
    header = " | ".join(f"{n:.0e}" for n in sizes)
    lines = ["## Tightness: epsilon_lower / pair epsilon at confidence 0.95 (claimed epsilon 1, seed 0)", "",
             "The pair epsilon is the exact epsilon of the mechanism on the catalog's pair (a sound auditor reports at most it).",
             "For infinite pair epsilon the certified bound itself is shown; for the Gaussian entries the pair epsilon at",
             "delta = 1e-5 is only reachable through events of probability ~delta, so no finite budget here approaches it.", "",
             f"| entry | pair eps | {header} | witness at the largest budget |", "|---|---|" + "---|" * len(sizes) + "---|"]
    for entry in CATALOG:
        pair = entry.pair_epsilon(1.0)
        cells, event = [], ""
        for n in sizes:
            result = run(entry, 1.0, n, 0.95, 0)
            if pair is None or math.isinf(pair):
                cells.append(f"{result.epsilon_lower:.3f} (bound)")
            else:
                cells.append(f"{result.epsilon_lower / pair:.3f}")
            event = result.event
        lines.append(f"| {entry.name} | {_num(pair)} | {' | '.join(cells)} | {event.replace('|', '/')[:70]} |")
        print(lines[-1], flush=True)
    return lines + [""]


def soundness(repetitions: int = 200) -> list[str]:
    entry = catalog_entry("laplace")
    started = time.perf_counter()
    bounds = np.array([run(entry, 1.0, 10_000, 0.95, seed).epsilon_lower for seed in range(repetitions)])
    exceed = int(np.sum(bounds > 1.0))
    return ["## Soundness", "",
            f"Laplace (true epsilon 1), {repetitions} seeded audits at 10^4 samples, confidence 0.95: the bound exceeded the "
            f"truth {exceed} times ({exceed / repetitions:.1%}; allowed 5%). Median bound {np.median(bounds):.3f}, "
            f"max {bounds.max():.3f} ({time.perf_counter() - started:.1f} s).", ""]


def peers(seeds: int = 5) -> list[str]:
    lines = ["## Against the peers' reference points (CATALOG.md)", "",
             "Peers: Laplace at epsilon 0.1 with 2*10^8 samples per input, 90% confidence, certified 0.0968-0.0998;",
             "histogram_wrong_scale 4.60 (DP-Sniper, capped at ln 100) and 10.00 (StatDP, true 10); noisy_max_laplace_value 0.2488.",
             f"dpaudit with 20 times fewer samples, over {seeds} seeds: at 90% confidence a bound may exceed the truth in up to",
             "10% of the runs, so the column `above truth` is expected to be nonzero now and then.", "",
             "| entry | claimed eps | samples/input | confidence | dpaudit epsilon_lower (median, min-max) | above truth | truth | seconds per audit |",
             "|---|---|---|---|---|---|---|---|"]
    for name, true in (("laplace", 0.1), ("histogram_wrong_scale", 10.0), ("noisy_max_laplace_value", 0.25)):
        entry = catalog_entry(name)
        started = time.perf_counter()
        bounds = np.array([run(entry, 0.1, 10_000_000, 0.90, seed).epsilon_lower for seed in range(seeds)])
        seconds = (time.perf_counter() - started) / seeds
        lines.append(f"| {name} | 0.1 | 10^7 | 0.90 | {np.median(bounds):.4f} ({bounds.min():.4f}-{bounds.max():.4f}) | "
                     f"{int(np.sum(bounds > true))}/{seeds} | {true:g} | {seconds:.1f} |")
        print(lines[-1], flush=True)
    return lines + [""]


def large_scale(samples: int = 100_000_000) -> list[str]:
    """One audit at 10^8 samples per input: memory stays bounded (certification is streamed by block)."""
    import resource

    entry = catalog_entry("laplace")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    result = run(entry, 1.0, samples, 0.95, 0)
    seconds = time.perf_counter() - started
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    line = (f"Laplace, epsilon 1, {samples:.0e} samples per input: epsilon_lower = {result.epsilon_lower:.5f} in {seconds:.1f} s; "
            f"peak resident memory {max(before, after) / 1024:.0f} MiB in the main process, {children / 1024:.0f} MiB in a worker "
            f"(outputs alone would take {2 * samples * 8 / 2**30:.1f} GiB).")
    print(line, flush=True)
    return ["## Scale: 10^8 samples per input", "", line, ""]


def structure(quick: bool, false_alarm_samples: int | None = None) -> list[str]:
    """Issue 18: the sections of ``bench_auditor_structure.py`` (structural leaks against the best oracle event,
    3,000 atoms in memory, false alarms over 200 seeds, the catalog before / after), run in this process; the
    raw numbers also go to reports/auditor_structure.json."""
    import json

    import bench_auditor_structure as bench

    seeds = 2 if quick else 5
    report: dict = {}
    lines = ["## Structure: leaks of structure, products, wide discrete outputs, tails (issue 18)", "",
             f"Written by `benchmarks/bench_auditor.py` from `bench_auditor_structure.py` ({seeds} seeds per row).", ""]
    parts = [bench.structure_section(seeds), bench.memory_section(1_000_000),
             bench.false_alarm_section(40 if quick else bench.FALSE_ALARM_RUNS,
                                       false_alarm_samples or (20_000 if quick else bench.FALSE_ALARM_SAMPLES)),
             bench.catalog_section([10**5, 10**6] if quick else [10**5, 10**6, 10**7])]
    for key, (section, data) in zip(("structure", "memory", "false_alarms", "catalog"), parts):
        lines += [("#" + line) if line.startswith("## ") else line for line in section]
        report[key] = data
    (ROOT / "reports" / "auditor_structure.json").write_text(json.dumps(report, indent=1, default=str))
    return lines


def _laplace_count(data, size, rng):
    return float(np.sum(data)) + rng.laplace(0.0, 1.0, size)


def _noisy_max_value(data, size, rng):
    return np.max(np.asarray(data, dtype=float) + rng.laplace(0.0, 2.0, (size, len(data))), axis=1)


def _numpy_loop(mechanism, d, d_prime, samples: int) -> None:
    """The sampling an audit of ``samples`` per input cannot avoid, as a plain loop: the mechanism on both inputs in
    blocks of 65,536, each with its own generator, and one count per block."""
    for data in (d, d_prime):
        for start in range(0, samples, 1 << 16):
            out = mechanism(data, min(1 << 16, samples - start), np.random.default_rng(start))
            int(np.count_nonzero(out > 0.5))


def _numpy_work(index: int) -> float:
    g = np.random.default_rng(index)
    return float(sum(g.laplace(0.0, 1.0, 1 << 16).sum() for _ in range(40)))


def _second_core(tasks: int = 8) -> float:
    """The speed-up of two processes over one on plain numpy work (no dpaudit): what the machine gives a second
    worker right now (about 2 on two idle cores, about 1 when the cores are taken)."""
    from concurrent.futures import ProcessPoolExecutor

    started = time.perf_counter()
    for index in range(tasks):
        _numpy_work(index)
    one = time.perf_counter() - started
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_numpy_work, range(2)))  # started
        started = time.perf_counter()
        list(pool.map(_numpy_work, range(tasks)))
        two = time.perf_counter() - started
    return one / two


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds of this process and of its finished child processes (the workers, once they have exited: an audit
    returns while they exit, so wait for them)."""
    import multiprocessing
    import resource

    for process in multiprocessing.active_children():
        process.join()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time(), children.ru_utime + children.ru_stime


IDLE_GAP = 0.5  # seconds between timed runs: an audit with workers leaves OpenBLAS threads spinning briefly (backends.py)


def throughput(samples: int = 10**7, runs: int = 5) -> list[str]:
    """Wall and CPU time of ``dpaudit.audit`` at ``samples`` per input with 1, 2 (and 4 where there are cores) worker
    processes against a plain numpy loop drawing the same samples, alternating in one run (``runs`` rounds)."""
    import os

    cores = os.cpu_count() or 1
    counts = [w for w in (1, 2, 4) if w <= max(2, cores)]
    cases = (("laplace count (scalar)", _laplace_count, [1, 0, 1], [1, 0]),
             ("noisy max value of 8 (8 draws per output)", _noisy_max_value, [3, 1, 0, 2, 1, 0, 1, 2], [3, 1, 0, 2, 1, 0, 1, 1]))
    lines = [f"## Throughput: workers at {samples:.0e} samples per input", "",
             f"`dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples={samples:.0e}, seed=run, workers=w)` (the default: "
             "correct mechanisms use the whole budget) against a plain numpy loop drawing the same samples in blocks of "
             f"65,536 with one count each; {runs} rounds, alternating loop / workers = {', '.join(map(str, counts))} in "
             f"each, {IDLE_GAP} s apart (an audit with workers restores this process's BLAS thread count at its end, which "
             "restarts OpenBLAS's threads after the fork, and they spin briefly); median seconds and the ratios of the "
             "medians (higher = faster than one worker).", "",
             "| mechanism | numpy loop s | " + " | ".join(f"workers={w} s" for w in counts)
             + " | workers=1 / loop | " + " | ".join(f"workers={w} speed-up" for w in counts if w > 1) + " |",
             "|---|---|" + "---|" * len(counts) + "---|" + "---|" * (len(counts) - 1)]
    cpu_lines = ["", "CPU seconds of the same runs (medians; this process + its worker processes), which the load changes "
                 "far less than wall time, and the speed-up they imply on w idle cores: one worker's CPU seconds over "
                 "S + (C - S) / w, where C is the CPU seconds with w workers and S what this process must do before any "
                 "other can help (at most the probes and the selection, measured with one worker: the workers start "
                 "after the first selection block). An estimate: it assumes the work "
                 "overlaps as planned and costs the same CPU time on an idle machine.", "",
                 "| mechanism | " + " | ".join(f"workers={w} CPU s (here + workers)" for w in counts) + " | "
                 + " | ".join(f"workers={w} implied idle speed-up" for w in counts if w > 1) + " |",
                 "|---|" + "---|" * len(counts) + "---|" * (len(counts) - 1)]
    controls = []
    for name, mechanism, d, d_prime in cases:
        dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=300_000, seed=0, workers=1)  # warm the imports
        controls.append(_second_core())
        seconds: dict = {"loop": [], **{w: [] for w in counts}}
        cpu: dict = {w: [] for w in counts}
        for run_index in range(runs):
            time.sleep(IDLE_GAP)
            started = time.perf_counter()
            _numpy_loop(mechanism, d, d_prime, samples)
            seconds["loop"].append(time.perf_counter() - started)
            for w in counts:
                wall, here, workers = _timed_audit(mechanism, d, d_prime, samples, run_index, w)
                seconds[w].append(wall)
                cpu[w].append((here, workers))
        median = {key: float(np.median(values)) for key, values in seconds.items()}
        lines.append(f"| {name} | {median['loop']:.2f} | " + " | ".join(f"{median[w]:.2f}" for w in counts)
                     + f" | {median['loop'] / median[1]:.2f}x | "
                     + " | ".join(f"{median[1] / median[w]:.2f}x" for w in counts if w > 1) + " |")
        print(lines[-1], flush=True)
        here_cpu = {w: float(np.median([h for h, _ in cpu[w]])) for w in counts}
        worker_cpu = {w: float(np.median([k for _, k in cpu[w]])) for w in counts}
        serial = _serial_part(mechanism, d, d_prime, samples)
        implied = {w: (here_cpu[1] + worker_cpu[1]) / max(serial + (here_cpu[w] + worker_cpu[w] - serial) / w, serial)
                   for w in counts if w > 1}
        cpu_lines.append(f"| {name} | " + " | ".join(f"{here_cpu[w]:.2f} + {worker_cpu[w]:.2f}" for w in counts) + " | "
                         + " | ".join(f"{implied[w]:.2f}x" for w in counts if w > 1) + " |")
        print(cpu_lines[-1], flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else math.nan
    lines += cpu_lines
    lines += _beside_busy_processes(cases, samples, runs, busy=cores)
    lines += ["", f"{cores} cores; load average {load:.1f} at the end. Control, before each mechanism: plain numpy work in two "
              f"processes against one, {', '.join(f'{c:.2f}x' for c in controls)} (about 2 on two idle cores): a second "
              "worker only helps as much as the machine gives a second process, so read the workers' wall-time ratios "
              "against the control (on a shared machine the CPU columns are the better guide). An audit probes the "
              "mechanism and draws its selection in this process; `workers=w` is this process and w - 1 worker "
              "processes, which draw the certification blocks ahead (kept in their memory) while this process searches "
              "the witness events and then stream them: the workers claim blocks from the low end, count the kept ones "
              "once the witness is known and then draw and count further ones (counts back, in batches), while this "
              "process draws and counts each look's unclaimed blocks from its top, so no look waits for more than the "
              "block in progress; a map too small to pay for workers (under 0.3 s of blocks, measured) stays in this "
              "process. Command: `nice python benchmarks/bench_auditor.py --only throughput`.", ""]
    return lines


def _timed_audit(mechanism, d, d_prime, samples: int, seed: int, workers: int) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds here and in worker processes of one audit, started IDLE_GAP after the last run."""
    time.sleep(IDLE_GAP)
    here, children = _cpu_seconds()
    started = time.perf_counter()
    dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=samples, seed=seed, workers=workers)
    wall = time.perf_counter() - started
    after_here, after_children = _cpu_seconds()
    return wall, after_here - here, after_children - children


def _beside_busy_processes(cases, samples: int, runs: int, busy: int) -> list[str]:
    """workers = 1 against workers = 2 beside ``busy`` processes spinning in their own sessions (so in their own
    scheduling groups, as other jobs on the machine are): no core is free, so the audit starts no worker
    (``dpaudit/auditor/cores.py``) and must not be slower than one worker."""
    import subprocess
    import sys

    spinning = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True) for _ in range(busy)]
    try:
        time.sleep(1.0)
        lines = ["", f"Beside {busy} processes spinning in their own sessions (no free core), {runs} rounds alternating "
                 "workers = 1, 2, median seconds: with no core free no worker process starts (`dpaudit/auditor/cores.py`: "
                 "a second process of one session would only add its costs), so two workers cost what one does.", "",
                 "| mechanism | workers=1 s | workers=2 s | workers=2 speed-up | worker processes started |",
                 "|---|---|---|---|---|"]
        for name, mechanism, d, d_prime in cases:
            seconds: dict = {1: [], 2: []}
            started_workers = 0
            for run_index in range(runs):
                for w in (1, 2):
                    wall, _, workers = _timed_audit(mechanism, d, d_prime, samples, run_index, w)
                    seconds[w].append(wall)
                    started_workers += workers > 0
            one, two = float(np.median(seconds[1])), float(np.median(seconds[2]))
            lines.append(f"| {name} | {one:.2f} | {two:.2f} | {one / two:.2f}x | {started_workers} of {runs} |")
            print(lines[-1], flush=True)
        return lines
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def _serial_part(mechanism, d, d_prime, samples: int) -> float:
    """CPU seconds an audit with one worker spends before its certification could start in workers: the probes and the
    selection sampling (the witness search overlaps with workers drawing ahead), measured on one run."""
    import importlib

    audit_module = importlib.import_module("dpaudit.auditor.audit")
    original, spent = audit_module.search_witnesses, []
    started = time.process_time()

    def search(*args, **kwargs):
        spent.append(time.process_time() - started)
        return original(*args, **kwargs)

    audit_module.search_witnesses = search
    try:
        dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=samples, seed=0, workers=1)
    finally:
        audit_module.search_witnesses = original
    return spent[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["throughput"], default=None,
                        help="run this section alone and put it into the existing report")
    parser.add_argument("--quick", action="store_true", help="1 seed, sizes up to 10^6")
    parser.add_argument("--no-structure", action="store_true", help="skip the structure section (issue 18)")
    parser.add_argument("--false-alarm-samples", type=int, default=None,
                        help="samples per input of the structure section's 200 false-alarm audits per mechanism "
                             "(default 10^6, about 10 minutes; --quick: 2*10^4)")
    args = parser.parse_args()
    if args.only == "throughput":
        from _sections import merge_sections

        out = ROOT / "reports" / "auditor.md"
        note = (f"Re-run {datetime.date.today().isoformat()} with `--only throughput` ({machine_line()}): that section; "
                "the others are from the run above.")
        out.write_text(merge_sections(out.read_text(), {"throughput": throughput()}, note,
                                      {"throughput": "## Throughput"}))
        print(out.read_text())
        return
    lines = ["# Auditor benchmark", "",
             f"Generated by `benchmarks/bench_auditor.py` on {datetime.date.today().isoformat()} ({machine_line()}).",
             "Every epsilon here is a certified **lower bound** (Clopper-Pearson, confidence split over sides and events).", ""]
    detect, _ = detection(1 if args.quick else 5)
    lines += detect
    lines += tightness([10**5, 10**6] if args.quick else [10**5, 10**6, 10**7])
    lines += soundness()
    if not args.quick:
        lines += peers()
        lines += large_scale()
    if not args.quick:
        lines += throughput()
    if not args.no_structure:
        lines += structure(args.quick, args.false_alarm_samples)
    out = ROOT / "reports" / "auditor.md"
    out.write_text("\n".join(lines).rstrip() + "\n")
    print(out.read_text())


if __name__ == "__main__":
    main()
