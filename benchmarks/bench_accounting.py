"""Tightness and speed of the numeric accountants (PLD, RDP) against the installed peers, run side by side;
writes reports/accounting.md, reports/accounting.json and reports/accounting_dpsgd.png in one run.

Run: python benchmarks/bench_accounting.py   (about 10-15 minutes on 2 cores: the mpmath reference at
10^4 steps dominates)
Peers: dp_accounting and prv_accountant (the `bench` extra); every peer number in the report is computed
in this run (``reference.json`` supplies only the configuration grid and closed-form exact values).
"""

from __future__ import annotations

import datetime
import json
import math
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from _timing import best_time, machine_line

from dpaudit.accountant import PLDAccountant, RDPAccountant, calibrate, dpsgd_noise_multiplier, epsilon_upper
from dpaudit.events import Composed, Gaussian, Laplace, PoissonSampled, PureDP, SelfComposed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "accountant"))  # the independent references used by the tests
REFERENCE = ROOT.parent / "shared" / "refs" / "accounting" / "reference.json"
SPEED = (0.01, 1.0, 1e-5)  # q, sigma, delta
SMALL_DELTAS = (1e-10, 1e-15, 1e-20, 1e-30)
RESULTS: dict = {}


def dpsgd(q: float, sigma: float, steps: int) -> SelfComposed:
    return SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)


def ours_pld(steps: int) -> float:
    q, sigma, delta = SPEED
    return PLDAccountant().compose(dpsgd(q, sigma, steps)).epsilon(delta)


def ours_rdp(steps: int) -> float:
    q, sigma, delta = SPEED
    return RDPAccountant().compose(dpsgd(q, sigma, steps)).epsilon(delta)


def peer_versions() -> dict[str, str]:
    out = {}
    for name in ("dp-accounting", "prv-accountant"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def have_dpa() -> bool:
    try:
        import dp_accounting  # noqa: F401
    except ImportError:
        return False
    return True


def dpa_pld(q: float, sigma: float, steps: int, delta: float) -> float:
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    acct = pld_privacy_accountant.PLDAccountant()
    acct.compose(dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(sigma)), steps)
    return acct.get_epsilon(delta)


def dpa_pld_lower(q: float, sigma: float, steps: int, delta: float) -> float:
    """dp_accounting's optimistic PLD (privacy buckets): a lower bound on the exact value."""
    import logging

    from dp_accounting.pld import privacy_loss_distribution as pld_lib

    logging.getLogger().setLevel(logging.ERROR)  # its note that it falls back to privacy buckets
    pld = pld_lib.from_gaussian_mechanism(standard_deviation=sigma, sampling_prob=q, pessimistic_estimate=False,
                                          value_discretization_interval=1e-4)
    return pld.self_compose(steps).get_epsilon_for_delta(delta)


def dpa_rdp(q: float, sigma: float, steps: int, delta: float) -> float:
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant

    acct = rdp_privacy_accountant.RdpAccountant()
    inner = dp_event.GaussianDpEvent(sigma)
    acct.compose(inner if q >= 1 else dp_event.PoissonSampledDpEvent(q, inner), steps)
    return acct.get_epsilon(delta)


def prv_epsilon(q: float, sigma: float, steps: int, delta: float) -> tuple[float, float, float] | str:
    try:
        from prv_accountant import PoissonSubsampledGaussianMechanism, PRVAccountant

        acct = PRVAccountant(prvs=[PoissonSubsampledGaussianMechanism(noise_multiplier=sigma, sampling_probability=q)],
                             max_self_compositions=[steps], eps_error=0.01, delta_error=delta / 1000)
        return tuple(float(v) for v in acct.compute_epsilon(delta, [steps]))
    except Exception as exc:  # a peer failing is a measured outcome, reported as such
        return f"error: {type(exc).__name__}"


