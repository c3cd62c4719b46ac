"""Witness family: product events of vector outputs, intersections of per-coordinate half-lines.

Intersections of per-coordinate half-lines, grown greedily on the build half of the selection batch (each
step adds the coordinate half-line that most increases the predicted bound of the intersection: a greedy
approximation of the likelihood-ratio set of a product distribution, whose ratio is the product of the
coordinates' ratios); every prefix of the greedy sequence is then scored on the held-out half.
"""

from __future__ import annotations

import math

import numpy as np

from ..witness import Column, Intersection, ScoreRegion
from .batch import SelectionBatch
from .candidate import Candidate
from .prediction import predicted_bound

__all__ = ["Products", "product_candidates", "MAX_PRODUCT_COLUMNS", "PRODUCT_STEPS"]


MAX_PRODUCT_COLUMNS = 32
PRODUCT_STEPS = 4
PRODUCT_GRID = 32
GREEDY_ROWS = 15_000  # build rows per input the greedy product search uses


class Products:
    """Greedy products of coordinate half-lines (vector outputs only)."""

    name = "products of half-lines"
    costly = True

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        return product_candidates(batch.build, batch.held, batch.held_out)


def _half_line_grid(values: np.ndarray) -> np.ndarray:
    levels = np.concatenate([np.linspace(0.0, 1.0, PRODUCT_GRID), [2.0 / max(values.size, 1)], [1.0 - 2.0 / max(values.size, 1)]])
    return np.unique(np.quantile(values, np.clip(levels, 0.0, 1.0), method="inverted_cdf"))


def _greedy(num: np.ndarray, den: np.ndarray, predict) -> list[tuple[ScoreRegion, ...]]:
    """Grow an intersection of coordinate half-lines maximising ``predict(count_num, count_den)``."""
    width = num.shape[1]
    inside_num, inside_den = np.ones(num.shape[0], dtype=bool), np.ones(den.shape[0], dtype=bool)
    parts: list[ScoreRegion] = []
    used: set[int] = set()
    sequence: list[tuple[ScoreRegion, ...]] = []
    current = -math.inf
    for _ in range(PRODUCT_STEPS):
        best = None
        for j in range(min(width, MAX_PRODUCT_COLUMNS)):
            if j in used:
                continue
            va, vb = num[inside_num, j], den[inside_den, j]
            va, vb = np.sort(va[~np.isnan(va)]), np.sort(vb[~np.isnan(vb)])
            pooled = np.concatenate([va, vb])
            if pooled.size == 0:
                continue
            grid = _half_line_grid(pooled)
            below = (np.searchsorted(va, grid, "right"), np.searchsorted(vb, grid, "right"))
            above = (va.size - np.searchsorted(va, grid, "left"), vb.size - np.searchsorted(vb, grid, "left"))
            for upper, (count_num, count_den) in ((True, below), (False, above)):
                scores = predict(count_num, count_den)
                k = int(np.argmax(scores))
                if best is None or scores[k] > best[0]:
                    t = float(grid[k])
                    region = ScoreRegion(Column(j, width), -math.inf, t) if upper else ScoreRegion(Column(j, width), t, math.inf)
                    best = (float(scores[k]), j, region)
        if best is None or not best[0] > current:
            break
        current, j, region = best
        parts.append(region)
        used.add(j)
        inside_num &= region.indicator(num)
        inside_den &= region.indicator(den)
        sequence.append(tuple(parts))
    return sequence


def product_candidates(build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray], rank) -> list[Candidate]:
    """Greedy products of coordinate half-lines (built on ``build``), the best prefix per direction chosen
    and predicted by ``rank`` on ``held``."""
    a, b = build[0][:GREEDY_ROWS], build[1][:GREEDY_ROWS]
    n_build = min(a.shape[0], b.shape[0])
    if n_build == 0 or a.shape[1] < 2:
        return []

    def predict(count_p, count_q):
        return predicted_bound(count_p, count_q, n_build, rank.n_certify, rank.z_certify, rank.delta)

    candidates = []
    for forward, (num, den), (held_num, held_den) in ((True, (a, b), held), (False, (b, a), held[::-1])):
        sequence = _greedy(num, den, predict)
        if len(sequence) < 2:
            continue  # a single half-line is searched elsewhere
        events = [Intersection(parts) for parts in sequence]
        counts_num = np.array([e.indicator(held_num).sum() for e in events])
        counts_den = np.array([e.indicator(held_den).sum() for e in events])
        scores = rank(counts_num, counts_den, np.array([e.indicator(num).sum() for e in events]),
                      np.array([e.indicator(den).sum() for e in events]))
        k = int(np.argmax(scores))
        if np.isfinite(scores[k]):
            event = events[k] if len(events[k].parts) > 1 else events[k].parts[0]
            candidates.append(Candidate(event, forward, float(scores[k])))
    return candidates
