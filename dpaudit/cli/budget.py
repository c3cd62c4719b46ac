"""``dpaudit budget``: composition numbers from the closed-form theorems.

Every epsilon printed is an upper bound (rounded up); per-step answers are lower bounds on the exact
inverse (rounded down), so spending them never exceeds the target.

Flags mean the same in every sub-command: --delta is the per-step delta of each composed step (default 0)
and --target-delta the total delta of the whole composition. Step counts (-k, --steps) accept 10**12 as
1e12; every theorem runs in bounded memory, and a k beyond a theorem's limit is refused (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from .._validation import check_delta, check_positive, check_positive_int, check_sampling_probability
from ..accountant import PER_STEP_THEOREMS
from ..errors import InvalidArgument
from ..reporting import format_number, format_table, to_json
from .risk import add_risk_flag

__all__ = ["register"]

UPPER_NOTE = "epsilon values are upper bounds (rounded up)"


def _symbolic_payload(theorems: list[str]) -> dict[str, dict[str, str]]:
    from ..accountant import symbolic
    import sympy as sp  # only for --symbolic: keeps `dpaudit budget` quick to start

    payload = {}
    for theorem in theorems:
        expression = symbolic(theorem)
        payload[theorem] = {"expression": str(expression), "latex": sp.latex(expression), "pretty": sp.pretty(expression, use_unicode=True)}
    return payload


def _emit(args: argparse.Namespace, payload: dict[str, Any], text: str, theorems: list[str]) -> int:
    if args.symbolic:
        payload["symbolic"] = _symbolic_payload(theorems)
    if getattr(args, "risk", False) and "result" in payload:  # basic, advanced, optimal, amplify
        from .risk import guarantee_risk_section

        payload["risk"], line = guarantee_risk_section(payload["result"]["epsilon"], payload["result"]["delta"])
        text += "\n" + line
    if args.json:
        print(to_json(payload))
        return 0
    print(text)
    if args.symbolic:
        for theorem, forms in payload["symbolic"].items():
            print(f"\n{theorem}: epsilon_total =\n{forms['pretty']}\nLaTeX: {forms['latex']}")
    return 0


def _guarantee_text(title: str, guarantee, extra: str = "") -> str:
    return (
        f"{title}\n  epsilon_upper = {format_number(guarantee.epsilon, 10, 'up')}\n  delta = {format_number(guarantee.delta, 6)}"
        f"{extra}\n({UPPER_NOTE})"
    )


def _count(text: str) -> int:
    """A step count: an integer, also in scientific notation (1e12)."""
    try:
        value = Decimal(text.strip().replace("_", ""))
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not value.is_finite() or value != value.to_integral_value():
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer")
    return int(value)


def _deprecated(old: str, new: str) -> None:
    """One line on stderr for a deprecated spelling that still works."""
    print(f"dpaudit: note: {old} is deprecated; use {new}", file=sys.stderr)


def _compare_deltas(args: argparse.Namespace) -> tuple[float, float]:
    """(total delta, per-step delta) from --target-delta / --delta and the deprecated spellings."""
    total, step = args.target_delta, args.delta
    if total is None:
        if step is None:
            raise InvalidArgument("target_delta", "budget compare needs --target-delta (the total delta of the composition)")
        _deprecated("'budget compare --delta' as the total delta", "--target-delta (--delta is the per-step delta)")
        total, step = step, None
    if args.step_delta is not None:
        if step is not None:
            raise InvalidArgument("step_delta", "give the per-step delta once: --delta (or the deprecated --step-delta), not both")
        _deprecated("--step-delta", "--delta (the per-step delta)")
        step = args.step_delta
    return total, 0.0 if step is None else step


def _compare(args: argparse.Namespace) -> int:
    from ..accountant.compare import compare_compositions
    total_delta, step_delta = _compare_deltas(args)
    rows = compare_compositions(
        args.epsilon, args.k, total_delta, step_delta=step_delta, sampling_probability=args.sampling_probability
    )
    table = format_table(
        ["theorem", "sampling", "epsilon_upper", "delta", "tightest", "note"],
        [[r.theorem, "none" if r.sampling_probability is None else f"Poisson q={r.sampling_probability:g}",
          format_number(r.epsilon_upper, 6, "up"), r.delta, "<- tightest" if r.tightest else "", r.note] for r in rows],
    )
    text = (
        f"k = {args.k} steps of ({args.epsilon:g}, {step_delta:g})-DP at total delta = {total_delta:g}\n"
        f"{table}\n({UPPER_NOTE}; basic uses delta = k * per-step delta)"
    )
    payload = {
        "command": "compare",
        "bound": "upper",
        "inputs": {"epsilon": args.epsilon, "k": args.k, "target_delta": total_delta, "delta": step_delta,
                   "sampling_probability": args.sampling_probability},
        "results": [r.to_dict() for r in rows],
    }
    theorems = ["basic", "advanced"] + (["amplify"] if args.sampling_probability is not None else [])
    return _emit(args, payload, text, theorems)


def _basic(args: argparse.Namespace) -> int:
    from ..accountant import basic
    if len(args.epsilon) == 1:  # k identical steps, composed in O(1) (never a list of k values)
        k = 1 if args.k is None else args.k
        guarantee = basic(args.epsilon[0], args.delta, k=k)
    else:
        if args.k is not None and args.k != len(args.epsilon):
            raise InvalidArgument("k", f"k={args.k} repeats a single --epsilon; give several --epsilon values or one with -k, not both")
        k = len(args.epsilon)
        guarantee = basic(args.epsilon, args.delta)
    payload = {"command": "basic", "bound": "upper", "inputs": {"epsilons": args.epsilon, "k": k, "delta": args.delta},
               "result": guarantee.to_dict()}
    return _emit(args, payload, _guarantee_text(f"basic composition of {k} steps", guarantee), ["basic"])


def _advanced_slack(args: argparse.Namespace) -> float:
    """The slack delta': --delta-slack, or --target-delta minus k * --delta (rounded down)."""
    from ..accountant.closed_form import fraction_down
    if args.target_delta is None:
        if args.delta_slack is None:
            raise InvalidArgument("delta_slack", "budget advanced needs --delta-slack or --target-delta (the total delta)")
        return args.delta_slack
    if args.delta_slack is not None:
        raise InvalidArgument("delta_slack", "give either --delta-slack or --target-delta, not both")
    if not 0.0 < args.target_delta < 1.0 or not 0.0 <= args.delta < 1.0:  # nan fails both
        raise InvalidArgument("target_delta", f"target_delta={args.target_delta!r} and delta={args.delta!r} must lie in [0, 1)")
    slack = fraction_down(Fraction(args.target_delta) - args.k * Fraction(args.delta))
    if not slack > 0.0:
        raise InvalidArgument(
            "target_delta", f"target_delta={args.target_delta!r} must exceed k * delta = {args.k * args.delta:.6g} "
            "(advanced composition needs a slack delta')"
        )
    return slack


