"""Speed and tightness of the PLD accountant on a grid of DP-SGD configurations against dp_accounting at equal
tightness, and a fuzz of random event trees (time, memory, soundness); writes reports/accounting_grid.md
and reports/accounting_grid.json, printing every configuration.

Run: nice -n 10 python benchmarks/bench_accounting_grid.py [--quick] [--trees N] [--only q,sigma,steps,delta ...]
  (full grid: q 5e-4/4e-3/0.03/0.25 x sigma 0.55/1/2/5 x five (T, delta) pairs, T 50..2*10^6 and delta
  1e-5..1e-10 rotated so that every (q, sigma) meets five T and five deltas = 80 configurations; --quick: T <= 3*10^4)

Each row is read at its own target delta. Reference epsilon (the "exact" column): dp_accounting's pessimistic connect-the-dots PLD (an implementation
independent of ours) at the last two intervals of the equal-tightness search (h and h / sqrt(10)), extrapolated to
interval 0 (Richardson: its error is second order in the interval); its uncertainty is stated as the size of the
extrapolation. At delta 1e-9 and below dp_accounting's own truncated tails (charged at loss +inf) and float
error raise its epsilon, so the reference can sit above the exact value there: our certified lower end is the
rigorous check. "Excess" = ours / ref - 1; "below" flags ours < ref - uncertainty (an unsound row). Our own certified interval
(``epsilon_interval``: its lower end a proven lower bound on the exact epsilon) gives a second, rigorous bound
on the excess: upper / lower - 1 (the "width" column).

Equal tightness: dp_accounting's PLD accountant at the coarsest ``value_discretization_interval`` of 1e-2,
1e-2.5, 1e-3, ... whose epsilon is at most ours plus 1e-4 relative, then both timed in alternating runs (ours,
theirs, ours, ...), best of 3, on a shared machine. Ratio = their time / ours.
Above epsilon ~745 dp_accounting's epsilon read-out returns the tail quantile (e^-loss underflows), up to ~1
above its own PLD's epsilon; the peer's epsilons compared are its PLD's read out by bisection on its delta
(``pld_epsilon``), while its timed call is the plain API (compose + get_epsilon), so no read-out work is charged.
dp_accounting is a benchmark peer only (``pip install dp-accounting``); without it the speed columns are empty.
Fuzz: random trees of Gaussian / Laplace leaves under Poisson sampling and self-composition (nested
sampling included), each timed with its peak traced memory (tracemalloc, numpy allocations included);
the PLD interval's lower end is checked against RDP (a lower bound must not exceed any upper bound).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

from _timing import machine_line

from dpaudit._io import atomic_write_text
from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.errors import UnsupportedEventError
from dpaudit.events import Gaussian, Laplace, PoissonSampled, SelfComposed

ROOT = Path(__file__).resolve().parents[1]
DELTA = 1e-5  # the fuzz's delta
QS = (5e-4, 4e-3, 0.03, 0.25)
SIGMAS = (0.55, 1.0, 2.0, 5.0)
STEPS = (50, 3000, 30_000, 300_000, 2_000_000)
DELTAS = (1e-5, 1e-7, 1e-9, 1e-10, 1e-6)


def grid_configs(quick: bool = False) -> list[tuple[float, float, int, float]]:
    """q x sigma x five (T, delta) pairs: the (i, j)-th (q, sigma) pair gets T = STEPS[j] with delta =
    DELTAS[(i + j) % 5], so that each (q, sigma) meets every T and every delta, and each (T, delta) pair occurs."""
    configs = []
    for i, (q, sigma) in enumerate((q, sigma) for q in QS for sigma in SIGMAS):
        for j, steps in enumerate(STEPS):
            if not quick or steps <= 30_000:
                configs.append((q, sigma, steps, DELTAS[(i + j) % len(DELTAS)]))
    return configs

#: Points of the box q 1e-3..0.1, sigma 0.5..2, T 10^3..10^6 off the grid (--off-grid), as outside checks use.
OFF_GRID = ((0.003, 0.8, 300_000), (0.05, 1.5, 30_000), (0.002, 0.55, 1_000_000), (0.02, 0.7, 3000),
            (0.07, 1.2, 200_000), (0.0015, 1.7, 50_000), (0.3e-2, 0.5, 2000), (0.1, 0.75, 700_000))
TOLERANCE = 1e-4
MAX_PEER_CELLS = 2**23
REFERENCE_FINEST = 1e-5  # dp_accounting's epsilon at 10^6 steps drifts below about 5e-6 (its float error)


def ours(q: float, sigma: float, steps: int, delta: float = DELTA) -> float:
    return PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)).epsilon(delta)


def pld_epsilon(pld, api_value: float, delta: float = DELTA) -> float:
    """epsilon of a dp_accounting PLD read out exactly: its ``get_epsilon_for_delta`` returns the loss at which the
    upper tail mass reaches delta once e^-loss underflows (losses above ~745), an over-estimate; below that it is
    exact. Above 700 the smallest epsilon with ``get_delta_for_epsilon`` (which stays accurate) within DELTA is
    found by bisection below the API's value."""
    if not math.isfinite(api_value) or api_value < 700:
        return api_value
    low, high = 0.0, api_value
    for _ in range(60):
        mid = 0.5 * (low + high)
        if pld.get_delta_for_epsilon(mid) <= delta:
            high = mid
        else:
            low = mid
    return high


