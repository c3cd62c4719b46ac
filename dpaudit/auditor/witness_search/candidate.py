"""The candidate event: what every witness family hands the selector (an event, a direction, a prediction).

Also the kinds of event the selector tells apart (half-lines, intervals, atom sets).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..witness import Column, DerivedPatternSet, PatternSet, PooledPair, ScoreRegion, Witness

__all__ = ["Candidate", "rank_key", "is_half_line", "is_score_half_line", "is_interval", "is_atom_family", "is_pooled"]


@dataclass(frozen=True)
class Candidate:
    """An event, the direction it separates (forward: P = under d, Q = under d_prime), and its predicted bound.

    ``companion``: another event of the same family, certified beside this one when this one is the best
    candidate (a threshold of the same score chosen another way; see ``regions.held_out_regions``).
    ``error``: the standard error of the event's ln(p / q) estimate behind ``predicted``, when known.
    ``outlook``: the bound predicted with less selection shrinkage (``prediction.OUTLOOK_Z``), when known; it ranks candidates whose conservative prediction certifies nothing (``selector.rank_key``)."""

    witness: Witness
    forward: bool
    predicted: float
    companion: Witness | None = None
    error: float = 0.0
    outlook: float = -math.inf
    one_sided: bool = False


def rank_key(candidate: Candidate) -> tuple[int, float, float]:
    """Sort key (largest first): candidates predicted to certify a positive bound by their prediction; below them,
    those predicted to certify nothing by their ``outlook`` (predicted with less shrinkage, when known), then their
    prediction. Among predictions <= 0 the largest belongs to events holding almost every output (their Wilson
    shrinkage is the smallest), which certify 0; the outlook ranks what certification could resolve."""
    if candidate.predicted > 0:
        return (1, candidate.predicted, 0.0)
    return (0, candidate.outlook, candidate.predicted)


def is_pooled(witness: Witness) -> bool:
    """A pooled pair: an event of each direction certified as one (``witness.PooledPair``)."""
    return isinstance(witness, PooledPair)


def is_half_line(witness: Witness) -> bool:
    """A half-line of one output coordinate."""
    return (isinstance(witness, ScoreRegion) and isinstance(witness.projection, Column)
            and (math.isinf(witness.low) or math.isinf(witness.high)))


def is_score_half_line(witness: Witness) -> bool:
    """A half-line of any score (a coordinate or a learned score)."""
    return isinstance(witness, ScoreRegion) and (math.isinf(witness.low) or math.isinf(witness.high))


def is_interval(witness: Witness) -> bool:
    """A bounded interval of any score."""
    return isinstance(witness, ScoreRegion) and math.isfinite(witness.low) and math.isfinite(witness.high)


def is_atom_family(witness: Witness) -> bool:
    """An event chosen as a union of discrete outcomes (atoms or structural feature values)."""
    return isinstance(witness, (PatternSet, DerivedPatternSet))
