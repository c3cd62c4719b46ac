"""Exact reference for the DP-SGD grid rows at delta <= 1e-9 (Laplace inversion of the exact moment generating
function, ``tests/accountant/_reference_mgf.py``: no loss grid, no truncation, no FFT) against our PLD
upper bound and certified interval and dp_accounting's pessimistic PLD; writes
reports/accounting_small_delta_reference.md and .json, printing every row.

Run: nice -n 10 python benchmarks/bench_small_delta_reference.py [--min-steps N] [--max-seconds S]
  (rows of ``bench_accounting_grid.grid_configs()`` at delta <= 1e-9 with T >= N, default 3000; the
  inversion at small T needs a long t-range and is skipped after S seconds per row, default 300)

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
    parser.add_argument("--min-steps", type=int, default=3000)
    parser.add_argument("--max-seconds", type=float, default=300.0)
    args = parser.parse_args()
    grid = {(r["q"], r["sigma"], r["steps"], r["delta"]): r
            for r in json.loads((ROOT / "reports" / "accounting_grid.json").read_text())["grid"]}
    rows = []
    for q, sigma, steps, delta in grid_configs():
        if delta > 1e-9 or steps < args.min_steps:
            continue
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
    write(rows)


def write(rows: list[dict]) -> None:
    done = [r for r in rows if "exact" in r]
    unsound = [r for r in done if not (r["lower_ok"] and r["upper_ok"])]
    peer_low = [r for r in done if r.get("peer_below_exact")]
    worst = max((r["excess"] for r in done), default=math.nan)
    lines = ["# Exact reference at delta <= 1e-9 (DP-SGD grid rows)", "", machine_line(), "",
             "Exact = Laplace (Bromwich) inversion of the exact moment generating function of the subsampled "
             "Gaussian's privacy loss (`tests/accountant/_reference_mgf.py`: no loss grid, no truncation, no FFT; the "
             "MGF by Gauss-Legendre panels, checked against 40-digit mpmath quadrature to ~1e-13 relative; the "
             "inversion checked against the Gaussian mechanism's closed form to 3e-13), the larger of the two "
             "add/remove directions (the add direction computed where its Chernoff bound exceeds the remove one's "
             "epsilon). err = the change of epsilon between the last two t-grids. Ours = `PLDAccountant().epsilon` "
             "(upper bound) and the lower end of `epsilon_interval`; old reference = the grid report's dp_accounting "
             "extrapolation; peer eps = dp_accounting's pessimistic PLD at its equal-tightness interval "
             "(reports/accounting_grid.json). Times on a shared, loaded 2-core machine (noisy).", "",
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