def theirs(q: float, sigma: float, steps: int, interval: float, exact_readout: bool = True,
           delta: float = DELTA) -> float:
    """dp_accounting's PLDAccountant epsilon (its API; the timed call uses ``exact_readout=False``); with
    ``exact_readout`` its composed PLD read out by :func:`pld_epsilon` (the value the tightness comparison uses)."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    acct = pld_privacy_accountant.PLDAccountant(value_discretization_interval=interval)
    acct.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    value = acct.get_epsilon(delta)
    return pld_epsilon(acct._pld, value, delta) if exact_readout else value


def finest_interval(q: float, sigma: float, steps: int) -> float:
    """The finest dp_accounting interval tried: its composed PLD within about MAX_PEER_CELLS cells (16 standard
    deviations of the composed loss, estimated as 250 of our final grid steps) and at least 1e-5."""
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps))
    return max(1e-5, 16 * 250 * acct.step() / MAX_PEER_CELLS)


def alternating(functions: list, rounds: int) -> list[float]:
    best = [math.inf] * len(functions)
    for _ in range(rounds):
        for i, function in enumerate(functions):
            start = time.perf_counter()
            function()
            best[i] = min(best[i], time.perf_counter() - start)
    return best


def peer_search(q: float, sigma: float, steps: int, target: float, delta: float) -> tuple[float, float, float, float]:
    """(coarsest interval tried whose dp_accounting epsilon is at most ``target`` + TOLERANCE relative, its epsilon,
    Richardson reference, its uncertainty): dp_accounting at intervals 1e-2, 1e-2.5, 1e-3, ... down to
    :func:`finest_interval` until one is as tight; the reference extrapolates the last two intervals tried (its
    error is second order in the interval: ref = e(h2) - (e(h1) - e(h2)) / (r^2 - 1), r = h1 / h2), uncertainty
    the extrapolation's size. nan where no interval was tried or none was as tight."""
    finest = finest_interval(q, sigma, steps)
    tried: list[tuple[float, float]] = []
    good = (math.nan, math.nan)
    interval = 1e-2
    while True:
        interval = max(interval, finest)
        value = theirs(q, sigma, steps, interval, delta=delta)
        tried.append((interval, value))
        if value <= target * (1 + TOLERANCE):
            good = (interval, value)
            break
        if interval <= finest:
            break
        interval /= math.sqrt(10.0)
    if len(tried) < 2:
        tried.append((tried[0][0] / math.sqrt(10.0), theirs(q, sigma, steps, tried[0][0] / math.sqrt(10.0), delta=delta)))
    (h1, e1), (h2, e2) = tried[-2], tried[-1]
    ratio = (h1 / h2) ** 2
    correction = (e1 - e2) / (ratio - 1) if ratio > 1 else 0.0
    return good[0], good[1], e2 - correction, abs(correction)