def timing_section() -> list[str]:
    q, sigma, delta = SPEED
    lines = ["## Speed (wall time, one process)", "",
             f"Poisson-subsampled Gaussian, q = {q}, noise multiplier {sigma}, delta = {delta:g}; each call builds a fresh "
             "accountant, composes and reads epsilon (grid planning included). Best of 5 after a warm-up at 10^4 steps, "
             "best of 2 after a warm-up at 10^6.", "",
             "| steps | method | epsilon | time |", "|---|---|---|---|"]
    rows = []
    for steps in (10**4, 10**6):
        repeat = 5 if steps <= 10**4 else 2
        if have_dpa():
            seconds = best_time(lambda: dpa_pld(q, sigma, steps, delta), repeat=repeat)
            rows.append((steps, "dp_accounting PLD", dpa_pld(q, sigma, steps, delta), seconds))
        rows.append((steps, "dpaudit PLD", ours_pld(steps), best_time(lambda: ours_pld(steps), repeat=repeat)))
        rows.append((steps, "dpaudit RDP", ours_rdp(steps), best_time(lambda: ours_rdp(steps), repeat=repeat)))
    lines += [f"| {n:,} | {m} | {e:.6f} | {t * 1e3:.1f} ms |" for n, m, e, t in rows]
    RESULTS["speed"] = [{"steps": n, "method": m, "epsilon": e, "seconds": t} for n, m, e, t in rows]
    ratios = []
    for steps in (10**4, 10**6):
        times = {m: t for n, m, _, t in rows if n == steps}
        if "dp_accounting PLD" in times:
            ratios.append(f"{times['dp_accounting PLD'] / times['dpaudit PLD']:.1f}x at {steps:,} steps")
    if ratios:
        lines += ["", "dp_accounting PLD time / dpaudit PLD time in this run: " + ", ".join(ratios) + "."]
    return lines


