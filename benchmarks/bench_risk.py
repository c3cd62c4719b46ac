"""Attack risk from the PLD accountant against riskcal, and calibration to a risk target against the
(epsilon, delta) target of equal risk; writes reports/risk.md (+ .json).

Run: nice -n 10 python benchmarks/bench_risk.py
riskcal (Kulynych et al. 2024; ``pip install riskcal``, benchmark only, never a dependency of dpaudit) reads
TPR at FPR and the advantage off dp_accounting's connect-the-dots PLD of DP-SGD (grid 1e-4) by its exact
trade-off conversion. When riskcal is not importable, dp_accounting's own PLD is read through
dpaudit's profile-to-trade-off conversion instead, and the report says so.

Part 1: on DP-SGD configurations, ours = ``PLDAccountant().compose(event).tpr_at_fpr(fprs)`` (an upper bound,
both orderings of the pair) against riskcal's 1 - beta(alpha); target: within 1e-3 everywhere.
Part 2: for risk targets (tpr, fpr), the smallest noise multiplier meeting the risk target
(``calibrate(..., max_tpr_at_fpr=(tpr, fpr))``) against the smallest meeting the (epsilon, delta) target
of equal risk (``epsilon_for_tpr(tpr, fpr, delta)``: the epsilon whose worst-case trade-off curve allows
exactly that TPR at that FPR), both with the PLD accountant; riskcal's own calibration alongside.
"""

from __future__ import annotations

import datetime
import json
import time
import warnings
from pathlib import Path

import numpy as np
from _timing import machine_line

from dpaudit._io import atomic_write_text
from dpaudit.accountant import PLDAccountant, calibrate, epsilon_for_tpr
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

ROOT = Path(__file__).resolve().parents[1]
FPRS = [0.001, 0.01, 0.05, 0.1, 0.2, 0.5]
CONFIGS = [(0.01, 1.0, 1000), (0.01, 0.6, 500), (0.001, 0.8, 10000), (0.1, 2.0, 100), (0.05, 1.0, 200),
           (0.02, 1.5, 2000), (0.004, 0.9, 5000)]
TARGETS = [((0.01, 1000), (0.05, 0.01)), ((0.01, 1000), (0.2, 0.1)), ((0.05, 100), (0.02, 0.001)),
           ((0.05, 100), (0.3, 0.1))]
DELTA = 1e-5
TOLERANCE = 1e-3

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import riskcal
        from riskcal.calibration.dpsgd import find_noise_multiplier_for_err_rates, get_advantage_for_dpsgd, get_beta_for_dpsgd
    PEER = f"riskcal {getattr(riskcal, '__version__', '?')}"
except ImportError:  # pragma: no cover - the fallback named in the module docstring
    riskcal = None
    PEER = "dp_accounting's PLD through dpaudit's profile-to-trade-off conversion (riskcal not installed)"


def event(q: float, sigma: float, steps: int):
    return SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)


def peer_tpr(q: float, sigma: float, steps: int) -> tuple[np.ndarray, float]:
    alphas = np.array(FPRS)
    if riskcal is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return 1.0 - np.asarray(get_beta_for_dpsgd(sigma, q, steps, alphas)), float(get_advantage_for_dpsgd(sigma, q, steps))
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    from dpaudit.accountant.curves import tradeoff_from_profile

    pld = pld_module.from_gaussian_mechanism(sigma, sampling_prob=q, use_connect_dots=True,
                                             value_discretization_interval=1e-4).self_compose(steps)
    grid = np.linspace(0.0, pld.get_epsilon_for_delta(1e-8), 600)
    deltas = np.array([pld.get_delta_for_epsilon(float(e)) for e in grid])
    return 1.0 - tradeoff_from_profile(alphas, grid, deltas), float(pld.get_delta_for_epsilon(0.0))


def compare() -> list[dict]:
    rows = []
    for q, sigma, steps in CONFIGS:
        start = time.perf_counter()
        acct = PLDAccountant().compose(event(q, sigma, steps))
        ours = acct.tpr_at_fpr(FPRS)
        advantage = acct.advantage()
        ours_seconds = time.perf_counter() - start
        start = time.perf_counter()
        theirs, peer_advantage = peer_tpr(q, sigma, steps)
        peer_seconds = time.perf_counter() - start
        row = {"q": q, "sigma": sigma, "steps": steps, "fprs": FPRS, "tpr_ours": list(map(float, ours)),
               "tpr_peer": list(map(float, theirs)), "max_abs_diff": float(np.max(np.abs(ours - theirs))),
               "advantage_ours": advantage, "advantage_peer": peer_advantage,
               "seconds_ours": ours_seconds, "seconds_peer": peer_seconds}
        rows.append(row)
        print(f"q={q} sigma={sigma} T={steps}: max |diff| {row['max_abs_diff']:.2e}, "
              f"advantage {advantage:.5f} vs {peer_advantage:.5f}", flush=True)
    return rows