def grid_rows(configs: list[tuple[float, float, int, float]], have_peer: bool) -> list[dict]:
    rows = []
    for q, sigma, steps, delta in configs:
        start = time.perf_counter()
        ours_eps = ours(q, sigma, steps, delta)
        first = time.perf_counter() - start
        start = time.perf_counter()
        lower, upper = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)).epsilon_interval(delta)
        row = {"q": q, "sigma": sigma, "steps": steps, "delta": delta, "epsilon": ours_eps, "lower": lower,
               "width": upper / lower - 1 if lower > 0 else math.inf, "interval_seconds": time.perf_counter() - start}
        if have_peer:
            interval, their_eps, ref, uncertainty = peer_search(q, sigma, steps, ours_eps, delta)
            row.update(reference=ref, reference_uncertainty=uncertainty, excess=ours_eps / ref - 1,
                       below_reference=ours_eps < ref - uncertainty, peer_interval=interval, peer_epsilon=their_eps)
            if math.isfinite(interval):
                t_ours, t_theirs = alternating([lambda: ours(q, sigma, steps, delta),
                                                lambda: theirs(q, sigma, steps, interval, False, delta)], 3)
                row.update(ours_seconds=t_ours, peer_seconds=t_theirs, ratio=t_theirs / t_ours)
            else:
                row["ours_seconds"] = first
        else:
            row["ours_seconds"] = first
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def use_exact(grid: list[dict], exact_rows: list[dict]) -> None:
    """Replace the reference of the grid rows that ``exact_rows`` (bench_small_delta_reference.py) covers by its
    exact value (uncertainty: its convergence error) and their lower end, width and interval time by its fresh run
    (the upper end is the same code's: checked equal)."""
    exact = {(r["q"], r["sigma"], r["steps"], r["delta"]): r for r in exact_rows if "exact" in r}
    for row in grid:
        e = exact.get((row["q"], row["sigma"], row["steps"], row["delta"]))
        if e is None:
            continue
        if e["epsilon"] != row["epsilon"]:
            raise ValueError(f"upper end changed since the grid run: {row['epsilon']} -> {e['epsilon']}")
        row.update(reference=e["exact"], reference_uncertainty=e["exact_error"], reference_kind="exact",
                   excess=row["epsilon"] / e["exact"] - 1, below_reference=row["epsilon"] < e["exact"] * (1 - 1e-9),
                   lower=e["lower"], width=row["epsilon"] / e["lower"] - 1 if e["lower"] > 0 else math.inf,
                   interval_seconds=e["interval_seconds"])


def random_tree(rng: random.Random, depth: int = 0):
    kind = rng.random()
    if depth >= 2 or kind < 0.3:
        return Gaussian(round(rng.uniform(0.5, 4.0), 3)) if rng.random() < 0.6 else Laplace(round(rng.uniform(0.5, 10.0), 3))
    if kind < 0.7:
        return PoissonSampled(round(10 ** rng.uniform(-3, -0.5), 5), random_tree(rng, depth + 1))
    return SelfComposed(random_tree(rng, depth + 1), rng.choice((2, 4, 10, 100)))


