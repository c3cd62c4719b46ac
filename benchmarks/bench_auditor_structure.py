"""The auditor on leaks of structure (float residues and bits, NaN, dtype, products of coordinates,
wide discrete outputs, tail events); writes reports/auditor_structure.md and .json.

Every bound is a certified lower bound (Clopper-Pearson, confidence split over every certified event). Each
row also certifies the best event known in advance (the oracle witness, all samples certifying it) for
comparison. The last sections compare the catalog against the previous search (``witness_search.family_magnitude.magnitude_search``
with one certified event), run in the same process: tightness, and the time of one catalog pass.

Run: python benchmarks/bench_auditor_structure.py [--quick] [--false-alarm-samples N] [--false-alarms-only]
"""

from __future__ import annotations

import argparse
import importlib
import datetime
import json
import math
import resource
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from _mechanisms import DiscreteLaplace
from _timing import machine_line
from scipy.stats import norm

import dpaudit
from dpaudit.auditor.witness_search.family_magnitude import magnitude_search
from dpaudit.auditor.witness import (
    Column,
    ColumnAtoms,
    Derived,
    DerivedPatternSet,
    Intersection,
    PatternSet,
    ScoreRegion,
    SignVote,
)
from dpaudit.mechanisms import GaussianMechanism, HistogramMechanism, LaplaceMechanism, ReportNoisyMax, buggy
from dpaudit.mechanisms.catalog import CATALOG, CATALOG_EPSILONS

ROOT = Path(__file__).resolve().parents[1]
CONFIDENCE = 0.95
MILLION = 1_000_000

audit_module = importlib.import_module("dpaudit.auditor.audit")  # the module; the package attribute `audit` is the function


# ------------------------------------------------------------------------------------------ mechanisms
class WithoutSupport:
    """The mechanism without its exact support oracle: the auditor must find the leak from samples."""

    def __init__(self, mechanism) -> None:
        self.mechanism = mechanism

    def __call__(self, data, size, rng):
        return self.mechanism(data, size, rng)


class WideRandomizedResponse:
    """k-ary randomized response over ``values`` outcomes (epsilon-DP): the true value with probability
    e^eps / (e^eps + k - 1), else one of the k - 1 others uniformly; many distinct atoms."""

    def __init__(self, epsilon: float, values: int) -> None:
        self.epsilon, self.values = epsilon, values

    def __call__(self, data, size, rng):
        keep = math.exp(self.epsilon) / (math.exp(self.epsilon) + self.values - 1)
        truth = int(data[0])
        out = rng.integers(0, self.values - 1, size)
        out += out >= truth  # a uniform value other than the truth
        out[rng.random(size) < keep] = truth
        return out


class ClippedLaplace:
    """x + Lap(1/eps) clipped to [x - width, x + width] (an error bound around the *true* answer): the
    clip points are atoms that the other input can never produce, true epsilon inf. ``support`` is the
    exact support oracle (atoms x +- width, and the open interval between them)."""

    def __init__(self, epsilon: float, width: float = 3.0) -> None:
        self.epsilon, self.width = epsilon, width

    def __call__(self, data, size, rng):
        return np.clip(data[0] + rng.laplace(0.0, 1.0 / self.epsilon, size), data[0] - self.width, data[0] + self.width)

    def support(self, data, outputs):
        y = np.asarray(outputs, dtype=np.float64)
        return (y >= data[0] - self.width) & (y <= data[0] + self.width)


# ---------------------------------------------------------------------------------------------- helpers
def audit(mechanism, d, d_prime, epsilon, delta=0.0, samples=MILLION, seed=0, **kwargs):
    return dpaudit.audit(mechanism, d, d_prime, epsilon=epsilon, delta=delta, samples=samples, confidence_level=CONFIDENCE,
                         seed=seed, **{"sequential": False, **kwargs})  # the estimator at its whole budget


def fmt(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.3f}"


def residue_oracle(value: float, grid: float) -> DerivedPatternSet:
    feature = Derived("residue", 0, 1, grid=grid)
    residue = float(feature.score(np.array([[value]]))[0])
    return DerivedPatternSet(feature, ColumnAtoms((np.array([residue]),), (False,)), np.array([[0]], dtype=np.int32))


NAN_ORACLE = PatternSet(ColumnAtoms((np.array([]),), (True,)), np.array([[0]], dtype=np.int32))
INT64_ORACLE = PatternSet(ColumnAtoms((np.array([]), np.array([308.0])), (False, False)), np.array([[-1, 0]], dtype=np.int32))