def tightness_section(reference: dict) -> tuple[list[str], list[tuple]]:
    lines = ["## DP-SGD tightness (configurations of `reference.json`, subsampled_gaussian)", "",
             "Peer columns computed in this run: `dpa PLD` = dp_accounting's PLD accountant (pessimistic, an upper bound); "
             "`dpa lower` = its optimistic PLD (privacy buckets, a lower bound on the exact value); `dpa RDP` = its RDP "
             "accountant. Ours: PLD upper and lower bounds (the exact epsilon of the composed worst-case pairs lies "
             "between them), the grid widths they used, and RDP.", "",
             "| q | sigma | steps | delta | dpa PLD | ours PLD upper | rel. | ours PLD lower | lower/upper | grid lower / upper | "
             "dpa lower | dpa RDP | ours RDP | rel. | ours time |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    worst_pld, worst_rdp, below, worst_gap, plot_rows, rows = 0.0, 0.0, 0, 0.0, [], []
    for row in reference["subsampled_gaussian"]:
        q, sigma, steps, delta = row["q"], row["sigma"], row["steps"], row["delta"]
        start = time.perf_counter()
        acct = PLDAccountant().compose(dpsgd(q, sigma, steps))
        lower, upper = acct.epsilon_interval(delta)
        grid_lower, grid_upper = acct.interval_grids()
        rdp = RDPAccountant().compose(dpsgd(q, sigma, steps)).epsilon(delta)
        seconds = time.perf_counter() - start
        peer_upper, peer_lower, peer_rdp = dpa_pld(q, sigma, steps, delta), dpa_pld_lower(q, sigma, steps, delta), dpa_rdp(q, sigma, steps, delta)
        rel = upper / peer_upper - 1
        rel_rdp = rdp / peer_rdp - 1
        gap = 1 - lower / upper
        worst_pld, worst_rdp, worst_gap = max(worst_pld, abs(rel)), max(worst_rdp, abs(rel_rdp)), max(worst_gap, gap)
        below += upper < peer_lower
        plot_rows.append((row, lower, upper, rdp))
        rows.append({"q": q, "sigma": sigma, "steps": steps, "delta": delta, "dpa_pld": peer_upper, "dpa_pld_lower": peer_lower,
                     "dpa_rdp": peer_rdp, "pld_upper": upper, "pld_lower": lower, "grid_lower": grid_lower,
                     "grid_upper": grid_upper, "rdp": rdp, "seconds": seconds})
        lines.append(f"| {q} | {sigma} | {steps} | {delta:g} | {peer_upper:.6g} | {upper:.6g} | {rel:+.1e} | {lower:.6g} | "
                     f"{lower / upper:.4f} | {grid_lower:.2e} / {grid_upper:.2e} | {peer_lower:.6g} | {peer_rdp:.6g} | "
                     f"{rdp:.6g} | {rel_rdp:+.1e} | {seconds * 1e3:.0f} ms |")
    RESULTS["dpsgd_tightness"] = rows
    lines[2:2] = [f"Worst relative deviation of our PLD upper bound from dp_accounting's: {worst_pld:.2%}; rows where our "
                  f"upper bound is below dp_accounting's lower bound: {below}. Largest gap between our lower and upper "
                  f"bound: {worst_gap:.2%} of the upper (target: within 1% on every row). Worst relative deviation of "
                  f"our RDP from dp_accounting's RDP: {worst_rdp:.1%}.", ""]
    return lines, plot_rows


def small_delta_section() -> list[str]:
    from _reference_small_delta import reference_epsilons

    lines = ["## Small delta (DP-SGD, q = 0.01, noise multiplier 1)", "",
             "`mpmath ref` = the independent reference of `tests/accountant/_reference_small_delta.py` (cell masses in "
             "mpmath at 40 digits on a loss grid of 1e-3, composed by exponential tilting): `ref upper` is its "
             "connect-the-dots upper bound, `ref lower` its rounded-down lower bound (loose by up to steps x 1e-3 in "
             "epsilon). Ours: PLD upper bound, the lower end of `epsilon_interval`, RDP. Peers as computed in this run "
             "(`inf`: the peer returned infinity).", "",
             "| steps | delta | ref lower | ref upper | ours PLD upper | ours / ref upper | ours PLD lower | ours RDP | "
             "dp_accounting PLD | prv_accountant (lo / est / hi) |", "|---|---|---|---|---|---|---|---|---|---|"]
    rows = []
    for steps in (100, 10**4):
        start = time.perf_counter()
        refs = reference_epsilons(0.01, 1.0, steps, SMALL_DELTAS)
        ref_seconds = time.perf_counter() - start
        acct = PLDAccountant().compose(dpsgd(0.01, 1.0, steps))
        rdp = RDPAccountant().compose(dpsgd(0.01, 1.0, steps))
        for delta, (ref_lower, ref_upper) in zip(SMALL_DELTAS, refs):
            lower, upper = acct.epsilon_interval(delta)
            peer = dpa_pld(0.01, 1.0, steps, delta) if have_dpa() else math.nan
            prv = prv_epsilon(0.01, 1.0, steps, delta)
            prv_text = prv if isinstance(prv, str) else " / ".join(f"{v:.4f}" for v in prv)
            rows.append({"steps": steps, "delta": delta, "ref_lower": ref_lower, "ref_upper": ref_upper, "pld_upper": upper,
                         "pld_lower": lower, "rdp": rdp.epsilon(delta), "dpa_pld": peer, "prv": prv,
                         "reference_seconds": ref_seconds})
            lines.append(f"| {steps:,} | {delta:g} | {ref_lower:.5f} | {ref_upper:.5f} | {upper:.5f} | {upper / ref_upper:.5f} | "
                         f"{lower:.5f} | {rdp.epsilon(delta):.5f} | {peer:.5f} | {prv_text} |")
    RESULTS["small_delta"] = rows
    finite = all(math.isfinite(r["pld_upper"]) for r in rows)
    worst = max(r["pld_upper"] / r["ref_upper"] for r in rows)
    below = sum(r["pld_upper"] < r["ref_lower"] for r in rows)
    lines[2:2] = [f"Our upper bound is finite on {'every' if finite else 'NOT every'} row; largest ratio to the reference's "
                  f"upper bound: {worst:.5f} (target: within 1%); rows below the reference's lower bound: {below}.", ""]
    return lines


def composition_section() -> list[str]:
    from _reference_pld import reference_epsilon

    q, sigma, scale, steps, delta = 0.05, 1.0, 2.0, 50, 1e-5
    lines = [f"## Subsampled composition: PoissonSampled({q}, Composed(Gaussian({sigma}), Laplace({scale}))) x {steps}, delta = {delta:g}", ""]
    start = time.perf_counter()
    ref_lower, ref_upper = reference_epsilon(q, sigma, scale, steps, delta, step=1e-4)
    ref_seconds = time.perf_counter() - start
    start = time.perf_counter()
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Composed(Gaussian(sigma), Laplace(scale))), steps))
    upper = acct.epsilon(delta)
    seconds = time.perf_counter() - start
    lines += ["Independent fine-grid PLD (`tests/accountant/_reference_pld.py`, grid 1e-4, exact inner CDFs by quadrature, "
              "remove direction): "
              f"[{ref_lower:.6f}, {ref_upper:.6f}] ({ref_seconds:.1f} s). Ours (PLD upper bound, both directions): "
              f"{upper:.6f} ({seconds:.2f} s), {upper / ref_upper - 1:+.2e} relative to the reference's upper bound "
              "(target: within 0.1%).", ""]
    if have_dpa():
        from dp_accounting import dp_event
        from dp_accounting.pld import pld_privacy_accountant

        event = dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q, dp_event.ComposedDpEvent(
            [dp_event.GaussianDpEvent(sigma), dp_event.LaplaceDpEvent(scale)])), steps)
        peer = pld_privacy_accountant.PLDAccountant()
        supported = peer.supports(event)
        lines += [f"dp_accounting's PLD accountant supports this event: {supported}.", ""]
    RESULTS["subsampled_composition"] = {"q": q, "sigma": sigma, "laplace_scale": scale, "steps": steps, "delta": delta,
                                         "ref_lower": ref_lower, "ref_upper": ref_upper, "pld_upper": upper}
    return lines


