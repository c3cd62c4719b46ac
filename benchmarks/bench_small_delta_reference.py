"""Exact reference for the DP-SGD grid rows at delta <= 1e-9 (Laplace inversion of the exact moment generating
function, ``tests/accountant/_reference_mgf.py``: no loss grid, no truncation, no FFT) against our PLD
upper bound and certified interval and dp_accounting's pessimistic PLD; writes
reports/accounting_small_delta_reference.md and .json, printing every row.

Run: nice -n 10 python benchmarks/bench_small_delta_reference.py [--min-steps N] [--every-delta-steps T ...]
     [--max-seconds S] [--keep JSON]
  (rows of ``bench_accounting_grid.grid_configs()`` at delta <= 1e-9 with T >= N, default 50, and the rows at
  every delta with T among --every-delta-steps, default 50; the inversion is given S seconds per row, default
  300, after which the row is reported without an exact value, 0: none computed; --keep: exact values of an
  earlier run's JSON are reused for its rows, our columns are always re-run)

Why the inversion is slow at few steps and small q: the Bromwich integrand decays in t only once |M(c + it)|^T
does, and the bulk of one step's loss (the steps that do not sample the record: losses within about q of 0)
has a characteristic function that decays only at t ~ 1 / (q sqrt(T)): at T = 50 and q = 5e-4 the t-range
reaches 10^4 to 10^5 (10^6 or more points of the t-grid, each an MGF evaluation by quadrature), where at
T >= 3000 a few hundred suffice. At sigma = 5 the saddle c also exceeds the searched range (60); the
inversion is exact for any c > 0, only slower. A row that does not converge within S seconds keeps
dp_accounting's extrapolation in the grid report.

dp_accounting's numbers are those of reports/accounting_grid.json (its epsilon at the equal-tightness interval
and the extrapolated reference).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import sys
import time
from pathlib import Path

from _timing import machine_line

from dpaudit._io import atomic_write_text
from dpaudit.accountant import PLDAccountant
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "accountant"))
from _reference_mgf import _chernoff_guess, reference_epsilon  # noqa: E402
from bench_accounting_grid import grid_configs  # noqa: E402


def exact(q: float, sigma: float, steps: int, delta: float) -> tuple[float, float, str]:
    """(epsilon, estimated error, deciding direction): the add direction only where its Chernoff bound (an
    upper bound on its epsilon) exceeds the remove direction's epsilon."""
    remove, err = reference_epsilon(q, sigma, steps, delta, "remove")
    if _chernoff_guess(q, sigma, steps, delta, "add") <= remove:
        return remove, err, "remove"
    add, add_err = reference_epsilon(q, sigma, steps, delta, "add")
    return (add, add_err, "add") if add > remove else (remove, err, "remove")


def _exact_worker(args, queue) -> None:
    queue.put(exact(*args))


def exact_with_limit(args, seconds: float):
    queue: multiprocessing.Queue = multiprocessing.Queue()
    process = multiprocessing.Process(target=_exact_worker, args=(args, queue))
    process.start()
    process.join(seconds)
    if process.is_alive():
        process.terminate()
        process.join()
        return None
    return queue.get() if not queue.empty() else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--min-steps", type=int, default=50)
    parser.add_argument("--every-delta-steps", type=int, nargs="*", default=[50])
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument("--keep", metavar="JSON", help="reuse the exact values of an earlier run's JSON")
    parser.add_argument("--grid-json", default=str(ROOT / "reports" / "accounting_grid.json"),
                        help="the grid report's JSON (dp_accounting's numbers)")
    args = parser.parse_args()
    grid = {(r["q"], r["sigma"], r["steps"], r["delta"]): r
            for r in json.loads(Path(args.grid_json).read_text())["grid"]}
    earlier = {(r["q"], r["sigma"], r["steps"], r["delta"]): r
               for r in (json.loads(Path(args.keep).read_text()) if args.keep else [])}
    kept = {key: r for key, r in earlier.items() if "exact" in r}
    order = {config: i for i, config in enumerate(grid_configs())}
    selected = [c for c in order if (c[3] <= 1e-9 and c[2] >= args.min_steps) or c[2] in args.every_delta_steps]
    rows = []
    # the quick inversions first (large q: its characteristic function decays fast); the report in grid order,
    # written after every row (a run stopped early keeps what it has)
    for q, sigma, steps, delta in sorted(selected, key=lambda c: (-c[0], order[c])):
        old_exact = kept.get((q, sigma, steps, delta))
        if old_exact is not None:
            result = (old_exact["exact"], old_exact["exact_error"], old_exact["direction"])
            ref_seconds = old_exact["reference_seconds"]
        elif args.max_seconds <= 0:  # nothing computed: the earlier run's attempt stands
            result, ref_seconds = None, earlier.get((q, sigma, steps, delta), {}).get("reference_seconds", math.nan)
        else:
            start = time.perf_counter()
            result = exact_with_limit((q, sigma, steps, delta), args.max_seconds)
            ref_seconds = time.perf_counter() - start
        acct = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps))
        start = time.perf_counter()
        upper = acct.epsilon(delta)
        upper_seconds = time.perf_counter() - start
        start = time.perf_counter()
        lower, _ = acct.epsilon_interval(delta)
        interval_seconds = time.perf_counter() - start + upper_seconds
        old = grid.get((q, sigma, steps, delta), {})
        row = {"q": q, "sigma": sigma, "steps": steps, "delta": delta, "epsilon": upper, "lower": lower,
               "seconds": upper_seconds, "interval_seconds": interval_seconds, "reference_seconds": ref_seconds,
               "old_reference": old.get("reference"), "peer_interval": old.get("peer_interval"),
               "peer_epsilon": old.get("peer_epsilon")}
        if result is not None:
            ref, err, direction = result
            row.update(exact=ref, exact_error=err, direction=direction, excess=upper / ref - 1,
                       lower_ok=lower <= ref * (1 + 1e-9), upper_ok=upper >= ref * (1 - 1e-9))
            if old.get("peer_epsilon") is not None and math.isfinite(old["peer_epsilon"]):
                row["peer_below_exact"] = old["peer_epsilon"] < ref * (1 - 1e-9)
        print(json.dumps(row), flush=True)
        rows.append(row)
        write(sorted(rows, key=lambda r: order[(r["q"], r["sigma"], r["steps"], r["delta"])]))


