"""``dpaudit scores FILE``: certified epsilon (and mu) lower bounds from a training job's score file.

Many runs (default): one row per training run, its score (higher = more evidence the canary was in) and
whether the canary was in it (0/1) -> :func:`dpaudit.audit_scores`. ``--one-run``: one row per canary of
one training run -> :func:`dpaudit.audit_one_run`; with ``--method fdp`` also the f-DP test of Mahloujifar
et al. 2024 against a claimed curve (``--claim-mu MU`` or ``--claim-event EVENT``). Exit 1 when the bound
exceeds ``--epsilon`` or the claimed curve is rejected.
"""

from __future__ import annotations

import argparse

from ._output import emit, expand_paths

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from ..auditor.score_files import read_score_file
    from ..auditor import audit_one_run, audit_scores
    from ..errors import ConfigError, InvalidArgument

    expand_paths(args, "file")
    claim = _claim(args)
    if (args.method != "steinke" or claim is not None) and not args.one_run:
        raise InvalidArgument("method", "--method fdp, --claim-mu and --claim-event audit one run: add --one-run")
    if claim is not None and args.method != "fdp":
        raise InvalidArgument("claim", "--claim-mu / --claim-event are tested by --method fdp")
    try:
        data = read_score_file(args.file, args.score_column, args.label_column)
    except FileNotFoundError:  # like a missing config: a usage error (exit 2), not an I/O failure
        raise ConfigError(f"{args.file}: score file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{args.file}: is a directory, expected a score file") from None
    if args.delta is None:
        args.delta = 0.0 if args.one_run else 1e-5
    if args.one_run:
        result = audit_one_run(data.scores, data.included, delta=args.delta, confidence_level=args.confidence_level,
                               epsilon=args.epsilon, seed=args.seed, method=args.method, claim=claim)
    else:
        for part, what in ((data.scores_with, "with the canary (1)"), (data.scores_without, "without it (0)")):
            if part.size < 2:
                raise InvalidArgument("file", f"{args.file}: column {args.label_column!r}: {part.size} runs {what}; at "
                                              "least 2 of each are needed (or use --one-run)")
        result = audit_scores(data.scores_with, data.scores_without, epsilon=args.epsilon, delta=args.delta,
                              confidence_level=args.confidence_level, seed=args.seed)
    payload = {"file": args.file, **result.to_dict()}
    emit(payload, result.summary(), args.json)
    return 1 if result.violated else 0


def _claim(args: argparse.Namespace) -> object:
    """The claimed curve of --claim-mu (a GDP mu) or --claim-event (an event, parsed, never evaluated)."""
    from ..errors import InvalidArgument

    if args.claim_mu is not None and args.claim_event is not None:
        raise InvalidArgument("claim", "give one of --claim-mu or --claim-event, not both")
    if args.claim_event is not None:
        from ..events_parser import EventParseError, parse_event

        try:
            return parse_event(args.claim_event, "claim-event")
        except EventParseError as exc:
            raise InvalidArgument("claim-event", f"--claim-event {args.claim_event!r}: {exc}") from None
    return args.claim_mu


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("scores", help="audit a training job's score file (exit 1 if epsilon is exceeded)",
                              description=__doc__)
    p.add_argument("file", help=".csv (header row), .npy ((n, 2): score, included), .npz (score/included or "
                                "scores_with/scores_without) or .parquet (needs pyarrow)")
    p.add_argument("--epsilon", type=float, default=None, help="the claimed epsilon at --delta (exit 1 if exceeded)")
    p.add_argument("--delta", type=float, default=None, help="delta (default 1e-5; 0 with --one-run)")
    p.add_argument("--one-run", action="store_true", help="one training run, one row per canary (Steinke et al. 2023)")
    p.add_argument("--method", choices=("steinke", "fdp"), default="steinke",
                   help="with --one-run: steinke (Steinke et al. 2023) or fdp (also Mahloujifar et al. 2024's f-DP test)")
    p.add_argument("--claim-mu", type=float, default=None, help="with --method fdp: the claimed GDP mu (exit 1 if rejected)")
    p.add_argument("--claim-event", default=None,
                   help='with --method fdp: a claimed event, e.g. "SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)"; '
                        "its PLD trade-off curve is tested (exit 1 if rejected)")
    p.add_argument("--confidence-level", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0, help="seeds the selection split (many runs) or the order of tied scores (--one-run)")
    p.add_argument("--score-column", default="score")
    p.add_argument("--label-column", default="included")
    p.add_argument("--fixed-budget", action="store_true",
                   help="kept for older scripts: every run in the file is always used")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(handler=_run)
