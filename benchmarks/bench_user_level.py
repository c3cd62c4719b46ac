"""User-level DP-SGD: the exact mixture against group privacy and tensorflow_privacy's statement; writes
reports/accounting_user_level.md (+ .json).

Run: nice -n 10 python benchmarks/bench_user_level.py

For DP-SGD (records Poisson-sampled at rate q, noise multiplier sigma, T steps) and a user contributing at
most k records, at delta = 1e-5 (add/remove of a user):

* mixture (ours, exact): ``PLDAccountant().compose(UserLevel(event, k)).epsilon_interval(delta)``, both ends;
* group privacy on the PLD (ours): Vadhan's lemma over the record-level PLD profile;
* group privacy on the RDP curve (ours): ``RDPAccountant`` on ``UserLevel(event, k)`` (Mironov 2017, Prop. 2);
* tensorflow_privacy's user-level statement (RDP accounting and group privacy; re-implemented in
  ``tests/accountant/_reference_tf_privacy.py``, tensorflow_privacy is not installed);
* dp_accounting's PLD of the same mixture (``MixtureOfGaussiansDpEvent``, as tensorflow_privacy's PLD path;
  its default grid 1e-4, skipped where it would take minutes).
"""

from __future__ import annotations

import datetime
import json
import math
import sys
import time
import warnings
from pathlib import Path

from _timing import machine_line

from dpaudit._io import atomic_write_text
from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.accountant.user_level import group_privacy_epsilon
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed, UserLevel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "accountant"))  # the reference the tests use
from _reference_tf_privacy import tf_privacy_user_epsilon  # noqa: E402

DELTA = 1e-5
KS = (1, 2, 3, 10)
CONFIGS = [(0.01, 1.0, 1000), (0.004, 0.9, 5000), (0.01, 2.0, 300), (0.05, 1.5, 500), (0.001, 0.8, 10000)]
PEER_MAX_STEPS = 1000  # dp_accounting's mixture PLD on its 1e-4 grid beyond this (or k > 3) takes many minutes
PEER_MAX_K = 3


def dp_accounting_mixture(q: float, sigma: float, steps: int, k: int) -> float | None:
    if steps > PEER_MAX_STEPS or k > PEER_MAX_K:
        return None
    import dp_accounting
    from scipy.stats import binom

    sensitivities = list(range(k + 1))
    probs = binom.pmf(sensitivities, k, q)
    event = dp_accounting.dp_event.MixtureOfGaussiansDpEvent(sigma, sensitivities, probs / probs.sum())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(dp_accounting.pld.PLDAccountant().compose(event, steps).get_epsilon(DELTA))


def row(q: float, sigma: float, steps: int, k: int) -> dict:
    event = SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)
    start = time.perf_counter()
    lower, upper = PLDAccountant().compose(UserLevel(event, k)).epsilon_interval(DELTA)
    seconds = time.perf_counter() - start
    profile = group_privacy_epsilon(PLDAccountant().compose(event), k, DELTA)
    rdp = RDPAccountant().compose(UserLevel(event, k)).epsilon(DELTA)
    tf = tf_privacy_user_epsilon(q, sigma, steps, k, DELTA)
    start = time.perf_counter()
    peer = dp_accounting_mixture(q, sigma, steps, k) if k > 1 else None
    peer_seconds = time.perf_counter() - start if peer is not None else None
    return {"q": q, "sigma": sigma, "steps": steps, "k": k, "mixture_lower": lower, "mixture_upper": upper,
            "seconds": seconds, "group_pld": profile, "group_rdp": rdp, "tf_privacy": tf,
            "dp_accounting_mixture": peer, "dp_accounting_seconds": peer_seconds,
            "never_looser": bool(upper <= tf)}