def calibrations() -> list[dict]:
    rows = []
    for (q, steps), (tpr, fpr) in TARGETS:
        make = lambda s, q=q, steps=steps: event(q, s, steps)  # noqa: E731
        start = time.perf_counter()
        by_risk = calibrate(make, bounds=(0.3, 5.0), max_tpr_at_fpr=(tpr, fpr), tolerance=TOLERANCE)
        seconds_risk = time.perf_counter() - start
        epsilon = epsilon_for_tpr(tpr, fpr, DELTA)
        by_epsilon = calibrate(make, epsilon, DELTA, bounds=(0.3, 5.0), tolerance=TOLERANCE)
        row = {"q": q, "steps": steps, "tpr": tpr, "fpr": fpr, "sigma_risk": by_risk.value, "tpr_upper": by_risk.tpr_upper,
               "epsilon_equal_risk": epsilon, "delta": DELTA, "sigma_epsilon": by_epsilon.value,
               "tpr_at_sigma_epsilon": float(PLDAccountant().compose(make(by_epsilon.value)).tpr_at_fpr(fpr)),
               "noise_saved": 1.0 - by_risk.value / by_epsilon.value, "seconds_risk": seconds_risk}
        if riskcal is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                row["sigma_riskcal"] = float(find_noise_multiplier_for_err_rates(fpr, 1.0 - tpr, q, steps,
                                                                                 noise_min=0.3, noise_max=5.0))
                row["seconds_riskcal"] = time.perf_counter() - start
        rows.append(row)
        print(f"q={q} T={steps} target TPR {tpr} at FPR {fpr}: sigma {by_risk.value:.4f} (risk, {seconds_risk:.1f} s) vs "
              f"{by_epsilon.value:.4f} (epsilon {epsilon:.4f}); riskcal {row.get('sigma_riskcal')}", flush=True)
    return rows


def main() -> None:
    rows = compare()
    cal = calibrations()
    worst = max(r["max_abs_diff"] for r in rows)
    lines = ["# Attack risk: TPR at FPR from the PLD accountant, and calibration to a risk target", "",
             f"Generated {datetime.date.today().isoformat()} by `benchmarks/bench_risk.py`; {machine_line()}.", "",
             "Kulynych et al. 2024 (\"Attack-aware noise calibration for differential privacy\"): a privacy curve "
             "bounds every membership attack's true-positive rate at each false-positive rate (1 - f(FPR)) and its "
             "advantage (delta(0)). Ours is an upper bound covering both orderings of the pair, read from the "
             f"PLD accountant's automatic grid; the peer is {PEER} (dp_accounting connect-the-dots PLD, grid 1e-4, "
             "exact trade-off conversion).", "",
             f"## TPR at FPR on {len(rows)} DP-SGD configurations (target: within 1e-3)", "",
             f"Largest |ours - peer| over every configuration and FPR: **{worst:.2e}** "
             f"({'within' if worst <= 1e-3 else 'NOT within'} 1e-3).", "",
             "| q | sigma | steps | " + " | ".join(f"TPR@{f:g} ours / peer" for f in FPRS)
             + " | max abs diff | advantage ours / peer | ours s | peer s |",
             "|" + "---|" * (len(FPRS) + 7)]
    for r in rows:
        cells = " | ".join(f"{a:.5f} / {b:.5f}" for a, b in zip(r["tpr_ours"], r["tpr_peer"]))
        lines.append(f"| {r['q']:g} | {r['sigma']:g} | {r['steps']} | {cells} | {r['max_abs_diff']:.1e} | "
                     f"{r['advantage_ours']:.5f} / {r['advantage_peer']:.5f} | {r['seconds_ours']:.2f} | {r['seconds_peer']:.2f} |")
    lines += ["", "## Calibrating DP-SGD to a risk target vs to the (epsilon, delta) target of equal risk", "",
              f"Both with the PLD accountant (bracket tolerance {TOLERANCE:g}, answers on the safe side); the epsilon of "
              f"equal risk is the one whose (epsilon, delta = {DELTA:g}) trade-off curve allows exactly the target TPR at "
              "the target FPR. The (epsilon, delta) target protects every FPR at once, so it over-protects the FPR "
              "that matters: the last TPR column is what that extra noise buys at the target FPR.", "",
              "| q | steps | target TPR at FPR | sigma (risk target) | epsilon of equal risk | sigma (epsilon target) "
              "| noise saved | TPR at FPR with sigma (epsilon target) | ours s |" + (" sigma (riskcal) | riskcal s |" if riskcal else ""),
              "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if riskcal else "")]
    for c in cal:
        lines.append(f"| {c['q']:g} | {c['steps']} | {c['tpr']:g} at {c['fpr']:g} | {c['sigma_risk']:.4f} | "
                     f"{c['epsilon_equal_risk']:.4f} | {c['sigma_epsilon']:.4f} | {100 * c['noise_saved']:.1f}% | "
                     f"{c['tpr_at_sigma_epsilon']:.5f} | {c['seconds_risk']:.1f} |"
                     + (f" {c['sigma_riskcal']:.4f} | {c['seconds_riskcal']:.1f} |" if "sigma_riskcal" in c else ""))
    out = ROOT / "reports" / "risk.md"
    atomic_write_text(out, "\n".join(lines) + "\n")
    atomic_write_text(ROOT / "reports" / "risk.json", json.dumps(
        {"peer": PEER, "comparison": rows, "calibration": cal, "max_abs_diff": worst, "machine": machine_line()},
        indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