def _advanced(args: argparse.Namespace) -> int:
    from ..accountant import advanced
    slack = _advanced_slack(args)
    guarantee = advanced(args.epsilon, args.k, slack, args.delta)
    inputs = {**vars_subset(args, "epsilon", "k", "target_delta", "delta"), "delta_slack": slack}
    payload = {"command": "advanced", "bound": "upper", "inputs": inputs, "result": guarantee.to_dict()}
    return _emit(args, payload, _guarantee_text(f"advanced composition (Dwork-Rothblum-Vadhan) of {args.k} steps", guarantee), ["advanced"])


def _optimal(args: argparse.Namespace) -> int:
    from ..accountant import optimal
    guarantee = optimal(args.epsilon, args.k, args.target_delta, args.delta)
    payload = {"command": "optimal", "bound": "upper", "inputs": vars_subset(args, "epsilon", "k", "target_delta", "delta"), "result": guarantee.to_dict()}
    text = _guarantee_text(f"exact optimal composition (Kairouz-Oh-Viswanath) of {args.k} steps", guarantee)
    return _emit(args, payload, text, ["optimal_delta"])


def _amplify(args: argparse.Namespace) -> int:
    from ..accountant import amplify
    guarantee = amplify(args.epsilon, args.delta, args.sampling_probability, scheme=args.scheme, theorem=args.theorem)
    payload = {"command": "amplify", "bound": "upper",
               "inputs": vars_subset(args, "epsilon", "delta", "sampling_probability", "scheme", "theorem"), "result": guarantee.to_dict()}
    text = _guarantee_text(f"amplification by {args.scheme} subsampling, q = {args.sampling_probability:g} ({args.theorem})", guarantee)
    return _emit(args, payload, text, ["amplify" if args.theorem == "tight" else "amplify_secrecy_of_sample"])


