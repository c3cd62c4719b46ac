"""Witness family: half-lines and intervals of each coordinate and of a logistic score, on the whole batch.

The magnitude search: thresholds of each coordinate (up to MAX_SCORE_COLUMNS) and of the one-hot logistic
score, chosen and predicted on the whole selection batch (Wilson shrinkage at SELECTION_Z, a threshold
grid refined in the tails for delta > 0); with more than MAX_ONE_HOT_ATOMS atoms the logistic score is fit
on encoded atoms on the build half and its regions predicted on the held-out half. A half-line of a scalar
whose selection values are all atoms is stated as the set of atoms it contains.

:func:`magnitude_search` is the whole search as it was before the other families existed (atoms and
half-lines ranked on the same selection batch), kept for the benchmark that compares against it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from ..witness import Column, ColumnAtoms, PatternSet, PooledPair, Witness
from .atom_sets import atom_count, find_atoms, pattern_counts
from .batch import SelectionBatch
from .candidate import Candidate, is_half_line
from .linear_scores import MAX_SCORE_COLUMNS, encoded_logistic, score_projections
from .prediction import WholeBatchPrediction
from .regions import held_out_regions, region_candidates

__all__ = ["Magnitude", "magnitude_search", "MAX_ONE_HOT_ATOMS"]


MAX_ONE_HOT_ATOMS = 64  # beyond this many atoms the logistic score encodes atoms by their log ratio


class Magnitude:
    """Half-lines and intervals of the coordinates and of the logistic score."""

    name = "magnitude half-lines and intervals"
    costly = False

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        a, b, atoms = batch.a, batch.b, batch.atoms
        found: list[Candidate] = []
        discrete = a.shape[1] == 1 and bool((atoms.codes(a) >= 0).all() and (atoms.codes(b) >= 0).all())
        if atom_count(atoms) <= MAX_ONE_HOT_ATOMS:  # coordinates and the one-hot logistic score
            projections = score_projections(atoms, a, b, batch.rng)
        else:  # many atoms: coordinates here; the encoded logistic score is fit on the build half
            projections = [Column(j, a.shape[1]) for j in range(min(a.shape[1], MAX_SCORE_COLUMNS))]
            learned = encoded_logistic(batch.build_atoms, batch.build[0], batch.build[1], batch.rng)
            if learned is not None:
                found += held_out_regions(learned, batch.build, batch.held, batch.held_out)
        for projection in projections:  # chosen and predicted on the whole batch
            regions = region_candidates(projection, a, b, batch.whole_batch, tails=batch.delta > 0, pool=True)
            found += [_as_outcomes(c, atoms) for c in regions] if discrete else regions
        return found


def _as_outcomes(candidate: Candidate, atoms: ColumnAtoms) -> Candidate:
    """A half-line of a scalar output whose selection values are all atoms, stated as the set of atoms it
    contains (the same event on every value seen; a discrete event reads as a set of outcomes); a pooled pair of
    half-lines, part by part."""
    witness = candidate.witness
    if isinstance(witness, PooledPair):
        parts = [_outcomes(part, atoms) for part in witness.parts]
        return replace(candidate, witness=PooledPair(*parts))
    outcomes = _outcomes(witness, atoms)
    return candidate if outcomes is witness else Candidate(outcomes, candidate.forward, candidate.predicted)


def _outcomes(witness: Witness, atoms: ColumnAtoms) -> Witness:
    """A half-line as the set of the atoms it contains (itself when it contains none, or is no half-line)."""
    if not is_half_line(witness):
        return witness
    values = atoms.values[0]
    inside = np.flatnonzero((values >= witness.low) & (values <= witness.high))
    return witness if inside.size == 0 else PatternSet(atoms, inside.astype(np.int32)[:, None])


def _best_prefix(count_a: np.ndarray, count_b: np.ndarray, context: WholeBatchPrediction) -> tuple[int, float, np.ndarray]:
    """Sort atoms by ratio a/b, score every prefix union; return (length, predicted, order)."""
    order = np.argsort(-((count_a + 0.5) / (count_b + 0.5)), kind="stable")
    prefix_a, prefix_b = np.cumsum(count_a[order]), np.cumsum(count_b[order])
    scores = context.predict(prefix_a, prefix_b)
    best = int(np.argmax(scores))
    return best + 1, float(scores[best]), order


def _pattern_candidates(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, context: WholeBatchPrediction) -> list[Candidate]:
    patterns, count_a, count_b = pattern_counts(atoms, a, b)
    if patterns.shape[0] < 2:
        return []
    candidates = []
    for forward, (numerator, denominator) in ((True, (count_a, count_b)), (False, (count_b, count_a))):
        length, predicted, order = _best_prefix(numerator, denominator, context)
        candidates.append(Candidate(PatternSet(atoms, patterns[order[:length]]), forward, predicted))
    return candidates


def magnitude_search(a: np.ndarray, b: np.ndarray, *, n_certify: int, z_certify: float, delta: float,
                     rng: np.random.Generator, streamed=None) -> list[Candidate]:
    """The magnitude-only search (atoms and half-lines ranked on the same selection batch), kept for
    comparison (``streamed`` tails are not searched): all candidate events for ``a`` (under d) and ``b`` (under d_prime), best first."""
    context = WholeBatchPrediction(min(a.shape[0], b.shape[0]), n_certify, z_certify, delta)
    atoms = find_atoms(np.concatenate([a, b]))
    candidates = _pattern_candidates(atoms, a, b, context)
    projections = score_projections(atoms, a, b, rng)
    for projection in projections:
        candidates += region_candidates(projection, a, b, context, tails=False)
    candidates = [c for c in candidates if c.predicted > -math.inf]
    return sorted(candidates, key=lambda c: -c.predicted)