def exactness_section(reference: dict) -> list[str]:
    lines = ["## k-fold Gaussian and pure-DP composition against exact values", ""]
    worst, below = 0.0, 0
    for row in reference["gaussian_composition"]:
        upper = PLDAccountant().compose(SelfComposed(Gaussian(row["sigma"]), row["k"])).epsilon(row["delta"])
        worst = max(worst, upper / row["exact_analytic"] - 1)
        below += upper < row["exact_analytic"]
    n_gauss = len(reference["gaussian_composition"])
    lines.append(f"- Gaussian ({n_gauss} rows, exact analytic curve): worst relative excess {worst:.1e}, rows below exact: {below} "
                 "(target: >= exact, within 0.5%).")
    worst, below = 0.0, 0
    for row in reference["pure_dp_composition"]:
        upper = PLDAccountant().compose(SelfComposed(PureDP(row["eps0"]), row["k"])).epsilon(row["delta"])
        worst = max(worst, upper / row["optimal_exact"] - 1)
        below += upper < row["optimal_exact"]
    lines.append(f"- Pure DP ({len(reference['pure_dp_composition'])} rows, exact optimal composition): worst relative excess "
                 f"{worst:.1e}, rows below exact: {below} (target: >= exact, within 1%).")
    if have_dpa():
        worst = 0.0
        for row in reference["gaussian_composition"]:
            rdp = RDPAccountant().compose(SelfComposed(Gaussian(row["sigma"]), row["k"])).epsilon(row["delta"])
            worst = max(worst, abs(rdp / dpa_rdp(1.0, row["sigma"], row["k"], row["delta"]) - 1))
        lines.append(f"- RDP of k-fold Gaussian vs dp_accounting's RDP in this run ({n_gauss} rows): worst relative deviation {worst:.1e}.")
    return lines