def _check_targets(args: argparse.Namespace, count: str) -> None:
    """Refuse (exit 2, naming the flag's argument) a target or parameter outside its domain before any
    accountant runs, so that no sub-command prints a table of per-row errors with exit 0."""
    if getattr(args, "target_epsilon", None) is not None:
        check_positive(args.target_epsilon, "target_epsilon")
    if getattr(args, "target_delta", None) is not None:
        check_delta(args.target_delta, "target_delta")
    if getattr(args, "noise_multiplier", None) is not None:
        check_positive(args.noise_multiplier, "noise_multiplier")
    if getattr(args, "sampling_probability", None) is not None:
        check_sampling_probability(args.sampling_probability, "sampling_probability")
    check_positive_int(getattr(args, count), count)


def _per_step(args: argparse.Namespace) -> int:
    from ..accountant import per_step_epsilon
    _check_targets(args, "k")
    theorems = list(PER_STEP_THEOREMS) if args.theorem == "all" else [args.theorem]
    results = []
    for theorem in theorems:
        try:
            value = per_step_epsilon(args.target_epsilon, args.target_delta, args.k, theorem, sampling_probability=args.sampling_probability)
            results.append({"theorem": theorem, "per_step_epsilon_lower": value, "note": ""})
        except ValueError as exc:
            if args.theorem != "all":
                raise
            results.append({"theorem": theorem, "per_step_epsilon_lower": None, "note": str(exc)})
    feasible = [r for r in results if r["per_step_epsilon_lower"] is not None]
    best = max(feasible, key=lambda r: r["per_step_epsilon_lower"])["theorem"] if feasible else None
    for r in results:
        r["largest"] = r["theorem"] == best
    sampled = "" if args.sampling_probability is None else f", each step on a Poisson q={args.sampling_probability:g} subsample"
    text = (
        f"largest per-step epsilon for {args.k} steps within ({args.target_epsilon:g}, {args.target_delta:g})-DP{sampled}\n"
        + format_table(["theorem", "per_step_epsilon", "largest", "note"],
                       [[r["theorem"], format_number(r["per_step_epsilon_lower"], 6, "down"), "<- largest" if r["largest"] else "",
                         r["note"]] for r in results])
        + "\n(per-step values are rounded down: k steps of them never exceed the target)"
    )
    payload = {"command": "per-step", "bound": "lower (safe per-step budget)",
               "inputs": vars_subset(args, "target_epsilon", "target_delta", "k", "sampling_probability"), "results": results}
    return _emit(args, payload, text, ["advanced_per_step_simplified"])


def _dpsgd_closed_forms(sigma: float, q: float, steps: int, delta: float, neighbouring: str) -> list[dict[str, Any]]:
    """Per step: the analytic Gaussian's exact (eps0, delta0) (Balle & Wang 2018), Poisson-amplified to
    (ln(1 + q(e^eps0 - 1)), q delta0) (Balle et al. 2018); then basic, advanced (slack delta/2) and exact
    optimal (KOV) composition over the steps. delta0 is chosen so the total is the target delta."""
    from ..accountant import advanced, amplify, basic, gaussian_epsilon, optimal
    name = "closed form: analytic Gaussian -> Poisson amplification -> {} composition"
    if neighbouring != "add_remove" and q < 1.0:
        note = "no closed-form amplification bound for Poisson sampling under replace-one"
        return [{"method": name.format(t), "label": f"{t} (closed form)", "epsilon_upper": None,
                 "epsilon_lower": None, "note": note} for t in ("basic", "advanced", "optimal")]
    mu = (2.0 if neighbouring == "replace_one" else 1.0) / sigma
    rows = []
    for theorem in ("basic", "advanced", "optimal"):
        # the per-step delta: the total's share, at most 1/2 (a share above it, at a tiny q, would not be a delta)
        share = min(delta / (steps * q) if theorem == "basic" else delta / (2 * steps * q), 0.5)
        step_eps = gaussian_epsilon(share, mu)
        amplified = amplify(step_eps, share, q)
        note = f"per step eps0={step_eps:.4g}, delta0={share:.3g}"
        try:
            if theorem == "basic":
                total = basic(amplified.epsilon, k=steps).epsilon  # O(1) in steps
            elif theorem == "advanced":
                total = advanced(amplified.epsilon, steps, delta / 2, amplified.delta).epsilon
            else:
                total = optimal(amplified.epsilon, steps, delta, amplified.delta).epsilon
        except ValueError as exc:  # e.g. steps beyond the exact optimal composition's limit
            total, note = None, str(exc)
        rows.append({"method": name.format(theorem), "label": f"{theorem} (closed form)", "epsilon_upper": total, "epsilon_lower": None,
                     "note": note})
    return rows


