"""Witness family: exact atoms and structural features of the outputs, each a discrete outcome.

Exact atoms (values seen repeatedly, NaN and +-inf included) and *structural features* of each real
coordinate, each treated as a discrete outcome: the class of the value (finite, +0, -0, NaN, +inf, -inf),
its residue modulo a lattice detected in the outputs, its binary exponent and its lowest mantissa bits
(Mironov 2012, "On significance of the least significant bits for differential privacy"); a dtype column
added by the sampler (``outcomes.append_dtype_column``) is an ordinary atom. Atom orders are built on the
build half and union lengths predicted on the held-out half (``atom_sets.held_out_atom_sets``). Exponent
and mantissa events are kept only when one-sided on every selection row (:func:`_support_leak`).
"""

from __future__ import annotations

import numpy as np

from ..witness import SPECIAL_CODES, ColumnAtoms, Derived, DerivedPatternSet, PatternSet
from .atom_sets import ZERO_MIN, find_atoms, held_out_atom_sets
from .batch import SelectionBatch
from .candidate import Candidate
from .prediction import HeldOutPrediction

__all__ = ["AtomsAndStructure", "detect_grid", "structural_features", "special_support_leaks", "MAX_STRUCTURE_COLUMNS"]


MAX_STRUCTURE_COLUMNS = 16
MAX_BITS_COLUMNS = 2  # exponent and mantissa features: the first coordinates only (one implementation per vector)
BITS_ROWS = 10_000  # rows per input and half searched for exponent / mantissa features
GRID_TOLERANCE = 1e-6
MIN_GRID_SHARE = 0.9
MANTISSA_BITS = 8
SPECIAL_ZERO_MIN = 3  # the same for NaN, +-inf and -0: few such events exist, so chance splits are rare
ONE_SIDED_MIN = 2  # whole-batch hits of a one-sided value class before it is certified beside the choice (a chance
# split of a class both inputs produce costs a share of the confidence, never validity)


class AtomsAndStructure:
    """Atom sets of the raw outputs, then of every structural feature (:func:`structural_features`)."""

    name = "atoms and structural features"
    costly = False

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        build_atoms = batch.build_atoms
        found = held_out_atom_sets(build_atoms, batch.build, batch.held, batch.held_out,
                                   lambda patterns: PatternSet(build_atoms, patterns))
        for feature in structural_features(*batch.build):
            found += _feature_candidates(feature, batch.build, batch.held, batch.held_out, (batch.a, batch.b))
        found += special_support_leaks(batch.a, batch.b, batch.held_out)
        return found


def special_support_leaks(a: np.ndarray, b: np.ndarray, rank: HeldOutPrediction) -> list[Candidate]:
    """Per coordinate (up to MAX_STRUCTURE_COLUMNS), each value class (NaN, +inf, -inf, -0) seen at least
    ONE_SIDED_MIN times under one input and never under the other in the whole selection batch, as a
    one-sided candidate (``Candidate.one_sided``), predicted by the zero-count rule on the whole batch.

    A rare data-dependent branch (NaN returned with probability 5e-5) leaves ~5 such outputs in 10^5 selection
    rows, split between the build and held-out halves: too few for the held-out atom sets to order and predict
    (it may not even be an atom of the build half), while 45 hits against none in 9*10^5 certification samples
    certify epsilon ~ 2.3. The selector certifies the best one-sided candidate beside its choice."""
    width = a.shape[1]
    found: list[Candidate] = []
    n = min(a.shape[0], b.shape[0])
    if n == 0:
        return found
    whole = HeldOutPrediction(n, rank.n_certify, rank.z_certify, rank.delta, n)
    for j in range(min(width, MAX_STRUCTURE_COLUMNS)):
        feature = Derived("special", j, width)
        classes_a, classes_b = feature.score(a), feature.score(b)
        for code in (SPECIAL_CODES["nan"], SPECIAL_CODES["+inf"], SPECIAL_CODES["-inf"], SPECIAL_CODES["-0"]):
            hits_a, hits_b = int(np.count_nonzero(classes_a == code)), int(np.count_nonzero(classes_b == code))
            if min(hits_a, hits_b) > 0 or max(hits_a, hits_b) < ONE_SIDED_MIN:
                continue
            forward = hits_a > 0
            atoms = ColumnAtoms((np.array([code]),), (False,))
            event = DerivedPatternSet(feature, atoms, np.zeros((1, 1), dtype=np.int32))
            hits = np.array([float(max(hits_a, hits_b))])
            predicted = float(whole(hits, np.zeros(1), np.zeros(1), np.zeros(1), ONE_SIDED_MIN)[0])
            if np.isfinite(predicted):
                found.append(Candidate(event, forward, predicted, one_sided=True))
    return found


def detect_grid(column: np.ndarray) -> float | None:
    """The lattice spacing of a column's finite values, when one exists: the smallest gap between distinct
    values such that at least MIN_GRID_SHARE of all gaps are integer multiples of it (relative tolerance
    GRID_TOLERANCE); None for continuous values or fewer than 3 distinct values."""
    values = np.unique(column[np.isfinite(column)])
    if values.size < 3:
        return None
    gaps = np.diff(values)
    step = float(gaps.min())
    if not step > 0:
        return None
    multiples = gaps / step
    on_grid = np.abs(multiples - np.round(multiples)) <= GRID_TOLERANCE * np.maximum(multiples, 1.0)
    # a lattice: most gaps are multiples of the step and values repeat (not a continuous sample)
    if on_grid.mean() < MIN_GRID_SHARE or values.size > 0.5 * np.isfinite(column).sum():
        return None
    return step


