"""``dpaudit audit``: certify a lower bound on one mechanism's epsilon (exit 1 when it exceeds the claim)."""

from __future__ import annotations

import argparse

from .._isolation import phase
from .._loading import load_object, load_pairs
from ..errors import InvalidArgument
from ._output import capped_workers, emit, json_argument, positive_seconds, sample_count

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    with phase(f"auditing mechanism {args.mechanism!r}"):
        return _audit(args)


def _audit(args: argparse.Namespace) -> int:
    from ..auditor import audit, search_pairs, statdp_query_pairs

    from ..gate.read_only_inputs import read_only_inputs

    mechanism = read_only_inputs(load_object(args.mechanism, "mechanism"), f"mechanism {args.mechanism}")
    args.workers = capped_workers(args.workers)
    common = dict(epsilon=args.epsilon, delta=0.0 if args.delta is None else args.delta, samples=args.samples,
                  confidence_level=args.confidence_level, seed=args.seed, workers=args.workers, scheduler=args.scheduler,
                  sequential=not args.fixed_budget)
    given = [flag for flag, value in (("--d/--d-prime", args.d is not None or args.d_prime is not None),
                                      ("--neighbours", args.neighbours), ("--statdp", args.statdp)) if value]
    if len(given) > 1:
        raise InvalidArgument("d", f"{' and '.join(given)} conflict: give one way of naming the pair(s)")
    if args.curve:
        return _run_curve(args, mechanism)
    if args.epsilon is None:
        raise InvalidArgument("epsilon", "--epsilon (the claimed epsilon) is required unless --curve is given")
    if args.neighbours or args.statdp:
        pairs = load_pairs(args.neighbours) if args.neighbours else statdp_query_pairs(args.statdp)
        found = search_pairs(mechanism, pairs, top=args.top, **common)
        result, payload = found.result, found.to_dict()
        pair_text = f"pair d={found.pair[0]!r} d_prime={found.pair[1]!r} (best of {len(pairs)})"
    else:
        if args.d is None or args.d_prime is None:
            raise InvalidArgument("d", "give --d and --d-prime, or --neighbours module:pairs, or --statdp LENGTH")
        d, d_prime = json_argument(args.d, "d"), json_argument(args.d_prime, "d_prime")
        result = audit(mechanism, d, d_prime, **common)
        payload, pair_text = result.to_dict(), f"pair d={d!r} d_prime={d_prime!r}"
    text = f"{args.mechanism}: {pair_text}\n{result.summary()}\n(epsilon_lower is a lower bound holding with the stated confidence)"
    emit(payload, text, args.json)
    return 1 if result.violated else 0


def _run_curve(args: argparse.Namespace, mechanism: object) -> int:
    """``--curve``: test the whole trade-off curve (claim: --mu, else --epsilon/--delta, else the mechanism's
    .event); exit 1 when a certified point lies below it."""
    from ..auditor import audit_curve
    from ..guarantee import Guarantee

    if args.neighbours or args.statdp or args.d is None or args.d_prime is None:
        raise InvalidArgument("curve", "--curve needs one pair: give --d and --d-prime")
    if args.mu is not None and args.epsilon is not None:
        raise InvalidArgument("mu", "--mu and --epsilon conflict: give one claim")
    claim = args.mu if args.mu is not None else (
        Guarantee(args.epsilon, 0.0 if args.delta is None else args.delta) if args.epsilon is not None else None)
    d, d_prime = json_argument(args.d, "d"), json_argument(args.d_prime, "d_prime")
    result = audit_curve(mechanism, d, d_prime, claim=claim, samples=args.samples, confidence_level=args.confidence_level,
                         seed=args.seed, delta=args.delta, workers=args.workers, scheduler=getattr(args, "scheduler", None),
                         sequential=not args.fixed_budget)
    text = (f"{args.mechanism}: pair d={d!r} d_prime={d_prime!r}\n{result.summary()}\n"
            "(mu_lower and epsilon_lower are lower bounds holding with the stated confidence)")
    emit(result.to_dict(), text, args.json)
    return 1 if result.violated else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("audit", help="certify an epsilon lower bound for a mechanism (exit 1 if above the claim)",
                              description=__doc__)
    p.add_argument("mechanism", help="package.module:callable, called as mechanism(data, size, rng)")
    p.add_argument("--d", help="first input, as JSON")
    p.add_argument("--d-prime", help="adjacent input, as JSON")
    p.add_argument("--neighbours", help="package.module:pairs, a list of (d, d_prime) pairs (or a callable returning one)")
    p.add_argument("--statdp", type=int, metavar="LENGTH", help="search the StatDP query-vector pairs of this length")
    p.add_argument("--top", type=int, default=3, help="pairs certified after screening (default 3)")
    p.add_argument("--epsilon", type=float, default=None, help="claimed epsilon (required without --curve)")
    p.add_argument("--delta", type=float, default=None, help="claimed delta (default 0)")
    p.add_argument("--curve", action="store_true", help="audit the whole trade-off curve against the claim: --mu, else "
                   "(--epsilon, --delta), else the mechanism's .event (exit 1 if a certified point lies below it)")
    p.add_argument("--mu", type=float, default=None, help="with --curve: claimed Gaussian-DP mu")
    p.add_argument("--samples", type=sample_count, default=1_000_000, help="runs per input (default 10^6; 1e6 and 1_000_000 work)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, default=None, help="processes drawing samples, this one included (default: all cores; at most 4 per core)")
    p.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help="run the blocks on a Dask cluster, e.g. tcp://host:8786 (default: $DPAUDIT_SCHEDULER; same numbers as locally)")
    p.add_argument("--fixed-budget", action="store_true",
                   help="draw all --samples (default: certify in looks, stop early only on a certified violation)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time limit of the whole command, imports included (default: none; an import alone at most 300 s)")
    p.set_defaults(handler=_run)