#: Above this many steps the command line skips the PLD accountant (its grid, time and memory grow with
#: the total privacy loss: ~20 s and 250 MB at 10^7 steps) and says so; RDP and the closed forms take any k.
DPSGD_PLD_MAX_STEPS = 10**7


def _pld_skipped_note(steps: int) -> str:
    return f"not computed: steps={steps} exceeds {DPSGD_PLD_MAX_STEPS:.0e}, the command line's limit for the PLD accountant"


def _dpsgd_rows(sigma: float, q: float, steps: int, delta: float, neighbouring: str) -> list[dict[str, Any]]:
    from ..accountant import PLDAccountant, RDPAccountant, dpsgd_event
    event = dpsgd_event(sigma, q, steps)
    if steps > DPSGD_PLD_MAX_STEPS:
        rows = [{"method": "pld (privacy loss distribution)", "label": "pld", "epsilon_upper": None, "epsilon_lower": None,
                 "note": _pld_skipped_note(steps)}]
    else:
        from ..errors import UnsupportedEventError

        try:
            pld = PLDAccountant(neighbouring).compose(event)
            lower, upper = pld.epsilon_interval(delta)
            rows = [{"method": "pld (privacy loss distribution)", "label": "pld", "epsilon_upper": upper, "epsilon_lower": lower,
                     "note": f"exact value lies in [{format_number(lower, 6, 'down')}, {format_number(upper, 6, 'up')}]"}]
        except UnsupportedEventError as exc:  # the PLD refuses a grid it cannot bound: the other rows still answer
            rows = [{"method": "pld (privacy loss distribution)", "label": "pld", "epsilon_upper": None, "epsilon_lower": None,
                     "note": "not computed: " + " ".join(str(exc).split())}]
    try:
        rdp = RDPAccountant(neighbouring).compose(event).epsilon(delta)
        rows.append({"method": "rdp (Renyi DP)", "label": "rdp", "epsilon_upper": rdp, "epsilon_lower": None, "note": ""})
    except ValueError as exc:
        rows.append({"method": "rdp (Renyi DP)", "label": "rdp", "epsilon_upper": None, "epsilon_lower": None, "note": str(exc)})
    return rows + _dpsgd_closed_forms(sigma, q, steps, delta, neighbouring)


