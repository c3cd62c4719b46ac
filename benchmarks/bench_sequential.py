"""Sequential audits against fixed-budget ones: samples saved, verdicts, false alarms, the price of looking; writes
reports/sequential.md and reports/sequential.json.

Sections: (1) the catalog's buggy entries at a maximum budget of 10^7 per input (samples used and verdicts,
sequential against fixed); (2) correct mechanisms, many seeds at a moderate budget with a bound checked at every
look (false alarms, futility savings); (3) the power futility costs on violations near the edge of the budget;
(4) the price of looking at the full budget (the last look's bound against the fixed-budget bound on the same
counts); (5) the witness-search cases of tiny epsilon and a rare NaN branch; (6) ``dpaudit check
examples/dpaudit.toml`` sequential against ``--fixed-budget``.

Run: nice -n 10 python benchmarks/bench_sequential.py [--quick] [--seeds 200] [--samples 100000]
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _timing import machine_line
from scipy.stats import binom

import dpaudit
from dpaudit._io import atomic_write_text
from dpaudit.reporting import json_ready
from dpaudit.auditor.certify import epsilon_lower_bound, side_alpha
from dpaudit.auditor.looks import FINAL_SHARE
from dpaudit.auditor.witness import Column, ScoreRegion
from dpaudit.mechanisms.catalog import CATALOG, CATALOG_EPSILONS, catalog_entry

ROOT = Path(__file__).resolve().parents[1]
CONFIDENCE = 0.95


def run(entry, epsilon: float, samples: int, seed: int, sequential: bool, confidence: float = CONFIDENCE):
    d, d_prime = entry.pair
    return dpaudit.audit(entry.factory(epsilon), d, d_prime, epsilon=epsilon, delta=entry.delta, samples=samples,
                         confidence_level=confidence, seed=seed, workers=1, sequential=sequential)


def buggy_twins(samples: int, seeds: int) -> tuple[list[str], list[dict]]:
    lines = [f"## Catalog buggy entries at a maximum budget of {samples:.0e} per input (confidence {CONFIDENCE})", "",
             f"Sequential audits over seeds 0..{seeds - 1}; the fixed-budget verdict at seed 0 draws the whole budget. "
             "`used` is selection plus certification samples per input.", "",
             "| entry | claimed eps | true eps | fixed verdict (seed 0) | sequential verdicts | median used | saving | "
             "stopped | s sequential / fixed (seed 0) |", "|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for entry in CATALOG:
        if not entry.buggy:
            continue
        for epsilon in CATALOG_EPSILONS:
            started = time.perf_counter()
            fixed = run(entry, epsilon, samples, 0, False)
            fixed_seconds = time.perf_counter() - started
            outcomes, seconds = [], 0.0
            for seed in range(seeds):
                started = time.perf_counter()
                outcomes.append(run(entry, epsilon, samples, seed, True))
                seconds = seconds or time.perf_counter() - started
            used = float(np.median([r.samples_used for r in outcomes]))
            row = {"entry": entry.name, "epsilon": epsilon, "true_epsilon": entry.true_epsilon(epsilon),
                   "fixed_violated": fixed.violated, "fixed_epsilon_lower": fixed.epsilon_lower,
                   "sequential_violated": [r.violated for r in outcomes], "samples_used": [r.samples_used for r in outcomes],
                   "stopped": [r.stopped for r in outcomes], "median_used": used, "saving": samples / used,
                   "seconds_sequential": seconds, "seconds_fixed": fixed_seconds}
            rows.append(row)
            stops = ", ".join(f"{k} {v}" for k, v in sorted(_count(row["stopped"]).items()))
            lines.append(f"| {entry.name} | {epsilon:g} | {_num(row['true_epsilon'])} | "
                         f"{'VIOLATED' if fixed.violated else 'pass'} ({fixed.epsilon_lower:.3f}) | "
                         f"{sum(row['sequential_violated'])}/{seeds} violated | {used:,.0f} | {samples / used:.1f}x | {stops} | "
                         f"{seconds:.1f} / {fixed_seconds:.1f} |")
            print(lines[-1], flush=True)
    flagged = [r for r in rows if r["fixed_violated"]]
    same = all(all(v == r["fixed_violated"] for v in r["sequential_violated"]) for r in rows)
    median_saving = float(np.median([r["saving"] for r in flagged])) if flagged else math.nan
    lines += ["", f"Same verdicts as the fixed budget in every seed: **{'yes' if same else 'NO'}**. Median saving over the "
              f"entries the fixed budget flags: **{median_saving:.1f}x** (target >= 10x).", ""]
    return lines, rows


def correct_mechanisms(samples: int, seeds: int) -> tuple[list[str], list[dict]]:
    names = [("laplace", 1.0), ("noisy_max_exponential_index", 1.0), ("svt_above_threshold", 1.0), ("gaussian", 1.0)]
    allowed = int(binom.ppf(0.99, seeds, 1.0 - CONFIDENCE))
    lines = [f"## Correct mechanisms: {seeds} seeds at {samples:,} samples per input, every look monitored", "",
             f"A false alarm is a violation reported at any look (the audit stops at the first). The stated rate is "
             f"{1 - CONFIDENCE:g} per audit; over {seeds} seeds the binomial allowance at 99% is {allowed} alarms. "
             "`saving`: the fixed budget over the median samples used per input.", "",
             "| entry | claimed eps | false alarms | median used | saving | stopped | median bound: sequential / fixed | s |",
             "|---|---|---|---|---|---|---|---|"]
    rows = []
    for name, epsilon in names:
        entry = catalog_entry(name)
        started = time.perf_counter()
        sequential = [run(entry, epsilon, samples, seed, True) for seed in range(seeds)]
        fixed = [run(entry, epsilon, samples, seed, False) for seed in range(min(seeds, 20))]
        used = float(np.median([r.samples_used for r in sequential]))
        row = {"entry": name, "epsilon": epsilon, "false_alarms": sum(r.violated for r in sequential), "allowed": allowed,
               "samples_used": [r.samples_used for r in sequential], "stopped": [r.stopped for r in sequential],
               "median_used": used, "saving": samples / used,
               "median_bound_sequential": float(np.median([r.epsilon_lower for r in sequential])),
               "median_bound_fixed": float(np.median([r.epsilon_lower for r in fixed])),
               "seconds": time.perf_counter() - started}
        rows.append(row)
        stops = ", ".join(f"{k} {v}" for k, v in sorted(_count(row["stopped"]).items()))
        lines.append(f"| {name} | {epsilon:g} | {row['false_alarms']}/{seeds} | {used:,.0f} | {row['saving']:.1f}x | {stops} | "
                     f"{row['median_bound_sequential']:.3f} / {row['median_bound_fixed']:.3f} | {row['seconds']:.0f} |")
        print(lines[-1], flush=True)
    alarms_ok = all(r["false_alarms"] <= allowed for r in rows)
    lines += ["", f"False alarms within the allowance for every entry: **{'yes' if alarms_ok else 'NO'}**; median saving "
              f"{float(np.median([r['saving'] for r in rows])):.1f}x (target >= 3x). The fixed-budget median bound is over "
              f"the first {min(seeds, 20)} seeds; a futility stop reports the bound of the looks made, so it is looser.", ""]
    return lines, rows


def _laplace(scale: float):
    def mechanism(data, size, rng):
        return np.asarray(data, float)[0] + rng.laplace(0.0, scale, size)
    return mechanism


def power_cost(samples: int, seeds: int) -> tuple[list[str], list[dict]]:
    lines = [f"## The power futility costs: Laplace violations near the edge of {samples:,} samples per input", "",
             f"Claimed epsilon 1, true epsilon as given; flag rate over {seeds} seeds, fixed budget against sequential.", "",
             "| true eps | fixed flags | sequential flags | cost | median used (sequential) |", "|---|---|---|---|---|"]
    rows = []
    for true_epsilon in (1.03, 1.06, 1.1, 1.2, 1.3, 1.5):
        mechanism = _laplace(1.0 / true_epsilon)
        fixed = [dpaudit.audit(mechanism, [0.0], [1.0], epsilon=1.0, samples=samples, seed=s, workers=1, sequential=False)
                 for s in range(seeds)]
        sequential = [dpaudit.audit(mechanism, [0.0], [1.0], epsilon=1.0, samples=samples, seed=s, workers=1)
                      for s in range(seeds)]
        a, b = sum(r.violated for r in fixed), sum(r.violated for r in sequential)
        used = float(np.median([r.samples_used for r in sequential]))
        rows.append({"true_epsilon": true_epsilon, "fixed_flags": a, "sequential_flags": b, "seeds": seeds, "median_used": used})
        lines.append(f"| {true_epsilon:g} | {a}/{seeds} | {b}/{seeds} | {(a - b) / seeds:+.0%} | {used:,.0f} |")
        print(lines[-1], flush=True)
    lines += ["", "Futility costs power only at the edge of what the budget resolves; validity is untouched (the error is "
              "spent whether or not an audit stops)."]
    return lines + [""], rows


def price_of_looking(samples: int) -> tuple[list[str], list[dict]]:
    lines = [f"## The price of looking: the last look against the fixed budget, same counts ({samples:.0e} per input)", "",
             f"Each catalog entry's fixed-budget audit (seed 0): its best event's counts certified at the fixed error and at "
             f"the last look's share ({FINAL_SHARE:g}) of it, the error spent on the earlier looks. Same samples, same "
             "event: the difference is what looking costs at the full budget.", "",
             "| entry | claimed eps | fixed bound | last-look bound | relative |", "|---|---|---|---|---|"]
    rows = []
    for entry in CATALOG:
        for epsilon in CATALOG_EPSILONS:
            r = run(entry, epsilon, samples, 0, False)
            if not math.isfinite(r.epsilon_lower) or r.epsilon_lower <= 0:
                continue
            alpha = side_alpha(r.confidence_level, r.certified_events)
            n = r.certification_samples
            last = epsilon_lower_bound(r.count_p, n, r.count_q, n, r.delta, alpha * FINAL_SHARE)[0]
            relative = last / r.epsilon_lower
            rows.append({"entry": entry.name, "epsilon": epsilon, "fixed": r.epsilon_lower, "last_look": last,
                         "relative": relative})
            lines.append(f"| {entry.name} | {epsilon:g} | {r.epsilon_lower:.4f} | {last:.4f} | {relative:.4f} |")
    worst = min(rows, key=lambda row: row["relative"])
    lines += ["", f"Median {float(np.median([r['relative'] for r in rows])):.4f}, worst {worst['relative']:.4f} "
              f"({worst['entry']} at {worst['epsilon']:g}); target: within 2% (>= 0.98).", ""]
    return lines, rows


class _DiscreteLaplace:
    def __init__(self, noise_epsilon: float) -> None:
        self.noise_epsilon = noise_epsilon

    def __call__(self, data, size, rng):
        p = 1.0 - math.exp(-self.noise_epsilon)
        return data[0] + rng.geometric(p, size) - rng.geometric(p, size)


class _RareNaN:
    def __call__(self, data, size, rng):
        out = data[0] + rng.laplace(0.0, 1.0, size)
        if data[0] > 0:
            out[rng.random(size) < 5e-5] = np.nan
        return out


def witness_cases(seeds: int) -> tuple[list[str], list[dict]]:
    lines = ["## Witness search: tiny epsilon on integers, a rare NaN branch (10^6 samples per input)", "",
             "| case | claimed eps | true eps | seeds | flagged: fixed / sequential | min bound (fixed) |", "|---|---|---|---|---|---|"]
    cases = [("discrete Laplace, noise 0.004 on a shift of 2 (2x twin)", _DiscreteLaplace(0.004), [0.0], [2.0], 0.004, 0.008),
             ("discrete Laplace, noise 0.005 on a shift of 2 (correct)", _DiscreteLaplace(0.005), [0.0], [2.0], 0.01, 0.01),
             ("Laplace with a NaN branch p = 5e-5", _RareNaN(), [0.0], [1.0], 1.0, math.inf)]
    rows = []
    for name, mechanism, d, d_prime, epsilon, true_epsilon in cases:
        first = 50 if "discrete" in name else 0
        fixed = [dpaudit.audit(mechanism, d, d_prime, epsilon=epsilon, samples=1_000_000, seed=s, workers=1, sequential=False)
                 for s in range(first, first + seeds)]
        sequential = [dpaudit.audit(mechanism, d, d_prime, epsilon=epsilon, samples=1_000_000, seed=s, workers=1)
                      for s in range(first, first + seeds)]
        row = {"case": name, "epsilon": epsilon, "seeds": list(range(first, first + seeds)),
               "fixed_flags": sum(r.violated for r in fixed), "sequential_flags": sum(r.violated for r in sequential),
               "fixed_bounds": [r.epsilon_lower for r in fixed], "sequential_bounds": [r.epsilon_lower for r in sequential]}
        rows.append(row)
        lines.append(f"| {name} | {epsilon:g} | {_num(true_epsilon)} | {first}..{first + seeds - 1} | {row['fixed_flags']} / "
                     f"{row['sequential_flags']} | {min(row['fixed_bounds']):.4g} |")
        print(lines[-1], flush=True)
    known = ScoreRegion(Column(0, 1), -math.inf, 0.0)
    oracle = [dpaudit.audit(cases[0][1], [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=s, workers=1, sequential=False,
                            witness=known, direction="d -> d_prime") for s in range(50, 50 + seeds)]
    rows.append({"case": "oracle y <= 0 on the 2x twin", "flags": sum(r.violated for r in oracle),
                 "bounds": [r.epsilon_lower for r in oracle]})
    lines += ["", f"The half-line y <= 0 known in advance (every sample certifies it) flags the 2x twin in "
              f"{rows[-1]['flags']}/{seeds} of the same seeds: at this budget its certified bound sits at the claim. Before "
              "the median half-line the search certified 0 on the twin (4/4 seeds 50-53 missed).", ""]
    return lines, rows


def gate_timing() -> tuple[list[str], dict]:
    times, verdicts = {}, {}
    for label, extra in (("sequential", []), ("fixed budget", ["--fixed-budget"])):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "dpaudit", "check", "examples/dpaudit.toml", "--json", *extra], cwd=ROOT,
                              capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        times[label] = time.perf_counter() - started
        document = json.loads(done.stdout)
        verdicts[label] = {row["name"]: row["passed"] for key in ("audits", "accuracy", "budgets") for row in document[key]}
        verdicts[label + " used"] = {row["name"]: row.get("samples_used") for row in document["audits"]}
    same = verdicts["sequential"] == verdicts["fixed budget"]
    speedup = times["fixed budget"] / times["sequential"]
    used = verdicts["sequential used"]
    lines = ["## `dpaudit check examples/dpaudit.toml`", "",
             f"Wall time: sequential {times['sequential']:.1f} s, `--fixed-budget` {times['fixed budget']:.1f} s: "
             f"**{speedup:.2f}x** (target >= 3x); identical verdicts: **{'yes' if same else 'NO'}**.",
             "Samples used per input by each audit (of 200,000): "
             + ", ".join(f"{name} {value:,}" for name, value in used.items() if value is not None) + ".",
             "The audits draw 6-9x fewer samples, but the gate's wall time is dominated by what sequential certification "
             "does not touch: the witness search on the selection batch (10% of the maximum budget; the logistic score's "
             "fit alone is ~8 of sparse_vector's ~10 s) and starting each entry's child process.", ""]
    return lines, {"seconds": times, "speedup": speedup, "same_verdicts": same, "samples_used": used}


def _count(values) -> dict:
    out: dict = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return out


def _num(value) -> str:
    if value is None:
        return "-"
    return "inf" if math.isinf(value) else f"{value:.4g}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="few seeds, smaller budgets (a smoke run)")
    parser.add_argument("--seeds", type=int, default=200, help="seeds of the correct mechanisms")
    parser.add_argument("--samples", type=int, default=100_000, help="budget per input of the many-seed runs")
    parser.add_argument("--max-budget", type=int, default=10_000_000, help="budget per input of the buggy entries")
    parser.add_argument("--skip", nargs="*", default=[], help="sections to skip: buggy correct power price witness gate")
    args = parser.parse_args()
    seeds = 10 if args.quick else args.seeds
    max_budget = 1_000_000 if args.quick else args.max_budget
    started = time.perf_counter()
    lines = ["# Sequential audits", "", f"Generated {datetime.date.today()} by `benchmarks/bench_sequential.py`. {machine_line()}", ""]
    data: dict = {"seeds": seeds, "samples": args.samples, "max_budget": max_budget}
    sections = [("buggy", lambda: buggy_twins(max_budget, 3 if not args.quick else 1)),
                ("correct", lambda: correct_mechanisms(args.samples, seeds)),
                ("power", lambda: power_cost(args.samples, 10 if args.quick else 50)),
                ("price", lambda: price_of_looking(1_000_000)),
                ("witness", lambda: witness_cases(4 if args.quick else 10)),
                ("gate", gate_timing)]
    for name, section in sections:
        if name in args.skip:
            continue
        section_lines, section_data = section()
        lines += section_lines
        data[name] = section_data
    lines.append(f"Total {time.perf_counter() - started:.0f} s.")
    out = ROOT / "reports"
    atomic_write_text(out / "sequential.md", "\n".join(lines) + "\n")
    atomic_write_text(out / "sequential.json", json.dumps(json_ready(data), indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
