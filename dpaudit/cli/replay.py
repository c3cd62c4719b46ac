"""``dpaudit replay``: record/replay a mechanism on adjacent inputs (exit 1 when a measured shift exceeds the claim).

Exit codes: 0 no finding (including a control-flow divergence, which is reported for the statistical
audit, and pairs the replay cannot decide); 1 a violation; 2 usage error; 3 the mechanism cannot be
instrumented or crashed.
"""

from __future__ import annotations

import argparse

from .._loading import load_object, load_pairs
from ..errors import InvalidArgument
from ..events_parser import parse_event
from ._output import emit, json_argument

__all__ = ["register"]


def _pairs(args: argparse.Namespace) -> list:
    from ..replay import generated_pairs

    given = [flag for flag, value in (("--d/--d-prime", args.d is not None or args.d_prime is not None),
                                      ("--neighbours", args.neighbours), ("--statdp", args.statdp),
                                      ("--datasets", args.datasets)) if value]
    if len(given) > 1:
        raise InvalidArgument("d", f"{' and '.join(given)} conflict: give one way of naming the pair(s)")
    if args.neighbours:
        return load_pairs(args.neighbours)
    if args.statdp:
        return generated_pairs("statdp", args.count, length=args.statdp, seed=args.seed)
    if args.datasets:
        return generated_pairs("datasets", args.count, length=args.datasets, neighbouring=args.neighbouring,
                               seed=args.seed)
    if args.d is None or args.d_prime is None:
        raise InvalidArgument("d", "give --d and --d-prime, or --neighbours module:pairs, --statdp LENGTH or "
                                   "--datasets MAX_RECORDS")
    return [(json_argument(args.d, "d"), json_argument(args.d_prime, "d_prime"))]


def _run(args: argparse.Namespace) -> int:
    from ..replay import replay_pairs

    mechanism = load_object(args.mechanism, "mechanism")
    if args.event is not None and args.epsilon is not None:
        raise InvalidArgument("event", "--event and --epsilon conflict: give one claim")
    event = parse_event(args.event) if args.event is not None else None
    pairs = _pairs(args)
    result = replay_pairs(mechanism, pairs, epsilon=args.epsilon, delta=args.delta, event=event, seed=args.seed,
                          seeds=args.seeds)
    text = (f"{args.mechanism}: {result.summary()}\n(epsilon_lower is a lower bound implied by the measured shift; "
            "a divergence or an undecided pair is no finding: audit those statistically with dpaudit audit)")
    emit(result.to_dict(), text, args.json)
    return 1 if result.violated else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("replay", help="record/replay a mechanism on adjacent inputs: measured vs declared "
                              "sensitivity, data-dependent draws (exit 1 on a violation)", description=__doc__)
    p.add_argument("mechanism", help="package.module:callable, called as mechanism(data, 1, rng)")
    p.add_argument("--d", help="first input, as JSON")
    p.add_argument("--d-prime", help="adjacent input, as JSON")
    p.add_argument("--neighbours", help="package.module:pairs, a list of (d, d_prime) pairs (or a callable returning one)")
    p.add_argument("--statdp", type=int, metavar="LENGTH", help="the StatDP query-vector patterns of this length plus "
                   "--count generated vectors")
    p.add_argument("--datasets", type=int, metavar="MAX_RECORDS", help="--count hypothesis-generated datasets of up "
                   "to this many records and their neighbours (--neighbouring)")
    p.add_argument("--neighbouring", choices=("add_remove", "replace_one"), default="add_remove")
    p.add_argument("--count", type=int, default=100, help="generated pairs (default 100)")
    p.add_argument("--epsilon", type=float, default=None, help="claimed epsilon (default: the mechanism's .privacy)")
    p.add_argument("--delta", type=float, default=None, help="claimed delta (default 0)")
    p.add_argument("--event", default=None, help='claimed privacy event instead, e.g. "Gaussian(2.0)"')
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=3, help="independent randomness draws per pair (default 3, >= 2)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(handler=_run)
