"""The 2026 training-schedule events against dp_accounting on a grid; writes reports/accounting_breadth.md (+ .json).

Run: nice -n 10 python benchmarks/bench_accounting_breadth.py  (needs dp-accounting, the `bench` extra)

For each event and grid point: our upper bound on epsilon at delta = 1e-6 (PLDAccountant or RDPAccountant,
whichever has the event), the lower end of our PLD interval where one exists, and dp_accounting's value on the
same event converted by ``to_dp_accounting`` (its PLD at value discretisation interval 1e-4, or its RDP
accountant on our orders). Pass: within 1e-3 relative of the peer, or below it (tighter) and still above our
own lower end. Random allocation is benchmarked on its own (``bench_random_allocation.py``). The conversion
table lists every dp_accounting event type and what ``from_dp_accounting`` makes of it.
"""

from __future__ import annotations

import datetime
import inspect
import json
import math
import sys
import time
from pathlib import Path

from _timing import machine_line

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dpaudit._io import atomic_write_text  # noqa: E402
from dpaudit.accountant import PLDAccountant, RDPAccountant  # noqa: E402
from dpaudit.errors import UnsupportedEventError  # noqa: E402
from dpaudit.events import (  # noqa: E402
    Gaussian,
    MixtureOfGaussians,
    PoissonSampled,
    RepeatAndSelect,
    SelfComposed,
    TruncatedSubsampledGaussian,
    from_dp_accounting,
    to_dp_accounting,
)

DELTA = 1e-6
TOLERANCE = 1e-3


def _grid():
    """(label, event, accountant kind, neighbouring) for every grid point."""
    points = []
    for sigma, c, p, count in [(1.0, (0.0, 1.0), (0.9, 0.1), 100), (2.0, (0.5, 1.0, 2.0), (0.3, 0.3, 0.4), 10),
                               (1.5, (0.0, 1.0, 2.0, 3.0), (0.7, 0.1, 0.1, 0.1), 20)]:
        points.append((f"MixtureOfGaussians({sigma}, {list(c)}, {list(p)}) x {count}",
                       SelfComposed(MixtureOfGaussians(sigma, c, p), count), "pld", "add_remove"))
    for relation in ("add_remove", "replace_one"):
        for n, q, b, z, count in [(10000, 0.01, 110, 1.0, 1000), (1000, 0.1, 105, 0.8, 100),
                                  (100000, 0.001, 100, 1.2, 5000)]:
            points.append((f"TruncatedSubsampledGaussian({n}, {q}, {b}, {z}) x {count}, {relation}",
                           SelfComposed(TruncatedSubsampledGaussian(n, q, b, z), count), "pld", relation))
    for inner_label, inner in [("Gaussian(2.0)", Gaussian(2.0)),
                               ("DP-SGD q=0.01 z=1 x 1000", SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000))]:
        for mean, shape in [(10.0, math.inf), (10.0, 1.0), (10.0, 0.0), (5.0, 0.5), (3.0, 2.0)]:
            points.append((f"RepeatAndSelect({inner_label}, mean={mean:g}, shape={shape:g})",
                           RepeatAndSelect(inner, mean, shape), "rdp", "add_remove"))
    return points


def _peer(event, kind: str, relation: str, orders):
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    rel = {"add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
           "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE}[relation]
    if kind == "pld":
        acct = pld_privacy_accountant.PLDAccountant(rel, value_discretization_interval=1e-4)
    else:
        acct = rdp_privacy_accountant.RdpAccountant(orders=list(orders), neighboring_relation=rel)
    return acct.compose(to_dp_accounting(event)).get_epsilon(DELTA)


def _conversion_table() -> list[dict]:
    from dp_accounting import dp_event as de

    samples = {
        "NoOpDpEvent": de.NoOpDpEvent(), "NonPrivateDpEvent": de.NonPrivateDpEvent(),
        "UnsupportedDpEvent": de.UnsupportedDpEvent(), "GaussianDpEvent": de.GaussianDpEvent(1.0),
        "LaplaceDpEvent": de.LaplaceDpEvent(1.0), "DiscreteLaplaceDpEvent": de.DiscreteLaplaceDpEvent(0.5, 1),
        "RandomizedResponseDpEvent": de.RandomizedResponseDpEvent(0.5, 2), "ZCDpEvent": de.ZCDpEvent(0.1, 0.0),
        "ZCDpEvent (xi > 0)": de.ZCDpEvent(0.1, 0.2),
        "SelfComposedDpEvent": de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), 2),
        "ComposedDpEvent": de.ComposedDpEvent([de.GaussianDpEvent(1.0)]),
        "PoissonSampledDpEvent": de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0)),
        "SampledWithReplacementDpEvent": de.SampledWithReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)),
        "SampledWithoutReplacementDpEvent": de.SampledWithoutReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)),
        "SingleEpochTreeAggregationDpEvent": de.SingleEpochTreeAggregationDpEvent(1.0, 5),
        "RepeatAndSelectDpEvent": de.RepeatAndSelectDpEvent(de.GaussianDpEvent(1.0), 3.0, 1.0),
        "MixtureOfGaussiansDpEvent": de.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]),
        "TruncatedSubsampledGaussianDpEvent": de.TruncatedSubsampledGaussianDpEvent(100, 0.1, 12, 1.0),
    }
    listed = {name for name, cls in vars(de).items()
              if inspect.isclass(cls) and issubclass(cls, de.DpEvent) and cls is not de.DpEvent}
    rows = []
    for name in sorted(listed | set(samples)):
        sample = samples.get(name)
        if sample is None:
            rows.append({"event": name, "result": "no sample in this benchmark"})
            continue
        try:
            rows.append({"event": name, "result": repr(from_dp_accounting(sample))})
        except UnsupportedEventError as exc:
            rows.append({"event": name, "result": f"refused: {exc}"})
    return rows