def _dpsgd_plot(path: str, sigma: float, q: float, steps: int, delta: float, neighbouring: str) -> None:
    import matplotlib

    from .._io import PNG_METADATA, atomic_write

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    grid = np.unique(np.geomspace(1, steps, num=min(16, steps)).round().astype(int))
    curves: dict[str, list[float]] = {}
    for t in grid:
        for row in _dpsgd_rows(sigma, q, int(t), delta, neighbouring):
            value = row["epsilon_upper"]
            curves.setdefault(row["label"], []).append(float("nan") if value is None else value)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, values in curves.items():
        ax.plot(grid, values, marker="o", markersize=3, label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("steps")
    ax.set_ylabel(f"epsilon (upper bound) at delta = {delta:g}")
    ax.set_title(f"DP-SGD: noise multiplier {sigma:g}, sampling probability {q:g} ({neighbouring})")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:  # atomically: a full disk leaves no partial (or empty) PNG
        atomic_write(path, lambda temporary: fig.savefig(temporary, dpi=120, format="png", metadata=PNG_METADATA))
    finally:
        plt.close(fig)


def _dpsgd(args: argparse.Namespace) -> int:
    from ..accountant import dpsgd_event, dpsgd_noise_multiplier
    if args.delta is not None:
        if args.target_delta is not None:
            raise InvalidArgument("delta", "give the total delta once: --target-delta (or the deprecated --delta), not both")
        _deprecated("'budget dpsgd --delta' (the total delta)", "--target-delta")
        args.target_delta = args.delta
    if args.target_delta is None:
        raise InvalidArgument("target_delta", "budget dpsgd needs --target-delta (the total delta of the training run)")
    _check_targets(args, "steps")
    if args.target_delta == 0.0:
        raise InvalidArgument("target_delta", "--target-delta 0: DP-SGD's Gaussian noise is (epsilon, 0)-DP for no finite "
                                              "epsilon; give the total delta of the training run in (0, 1), e.g. 1e-5")
    if args.plot:  # before any accountant runs: never onto a file dpaudit did not write
        from .._io import check_output_file
        from ._output import expand_paths

        expand_paths(args, "plot")
        check_output_file(args.plot, "plot", "--plot")
    q, steps, delta, relation = args.sampling_probability, args.steps, args.target_delta, args.neighbouring
    inputs = vars_subset(args, "noise_multiplier", "target_epsilon", "sampling_probability", "steps", "target_delta", "neighbouring")
    if args.target_epsilon is not None:
        rows = []
        for name in ("pld", "rdp"):
            if name == "pld" and steps > DPSGD_PLD_MAX_STEPS:
                rows.append({"accountant": name, "noise_multiplier": None, "note": _pld_skipped_note(steps)})
                continue
            try:
                sigma = dpsgd_noise_multiplier(args.target_epsilon, delta, q, steps, accountant=name, neighbouring=relation)
                rows.append({"accountant": name, "noise_multiplier": sigma, "note": ""})
            except ValueError as exc:
                rows.append({"accountant": name, "noise_multiplier": None, "note": str(exc)})
        text = (f"noise multiplier for {steps} DP-SGD steps, Poisson q={q:g}, to be ({args.target_epsilon:g}, {delta:g})-DP ({relation})\n"
                + format_table(["accountant", "noise_multiplier", "note"], [[r["accountant"], format_number(r["noise_multiplier"], 6, "up"), r["note"]]
                                                                                for r in rows])
                + "\n(noise multipliers are rounded up: with them each accountant's epsilon is at most the target)")
        payload = {"command": "dpsgd", "bound": "noise multiplier (enough noise)", "inputs": inputs, "results": rows}
        if args.risk:
            from .risk import risk_section

            for row in rows:
                if row["noise_multiplier"] is not None:
                    row["risk"], line = risk_section(dpsgd_event(row["noise_multiplier"], q, steps), row["accountant"],
                                                     relation, f" at noise multiplier {row['noise_multiplier']:.6g}")
                    text += "\n" + line
        return _emit_plain(args, payload, text)
    sigma = args.noise_multiplier
    rows = _dpsgd_rows(sigma, q, steps, delta, relation)
    text = (f"{steps} DP-SGD steps, noise multiplier {sigma:g}, Poisson q={q:g}, delta={delta:g} ({relation})\n"
            + format_table(["method", "epsilon_upper", "epsilon_lower", "note"],
                           [[r["method"], format_number(r["epsilon_upper"], 6, "up"), format_number(r["epsilon_lower"], 6, "down"),
                             r["note"]] for r in rows])
            + f"\n({UPPER_NOTE}; epsilon_lower is the PLD's lower bound on the exact value)")
    payload = {"command": "dpsgd", "bound": "upper", "inputs": inputs, "results": rows}
    finite = [r for r in rows if r["epsilon_upper"] is not None]
    if finite:  # every row is a sound upper bound on the same epsilon: their minimum is one too
        best = min(finite, key=lambda r: r["epsilon_upper"])
        payload["best"] = {"epsilon_upper": best["epsilon_upper"], "method": best["label"]}
        text += f"\ntightest sound bound: epsilon_upper = {format_number(best['epsilon_upper'], 6, 'up')} ({best['label']})"
    if args.risk:
        from .risk import risk_section

        payload["risk"], line = risk_section(dpsgd_event(sigma, q, steps), "pld" if steps <= DPSGD_PLD_MAX_STEPS else "rdp", relation)
        text += "\n" + line
    if args.plot:
        _dpsgd_plot(args.plot, sigma, q, steps, delta, relation)
        payload["plot"] = args.plot
        text += f"\nplot written to {args.plot}"
    return _emit_plain(args, payload, text)


def _emit_plain(args: argparse.Namespace, payload: dict[str, Any], text: str) -> int:
    print(to_json(payload) if args.json else text)
    return 0


def vars_subset(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names}


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    parser.add_argument("--symbolic", action="store_true", help="also print the theorem's formula (pretty and LaTeX)")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``budget`` and its sub-commands to the top-level parser."""
    budget = subparsers.add_parser("budget", help="privacy budgets from the composition theorems (upper bounds)",
                                   description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = budget.add_subparsers(dest="budget_command", metavar="{compare,basic,advanced,optimal,amplify,per-step,dpsgd,calibrate}", required=True)

    p = commands.add_parser("compare", help="basic / advanced / optimal (and amplified) side by side")
    p.add_argument("--epsilon", type=float, required=True, help="per-step epsilon")
    p.add_argument("-k", "--k", type=_count, required=True, help="number of steps")
    p.add_argument("--target-delta", type=float, default=None, help="total delta of the composition")
    p.add_argument("--delta", type=float, default=None,
                   help="per-step delta (default 0); deprecated: without --target-delta it is read as the total delta")
    p.add_argument("--step-delta", type=float, default=None, help="deprecated spelling of --delta (per-step delta)")
    p.add_argument("--sampling-probability", type=float, default=None, help="also show each step on a Poisson q-subsample")
    _common(p)
    p.set_defaults(handler=_compare)

    p = commands.add_parser("basic", help="basic composition: sum of epsilons and deltas")
    p.add_argument("--epsilon", type=float, nargs="+", required=True, help="per-step epsilon(s); several for heterogeneous steps")
    p.add_argument("-k", "--k", type=_count, default=None, help="repeat a single --epsilon k times (default 1; O(1) for any k)")
    p.add_argument("--delta", type=float, default=0.0, help="per-step delta (default 0)")
    _common(p)
    add_risk_flag(p)
    p.set_defaults(handler=_basic)

    p = commands.add_parser("advanced", help="advanced composition (Dwork-Rothblum-Vadhan)")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("-k", "--k", type=_count, required=True)
    p.add_argument("--delta-slack", type=float, default=None, help="the slack delta' of the theorem (or give --target-delta)")
    p.add_argument("--target-delta", type=float, default=None, help="total delta; the slack is target-delta - k * delta")
    p.add_argument("--delta", type=float, default=0.0, help="per-step delta (default 0)")
    _common(p)
    add_risk_flag(p)
    p.set_defaults(handler=_advanced)

    p = commands.add_parser("optimal", help="exact optimal composition (Kairouz-Oh-Viswanath)")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("-k", "--k", type=_count, required=True, help="number of steps (at most 1e12)")
    p.add_argument("--target-delta", type=float, required=True, help="total delta")
    p.add_argument("--delta", type=float, default=0.0, help="per-step delta (default 0)")
    _common(p)
    add_risk_flag(p)
    p.set_defaults(handler=_optimal)

    p = commands.add_parser("amplify", help="amplification by subsampling")
    p.add_argument("--epsilon", type=float, required=True)
    p.add_argument("--delta", type=float, default=0.0, help="per-step delta of the mechanism (default 0)")
    p.add_argument("--sampling-probability", type=float, required=True)
    p.add_argument("--scheme", choices=["poisson", "without_replacement"], default="poisson")
    p.add_argument("--theorem", choices=["tight", "secrecy_of_sample", "secrecy_of_sample_one_sided"], default="tight")
    _common(p)
    add_risk_flag(p)
    p.set_defaults(handler=_amplify)

    p = commands.add_parser("per-step", help="largest per-step epsilon for a total budget")
    p.add_argument("--target-epsilon", type=float, required=True)
    p.add_argument("--target-delta", type=float, required=True, help="total delta")
    p.add_argument("-k", "--k", type=_count, required=True, help="number of steps (theorem optimal: at most 1e9)")
    p.add_argument("--theorem", choices=["all", *PER_STEP_THEOREMS], default="all")
    p.add_argument("--sampling-probability", type=float, default=None)
    _common(p)
    p.set_defaults(handler=_per_step)

    p = commands.add_parser("dpsgd", help="DP-SGD epsilon: PLD, RDP and closed forms side by side (or the noise for a target)")
    noise = p.add_mutually_exclusive_group(required=True)
    noise.add_argument("--noise-multiplier", type=float, help="noise standard deviation / clipping norm")
    noise.add_argument("--target-epsilon", type=float, help="print the noise multiplier each accountant needs instead")
    p.add_argument("--sampling-probability", type=float, required=True, help="Poisson sampling probability q")
    p.add_argument("--steps", type=_count, required=True, help="number of steps")
    p.add_argument("--target-delta", type=float, default=None, help="total delta of the training run")
    p.add_argument("--delta", type=float, default=None, help="deprecated spelling of --target-delta (total delta)")
    p.add_argument("--neighbouring", choices=["add_remove", "replace_one"], default="add_remove")
    p.add_argument("--plot", metavar="FILE.png", default=None, help="also write a PNG of epsilon against steps")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_risk_flag(p)
    p.set_defaults(handler=_dpsgd)

    from .calibrate import register as register_calibrate  # `budget calibrate`: any parameter of any tree

    register_calibrate(commands)