def rows(name, mechanism, d, d_prime, epsilon, true_epsilon, seeds, oracle, direction, *, delta=0.0, samples=MILLION,
         goal=None) -> tuple[str, dict]:
    results = []
    started = time.perf_counter()
    for seed in range(seeds):
        results.append(audit(mechanism, d, d_prime, epsilon, delta, samples, seed))
    seconds = (time.perf_counter() - started) / seeds
    bounds = np.array([r.epsilon_lower for r in results])
    oracle_result = audit(mechanism, d, d_prime, epsilon, delta, samples, 0, witness=oracle, direction=direction)
    caught = int(sum(r.violated for r in results))
    one_sided = int(sum(r.one_sided_support and not r.support_proof for r in results))
    proofs = int(sum(r.support_proof for r in results))
    events = sorted({r.certified_events for r in results})
    wording = []
    if proofs:
        wording.append(f"{proofs} proven inf (exact support)")
    if one_sided:
        wording.append(f"{one_sided} consistent with inf (witness never seen under the other input)")
    goal_text = "-" if goal is None else goal(bounds, caught)
    data = {"name": name, "bounds": [b if math.isfinite(b) else "inf" for b in bounds], "caught": caught, "seeds": seeds,
            "oracle": oracle_result.epsilon_lower if math.isfinite(oracle_result.epsilon_lower) else "inf",
            "certified_events": events, "ceiling": results[0].ceiling, "seconds": seconds, "event": results[0].event,
            "goal": goal_text}
    line = (f"| {name} | {fmt(true_epsilon)} | {epsilon:g} | {samples:.0e} | {fmt(float(np.min(bounds)))} / "
            f"{fmt(float(np.median(bounds)))} | {caught}/{seeds} | {fmt(oracle_result.epsilon_lower)} | "
            f"{', '.join(map(str, events))} | {results[0].ceiling:.2f} | {'; '.join(wording) or '-'} | {goal_text} | "
            f"{results[0].event.replace('|', '/')[:60]} | {seconds:.1f} |")
    print(line, flush=True)
    return line, data


def at_least(threshold: float):
    return lambda bounds, caught: f"min >= {threshold:g}: {'yes' if np.min(bounds) >= threshold else 'NO'}"


def caught_all(bounds, caught):
    return f"caught {caught}/{len(bounds)}: {'yes' if caught == len(bounds) else 'NO'}"