def main() -> None:
    from importlib.metadata import version

    orders = RDPAccountant().orders
    rows = []
    for label, event, kind, relation in _grid():
        start = time.perf_counter()
        if kind == "pld":
            acct = PLDAccountant(neighbouring=relation).compose(event)
            ours = acct.epsilon(DELTA)
            lower = acct.epsilon_interval(DELTA)[0]
        else:
            ours, lower = RDPAccountant(neighbouring=relation).compose(event).epsilon(DELTA), None
        seconds = time.perf_counter() - start
        start = time.perf_counter()
        peer = _peer(event, kind, relation, orders)
        peer_seconds = time.perf_counter() - start
        relative = ours / peer - 1.0
        ok = abs(relative) <= TOLERANCE or (relative < 0 and (lower is None or ours >= lower))
        rows.append({"event": label, "accountant": kind, "neighbouring": relation, "ours": ours, "lower": lower,
                     "dp_accounting": peer, "relative": relative, "pass": bool(ok), "seconds": seconds,
                     "peer_seconds": peer_seconds})
        print(f"{label}: {ours:.6f} vs {peer:.6f} ({relative:+.2e}) {'ok' if ok else 'FAIL'}", flush=True)
    conversions = _conversion_table()
    passed = sum(r["pass"] for r in rows)
    lines = [
        "# Accounting breadth: the 2026 training-schedule events against dp_accounting", "",
        f"Generated {datetime.date.today().isoformat()} by `benchmarks/bench_accounting_breadth.py` "
        f"({machine_line()}); peer: dp_accounting {version('dp-accounting')}. delta = {DELTA:g}.", "",
        "## Target", "",
        f"Each event within {TOLERANCE:g} relative of the peer, or tighter and still above our own lower end: "
        f"**{passed} of {len(rows)} grid points pass**.", "",
        "## Grid", "",
        "`ours` is an upper bound on epsilon (rounded up); `lower` the lower end of our PLD interval (the "
        "truncated subsampled Gaussian has only the trivial lower end 0: its bound is dp_accounting's mixture "
        "bound, not an attained pair); the peer is dp_accounting's PLD (interval 1e-4) or RDP accountant (our "
        "orders) on the converted event.", "",
        "| event | accountant | ours | lower | dp_accounting | relative | pass | ours s | peer s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        low = "—" if r["lower"] is None else f"{r['lower']:.6f}"
        lines.append(f"| {r['event']} | {r['accountant']} | {r['ours']:.6f} | {low} | {r['dp_accounting']:.6f} | "
                     f"{r['relative']:+.2e} | {'yes' if r['pass'] else 'NO'} | {r['seconds']:.2f} | "
                     f"{r['peer_seconds']:.2f} |")
    lines += ["", "## Random allocation", "",
              "Random allocation (k of t steps, upper and lower ends, at the peers' showcase parameters) has its own "
              "benchmark and report: `benchmarks/bench_random_allocation.py`, "
              "[accounting_random_allocation.md](accounting_random_allocation.md)."]
    lines += ["", "## from_dp_accounting on every dp_accounting event type", "",
              "| dp_accounting event | dpaudit event |", "|---|---|"]
    for c in conversions:
        lines.append(f"| {c['event']} | {c['result'].replace('|', '/')} |")
    atomic_write_text(ROOT / "reports" / "accounting_breadth.md", "\n".join(lines) + "\n")
    atomic_write_text(ROOT / "reports" / "accounting_breadth.json", json.dumps(
        {"delta": DELTA, "tolerance": TOLERANCE, "rows": rows, "conversions": conversions,
         "peer": version("dp-accounting"), "machine": machine_line()}, indent=2) + "\n")
    print("wrote reports/accounting_breadth.md")


if __name__ == "__main__":
    main()