def structural_features(a: np.ndarray, b: np.ndarray) -> list[Derived]:
    """The structural features searched for selection outputs ``a``, ``b``: per coordinate (up to
    MAX_STRUCTURE_COLUMNS) the value class when a non-finite value or a zero occurs, the residue modulo
    each lattice detected on either input, and for non-lattice real values the exponent and the
    lowest MANTISSA_BITS mantissa bits."""
    width = a.shape[1]
    features: list[Derived] = []
    for j in range(min(width, MAX_STRUCTURE_COLUMNS)):
        column_a, column_b = a[:, j], b[:, j]
        pooled = np.concatenate([column_a, column_b])
        if (~np.isfinite(pooled)).any() or (pooled == 0).any():
            features.append(Derived("special", j, width))
        grids = {g for g in (detect_grid(column_a), detect_grid(column_b), detect_grid(pooled)) if g is not None}
        for grid in sorted(grids):
            features.append(Derived("residue", j, width, grid=grid))
        if not grids and j < MAX_BITS_COLUMNS:
            finite = pooled[np.isfinite(pooled)]
            if finite.size and np.unique(finite[:4096]).size > 64:  # continuous-looking values
                features.append(Derived("exponent", j, width))
                features.append(Derived("mantissa", j, width, bits=MANTISSA_BITS))
    return features


def _feature_candidates(feature: Derived, build, held, rank: HeldOutPrediction, selection) -> list[Candidate]:
    """Atom-set candidates of one structural feature (build half orders, held-out half predicts); exponent
    and mantissa events only as support leaks of the whole ``selection`` batch (:func:`_support_leak`)."""
    if feature.kind in ("exponent", "mantissa"):  # strong leaks or none: a subsample suffices
        build = tuple(x[:BITS_ROWS] for x in build)
        held = tuple(x[:BITS_ROWS] for x in held)
        rank = HeldOutPrediction(min(held[0].shape[0], held[1].shape[0]), rank.n_certify, rank.z_certify, rank.delta,
                       min(build[0].shape[0] + held[0].shape[0], build[1].shape[0] + held[1].shape[0]))
    fa, fb = feature.score(build[0])[:, None], feature.score(build[1])[:, None]
    if feature.kind == "special":  # at most six classes, each its own atom however rare (NaN, inf, -0)
        pooled = np.concatenate([fa, fb])[:, 0]
        atoms = ColumnAtoms((np.unique(pooled[~np.isnan(pooled)]),), (bool(np.isnan(pooled).any()),))
        zero_min = SPECIAL_ZERO_MIN
    else:
        atoms = find_atoms(np.concatenate([fa, fb]))
        zero_min = ZERO_MIN
    if not (atoms.values[0].size + int(atoms.has_nan[0])):
        return []
    held_features = (feature.score(held[0])[:, None], feature.score(held[1])[:, None])
    found = held_out_atom_sets(atoms, (fa, fb), held_features, rank, lambda patterns: DerivedPatternSet(feature, atoms, patterns),
                         zero_min)
    if feature.kind in ("exponent", "mantissa"):
        searched = (np.concatenate([fa, held_features[0]]), np.concatenate([fb, held_features[1]]))
        found = [c for c in found if not _in_event(c.witness, searched[1 if c.forward else 0]).any()]
        if found:  # one-sided in the rows searched: check every selection row (feature values computed once)
            values = (feature.score(selection[0])[:, None], feature.score(selection[1])[:, None])
            found = [leak for leak in (_support_leak(c, values, rank) for c in found) if leak is not None]
    return found


def _in_event(witness: DerivedPatternSet, values: np.ndarray) -> np.ndarray:
    """Which rows of feature values (shape (n, 1), ``witness.feature`` already applied) lie in the event."""
    return PatternSet(witness.atoms, witness.patterns).indicator(values)


def _support_leak(candidate: Candidate, values, rank: HeldOutPrediction) -> Candidate | None:
    """The candidate, predicted from the whole selection batch (``values``: the feature of every selection row
    under d and under d_prime), when its event never occurred under the denominator input in any selection
    row and at least ZERO_MIN times under the numerator; else None.

    Exponent and low-mantissa events are kept only as *support* leaks (outputs one input does not
    produce, as from noise snapped to a grid off the value). Their frequencies differ between the inputs,
    by a finite ratio, for every textbook floating-point mechanism: adding a value to float noise rounds
    away low-order bits the noise alone keeps (Mironov 2012), so the catalog's own Laplace at epsilon 0.5
    would be flagged at ~0.65 through them. That rounding leak is real but is a property of float
    arithmetic, not of the mechanism's calibration, and is left out of the ranking on purpose. The search
    itself looks at a subsample (BITS_ROWS), where a finite ratio often leaves an event with ten hits on one
    side and none on the other by chance (probability (e^eps / (1 + e^eps))^10, and many exponents are
    tried); checked on every selection row, such an event has tens of hits on both sides, so a mechanism
    without this structure gets no candidate here, and pays no share of the confidence for it."""
    numerator, denominator = values if candidate.forward else values[::-1]
    if _in_event(candidate.witness, denominator).any():
        return None
    hits = float(_in_event(candidate.witness, numerator).sum())
    n = min(numerator.shape[0], denominator.shape[0])
    full = HeldOutPrediction(n, rank.n_certify, rank.z_certify, rank.delta, n)
    predicted = float(full(np.array([hits]), np.array([0.0]), np.array([0.0]), np.array([0.0]), ZERO_MIN)[0])
    return Candidate(candidate.witness, candidate.forward, predicted) if np.isfinite(predicted) else None