def write(rows: list[dict]) -> None:
    done = [r for r in rows if "exact" in r]
    unsound = [r for r in done if not (r["lower_ok"] and r["upper_ok"])]
    peer_low = [r for r in done if r.get("peer_below_exact")]
    worst = max((r["excess"] for r in done), default=math.nan)
    lines = ["# Exact reference at delta <= 1e-9 and at few steps (DP-SGD grid rows)", "", machine_line(), "",
             "Exact = Laplace (Bromwich) inversion of the exact moment generating function of the subsampled "
             "Gaussian's privacy loss (`tests/accountant/_reference_mgf.py`: no loss grid, no truncation, no FFT; the "
             "MGF by Gauss-Legendre panels, checked against 40-digit mpmath quadrature to ~1e-13 relative; the "
             "inversion checked against the Gaussian mechanism's closed form to 3e-13), the larger of the two "
             "add/remove directions (the add direction computed where its Chernoff bound exceeds the remove one's "
             "epsilon). err = the change of epsilon between the last two t-grids. Ours = `PLDAccountant().epsilon` "
             "(upper bound) and the lower end of `epsilon_interval`; old reference = the grid report's dp_accounting "
             "extrapolation; peer eps = dp_accounting's pessimistic PLD at its equal-tightness interval "
             "(reports/accounting_grid.json). Rows: every grid row at delta <= 1e-9, and the T = 50 rows at every delta. "
             "Times on a shared, loaded 2-core machine (noisy); exact s of a row kept from an earlier run (--keep) is "
             "that run's. '(not in time)': the inversion did not converge within the time given (see the "
             "benchmark's docstring for why few steps and small q make it slow).", "",
             f"Rows with the exact value: {len(done)} of {len(rows)}; ours outside [lower, upper]: {len(unsound)}; "
             f"largest excess of our upper bound over the exact value: {worst:+.4%}; rows where dp_accounting's "
             f"pessimistic epsilon is below the exact value (unsound): {len(peer_low)}.", "",
             "| q | sigma | steps | delta | exact eps | err | ours lower | ours upper | excess | old reference | "
             "peer eps | peer below exact | ours s | interval s | exact s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ref = f"{r['exact']:.7g}" if "exact" in r else "(not in time)"
        err = f"{r['exact_error']:.1e}" if "exact" in r else ""
        excess = f"{r['excess']:+.4%}" if "exact" in r else ""
        old = f"{r['old_reference']:.7g}" if r.get("old_reference") is not None else ""
        peer = f"{r['peer_epsilon']:.7g}" if r.get("peer_epsilon") is not None else ""
        below = ("yes" if r.get("peer_below_exact") else "no") if "peer_below_exact" in r else ""
        lines.append(f"| {r['q']:g} | {r['sigma']:g} | {r['steps']:,} | {r['delta']:g} | {ref} | {err} | "
                     f"{r['lower']:.7g} | {r['epsilon']:.7g} | {excess} | {old} | {peer} | {below} | "
                     f"{r['seconds']:.2f} | {r['interval_seconds']:.2f} | {r['reference_seconds']:.0f} |")
    atomic_write_text(ROOT / "reports" / "accounting_small_delta_reference.md", "\n".join(lines) + "\n")
    atomic_write_text(ROOT / "reports" / "accounting_small_delta_reference.json", json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
