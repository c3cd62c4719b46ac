"""Record/replay benchmark: the bug corpus (replay vs black-box audit), soundness on correct mechanisms, speed.

Writes reports/replay.md and reports/replay.json. Run:
    nice -n 10 python benchmarks/bench_replay.py [--samples 1000000] [--pairs 200]

1. Corpus: the sensitivity and control-flow bugs of ``dpaudit.mechanisms.buggy``, the bug classes of
   ``dpaudit.mechanisms.sensitivity_bugs`` and diffprivlib through its adapter (when installed). Each is
   replayed over hypothesis-generated adjacent pairs (found = violation; flagged = violation or diverging
   draws) and audited black-box at ``--samples`` per input on one pair (the replay's worst pair when it
   found one, else the entry's own pair), each timed.
2. Soundness: every correct example and catalog mechanism over ``--pairs`` hypothesis-generated pairs
   that are adjacent under its own relation; counts false findings (must be 0).
3. Speed: one pair of each correct catalog mechanism (median of 20), and 1,000 generated pairs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _timing import machine_line
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

import dpaudit
import dpaudit.adapters
from dpaudit._io import atomic_write_text
from dpaudit.errors import MechanismError
from dpaudit.guarantee import Guarantee
from dpaudit.mechanisms import CATALOG, buggy, examples, hierarchical_strategy, sensitivity_bugs
from dpaudit.auditor import statdp_query_pairs
from dpaudit.replay import generated_pairs, replay_pairs

ROOT = Path(__file__).resolve().parents[1]


def drawn(strategy: st.SearchStrategy, count: int, seed: int = 0) -> list[Any]:
    """``count`` examples of ``strategy``, deterministic for the seed (hypothesis's own generator)."""
    out: list[Any] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        out.append(example)

    collect()
    return out[:count]


reals = st.floats(-20, 20, allow_nan=False, width=32)


def moved_vectors(length: int, count: int, seed: int = 0) -> list[tuple[list, list]]:
    """The StatDP patterns of ``length`` answers, then query-answer vectors and a copy with every answer
    moved by at most 1 (sensitivity 1 each), by a whole step in the first half of them."""
    moves = st.lists(st.floats(-1.0, 1.0, allow_nan=False, width=32), min_size=length, max_size=length)
    pairs = drawn(st.tuples(st.lists(reals, min_size=length, max_size=length), moves), count, seed)
    generated = [(a, [x + (m if i >= count // 2 else float(np.sign(m) or 1.0)) for x, m in zip(a, b)])
                 for i, (a, b) in enumerate(pairs)]
    return [(list(map(float, a)), list(map(float, b))) for a, b in statdp_query_pairs(length)] + generated


def one_bin_moved(length: int, count: int, seed: int = 0, low: int = 0, high: int = 50) -> list[tuple[list, list]]:
    """Counts in [low, high] and a copy with one bin moved by one (histogram add/remove)."""
    pairs = drawn(st.tuples(st.lists(st.integers(low, high), min_size=length, max_size=length),
                            st.integers(0, length - 1), st.sampled_from([-1, 1])), count, seed)
    return [(a, [x + (s if i == j else 0) for j, x in enumerate(a)]) for a, i, s in pairs]


def bits_one_flipped(length: int, count: int, seed: int = 0) -> list[tuple[list, list]]:
    pairs = drawn(st.tuples(st.lists(st.integers(0, 1), min_size=length, max_size=length),
                            st.integers(0, length - 1)), count, seed)
    return [(a, [1 - x if j == i else x for j, x in enumerate(a)]) for a, i in pairs]


def records(low: float, high: float, count: int, neighbouring: str = "add_remove", seed: int = 0) -> list:
    return generated_pairs("datasets", count, length=8, neighbouring=neighbouring, low=low, high=high, seed=seed)


# --------------------------------------------------------------------------------------------- soundness
def example_pairs(name: str, mechanism: Any, neighbours: list, count: int) -> list:
    """Generated pairs adjacent under the example's own relation (the example's pairs included)."""
    k = getattr(mechanism, "k", None)
    generators: dict[str, Callable[[], list]] = {
        "laplace": lambda: moved_vectors(1, count), "gaussian": lambda: moved_vectors(1, count),
        "laplace_k_queries": lambda: moved_vectors(3, count), "laplace_advanced": lambda: moved_vectors(50, count),
        "histogram": lambda: one_bin_moved(5, count),
        "bounded_sum": lambda: records(-5, 5, count),
        "factorization": lambda: one_bin_moved(8, count), "factorization_identity": lambda: one_bin_moved(8, count),
        "factorization_rank_one": lambda: one_bin_moved(5, count),
        "binary_tree": lambda: bits_one_flipped(16, count),
        "exponential": lambda: moved_vectors(5, count), "net": lambda: one_bin_moved(4, count, low=60, high=100),
        "poisson_subsampled": lambda: records(0, 1, count),
        "randomized_response": lambda: [([a], [b]) for a, b in drawn(st.tuples(st.integers(0, 1), st.integers(0, 1)), count)],
        "randomized_response_k4": lambda: [([a], [b]) for a, b in drawn(st.tuples(st.integers(0, 3), st.integers(0, 3)), count)],
    }
    if name in generators:
        generated = generators[name]()
    elif k is not None and name not in ("net",):  # query vectors: each answer moves by at most 1
        generated = moved_vectors(int(k), count)
    else:
        generated = []
    return [pair for pair in list(neighbours) + generated if not np.array_equal(np.asarray(pair[0]), np.asarray(pair[1]))]


def soundness(count: int) -> list[dict]:
    rows = []
    subjects = [(e.name, e.mechanism, e.neighbours, None) for e in examples() if not e.name.startswith("dpsgd")]
    subjects += [(f"catalog {c.name} (eps={eps})", c.mechanism(eps), [c.pair], (eps, c.delta))
                 for c in CATALOG if not c.buggy for eps in (0.5, 1.0)]
    subjects += [("clipped_mean (twin of the mean bugs)", sensitivity_bugs.ClippedMean(0.5),
                  records(-5, 5, count, "replace_one"), None)]
    subjects += [(name, mechanism, pairs, None) for name, mechanism, pairs in diffprivlib_soundness(count)]
    subjects += [(name, mechanism, records(0, 1, count), None) for name, mechanism in (
        ("count, Laplace + Gaussian for 1 (twin of the sum counted 3 times)", _count_laplace_gaussian),
        ("count, noise from a generator seeded by the rng (twin of default_rng(12345))", _count_child_generator))]
    subjects += [(e.name, e.mechanism, e.neighbours, None) for e in examples() if e.name.startswith("dpsgd")]
    for name, mechanism, neighbours, claim in subjects:
        base = name.split(" ")[1] if name.startswith("catalog ") else name
        pairs = neighbours if name.startswith("diffprivlib") else example_pairs(
            base, mechanism, neighbours, 0 if name.startswith("dpsgd") else count)
        kwargs = {} if claim is None else {"epsilon": claim[0], "delta": claim[1]}
        started = time.perf_counter()
        result = replay_pairs(mechanism, pairs, **kwargs)
        rows.append({"mechanism": name, "pairs": len(pairs), "false_findings": sum(p.violated for p in result.pairs),
                     "decided": result.decided, "diverging": result.diverging, "undecided": result.undecided,
                     "max_epsilon_lower": result.epsilon_lower, "claim": result.claim,
                     "seconds": time.perf_counter() - started})
        print(f"soundness {name}: {rows[-1]['false_findings']} false findings over {len(pairs)} pairs", flush=True)
    return rows


# ------------------------------------------------------------------------------------------------ corpus
def corpus(count: int) -> list[dict]:
    """Corpus entries: name, kind (sensitivity or control flow), mechanism, replay pairs, audit pair."""
    bt_pair = (np.zeros(16), np.r_[1.0, np.zeros(15)])
    entries = [
        ("buggy.LaplaceHalfScale(0.5)", "sensitivity", buggy.LaplaceHalfScale(0.5), moved_vectors(1, count), ([0.0], [1.0])),
        ("buggy.LaplaceHalfScale(1, k=50)", "sensitivity", buggy.LaplaceHalfScale(1.0, k=50), moved_vectors(50, count),
         (np.zeros(50), np.ones(50))),
        ("buggy.HistogramWrongScale(0.5)", "sensitivity", buggy.HistogramWrongScale(0.5, 5), one_bin_moved(5, count),
         ([1, 1, 1, 1, 1], [2, 1, 1, 1, 1])),
        ("buggy.BoundedSumMissingClip(0.5)", "sensitivity (missing clamp)", buggy.BoundedSumMissingClip(0.5),
         records(-20, 20, count), ([0.5, 0.5], [0.5, 0.5, 5.0])),
        ("buggy.BoundedSumNoiseIgnoresClipBound(0.5)", "sensitivity", buggy.BoundedSumNoiseIgnoresClipBound(0.5),
         records(-20, 20, count), ([0.0], [0.0, 5.0])),
        ("buggy.GaussianHalfSigma(1, 1e-5)", "sensitivity", buggy.GaussianHalfSigma(1.0, 1e-5), moved_vectors(1, count),
         ([0.0], [1.0])),
        ("buggy.GaussianClassicBeyondEpsilonOne(10, 1e-5)", "calibration", buggy.GaussianClassicBeyondEpsilonOne(10.0, 1e-5),
         moved_vectors(1, count), ([0.0], [1.0])),
        ("buggy.GaussianClassicBeyondEpsilonOne(20, 1e-5)", "calibration", buggy.GaussianClassicBeyondEpsilonOne(20.0, 1e-5),
         moved_vectors(1, count), ([0.0], [1.0])),
        ("buggy.BinaryTreeNoiseNotScaledByDepth(0.5, 16)", "sensitivity", buggy.BinaryTreeNoiseNotScaledByDepth(0.5, 16),
         bits_one_flipped(16, count), bt_pair),
        ("buggy.FactorizationNoiseIgnoresMeasurementNorm(1, 1e-5)", "sensitivity",
         buggy.FactorizationNoiseIgnoresMeasurementNorm(1.0, 1e-5, hierarchical_strategy(8)), one_bin_moved(8, count),
         (np.ones(8), np.r_[2.0, np.ones(7)])),
        ("buggy.HistogramReplaceOne(1)", "sensitivity (replace-one)", buggy.HistogramReplaceOne(1.0, 5),
         [(a, [x - (1 if j == (i + 1) % 5 else 0) for j, x in enumerate(b)]) for (a, b), i in
          zip(one_bin_moved(5, count), range(count))], ([1, 1, 1, 1, 1], [2, 0, 1, 1, 1])),
        ("buggy.LaplaceRareNaNBranch(1)", "control flow", buggy.LaplaceRareNaNBranch(1.0), moved_vectors(1, count),
         ([0.0], [1.0])),
        ("sensitivity_bugs.MeanMissingClamp(0.5)", "sensitivity (missing clamp)", sensitivity_bugs.MeanMissingClamp(0.5),
         records(-5, 5, count, "replace_one"), ([0.5, 0.5], [0.5, 3.0])),
        ("sensitivity_bugs.MeanDividedByWrongCount(0.5)", "sensitivity (wrong divisor)",
         sensitivity_bugs.MeanDividedByWrongCount(0.5), records(-5, 5, count, "replace_one"), ([0.0, 0.0], [0.0, 1.0])),
        ("sensitivity_bugs.SumReplaceOneWithAddRemoveSensitivity(0.5)", "sensitivity (replace-one)",
         sensitivity_bugs.SumReplaceOneWithAddRemoveSensitivity(0.5), records(-5, 5, count, "replace_one"),
         ([1.0, 0.0], [-1.0, 0.0])),
        ("sensitivity_bugs.NoiseScaledByDataRange(0.5)", "data-dependent noise scale",
         sensitivity_bugs.NoiseScaledByDataRange(0.5), records(-5, 5, count, "replace_one"), ([0.2, 0.2], [0.2, 0.3])),
        ("sensitivity_bugs.NoiseDrawsPerRecord(0.5)", "control flow (draws per record)",
         sensitivity_bugs.NoiseDrawsPerRecord(0.5), records(0, 1, count), ([1.0], [1.0, 1.0])),
    ]
    entries += randomness_entries(count)
    entries += diffprivlib_entries(count)
    return [{"name": n, "kind": k, "mechanism": m, "pairs": p, "audit_pair": a} for n, k, m, p, a in entries]


def _count_seeded_inside(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count whose Laplace noise comes from a generator seeded inside: the same noise on every call."""
    return float(np.sum(data)) + np.random.default_rng(12345).laplace(0.0, 2.0, size)


def _count_global_seed_reset(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count that resets numpy's global state before drawing its noise from it."""
    np.random.seed(0)
    return float(np.sum(data)) + np.random.laplace(0.0, 2.0, size)


def _count_noise_times_zero(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count whose noise is drawn and multiplied by zero (a debugging switch left at 0)."""
    return float(np.sum(data)) + 0.0 * rng.laplace(0.0, 2.0, size)


def _count_noise_discarded(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count whose noise is drawn into a variable that is never added."""
    noise = rng.laplace(0.0, 2.0, size)  # noqa: F841 - the bug: drawn, never used
    return float(np.sum(data)) + np.zeros(size)


def _sum_of_three_laplace_gaussian(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """Records counted three times (sensitivity 3), Laplace and Gaussian noise calibrated for sensitivity 1."""
    return 3.0 * float(np.sum(data)) + rng.laplace(0.0, 2.0, size) + rng.normal(0.0, 2.0, size)


def _count_laplace_gaussian(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count with Laplace and Gaussian noise, each calibrated for sensitivity 1 (correct)."""
    return float(np.sum(data)) + rng.laplace(0.0, 2.0, size) + rng.normal(0.0, 2.0, size)


def _count_child_generator(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """A count whose noise comes from a generator seeded from the rng it is handed (correct)."""
    return float(np.sum(data)) + np.random.default_rng(int(rng.integers(2**32))).laplace(0.0, 2.0, size)


for _bug in (_count_laplace_gaussian, _count_child_generator, _count_seeded_inside, _count_global_seed_reset, _count_noise_times_zero, _count_noise_discarded,
             _sum_of_three_laplace_gaussian):
    _bug.privacy = Guarantee(0.5, 0.0)


def randomness_entries(count: int) -> list[tuple]:
    """Noise the generator handed to the mechanism does not drive, and two noises summed on one output."""
    pairs = records(0, 1, count)
    return [("count, noise from default_rng(12345)", "noise seeded inside", _count_seeded_inside, pairs, ([1.0], [1.0, 1.0])),
            ("count, np.random.seed(0) then np.random.laplace", "global seed reset", _count_global_seed_reset, pairs,
             ([1.0], [1.0, 1.0])),
            ("count, 0 * noise", "noise multiplied by zero", _count_noise_times_zero, pairs, ([1.0], [1.0, 1.0])),
            ("count, noise drawn and discarded", "noise discarded", _count_noise_discarded, pairs, ([1.0], [1.0, 1.0])),
            ("sum counted 3 times, Laplace + Gaussian for 1", "sensitivity (two noises on one output)",
             _sum_of_three_laplace_gaussian, pairs, ([1.0], [1.0, 1.0]))]


def diffprivlib_entries(count: int) -> list[tuple]:
    try:
        from diffprivlib.mechanisms import Geometric, Laplace
    except ImportError:
        return []
    mean_noise = dpaudit.adapters.diffprivlib(Laplace(epsilon=0.5, sensitivity=0.1))
    count_noise = dpaudit.adapters.diffprivlib(Geometric(epsilon=0.5, sensitivity=1))

    def unclipped_mean(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """User code on diffprivlib: a mean over a public n = 10 with sensitivity 1/n declared, never clipped."""
        return mean_noise([float(np.sum(data)) / 10.0], size, rng)

    def duplicated_count(data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        """User code on diffprivlib: a count after a join that duplicates every row, sensitivity 1 declared."""
        return count_noise([2 * len(data)], size, rng)

    unclipped_mean.privacy = mean_noise.privacy
    duplicated_count.privacy = count_noise.privacy
    return [("diffprivlib Laplace, unclipped mean (user code)", "sensitivity (missing clamp)", unclipped_mean,
             records(-5, 5, count, "replace_one"), ([0.5] * 10, [0.5] * 9 + [3.0])),
            ("diffprivlib Geometric, count of duplicated rows (user code)", "sensitivity (integer noise)",
             duplicated_count, records(0, 1, count), ([1.0] * 5, [1.0] * 6))]


def diffprivlib_soundness(count: int) -> list[tuple]:
    """diffprivlib's own mechanisms through the adapter, on pairs within their sensitivity."""
    try:
        from diffprivlib.mechanisms import GaussianAnalytic, GaussianDiscrete, Geometric, Laplace
    except ImportError:
        return []
    adapter = dpaudit.adapters.diffprivlib
    real = moved_vectors(1, count)
    whole = [([a], [b]) for a, b in drawn(st.tuples(st.integers(-50, 50), st.sampled_from([-1, 1])), count)]
    whole = [(a, [a[0] + b[0]]) for a, b in whole]
    return [("diffprivlib Laplace", adapter(Laplace(epsilon=0.5, sensitivity=1.0)), real),
            ("diffprivlib GaussianAnalytic", adapter(GaussianAnalytic(epsilon=0.5, delta=1e-5, sensitivity=1.0)), real),
            ("diffprivlib Geometric", adapter(Geometric(epsilon=0.5, sensitivity=1)), whole),
            ("diffprivlib GaussianDiscrete", adapter(GaussianDiscrete(epsilon=0.5, delta=1e-5, sensitivity=1)), whole)]


def run_corpus(count: int, samples: int) -> list[dict]:
    rows = []
    for entry in corpus(count):
        mechanism = entry["mechanism"]
        claim = mechanism.privacy
        started = time.perf_counter()
        result = replay_pairs(mechanism, entry["pairs"])
        replay_seconds = time.perf_counter() - started
        pair = (result.worst.d, result.worst.d_prime) if result.violated else entry["audit_pair"]
        started = time.perf_counter()
        try:
            audited = dpaudit.audit(mechanism, pair[0], pair[1], epsilon=claim.epsilon, delta=claim.delta, samples=samples,
                                    seed=0, sequential=False)  # the black-box audit at its whole budget
            audit_found, audit_lower, refusal = audited.violated, audited.epsilon_lower, None
        except MechanismError as exc:  # e.g. a mechanism ignoring every seed: refused, with the reason
            audit_found, audit_lower, refusal = False, math.nan, str(exc)
        audit_seconds = time.perf_counter() - started
        rows.append({"name": entry["name"], "kind": entry["kind"], "claim": [claim.epsilon, claim.delta],
                     "replay_found": result.violated, "replay_diverges": result.control_flow_diverges,
                     "replay_epsilon_lower": result.epsilon_lower, "replay_pairs": len(entry["pairs"]),
                     "replay_seconds": replay_seconds, "replay_reason": result.worst.divergence or result.worst.bound
                     or result.worst.reason,
                     "audit_found": audit_found, "audit_epsilon_lower": audit_lower, "audit_refused": refusal,
                     "audit_pair": [np.asarray(p).tolist() for p in pair], "audit_seconds": audit_seconds,
                     "audit_samples": samples})
        print(f"corpus {entry['name']}: replay {result.verdict} ({result.epsilon_lower:.4g}, {replay_seconds:.2f}s), "
              f"audit {audit_lower:.4g} ({audit_seconds:.1f}s)" + (f" refused: {refusal}" if refusal else ""), flush=True)
    return rows


# ------------------------------------------------------------------------------------------------- speed
def speed() -> dict:
    one_pair = {}
    for entry in CATALOG:
        if entry.buggy:
            continue
        mechanism = entry.mechanism(1.0)
        times = []
        for _ in range(20):
            started = time.perf_counter()
            replay_pairs(mechanism, [entry.pair], epsilon=1.0, delta=entry.delta)
            times.append(time.perf_counter() - started)
        one_pair[entry.name] = statistics.median(times)
    many = {}
    for name, mechanism, pairs in (
            ("bounded_sum", dpaudit.mechanisms.BoundedSum(1.0, -1.0, 1.0), records(-5, 5, 1000)),
            ("laplace", dpaudit.mechanisms.LaplaceMechanism(1.0), moved_vectors(1, 1000)),
            ("gaussian", CATALOG[[c.name for c in CATALOG].index("gaussian")].mechanism(1.0), moved_vectors(1, 1000))):
        started = time.perf_counter()
        result = replay_pairs(mechanism, pairs)
        many[name] = {"pairs": len(pairs), "seconds": time.perf_counter() - started, "violated": result.violated}
    return {"one_pair_median_seconds": one_pair, "generated_pairs": many}


# ------------------------------------------------------------------------------------------------ report
def _num(value: float) -> str:
    return "inf" if math.isinf(value) else f"{value:.4g}"


def markdown(corpus_rows: list[dict], sound: list[dict], timing: dict, samples: int, pairs: int) -> str:
    weak = [r for r in corpus_rows if r["replay_found"] and not r["audit_found"] and not r.get("audit_refused")]
    lines = [
        "# Record/replay: gray-box checks of declared vs measured sensitivity", "",
        f"Generated by `benchmarks/bench_replay.py` on {datetime.date.today()} ({machine_line()}).", "",
        "The replay runs each mechanism on d and d' with identical draws through an instrumented generator and "
        "attributes the output shift to the noise draws (`docs/guides/replay.md`). *Found* is a violation (a lower "
        "bound on the pair's epsilon above the claim); *diverges* means the draws differ between d and d' (handed to "
        f"the statistical audit, not a violation). The black-box audit (`dpaudit.audit`, {samples:,} samples per "
        "input at the whole budget (sequential=False), confidence 0.95) runs on the replay's worst pair when it found one, else on the entry's own pair.", "",
        "## Corpus", "",
        "| bug | class | claim (eps, delta) | replay found | replay diverges | replay eps >= | replay pairs | replay s "
        "| audit found | audit eps >= | audit s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in corpus_rows:
        lines.append(f"| {r['name']} | {r['kind']} | ({r['claim'][0]:g}, {r['claim'][1]:g}) | "
                     f"{'yes' if r['replay_found'] else 'no'} | {'yes' if r['replay_diverges'] else 'no'} | "
                     f"{_num(r['replay_epsilon_lower'])} | {r['replay_pairs']} | {r['replay_seconds']:.2f} | "
                     f"{'refused' if r.get('audit_refused') else 'yes' if r['audit_found'] else 'no'} | "
                     f"{'-' if r.get('audit_refused') else _num(r['audit_epsilon_lower'])} | {r['audit_seconds']:.1f} |")
    flagged = sum(r["replay_found"] or r["replay_diverges"] for r in corpus_rows)
    lines += ["", f"Replay flagged {flagged} of {len(corpus_rows)} corpus entries "
              f"({sum(r['replay_found'] for r in corpus_rows)} violations, the rest diverging draws); the black-box "
              f"audit at {samples:,} found {sum(r['audit_found'] for r in corpus_rows)} and refused "
              f"{sum(bool(r.get('audit_refused')) for r in corpus_rows)} (a mechanism ignoring every seed: no confidence "
              "statement would hold).", "",
              f"Caught by replay, missed by the audit at {samples:,} ({len(weak)}):", ""]
    lines += [f"- {r['name']}: replay epsilon >= {_num(r['replay_epsilon_lower'])} against the claim "
              f"{r['claim'][0]:g}; the audit certifies only {_num(r['audit_epsilon_lower'])}" for r in weak]
    lines += ["", "## Soundness: correct mechanisms over generated pairs", "",
              f"Each correct example and catalog mechanism over its own pairs plus up to {pairs} hypothesis-generated "
              "pairs adjacent under its relation (DP-SGD: its own pairs only).", "",
              "| mechanism | pairs | false findings | decided | diverging | undecided | max eps >= | s |",
              "|---|---|---|---|---|---|---|---|"]
    for r in sound:
        lines.append(f"| {r['mechanism']} | {r['pairs']} | {r['false_findings']} | {r['decided']} | {r['diverging']} | "
                     f"{r['undecided']} | {_num(r['max_epsilon_lower'])} | {r['seconds']:.2f} |")
    lines += ["", f"False findings in total: {sum(r['false_findings'] for r in sound)} over "
              f"{sum(r['pairs'] for r in sound)} pairs.", "", "## Speed", "",
              "| catalog mechanism | one pair, median of 20 (ms) |", "|---|---|"]
    lines += [f"| {k} | {v * 1e3:.1f} |" for k, v in timing["one_pair_median_seconds"].items()]
    lines += ["", "| mechanism | generated pairs | seconds |", "|---|---|---|"]
    lines += [f"| {k} | {v['pairs']} | {v['seconds']:.2f} |" for k, v in timing["generated_pairs"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--pairs", type=int, default=200)
    args = parser.parse_args(argv)
    sound = soundness(args.pairs)
    timing = speed()
    corpus_rows = run_corpus(min(args.pairs, 100), args.samples)
    report = ROOT / "reports"
    atomic_write_text(report / "replay.md", markdown(corpus_rows, sound, timing, args.samples, args.pairs))
    payload = {"samples": args.samples, "pairs": args.pairs, "corpus": corpus_rows, "soundness": sound, "speed": timing}
    atomic_write_text(report / "replay.json", json.dumps(payload, indent=2, default=str) + "\n")
    print(f"wrote {report / 'replay.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