def fuzz_rows(trees: int) -> list[dict]:
    rng = random.Random(20261125)
    rows = []
    for _ in range(trees):
        tree = random_tree(rng)
        # timed untraced (tracemalloc slows Python-level loops up to ~10x), then the same call again traced
        # for the peak memory
        start = time.perf_counter()
        try:
            lower, upper = PLDAccountant().compose(tree).epsilon_interval(DELTA)
            error = None
        except UnsupportedEventError as exc:
            lower = upper = math.nan
            error = str(exc)[:120]
        seconds = time.perf_counter() - start
        tracemalloc.start()
        try:
            PLDAccountant().compose(tree).epsilon_interval(DELTA)
        except UnsupportedEventError:
            pass
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        try:
            rdp = RDPAccountant().compose(tree).epsilon(DELTA)
        except UnsupportedEventError:
            rdp = math.nan
        row = {"tree": repr(tree), "lower": lower, "upper": upper, "rdp": rdp, "seconds": seconds,
               "peak_mb": peak / 2**20, "error": error,
               "sound": not (lower > rdp * (1 + 1e-9)),
               "gap": (upper - lower) / upper if upper and math.isfinite(upper) and upper > 0 else 0.0}
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def _table(rows: list[dict]) -> list[str]:
    lines = ["| q | sigma | steps | delta | ours eps | reference eps | ours excess | width | peer interval "
             "| peer eps | ours s | peer s | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ref = r.get("reference", math.nan)
        kind = " (exact)" if r.get("reference_kind") == "exact" else ""
        lines.append(f"| {r['q']:g} | {r['sigma']:g} | {r['steps']:,} | {r.get('delta', DELTA):g} | {r['epsilon']:.7g} | {ref:.7g} "
                     f"+- {r.get('reference_uncertainty', math.nan):.1g}{kind} | {r.get('excess', math.nan):+.4%} | "
                     f"{r.get('width', math.nan):.3%} | {r.get('peer_interval', math.nan):.3g} | "
                     f"{r.get('peer_epsilon', math.nan):.7g} | {r.get('ours_seconds', math.nan):.3f} | "
                     f"{r.get('peer_seconds', math.nan):.3f} | {r.get('ratio', math.nan):.2f} |")
    return lines


def _missing_exact(grid: list[dict]) -> str:
    """The sentence naming the rows the exact reference covers in principle (delta <= 1e-9, T = 50) but not in fact."""
    missing = [r for r in grid if (r["delta"] <= 1e-9 or r["steps"] == 50) and r.get("reference_kind") != "exact"]
    if not missing:
        return ""
    names = "; ".join(f"q = {r['q']:g}, sigma = {r['sigma']:g}, T = {r['steps']:,}, delta = {r['delta']:g}" for r in missing)
    return (f"Without it ({len(missing)}: {names}): the inversion did not converge in time (at few steps and small q "
            "the t-range grows as 1 / (q sqrt(T)); see bench_small_delta_reference.py), so dp_accounting's "
            "extrapolation stays their reference and the width column bounds our excess. ")


def report(grid: list[dict], fuzz: list[dict], fuzz_note: str = "run in the same invocation as the grid",
           off_grid: list[dict] | None = None) -> str:
    lines = ["# PLD accountant on a DP-SGD grid and on fuzzed trees", "", machine_line(),
             "Each row at its own delta (1e-5 down to 1e-10); DP-SGD = Poisson-subsampled Gaussian (sensitivity 1) "
             "self-composed T times, "
             "add/remove neighbours; ours = `PLDAccountant()` with its automatic grid. "
             f"Ratio = dp_accounting time / ours at equal tightness (dp_accounting's coarsest "
             f"interval of 1e-2, 1e-2.5, 1e-3, ... whose epsilon is at most ours + {TOLERANCE:g} relative), "
             "alternating runs (ours, theirs, ours, ...), best of 3, in one run on a shared, "
             "loaded 2-core machine (other sessions were running: times are noisy, ratios less so). "
             "Reference ('exact') = dp_accounting's connect-the-dots PLD (independent of ours) at the last two intervals "
             "of that search, extrapolated to interval 0 (Richardson, second order); +- = the extrapolation's size; at "
             "delta 1e-9 and below its FFT round-off (not bounded there) and its truncated tails can move it either way by "
             "a few 1e-3, and where the search stopped at coarse intervals the extrapolation is rough. "
             "excess = ours / reference - 1; width = ours / our certified lower end - 1 (`epsilon_interval`: a proven "
             "bound on the excess over the exact epsilon, independent of the reference); "
             "Peer epsilons above ~745 "
             "are its PLD's read out by bisection on its delta (its API returns the tail quantile there, up to ~1 higher); "
             "the timed peer call is its plain API. Ours plans its upper "
             "grid per configuration for a relative excess of about 1e-4 (`plan_grid`: leaf step from the "
             "Chernoff tilt of the leaves' log-MGF; the direction that does not decide epsilon only screened; squarings "
             "whose float error would matter split off their peak or run in extended precision), its tail cut and "
             "float-error budget from the target delta, and below what float64 storage certifies it reads the same "
             "multi-resolution grids out by exponential tilting (alone where the plain grid's float error, bounded "
             "below before composing, would already be within 30x of the target).", "",
             ] + _table(grid)
    ratios = [r["ratio"] for r in grid if "ratio" in r]
    if ratios:
        excess = [r["excess"] for r in grid if "excess" in r]
        missing = len(grid) - len(ratios)
        lines += ["", f"Ratio over {len(ratios)} configurations: min {min(ratios):.2f}x, median "
                  f"{statistics.median(ratios):.2f}x, max {max(ratios):.2f}x; slower than dp_accounting in "
                  f"{sum(r < 1 for r in ratios)}."
                  + (f" {missing} rows without a ratio: no dp_accounting interval down to the finest tried (1e-5, or "
                     f"the interval whose composed PLD has about {MAX_PEER_CELLS:,} cells) was as tight as our "
                     "epsilon (+1e-4 relative)." if missing else ""),
                  f"Ours above the reference: median {statistics.median(excess):+.4%}, max {max(excess):+.4%}; "
                  f"above it by more than 1e-3: {sum(e > 1e-3 for e in excess)}; certified width (upper / lower - 1): median "
                  f"{statistics.median(r['width'] for r in grid):.4%}, max {max(r['width'] for r in grid):.4%}, over 1%: "
                  f"{sum(r['width'] > 0.01 for r in grid)}; "
                  "below the reference by more than its uncertainty: "
                  f"{sum(r['below_reference'] for r in grid if 'below_reference' in r)}.",
                  "", f"Rows marked (exact) ({sum(r.get('reference_kind') == 'exact' for r in grid)}; dp_accounting's "
                  "pessimistic epsilon at its equal-tightness interval is below the exact value in "
                  f"{sum(r.get('reference_kind') == 'exact' and r.get('peer_epsilon', math.inf) < r['reference'] for r in grid)}"
                  " of them) use the exact reference of "
                  "reports/accounting_small_delta_reference.md (Laplace inversion of the exact moment generating function, "
                  "no grid; bench_small_delta_reference.py, --exact-from: every row at delta <= 1e-9 and the T = 50 rows at "
                  "every delta, where the inversion converged in the time it was given) instead of dp_accounting's "
                  "extrapolation, with their lower end and interval time from that run of the current code. "
                  + _missing_exact(grid) + "dp_accounting is no reference "
                  "there: at q = 5e-4, sigma = 0.55, T = 3e5, delta = 1e-10 (exact 11.813308, ours [11.80235, 11.81426]) its "
                  "pessimistic PLD gives 11.7588 / 11.7590 / 11.7536 at intervals 1e-4 / 3e-5 / 1e-5 with its default tail "
                  "truncation 1e-15, and 11.9426 / 11.8344 / 11.7328 with 1e-20, below the exact value and moving by 0.2 "
                  "with a setting that should only tighten it; at q = 0.004, sigma = 0.55, T = 2e6, delta = 1e-10 (exact "
                  "502.56643, ours [502.28568, 502.61499]) 500.98 / 502.32 (interval 3e-4, truncation 1e-15 / 1e-20) and "
                  "507.37 / 500.73 (1e-4): its FFT round-off (float error raised to the T-th power in Fourier space, not "
                  "bounded) decides its answer at such deltas, so its pessimistic epsilon is not an upper bound there. "
                  "Elsewhere the width column bounds our excess over the exact epsilon without any reference."]
    if off_grid:
        ratios = [r["ratio"] for r in off_grid if "ratio" in r]
        lines += ["", f"## Off the grid: {len(off_grid)} other points of the box (same method, a separate run)", ""]
        lines += _table(off_grid)
        if ratios:
            lines += ["", f"Ratio: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x; "
                      f"slower than dp_accounting in {sum(r < 1 for r in ratios)}; ours below the reference by more than "
                      f"its uncertainty: {sum(r.get('below_reference', False) for r in off_grid)}."]
    if fuzz:
        done = [r for r in fuzz if r["error"] is None]
        sampled = [r for r in done if "PoissonSampled" in r["tree"] and math.isfinite(r["upper"]) and r["upper"] > 0]
        lines += ["", f"## Fuzz: {len(fuzz)} random trees (seed 20261125; {fuzz_note})", "",
                  f"- slowest {max(r['seconds'] for r in fuzz):.2f} s (wall time of `epsilon_interval`, untraced), "
                  f"largest traced peak (a second, traced call) {max(r['peak_mb'] for r in fuzz):.0f} MB; "
                  f"over 10 s: {sum(r['seconds'] > 10 for r in fuzz)}, over 2 GB: {sum(r['peak_mb'] > 2048 for r in fuzz)};",
                  f"- refused with UnsupportedEventError: {len(fuzz) - len(done)};",
                  f"- lower end above RDP's upper bound (unsound): {sum(not r['sound'] for r in fuzz)};",
                  f"- sampled trees with the interval's lower end more than 5% below the upper: "
                  f"{sum(r['gap'] > 0.05 for r in sampled)} of {len(sampled)} (worst {max((r['gap'] for r in sampled), default=0):.2%}).",
                  "", "Lower end of a sampled sub-tree: the optimistic PLD of the mixture over one record's inclusion, "
                  "(q P + (1 - q) Q, Q) and its reverse, built from the inner tree's lower-bound PLDs (leaves whose "
                  "worst-case pair one record attains; the others dropped, a post-processing); see "
                  "`accounting_interval.md` for the interval's width on every DP-SGD configuration and on this fuzz."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="steps up to 3*10^4 only")
    parser.add_argument("--trees", type=int, default=200)
    parser.add_argument("--no-grid", action="store_true")
    parser.add_argument("--off-grid", action="store_true", help="also the OFF_GRID points (a second table)")
    parser.add_argument("--name", default="accounting_grid", help="report file name (reports/NAME.md, .json)")
    parser.add_argument("--only", nargs="+", metavar="Q,SIGMA,STEPS,DELTA", help="these configurations only (no files written)")
    parser.add_argument("--grid-from", metavar="JSON", help="reuse the grid rows of an earlier run's JSON")
    parser.add_argument("--fuzz-from", metavar="JSON", help="reuse the fuzz rows of an earlier run's JSON")
    parser.add_argument("--exact-from", metavar="JSON", help="the exact reference of bench_small_delta_reference.py "
                        "(its JSON) for the rows at delta <= 1e-9 it covers, with its fresh lower ends")
    args = parser.parse_args()
    try:
        import dp_accounting  # noqa: F401
        have_peer = True
    except ImportError:
        have_peer = False
    if args.only:
        grid_rows([(float(a), float(b), int(float(c)), float(d)) for a, b, c, d in (x.split(",") for x in args.only)],
                  have_peer)
        return
    earlier_off_grid: list[dict] = []
    if args.grid_from:
        earlier = json.loads(Path(args.grid_from).read_text())
        grid, earlier_off_grid = earlier["grid"], earlier.get("off_grid") or []
    else:
        grid = [] if args.no_grid else grid_rows(grid_configs(args.quick), have_peer)
    if args.exact_from:
        use_exact(grid, json.loads(Path(args.exact_from).read_text()))
    fuzz = json.loads(Path(args.fuzz_from).read_text())["fuzz"] if args.fuzz_from else fuzz_rows(args.trees)
    (ROOT / "reports").mkdir(exist_ok=True)
    off_grid = grid_rows([c + (DELTA,) for c in OFF_GRID], have_peer) if args.off_grid else earlier_off_grid
    note = ("run in the same invocation as the grid" if args.fuzz_from and args.fuzz_from == args.grid_from
            else "a later run of fuzz_rows than the grid rows (--grid-from, --fuzz-from), whose DP-SGD leaves' code is "
            "unchanged since" if args.fuzz_from and args.grid_from
            else "a separate run of this benchmark (--no-grid) with the same code, alongside the grid's run" if args.fuzz_from
            else "re-run after the grid's run (--grid-from: the grid rows measure the upper end, unchanged since)"
            if args.grid_from else "run in the same invocation as the grid")
    atomic_write_text(ROOT / "reports" / f"{args.name}.md", report(grid, fuzz, note, off_grid))
    atomic_write_text(ROOT / "reports" / f"{args.name}.json",
                      json.dumps({"grid": grid, "off_grid": off_grid, "fuzz": fuzz}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
