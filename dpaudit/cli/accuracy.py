"""``dpaudit accuracy``: test a mechanism's (alpha, beta)-accuracy theorem statistically (exit 1 if rejected)."""

from __future__ import annotations

import argparse

from .._isolation import phase
from .._loading import load_object
from ..errors import InvalidArgument
from ._output import emit, json_argument, positive_seconds, sample_count

__all__ = ["register"]


def _example(name: str):
    from ..mechanisms import examples

    found = {example.name: example for example in examples()}
    if name not in found:
        raise InvalidArgument("example", f"example={name!r} is not one of {sorted(found)}")
    return found[name]


def _run(args: argparse.Namespace) -> int:
    with phase(f"checking the accuracy of {args.mechanism or args.example!r}"):
        return _accuracy(args)


def _accuracy(args: argparse.Namespace) -> int:
    from ..auditor import check_accuracy

    if (args.mechanism is None) == (args.example is None):
        raise InvalidArgument("mechanism", "give a mechanism as package.module:callable, or --example NAME")
    if args.example:
        example = _example(args.example)
        mechanism, data = example.mechanism, example.data
    else:
        mechanism = load_object(args.mechanism, "mechanism")
        data = None
    if args.data is not None:
        data = json_argument(args.data, "data")
    if data is None:
        raise InvalidArgument("data", "give --data JSON (or use --example)")
    from ..gate.read_only_inputs import read_only_inputs

    error = load_object(args.error, "error") if args.error else None
    result = check_accuracy(read_only_inputs(mechanism, f"mechanism {args.mechanism or args.example}"), data, alpha=args.alpha, beta=args.beta, error=error, samples=args.samples,
                            confidence_level=args.confidence_level, seed=args.seed, name=args.example or args.mechanism)
    emit(result.to_dict(), result.summary(), args.json)
    return 1 if result.holds is False else 0


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("accuracy", help="test an (alpha, beta)-accuracy theorem (exit 1 if rejected)", description=__doc__)
    p.add_argument("mechanism", nargs="?", help="package.module:callable (with .accuracy and .error, or give --alpha/--error)")
    p.add_argument("--example", help="one of dpaudit.mechanisms.examples() by name")
    p.add_argument("--data", help="input data as JSON (default: the example's data)")
    p.add_argument("--alpha", type=float, default=None, help="claimed error bound (default: mechanism.accuracy(beta))")
    p.add_argument("--beta", type=float, default=0.05)
    p.add_argument("--error", help="package.module:function error(data, outputs) (default: mechanism.error)")
    p.add_argument("--samples", type=sample_count, default=100_000, help="runs (default 10^5; 1e5 works)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=positive_seconds, default=None, metavar="SECONDS",
                   help="time limit of the whole command, imports included (default: none; an import alone at most 300 s)")
    p.set_defaults(handler=_run)