def calibration_section() -> list[str]:
    q, steps, delta = 0.01, 1000, 1e-5
    lines = [f"## Calibration against dp_accounting's `calibrate_dp_mechanism` (DP-SGD, delta = {delta:g})", "",
             "Ours: `dpaudit.accountant.calibrate` with the PLD accountant, relative tolerance 1e-4, the returned value "
             "meeting the target. dp_accounting: `calibrate_dp_mechanism` with a fresh PLD accountant per evaluation, the "
             "same bracket, its default tolerance. Wall time of one call each.", "",
             "| parameter | target eps | bracket | dp_accounting | ours | ours' epsilon | dp_accounting time | ours time | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    cases = [("sigma (q = 0.01, 1000 steps)", lambda s: dpsgd(q, s, steps), (0.3, 10.0), "smallest", False, eps, "sigma")
             for eps in (1.0, 3.0, 8.0)]
    cases.append(("q (sigma = 1, 1000 steps)", lambda x: dpsgd(x, 1.0, steps), (1e-4, 0.5), "largest", False, 2.0, "q"))
    cases.append(("steps (q = 0.01, sigma = 1)", lambda t: dpsgd(q, 1.0, t), (1, 100000), "largest", True, 1.5, "steps"))
    rows = []
    for label, make, bounds, direction, integer, target, kind in cases:
        start = time.perf_counter()
        ours = calibrate(make, target, delta, bounds=bounds, direction=direction, integer=integer)
        ours_seconds = time.perf_counter() - start
        peer, peer_seconds = math.nan, math.nan
        if have_dpa():
            from dp_accounting import dp_event, mechanism_calibration
            from dp_accounting.pld import pld_privacy_accountant

            def peer_event(x, kind=kind):
                sigma_, q_, steps_ = (x, q, steps) if kind == "sigma" else (1.0, x, steps) if kind == "q" else (1.0, q, int(x))
                return dp_event.SelfComposedDpEvent(dp_event.PoissonSampledDpEvent(q_, dp_event.GaussianDpEvent(sigma_)), steps_)

            start = time.perf_counter()
            peer = mechanism_calibration.calibrate_dp_mechanism(
                pld_privacy_accountant.PLDAccountant, peer_event, target, delta,
                bracket_interval=mechanism_calibration.ExplicitBracketInterval(*bounds), discrete=integer)
            peer_seconds = time.perf_counter() - start
        rows.append({"parameter": label, "target_epsilon": target, "bounds": bounds, "dpa": peer, "ours": ours.value,
                     "ours_epsilon": ours.epsilon, "dpa_seconds": peer_seconds, "ours_seconds": ours_seconds})
        lines.append(f"| {label} | {target} | {bounds} | {peer:.6g} | {ours.value:.6g} | {ours.epsilon:.6g} | "
                     f"{peer_seconds:.2f} s | {ours_seconds:.2f} s | {peer_seconds / ours_seconds:.1f}x |")
    RESULTS["calibration"] = rows
    lines += ["", "DP-SGD noise by the dedicated `dpsgd_noise_multiplier` (PLD and RDP, q = 0.01, 1000 steps):", "",
              "| target eps | ours PLD sigma | time | ours RDP sigma |", "|---|---|---|---|"]
    for eps in (1.0, 3.0, 8.0):
        start = time.perf_counter()
        pld = dpsgd_noise_multiplier(eps, delta, q, steps)
        seconds = time.perf_counter() - start
        rdp = dpsgd_noise_multiplier(eps, delta, q, steps, accountant="rdp")
        lines.append(f"| {eps} | {pld:.5f} | {seconds:.2f} s | {rdp:.5f} |")
    return lines


def best_section() -> list[str]:
    lines = ["## The minimum of every sound bound (`epsilon_upper`)", "",
             "| event | delta | epsilon_upper | won by | candidates |", "|---|---|---|---|---|"]
    cases = [("DP-SGD q=0.01 sigma=1 x100", dpsgd(0.01, 1.0, 100), 1e-5), ("DP-SGD q=0.01 sigma=1 x100", dpsgd(0.01, 1.0, 100), 1e-20),
             ("Gaussian(2) x10", SelfComposed(Gaussian(2.0), 10), 1e-5), ("Laplace(10) x3", SelfComposed(Laplace(10.0), 3), 1e-9)]
    for label, event, delta in cases:
        best = epsilon_upper(event, delta)
        cands = ", ".join(f"{k}: {v:.6g}" for k, v in best.candidates.items())
        lines.append(f"| {label} | {delta:g} | {best.epsilon:.6g} | {best.method} | {cands} |")
    return lines


