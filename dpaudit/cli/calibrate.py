"""``dpaudit budget calibrate``: the parameter of any event tree that meets a privacy target.

The tree is written as its own ``repr`` with ``{x}`` where the parameter goes, and parsed safely (never
evaluated as Python):

    dpaudit budget calibrate --event "SelfComposed(PoissonSampled(0.01, Gaussian({x})), 1000)" \\
        --target-epsilon 3 --target-delta 1e-5 --bounds 0.3 10 --direction smallest

Attack-risk targets replace or join (epsilon, delta): ``--max-tpr-at-fpr 0.05 0.01`` (no membership attack
with false-positive rate 0.01 has a true-positive rate above 0.05) and ``--max-advantage``; ``--risk``
prints the calibrated tree's attack risk at FPR 0.001, 0.01, 0.1.

``--direction smallest`` for parameters that make the tree more private as they grow (noise multipliers),
``largest`` for those that make it less private (sampling rates; step counts with ``--integer``). The
printed value meets the target (its accountant epsilon, an upper bound, is <= the target); exit 2 when no
value in the bounds does, or on a malformed event or argument.
"""

from __future__ import annotations

import argparse
from typing import Any

from .risk import add_risk_flag

__all__ = ["register"]

PLACEHOLDER = "{x}"


def _make_event(template: str, integer: bool):
    from ..errors import InvalidArgument
    from ..events_parser import parse_event

    if PLACEHOLDER not in template:
        raise InvalidArgument("event", f"event={template!r} must contain the placeholder {PLACEHOLDER} for the parameter")

    def make(value: Any):
        text = template.replace(PLACEHOLDER, str(int(value)) if integer else repr(float(value)))
        return parse_event(text, "event")

    make(2 if integer else 1.0)  # a malformed template fails here, before any search, naming its column
    return make


def _calibrate(args: argparse.Namespace) -> int:
    from ..accountant import calibrate
    from ..reporting import to_json

    make = _make_event(args.event, args.integer)
    result = calibrate(make, args.target_epsilon, args.target_delta, bounds=tuple(args.bounds),
                       direction=args.direction, accountant=args.accountant, neighbouring=args.neighbouring,
                       integer=args.integer, tolerance=args.tolerance,
                       max_tpr_at_fpr=tuple(args.max_tpr_at_fpr) if args.max_tpr_at_fpr else None,
                       max_advantage=args.max_advantage)
    payload = {"command": "budget calibrate", "event": args.event, **result.to_dict(),
               "note": "value meets every target: epsilon_upper, tpr_upper and advantage_upper are upper bounds "
                       "(rounded up) within their targets"}
    met = []
    if result.epsilon is not None:
        met.append(f"epsilon_upper = {result.epsilon:.6g} <= {args.target_epsilon:g} at delta = {args.target_delta:g}")
    if result.tpr_upper is not None:
        met.append(f"TPR at FPR {result.max_tpr_at_fpr[1]:g} <= {result.tpr_upper:.6g} <= {result.max_tpr_at_fpr[0]:g}")
    if result.advantage_upper is not None:
        met.append(f"advantage <= {result.advantage_upper:.6g} <= {result.max_advantage:g}")
    lines = []
    if args.risk:
        from .risk import risk_section

        payload["risk"], line = risk_section(make(result.value), args.accountant, args.neighbouring)
        lines.append(line)
    if args.json:
        print(to_json(payload))
        return 0
    value = result.value if args.integer else f"{result.value:.6g}"
    unsafe = result.bracket[1]
    print(f"{args.event.replace(PLACEHOLDER, str(value))}\n"
          f"x = {value}  ({'; '.join(met)}, {args.accountant}, {args.neighbouring})\n"
          + (f"the next value tried in the unsafe direction, {unsafe:.6g}, does not meet the target; "
             f"{result.evaluations} evaluations" if unsafe is not None else "the whole bracket meets the target")
          + "".join(f"\n{line}" for line in lines))
    return 0


def register(commands: argparse._SubParsersAction) -> None:
    """Add ``calibrate`` to the ``budget`` sub-commands."""
    p = commands.add_parser("calibrate", help="the parameter of an event tree that meets (epsilon, delta) or an attack-risk target",
                            description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--event", required=True, help=f"event tree as its repr, with {PLACEHOLDER} for the parameter")
    p.add_argument("--target-epsilon", type=float, default=None, help="with --target-delta (or give a risk target)")
    p.add_argument("--target-delta", type=float, default=None)
    p.add_argument("--max-tpr-at-fpr", type=float, nargs=2, metavar=("TPR", "FPR"), default=None,
                   help="attack-risk target: any membership attack's TPR at this FPR at most TPR")
    p.add_argument("--max-advantage", type=float, default=None, help="attack-risk target: any attack's TPR - FPR at most this")
    p.add_argument("--bounds", type=float, nargs=2, metavar=("LOW", "HIGH"), required=True, help="bracket searched")
    p.add_argument("--direction", choices=["smallest", "largest"], default="smallest",
                   help="smallest: more private as x grows (noise); largest: less private as x grows (q, steps)")
    p.add_argument("--integer", action="store_true", help="integer parameter (e.g. steps)")
    p.add_argument("--accountant", choices=["pld", "rdp", "best"], default="pld")
    p.add_argument("--neighbouring", choices=["add_remove", "replace_one"], default="add_remove")
    p.add_argument("--tolerance", type=float, default=1e-4, help="relative width of the final bracket")
    p.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    add_risk_flag(p)
    p.set_defaults(handler=_calibrate)