def fmt(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return "inf" if not math.isfinite(value) else f"{value:.{digits}f}"


def main() -> None:
    rows = []
    for q, sigma, steps in CONFIGS:
        for k in KS:
            r = row(q, sigma, steps, k)
            rows.append(r)
            print(f"q={q} sigma={sigma} T={steps} k={k}: mixture [{r['mixture_lower']:.4f}, {r['mixture_upper']:.4f}] "
                  f"({r['seconds']:.2f} s), group PLD {fmt(r['group_pld'])}, group RDP {fmt(r['group_rdp'])}, "
                  f"tf_privacy {fmt(r['tf_privacy'])}, dp_accounting {fmt(r['dp_accounting_mixture'])}", flush=True)
    looser = [r for r in rows if not (r["mixture_upper"] <= r["tf_privacy"])]
    widest = max((r["mixture_upper"] - r["mixture_lower"]) / r["mixture_upper"] for r in rows)
    ones = [r for r in rows if r["k"] == 1]
    lines = ["# User-level DP-SGD: the exact mixture, group privacy, and tensorflow_privacy's statement", "",
             f"Generated {datetime.date.today().isoformat()} by `benchmarks/bench_user_level.py`; {machine_line()} "
             "(a shared machine: times are indicative).", "",
             f"DP-SGD with records Poisson-sampled at rate q, noise multiplier sigma, T steps; a user contributes at most "
             f"k records; add/remove of one user; epsilon at delta = {DELTA:g} (every number an upper bound except the "
             "mixture's lower end).", "",
             "- **mixture** (ours, `PLDAccountant().compose(UserLevel(event, k))`): each step is exactly "
             "sum_j Bin(j; k, q) N(j, sigma^2) against N(0, sigma^2) (Ganesh 2024, Thm 3.1), composed T times; "
             "lower and upper end of `epsilon_interval`.",
             "- **group privacy on the PLD** (ours): the record-level PLD profile through Vadhan 2017, Lemma 2.2.",
             "- **group privacy on the RDP curve** (ours, `RDPAccountant`): Mironov 2017, Prop. 2 per step, at the next "
             "power of two >= k.",
             "- **tensorflow_privacy**: `compute_dp_sgd_privacy_statement(..., max_examples_per_user=k)` with RDP "
             "accounting, Poisson sampling, no microbatching: Vadhan's lemma over dp_accounting's RDP epsilon "
             "(re-implemented; `tests/accountant/_reference_tf_privacy.py`).",
             f"- **dp_accounting mixture**: dp_accounting's PLD of the same mixture (tensorflow_privacy's PLD path), grid "
             f"1e-4, run up to T = {PEER_MAX_STEPS} and k = {PEER_MAX_K} (beyond, it takes many minutes per row).", "",
             f"Rows: {len(rows)}. The mixture is looser than tensorflow_privacy's statement on **{len(looser)}**; "
             f"its interval is at most {100 * widest:.3f}% wide; at k = 1 it equals the record-level figure on "
             f"{sum(r['mixture_upper'] == PLDAccountant().compose(SelfComposed(PoissonSampled(r['q'], Gaussian(r['sigma'])), r['steps'])).epsilon(DELTA) for r in ones)} of {len(ones)}.", "",
             "| q | sigma | T | k | mixture [lower, upper] | s | group privacy on the PLD | group privacy on the RDP curve "
             "| tensorflow_privacy | dp_accounting mixture | dp_accounting s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['q']:g} | {r['sigma']:g} | {r['steps']} | {r['k']} | [{r['mixture_lower']:.4f}, "
                     f"{r['mixture_upper']:.4f}] | {r['seconds']:.2f} | {fmt(r['group_pld'])} | {fmt(r['group_rdp'])} | "
                     f"{fmt(r['tf_privacy'])} | {fmt(r['dp_accounting_mixture'])} | "
                     f"{'-' if r['dp_accounting_seconds'] is None else format(r['dp_accounting_seconds'], '.1f')} |")
    lines += ["", "Reading: the mixture is the tight statement when records are sampled (it is what tensorflow_privacy's "
              "PLD path computes, and dp_accounting's figure agrees with its interval up to that library's own grid "
              "error); group privacy charges the user as if all k records were in every step's worst case and grows "
              "quickly with k (inf where the lemma's factor (e^{k eps} - 1) / (e^eps - 1) outgrows every delta). When "
              "users, not records, are sampled, write `PoissonSampled(q, UserLevel(Gaussian(sigma), k))` "
              "(= `PoissonSampled(q, Gaussian(sigma / k))`)."]
    out = ROOT / "reports" / "accounting_user_level.md"
    atomic_write_text(out, "\n".join(lines) + "\n")
    atomic_write_text(ROOT / "reports" / "accounting_user_level.json", json.dumps(
        {"delta": DELTA, "rows": rows, "looser_than_tf_privacy": len(looser), "machine": machine_line()}, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
