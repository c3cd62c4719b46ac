"""Atom sets: unions of discrete outcomes ordered by likelihood ratio, with held-out union lengths.

Shared by the families that treat outputs (or features of them) as discrete outcomes: atoms are values
seen at least ATOM_MIN_COUNT times (NaN counted as one value); the distinct atom patterns of the rows
(:func:`pattern_counts`) are ordered on the build half by their shrunken ratio, rare atoms (fewer than
POOL_MIN selection hits) pooled by the side they lean to, and the union length and its prediction come
from the held-out half (:func:`held_out_atom_sets`), so atoms that by chance never appeared under one input
in the build half do not look like infinite leaks.
"""

from __future__ import annotations

import numpy as np

from ..witness import ColumnAtoms, pattern_keys
from .candidate import Candidate
from .prediction import HeldOutPrediction

__all__ = ["find_atoms", "pattern_counts", "held_out_atom_sets", "atom_count", "ATOM_MIN_COUNT", "MAX_PATTERNS",
           "POOL_MIN", "ZERO_MIN"]


ATOM_MIN_COUNT = 3  # a value seen this often in the pooled selection batch is an atom
MAX_PATTERNS = 20_000
POOL_MIN = 8  # atoms seen fewer times in the build half are pooled by the side they lean to
ZERO_MIN = 10  # selection hits (none under the other input) before an event is ranked as one-sided


def find_atoms(pooled: np.ndarray) -> ColumnAtoms:
    """Values recurring at least ATOM_MIN_COUNT times in a column (NaN counted as one value)."""
    values, has_nan = [], []
    for column in pooled.T:
        nan = np.isnan(column)
        finite = column[~nan]
        unique, counts = np.unique(finite, return_counts=True)
        values.append(unique[counts >= ATOM_MIN_COUNT])
        has_nan.append(bool(nan.sum() >= ATOM_MIN_COUNT))
    return ColumnAtoms(tuple(values), tuple(has_nan))


def pattern_counts(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct atom patterns of the selection outputs (rows of codes) and how often each occurs
    under d (``a``) and under d_prime (``b``); at most MAX_PATTERNS, the most frequent."""
    codes_a, codes_b = atoms.codes(a), atoms.codes(b)
    keys = np.concatenate([pattern_keys(codes_a), pattern_keys(codes_b)])
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    side_a = np.zeros(keys.size, dtype=bool)
    side_a[: a.shape[0]] = True
    count_a = np.bincount(inverse[side_a], minlength=unique.size)
    count_b = np.bincount(inverse[~side_a], minlength=unique.size)
    if unique.size > MAX_PATTERNS:
        keep = np.argsort(-(count_a + count_b), kind="stable")[:MAX_PATTERNS]
        count_a, count_b, first = count_a[keep], count_b[keep], first[keep]
    return np.concatenate([codes_a, codes_b])[first], count_a, count_b


def _pooled_order(count_a: np.ndarray, count_b: np.ndarray, scale: float) -> np.ndarray:
    """Atoms sorted by decreasing shrunken ratio a/b; rare atoms pooled by the side they lean to (each pool
    ranked by its total counts), so a handful of chance hits cannot put a tail atom first."""
    ratio = (count_a * scale + 0.5) / (count_b + 0.5)
    rare = (count_a + count_b) < POOL_MIN
    for leaning in (count_a * scale > count_b, count_a * scale < count_b, count_a * scale == count_b):
        pool = rare & leaning
        if pool.any():
            ratio[pool] = (count_a[pool].sum() * scale + 0.5) / (count_b[pool].sum() + 0.5)
    return np.argsort(-ratio, kind="stable")


def _single_column_counts(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pattern_counts for one column, by bincount (fast path: no byte keys to sort)."""
    codes_a, codes_b = atoms.codes(a)[:, 0] + 1, atoms.codes(b)[:, 0] + 1
    size = int(max(codes_a.max(initial=0), codes_b.max(initial=0))) + 1
    count_a, count_b = np.bincount(codes_a, minlength=size), np.bincount(codes_b, minlength=size)
    present = np.flatnonzero(count_a + count_b)
    return (present - 1).astype(np.int32)[:, None], count_a[present], count_b[present]


def _held_out_counts(patterns: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """How often each pattern (row of codes) occurs among the rows ``codes``."""
    if codes.shape[0] == 0 or patterns.shape[0] == 0:
        return np.zeros(patterns.shape[0], dtype=np.int64)
    if codes.shape[1] == 1:
        counts = np.bincount(codes[:, 0] + 1, minlength=int(patterns.max()) + 2)
        return counts[patterns[:, 0] + 1]
    keys, counts = np.unique(pattern_keys(codes), return_counts=True)
    wanted = pattern_keys(patterns)
    position = np.searchsorted(keys, wanted)
    inside = position < keys.size
    out = np.zeros(patterns.shape[0], dtype=np.int64)
    hit = np.zeros(patterns.shape[0], dtype=bool)
    hit[inside] = keys[position[inside]] == wanted[inside]
    out[hit] = counts[position[hit]]
    return out


def held_out_atom_sets(atoms: ColumnAtoms, build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray],
                 rank: HeldOutPrediction, make, zero_min: int = 10) -> list[Candidate]:
    """Order atom patterns on the build half, choose the union length and predict on the held-out half."""
    counter = _single_column_counts if build[0].shape[1] == 1 else pattern_counts
    patterns, count_a, count_b = counter(atoms, build[0], build[1])
    if patterns.shape[0] < 2:
        return []
    held_a = _held_out_counts(patterns, atoms.codes(held[0]))
    held_b = _held_out_counts(patterns, atoms.codes(held[1]))
    scale = build[1].shape[0] / max(build[0].shape[0], 1)
    candidates = []
    for forward, (num, den, held_num, held_den, s) in ((True, (count_a, count_b, held_a, held_b, scale)),
                                                     (False, (count_b, count_a, held_b, held_a, 1.0 / scale))):
        order = _pooled_order(num, den, s)
        scores = rank(np.cumsum(held_num[order]), np.cumsum(held_den[order]), np.cumsum(num[order]), np.cumsum(den[order]),
                      zero_min)
        best = int(np.argmax(scores))
        if np.isfinite(scores[best]):
            candidates.append(Candidate(make(patterns[order[: best + 1]]), forward, float(scores[best])))
    return candidates


def atom_count(atoms: ColumnAtoms) -> int:
    """How many atoms (NaN included) ``atoms`` holds over all columns."""
    return sum(v.size + int(n) for v, n in zip(atoms.values, atoms.has_nan))