def error_section() -> list[str]:
    q, sigma, _ = SPEED
    parts = []
    for steps in (10**4, 10**6):
        acct = PLDAccountant().compose(dpsgd(q, sigma, steps))
        remove, add = acct._plds(True)
        parts.append(f"{max(remove.error, add.error):.1e} after {steps:,} steps (grid {acct.step():.2e})")
    return ["## Numerical error statement", "",
            "The PLD accountant discretises each mechanism's privacy-loss pair on a uniform grid: pessimistically by "
            "connect-the-dots (an upper bound at every epsilon, also after composition) and optimistically by merging "
            "outcomes within cells and rounding down (a lower bound). Every FFT convolution adds 16 u log2(n) sqrt(n) "
            "(u = 2^-53) to a tracked l1 error bound, which is added to every delta read out; measured bound in this run "
            f"(q = {q}, noise multiplier {sigma}): " + "; ".join(parts) + ". Below delta = 1e-8, or within 1000x of that "
            "bound, delta is also read out by exponential tilting with the truncated tails charged (`_pld_tail.py`) and "
            "the smaller sound value is returned."]


def plot(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    q, sigma, delta = SPEED
    steps = [10, 30, 100, 300, 1000, 3000, 10**4, 3 * 10**4, 10**5]
    series: dict[str, list[float]] = {"PLD upper": [], "PLD lower": [], "RDP": []}
    if have_dpa():
        series["dp_accounting PLD"] = []
    for t in steps:
        lower, upper = PLDAccountant().compose(dpsgd(q, sigma, t)).epsilon_interval(delta)
        series["PLD upper"].append(upper)
        series["PLD lower"].append(lower)
        series["RDP"].append(RDPAccountant().compose(dpsgd(q, sigma, t)).epsilon(delta))
        if have_dpa():
            series["dp_accounting PLD"].append(dpa_pld(q, sigma, t, delta))
    RESULTS["plot"] = {"steps": steps, **series}
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values in series.items():
        ax.plot(steps, values, marker="o", markersize=3, label=label, linestyle="--" if "lower" in label else ":" if "dp_acc" in label else "-")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("steps")
    ax.set_ylabel(f"epsilon at delta = {delta:g}")
    ax.set_title(f"DP-SGD, q = {q}, noise multiplier {sigma}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    start = time.perf_counter()
    peers = peer_versions()
    lines = ["# Numeric accountants (PLD, RDP): tightness and speed", "",
             f"Generated by `benchmarks/bench_accounting.py` on {datetime.date.today().isoformat()} ({machine_line()}), in one run "
             "against the installed peers: " + ", ".join(f"{k} {v}" for k, v in peers.items()) + ".",
             "Every epsilon is an upper bound (rounded up) unless labelled a lower bound.", "",
             "The accountant-breadth events (discrete Gaussian and Laplace, zCDP, (epsilon, delta), bounded range, tree "
             "aggregation) have their own report: [accounting_events.md](accounting_events.md).", ""]
    RESULTS["peers"] = peers
    lines += timing_section() + [""]
    reference = json.loads(REFERENCE.read_text()) if REFERENCE.is_file() else None
    if reference is not None and have_dpa():
        table, _ = tightness_section(reference)
        lines += table + [""]
    else:
        lines += [f"Configuration grid ({REFERENCE}) or dp_accounting missing; tightness table skipped.", ""]
    lines += small_delta_section() + [""] + composition_section()
    if reference is not None:
        lines += exactness_section(reference) + [""]
    lines += calibration_section() + [""] + best_section() + [""]
    png = ROOT / "reports" / "accounting_dpsgd.png"
    png.parent.mkdir(exist_ok=True)
    plot(png)
    lines += ["## Epsilon against steps", "", f"![epsilon against steps]({png.name})", ""] + error_section()
    RESULTS["total_seconds"] = time.perf_counter() - start
    lines += ["", f"Benchmark wall time: {RESULTS['total_seconds']:.0f} s."]
    out = ROOT / "reports" / "accounting.md"
    out.write_text("\n".join(lines) + "\n")
    (ROOT / "reports" / "accounting.json").write_text(json.dumps(RESULTS, indent=1, default=str) + "\n")
    print(out.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
