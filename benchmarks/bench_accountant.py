"""Speed, memory and accuracy of the closed-form accountant; writes reports/accountant.md, and the
bounded-memory measurements of optimal composition to reports/optimal_memory.json and .png.

Run: python benchmarks/bench_accountant.py
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import time
import tracemalloc
from pathlib import Path

import mpmath as mp
from _timing import best_time, machine_line

from dpaudit.accountant import advanced, amplify, optimal, optimal_delta, per_step_epsilon
from dpaudit.accountant.optimal import CHUNK, MAX_K

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the independent reference the tests use
from mp_reference import mp_delta_pure  # noqa: E402

REFERENCE = ROOT.parent / "shared" / "refs" / "accounting" / "reference.json"

SPEED_CASES = [
    ("optimal(0.1, 10_000, 1e-5)", lambda: optimal(0.1, 10_000, 1e-5), 0.050),
    ('per_step_epsilon(1, 1e-5, 1000, "optimal")', lambda: per_step_epsilon(1.0, 1e-5, 1000, "optimal"), 0.050),
    ("optimal(1.0, 1000, 1e-5)", lambda: optimal(1.0, 1000, 1e-5), None),
    ("optimal(1.0, 10**6, 1e-5)", lambda: optimal(1.0, 10**6, 1e-5), None),
    ("optimal(10.0, 10**6, 1e-30)", lambda: optimal(10.0, 10**6, 1e-30), None),
    ('per_step_epsilon(1, 1e-5, 10**5, "optimal")', lambda: per_step_epsilon(1.0, 1e-5, 10**5, "optimal"), None),
]


MEMORY_KS = [10**6, 10**7, 10**9, 10**12]
MEMORY_CASES = [(0.01, 1e-5), (1.0, 1e-5), (1e-4, 1e-10)]  # (eps0, target delta)
#: (eps0, k, delta) checked against the 50-digit mpmath reference below (k = 10^12 only where the
#: reference's own O(sd) loop is short: eps0 = 10 gives sd = sqrt(k p q) ~ 7e3).
MPMATH_CASES = [(0.01, 10**6, 1e-5), (0.01, 10**7, 1e-5), (1e-4, 10**7, 1e-10), (0.01, 10**9, 1e-5), (10.0, 10**12, 1e-5)]


def _measure(eps0: float, k: int, delta: float) -> dict:
    tracemalloc.start()
    try:
        value = optimal(eps0, k, delta).epsilon
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    times = []
    for _ in range(3):
        start = time.perf_counter()
        optimal(eps0, k, delta)
        times.append(time.perf_counter() - start)
    return {"eps0": eps0, "k": k, "delta": delta, "epsilon_upper": value, "peak_bytes": peak, "seconds": min(times)}


def large_k_section() -> list[str]:
    load_before = os.getloadavg()[0]
    rows = [_measure(eps0, k, delta) for k in MEMORY_KS for eps0, delta in MEMORY_CASES]
    load_after = os.getloadavg()[0]
    checks = []
    for eps0, k, delta in MPMATH_CASES:
        got = optimal(eps0, k, delta).epsilon
        start = time.perf_counter()
        at_result = mp_delta_pure(eps0, k, got, dps=40)
        below = mp_delta_pure(eps0, k, got * (1 - 1e-10), dps=40)
        checks.append({"eps0": eps0, "k": k, "delta": delta, "epsilon_upper": got,
                       "mpmath_delta_at_result": float(at_result), "mpmath_delta_at_result_minus_1e-10": float(below),
                       "upper_bound": bool(at_result <= delta), "exact_to_1e-10": bool(below > delta),
                       "reference_seconds": time.perf_counter() - start})
    refused = ""
    try:
        optimal(0.01, MAX_K + 1, 1e-5)
    except ValueError as exc:
        refused = str(exc)
    out = ROOT / "reports"
    (out / "optimal_memory.json").write_text(json.dumps(
        {"chunk": CHUNK, "max_k": MAX_K, "load_average_1min": [load_before, load_after], "machine": machine_line(),
         "measurements": rows, "mpmath_checks": checks, "refusal_above_max_k": refused}, indent=2) + "\n")
    _plot(rows, out / "optimal_memory.png")
    lines = ["", "## Bounded memory and time in k (optimal composition)", "",
             "Peak Python/numpy allocation during one call (tracemalloc) and the best of 3 wall times; binomial terms",
             f"are evaluated in chunks of {CHUNK} around the mode. 1-minute load average of this shared machine during",
             f"the runs: {load_before:.1f} -> {load_after:.1f} (2 cores), so the times include contention.", "",
             "| eps0 | k | delta | epsilon_upper | peak memory | time |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['eps0']:g} | {r['k']:.0e} | {r['delta']:.0e} | {r['epsilon_upper']:.10g} | "
                     f"{r['peak_bytes'] / 2**20:.2f} MiB | {r['seconds']:.3f} s |")
    lines += ["", f"Above k = {MAX_K:.0e}: `{refused}`", "",
              "Figure: `optimal_memory.png`; numbers: `optimal_memory.json`.", "",
              "### Exactness at large k against an independent 40-digit mpmath sum", "",
              "delta_pure (mpmath) at the returned epsilon must be <= delta (upper bound), and at the returned epsilon",
              "lowered by 1e-10 relative it must exceed delta (exact to 1e-10).", "",
              "| eps0 | k | delta | epsilon_upper | mpmath delta at it | at (1 - 1e-10) x it | verdict | reference time |",
              "|---|---|---|---|---|---|---|---|"]
    for c in checks:
        verdict = ("upper bound, exact to 1e-10" if c["upper_bound"] and c["exact_to_1e-10"]
                   else "upper bound" if c["upper_bound"] else "UNDER-REPORTS")
        lines.append(f"| {c['eps0']:g} | {c['k']:.0e} | {c['delta']:.0e} | {c['epsilon_upper']:.12g} | "
                     f"{c['mpmath_delta_at_result']:.12g} | {c['mpmath_delta_at_result_minus_1e-10']:.12g} | {verdict} | "
                     f"{c['reference_seconds']:.1f} s |")
    return lines


def _plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for eps0, delta in MEMORY_CASES:
        chosen = [r for r in rows if r["eps0"] == eps0 and r["delta"] == delta]
        ks = [r["k"] for r in chosen]
        label = f"eps0={eps0:g}, delta={delta:g}"
        left.plot(ks, [r["peak_bytes"] / 2**20 for r in chosen], marker="o", label=label)
        right.plot(ks, [r["seconds"] for r in chosen], marker="o", label=label)
    ks = sorted({r["k"] for r in rows})
    left.plot(ks, [8 * k / 2**20 for k in ks], linestyle=":", color="grey", label="one float64 array of k entries")
    for ax, title in ((left, "peak memory of one call (MiB)"), (right, "wall time of one call (s)")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("k (composed steps)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
    left.legend(fontsize=7)
    fig.suptitle("dpaudit optimal(eps0, k, delta): bounded memory (measured by benchmarks/bench_accountant.py)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def log_space_section() -> list[str]:
    """Huge epsilon: returned values against 60-digit mpmath (relative deviation; >= 0 means above)."""
    cases = []
    with mp.workdps(60):
        for label, value, exact in (
            ("amplify(1000, 0, 0.5)", amplify(1000.0, 0.0, 0.5).epsilon, mp.log1p(mp.mpf(0.5) * mp.expm1(1000))),
            ("amplify(1e4, 0, 1e-300)", amplify(1e4, 0.0, 1e-300).epsilon, mp.log1p(mp.mpf(1e-300) * mp.expm1(10000))),
            ("advanced(702, 1, 1e-5)", advanced(702.0, 1, 1e-5).epsilon,
             mp.sqrt(2 * mp.log(1 / mp.mpf(1e-5))) * 702 + 702 * mp.expm1(702)),
            ("advanced(1000, 1, 1e-5)", advanced(1000.0, 1, 1e-5).epsilon,
             mp.sqrt(2 * mp.log(1 / mp.mpf(1e-5))) * 1000 + 1000 * mp.expm1(1000)),
            ("optimal(1e4, 3, 1e-5)", optimal(1e4, 3, 1e-5).epsilon, None),
            ("optimal_delta(1e4, 3, 29999)", optimal_delta(1e4, 3, 29999.0), None),
        ):
            cases.append((label, value, exact))
    lines = ["", "## Huge epsilon (log space) against 60-digit mpmath", "",
             "| call | dpaudit | mpmath | relative deviation |", "|---|---|---|---|"]
    for label, value, exact in cases:
        if exact is None:
            exact = _mp_optimal(label)
        deviation = "value beyond float: inf returned" if exact > mp.mpf(sys.float_info.max) else (
            f"{float((mp.mpf(value) - exact) / exact):+.1e}")
        lines.append(f"| `{label}` | {value!r} | {mp.nstr(exact, 17)} | {deviation} |")
    return lines


def _mp_optimal(label: str) -> mp.mpf:
    """The two optimal cases of log_space_section, from the randomized-response sum at 60 digits."""
    with mp.workdps(60):
        e0, k = mp.mpf(10000), 3

        def delta_pure(eps):
            return sum(mp.binomial(k, i) * max(0, mp.exp((k - i) * e0) - mp.exp(eps + i * e0)) for i in range(k + 1)) / (1 + mp.exp(e0)) ** k

        if label.startswith("optimal_delta"):
            return delta_pure(mp.mpf(29999))
        # On the top segment [L_2, L_3) = [1e4, 3e4) delta_pure = P_3 (1 - e^{eps - 3e4}), P_3 = p^3:
        # eps = 3e4 + ln(1 - delta / p^3) (and delta_pure is checked at it).
        p3 = (1 / (1 + mp.exp(-e0))) ** 3
        root = 3 * e0 + mp.log(1 - mp.mpf(1e-5) / p3)
        assert abs(delta_pure(root) - mp.mpf(1e-5)) < mp.mpf(10) ** -50
        return root


def main() -> None:
    lines = [
        "# Closed-form accountant: speed and exactness",
        "",
        f"Generated by `benchmarks/bench_accountant.py` on {datetime.date.today().isoformat()} ({machine_line()}).",
        "All epsilons are upper bounds (rounded up); per-step epsilons are lower bounds of the exact inverse.",
        "",
        "## Speed (best of 7, wall time)",
        "",
        "| call | result | time | goal |",
        "|---|---|---|---|",
    ]
    for label, function, goal in SPEED_CASES:
        seconds = best_time(function, repeat=7)
        value = function()
        shown = value.epsilon if hasattr(value, "epsilon") else value
        goal_text = "" if goal is None else (f"<= {goal * 1e3:.0f} ms: " + ("met" if seconds <= goal else "MISSED"))
        lines.append(f"| `{label}` | {shown:.10g} | {seconds * 1e3:.2f} ms | {goal_text} |")
    lines += large_k_section() + log_space_section()
    if REFERENCE.is_file():
        reference = json.loads(REFERENCE.read_text())
        worst = 0.0
        rows = []
        for row in reference["pure_dp_composition"]:
            got = optimal(row["eps0"], row["k"], row["delta"]).epsilon
            rel = (got - row["optimal_exact"]) / row["optimal_exact"]
            worst = max(worst, abs(rel))
            rows.append(f"| {row['eps0']} | {row['k']} | {row['delta']:.0e} | {row['optimal_exact']:.10g} | {got:.10g} | {rel:+.1e} |")
        lines += ["", "## Exactness against the 60-digit reference (`reference.json`, pure_dp_composition)", "",
                  f"Largest relative deviation: {worst:.1e} (every value at or above the exact one).", "",
                  "| eps0 | k | delta | exact | dpaudit optimal | relative |", "|---|---|---|---|---|---|", *rows]
    out = ROOT / "reports" / "accountant.md"
    out.parent.mkdir(exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(out.read_text())


if __name__ == "__main__":
    sys.exit(main())