def gaussian_oracle_threshold(sigma: float, delta: float, n: int, z: float) -> tuple[float, float]:
    """The half-line y >= t (d' = 1 against d = 0) with the best expected certified bound at n samples."""
    t = np.linspace(0.0, 8 * sigma, 4001)
    p, q = norm.sf(t, 1.0, sigma), norm.sf(t, 0.0, sigma)
    p_low, q_high = p - z * np.sqrt(p / n), q + z * np.sqrt(q / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(p_low - delta > 0, np.log(np.maximum(p_low - delta, 1e-300)) - np.log(q_high), -np.inf)
    best = int(np.argmax(value))
    return float(t[best]), float(value[best])


# --------------------------------------------------------------------------------------------- sections
def structure_section(seeds: int) -> tuple[list[str], list[dict]]:
    header = ["## Structural leaks, vectors, wide discrete outputs and tails (confidence 0.95)", "",
              "`certified min / median`: over the seeds; `oracle`: the event known in advance, certified with every sample",
              "(seed 0); `events`: the number of certified event-directions the confidence was split over; `ceiling`: the",
              "largest bound the budget could certify at that split.", "",
              "| mechanism | true eps | claimed eps | samples/input | certified min / median | flagged | oracle | events | "
              "ceiling | infinite? | target | witness (seed 0) | s/audit |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines, data = list(header), []
    specs = [
        ("snapped noise off grid 2^-6 (support oracle)", buggy.LaplaceSnappedNoiseOffGrid(1.0), [0.0], [1 / 3], 1.0, math.inf,
         residue_oracle(1 / 3, 2.0**-6), "d_prime -> d", {"goal": at_least(5)}),
        ("snapped noise off grid 2^-6 (no oracle)", WithoutSupport(buggy.LaplaceSnappedNoiseOffGrid(1.0)), [0.0], [1 / 3], 1.0,
         math.inf, residue_oracle(1 / 3, 2.0**-6), "d_prime -> d", {"goal": at_least(5)}),
        ("snapped noise off grid 2^-20 (no oracle)", WithoutSupport(buggy.LaplaceSnappedNoiseOffGrid(1.0, granularity=2.0**-20)),
         [0.0], [1 / 3], 1.0, math.inf, residue_oracle(1 / 3, 2.0**-20), "d_prime -> d", {"goal": at_least(5)}),
        ("rare NaN branch p=1e-2 (support oracle)", buggy.LaplaceRareNaNBranch(1.0), [0.0], [1.0], 1.0, math.inf, NAN_ORACLE,
         "d_prime -> d", {"goal": at_least(5)}),
        ("rare NaN branch p=1e-2 (no oracle)", WithoutSupport(buggy.LaplaceRareNaNBranch(1.0)), [0.0], [1.0], 1.0, math.inf,
         NAN_ORACLE, "d_prime -> d", {"goal": at_least(5)}),
        ("rare NaN branch p=1e-4 (no oracle)", WithoutSupport(buggy.LaplaceRareNaNBranch(1.0, nan_probability=1e-4)), [0.0],
         [1.0], 1.0, math.inf, NAN_ORACLE, "d_prime -> d", {"goal": caught_all}),
        ("clipped Laplace around the truth (support oracle)", ClippedLaplace(1.0), [0.0], [1.0], 1.0, math.inf,
         PatternSet(ColumnAtoms((np.array([3.0]),), (False,)), np.array([[0]], dtype=np.int32)), "d -> d_prime",
         {"goal": at_least(5)}),
        ("clipped Laplace around the truth (no oracle)", WithoutSupport(ClippedLaplace(1.0)), [0.0], [1.0], 1.0, math.inf,
         PatternSet(ColumnAtoms((np.array([3.0]),), (False,)), np.array([[0]], dtype=np.int32)), "d -> d_prime",
         {"goal": at_least(5)}),
        ("dtype leak (int64 vs float64)", buggy.LaplaceDtypeLeak(1.0), [0.0], [1.0], 1.0, math.inf, INT64_ORACLE, "d_prime -> d",
         {"goal": at_least(5)}),
        ("replace-one histogram, 5 bins", buggy.HistogramReplaceOne(1.0, 5), [5.0] * 5, [6.0, 4.0, 5.0, 5.0, 5.0], 1.0, 2.0,
         Intersection((ScoreRegion(Column(0, 5), 6.0, math.inf), ScoreRegion(Column(1, 5), -math.inf, 4.0))), "d_prime -> d",
         {"goal": at_least(0.95 * 2.0)}),
        ("20 Laplace answers (k=20)", LaplaceMechanism(1.0, k=20), np.zeros(20), np.ones(20), 1.0, 1.0,
         ScoreRegion(SignVote(np.full(20, 0.5), np.ones(20)), 17.0, math.inf), "d_prime -> d", {"goal": at_least(0.5)}),
        ("discrete Laplace eps=0.05", DiscreteLaplace(0.05), [0], [1], 0.05, 0.05,
         ScoreRegion(Column(0, 1), -math.inf, 0.0), "d -> d_prime", {"goal": at_least(0.8 * 0.05)}),
        ("discrete Laplace 2x twin (noise for 0.1, claims 0.05)", DiscreteLaplace(0.1), [0], [1], 0.05, 0.1,
         ScoreRegion(Column(0, 1), -math.inf, 0.0), "d -> d_prime", {"goal": caught_all}),
    ]
    for name, mechanism, d, d_prime, epsilon, true_epsilon, oracle, direction, options in specs:
        line, row = rows(name, mechanism, d, d_prime, epsilon, true_epsilon, seeds, oracle, direction, **options)
        lines.append(line)
        data.append(row)
    # analytic Gaussian point audit at 10^7: its epsilon at delta is the claim (the analytic calibration is exact)
    gaussian = GaussianMechanism(1.0, 1e-5)
    z = float(norm.isf(0.05 / 2))
    t, expected = gaussian_oracle_threshold(gaussian.sigma, 1e-5, 10**7, z)
    line, row = rows(f"analytic Gaussian eps=1, delta=1e-5 (sigma {gaussian.sigma:.3f})", gaussian, [0.0], [1.0], 1.0, 1.0,
                     seeds, ScoreRegion(Column(0, 1), t, math.inf), "d_prime -> d", delta=1e-5, samples=10**7,
                     goal=at_least(0.85))
    lines.append(line)
    data.append(row)
    vote = sign_vote_expectation(17, 20, 20.0, MILLION, 0.05 / 2)
    lines += ["", f"Gaussian oracle: the half-line y >= {t:.3f}, chosen on the exact distributions for 10^7 samples "
              f"(expected certified bound {expected:.3f}).",
              f"20 Laplace answers oracle: at least 17 of the 20 coordinates above 0.5 (the sign vote known in advance), whose "
              f"certified bound at 10^6 samples is {vote:.3f} in expectation; the oracle column shows one draw (seed 0).", ""]
    return lines, data


def sign_vote_expectation(k: int, answers: int, scale: float, n: int, alpha: float) -> float:
    """The certified bound ln(p_lo / q_hi) of "at least k of the answers above 0.5" for Laplace(scale) noise on
    answers 1 (numerator) against 0, with the counts at their expectations (Clopper-Pearson at level alpha)."""
    from scipy.stats import beta, binom

    above = 1.0 - 0.5 * math.exp(-0.5 / scale)  # P[y > 0.5] for y ~ 1 + Lap(scale)
    p, q = binom.sf(k - 1, answers, above), binom.sf(k - 1, answers, 1.0 - above)
    p_low = beta.ppf(alpha, p * n, n - p * n + 1)
    q_high = beta.ppf(1 - alpha, q * n + 1, n - q * n)
    return float(math.log(p_low) - math.log(q_high))


def memory_section(samples: int) -> tuple[list[str], dict]:
    """Peak memory of one audit of k-ary randomized response over 3,000 values (a fresh process)."""
    code = (
        "import sys, resource, time; sys.path.insert(0, %r)\n"
        "import bench_auditor_structure as b, dpaudit\n"
        "t = time.perf_counter()\n"
        "r = dpaudit.audit(b.WideRandomizedResponse(1.0, 3000), [0], [1], epsilon=1.0, samples=%d, seed=0, workers=1)\n"
        "print(r.epsilon_lower, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - t, r.event[:50])\n"
    ) % (str(Path(__file__).parent), samples)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    bound, rss_kib, seconds = float(out[0]), int(out[1]), float(out[2])
    line = (f"k-ary randomized response over 3,000 values (epsilon 1, pair 0 -> 1), {samples:.0e} samples per input: "
            f"epsilon_lower = {bound:.3f} in {seconds:.1f} s, peak resident memory {rss_kib / 1024:.0f} MiB "
            f"(target < 1 GiB: {'yes' if rss_kib < 2**20 else 'NO'}).")
    print(line, flush=True)
    return ["## Memory with 3,000 distinct atoms", "", line, ""], {"bound": bound, "peak_mib": rss_kib / 1024, "seconds": seconds}


FALSE_ALARM_RUNS = 200
FALSE_ALARM_SAMPLES = MILLION  # the target: false alarms at 10^6 samples per input over 200 seeds


def false_alarm_section(repetitions: int, samples: int) -> tuple[list[str], dict]:
    lines = ["## False alarms on correct mechanisms", "",
             f"{repetitions} seeded audits each at {samples:.0e} samples per input, confidence {CONFIDENCE}: a flag is "
             "epsilon_lower above the true epsilon (allowed: 5% of the runs).", "",
             "| mechanism | true eps | flagged | rate | median bound | max bound | seconds |", "|---|---|---|---|---|---|---|"]
    cases = [("laplace", LaplaceMechanism(1.0), [0.0], [1.0], 1.0),
             ("histogram, 5 bins", HistogramMechanism(1.0, 5), [5.0] * 5, [6.0, 5.0, 5.0, 5.0, 5.0], 1.0),
             ("report noisy max (index), 5 answers", ReportNoisyMax(1.0, 5), [1.0] * 5, [0.0, 2.0, 2.0, 2.0, 2.0], 1.0)]
    data = {}
    for name, mechanism, d, d_prime, true_epsilon in cases:
        started = time.perf_counter()
        bounds = np.array([audit(mechanism, d, d_prime, true_epsilon, 0.0, samples, seed).epsilon_lower
                           for seed in range(repetitions)])
        flagged = int(np.sum(bounds > true_epsilon))
        seconds = time.perf_counter() - started
        lines.append(f"| {name} | {true_epsilon:g} | {flagged}/{repetitions} | {flagged / repetitions:.1%} | "
                     f"{np.median(bounds):.3f} | {bounds.max():.3f} | {seconds:.0f} |")
        print(lines[-1], flush=True)
        data[name] = {"flagged": flagged, "runs": repetitions, "samples": samples, "median": float(np.median(bounds)),
                      "max": float(bounds.max()), "seconds": seconds, "flagged_seeds": np.flatnonzero(bounds > true_epsilon).tolist()}
    within = all(row["flagged"] <= (1 - CONFIDENCE) * repetitions for row in data.values())
    lines += ["", f"Every mechanism flagged in at most {1 - CONFIDENCE:.0%} of the runs (the confidence level's allowance) at "
              f"{samples:.0e} samples per input: {'yes' if within else 'NO'}."]
    return lines + [""], data


@contextmanager
def previous_search():
    """The magnitude-only search (before the structural and learned families): magnitude_search, the best event only."""
    search, select, tails = audit_module.search_witnesses, audit_module.select_for_certification, audit_module.TAIL_SEARCH
    audit_module.search_witnesses = magnitude_search
    audit_module.select_for_certification = lambda candidates, count, provable=None, selection=None: audit_module._select(candidates, count)
    audit_module.TAIL_SEARCH = False
    try:
        yield
    finally:
        audit_module.search_witnesses, audit_module.select_for_certification = search, select
        audit_module.TAIL_SEARCH = tails


def catalog_pass() -> float:
    total = 0.0
    for entry in CATALOG:
        for epsilon in CATALOG_EPSILONS:
            d, d_prime = entry.pair
            started = time.perf_counter()
            dpaudit.audit(entry.factory(epsilon), d, d_prime, epsilon=epsilon, delta=entry.delta, samples=MILLION,
                          confidence_level=0.99, seed=0, sequential=False)
            total += time.perf_counter() - started
    return total


def catalog_tightness(sizes: list[int]) -> dict:
    table = {}
    for entry in CATALOG:
        d, d_prime = entry.pair
        table[entry.name] = {n: dpaudit.audit(entry.factory(1.0), d, d_prime, epsilon=1.0, delta=entry.delta, samples=n,
                                              confidence_level=CONFIDENCE, seed=0, sequential=False) for n in sizes}
        print(entry.name, [round(r.epsilon_lower, 4) for r in table[entry.name].values()], flush=True)
    return table


def catalog_section(sizes: list[int]) -> tuple[list[str], dict]:
    with previous_search():
        before_time = catalog_pass()
        before = catalog_tightness(sizes)
    after_time = catalog_pass()
    after = catalog_tightness(sizes)
    header = " | ".join(f"{n:.0e} before / after" for n in sizes)
    lines = ["## The catalog: previous search against this one (claimed epsilon 1, seed 0, confidence 0.95)", "",
             "epsilon_lower / pair epsilon (the certified bound itself when the pair epsilon is infinite). `before` is",
             "`witness_search.family_magnitude.magnitude_search` with one certified event, run in this process.", "",
             f"| entry | pair eps | {header} | events after (largest budget) | witness after (largest budget) |",
             "|---|---|" + "---|" * len(sizes) + "---|---|"]
    worse = []
    data = {"before_seconds": before_time, "after_seconds": after_time, "rows": {}}
    for entry in CATALOG:
        pair = entry.pair_epsilon(1.0)
        cells, row = [], {}
        for n in sizes:
            b, a = before[entry.name][n].epsilon_lower, after[entry.name][n].epsilon_lower
            scale = 1.0 if pair is None or math.isinf(pair) else pair
            cells.append(f"{fmt(b / scale)} / {fmt(a / scale)}")
            row[n] = (b, a)
            if a < b - 1e-9:
                worse.append((entry, n, f"{entry.name} at {n:.0e} ({b / scale:.4f} -> {a / scale:.4f})"))
        last = after[entry.name][sizes[-1]]
        lines.append(f"| {entry.name} | {fmt(pair) if pair is not None else '-'} | {' | '.join(cells)} | {last.certified_events} | "
                     f"{last.event.replace('|', '/')[:60]} |")
        data["rows"][entry.name] = {str(n): [v if math.isfinite(v) else "inf" for v in row[n]] for n in sizes}
    lines += ["", f"Lower than before on seed 0: {', '.join(text for _, _, text in worse) if worse else 'none'}."]
    if worse:
        means = recheck([(entry, n) for entry, n, _ in worse], before, after)
        data["recheck"] = {f"{name} {n:.0e}": pair for (name, n), pair in means.items()}
        lower = [f"{name} at {n:.0e}" for (name, n), (b, a) in means.items() if a < b - 1e-9]
        lines += [f"A single seed compares two draws of the certification noise. Each such cell re-run on seeds 0-{RECHECK_SEEDS - 1} "
                  "(mean epsilon_lower, before -> after): "
                  + ", ".join(f"{name} at {n:.0e} {b:.4f} -> {a:.4f}" for (name, n), (b, a) in means.items())
                  + f". Lower on average: {', '.join(lower) if lower else 'none'}."]
    lines += ["", f"One catalog pass (26 audits at 10^6 samples, confidence 0.99, seed 0, default workers): before "
              f"**{before_time:.1f} s**, after **{after_time:.1f} s** (ratio {after_time / before_time:.2f}; target <= 1.5).", ""]
    return lines, data


RECHECK_SEEDS = 5


def recheck(cells: list, before: dict, after: dict) -> dict:
    """Mean epsilon_lower over seeds 0 .. RECHECK_SEEDS - 1 of each (entry, samples) cell, before and after
    (seed 0 from the tables already computed)."""
    def bounds(entry, n):
        d, d_prime = entry.pair
        return [dpaudit.audit(entry.factory(1.0), d, d_prime, epsilon=1.0, delta=entry.delta, samples=n,
                              confidence_level=CONFIDENCE, seed=seed, sequential=False).epsilon_lower for seed in range(1, RECHECK_SEEDS)]

    with previous_search():
        runs_before = {(entry.name, n): [before[entry.name][n].epsilon_lower] + bounds(entry, n) for entry, n in cells}
    runs_after = {(entry.name, n): [after[entry.name][n].epsilon_lower] + bounds(entry, n) for entry, n in cells}
    return {key: (float(np.mean(runs_before[key])), float(np.mean(runs_after[key]))) for key in runs_before}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="2 seeds, 40 false-alarm runs at 2*10^4, catalog up to 10^6")
    parser.add_argument("--false-alarm-samples", type=int, default=None,
                        help=f"samples per input of the false-alarm audits (default {FALSE_ALARM_SAMPLES:.0e}; --quick 2e4)")
    parser.add_argument("--false-alarms-only", action="store_true",
                        help="run only the false-alarm section (200 seeded audits per mechanism; about 10 minutes at 10^6)")
    args = parser.parse_args()
    alarm_samples = args.false_alarm_samples or (20_000 if args.quick else FALSE_ALARM_SAMPLES)
    if args.false_alarms_only:  # prints the section (and its numbers as JSON); writes no report
        section, data = false_alarm_section(40 if args.quick else FALSE_ALARM_RUNS, alarm_samples)
        print("\n".join(section))
        print(json.dumps(data, indent=1, default=str))
        return
    seeds = 2 if args.quick else 5
    started = time.perf_counter()
    try:
        import sklearn

        versions = f"scikit-learn {sklearn.__version__}"
    except ImportError:
        versions = "scikit-learn absent (no boosting score)"
    lines = ["# Auditor benchmark: structure", "",
             f"Generated by `benchmarks/bench_auditor_structure.py` on {datetime.date.today().isoformat()} ({machine_line()}, "
             f"{versions}). Every epsilon is a certified **lower bound**.", ""]
    report: dict = {}
    section, report["structure"] = structure_section(seeds)
    lines += section
    section, report["memory"] = memory_section(MILLION)
    lines += section
    section, report["false_alarms"] = false_alarm_section(40 if args.quick else FALSE_ALARM_RUNS, alarm_samples)
    lines += section
    section, report["catalog"] = catalog_section([10**5, 10**6] if args.quick else [10**5, 10**6, 10**7])
    lines += section
    lines += [f"Total benchmark time {time.perf_counter() - started:.0f} s; peak memory of this process "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB.", ""]
    out = ROOT / "reports" / "auditor_structure.md"
    out.write_text("\n".join(lines).rstrip() + "\n")
    (ROOT / "reports" / "auditor_structure.json").write_text(json.dumps(report, indent=1, default=str))
    print(out.read_text())


if __name__ == "__main__":
    main()
