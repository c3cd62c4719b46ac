"""Witness-event search on the selection batch.

By the Neyman-Pearson lemma the events that best separate two output distributions are likelihood-ratio
threshold sets. We search families that approximate them, by output type:

- atom patterns (discrete outputs, and the discrete part of mixed outputs: sentinels, NaN): atoms
  sorted by empirical likelihood ratio, every prefix union a candidate;
- real scores (each coordinate, and for vectors and mixed outputs a logistic-regression score learned
  on the selection batch): half-lines and intervals between quantiles.

Each candidate is ranked by the bound it is *predicted* to certify on the certification batch: its
selection frequencies, taken conservatively (one-sigma Wilson bounds), pushed through the certification
bound at the certification sample size. The chosen events are then certified on fresh samples, so the
optimism of choosing a maximum never reaches the reported bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from .witness import Column, ColumnAtoms, Linear, PatternSet, Projection, ScoreRegion, Witness, pattern_keys

__all__ = ["Candidate", "find_atoms", "search_witnesses", "predicted_bound", "score_projections", "pattern_counts",
           "conservative_upper", "region_candidates", "magnitude_search", "sorted_quantiles", "log_ratio_error",
           "half_line_counts"]

ATOM_MIN_COUNT = 3  # a value seen this often in the pooled selection batch is an atom
MAX_PATTERNS = 20_000
GRID_HALF_LINES = 512
GRID_INTERVALS = 96
MAX_SCORE_COLUMNS = 64
LOGISTIC_SAMPLES = 40_000
SELECTION_Z = 2.0  # conservative shrink of selection frequencies (in standard errors), against the
# optimism of picking the best of many candidates on the same batch


@dataclass(frozen=True)
class Candidate:
    """An event, the direction it separates (forward: P = under d, Q = under d_prime), and its predicted bound.

    ``companion``: another event of the same family, certified beside this one when this one is the best
    candidate (a threshold of the same score chosen another way; see ``search_scores.held_out_regions``).
    ``error``: the standard error of the event's ln(p / q) estimate behind ``predicted``, when known."""

    witness: Witness
    forward: bool
    predicted: float
    companion: Witness | None = None
    error: float = 0.0


def _wilson(count, n, z, upper: bool):
    count = np.asarray(count, dtype=np.float64)
    p = count / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denominator
    return np.clip(centre + half if upper else centre - half, 0.0, 1.0)


def predicted_bound(count_p, count_q, n_select: int, n_certify: int, z_certify: float, delta: float,
                    z_select: float = SELECTION_Z) -> np.ndarray:
    """Bound ln((p_lo - delta) / q_hi) expected at certification, from selection counts (vectorised): one-sided
    Wilson bounds at ``z_select`` standard errors of the selection size, then at the certification size."""
    p = _wilson(count_p, n_select, z_select, upper=False)
    q = _wilson(count_q, n_select, z_select, upper=True)
    p_low = _wilson(p * n_certify, n_certify, z_certify, upper=False) - delta
    q_high = _wilson(q * n_certify, n_certify, z_certify, upper=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.log(np.where(p_low > 0, p_low, np.nan)) - np.log(q_high)
    return np.where(np.isnan(bound), -np.inf, bound)


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


def _best_prefix(count_a: np.ndarray, count_b: np.ndarray, context: _Context) -> tuple[int, float, np.ndarray]:
    """Sort atoms by ratio a/b, score every prefix union; return (length, predicted, order)."""
    order = np.argsort(-((count_a + 0.5) / (count_b + 0.5)), kind="stable")
    prefix_a, prefix_b = np.cumsum(count_a[order]), np.cumsum(count_b[order])
    scores = context.predict(prefix_a, prefix_b)
    best = int(np.argmax(scores))
    return best + 1, float(scores[best]), order


@dataclass
class _Context:
    """Prediction from the counts of the batch the events are chosen on (Wilson shrinkage only)."""

    n_select: int
    n_certify: int
    z_certify: float
    delta: float

    def predict(self, count_p, count_q) -> np.ndarray:
        return predicted_bound(count_p, count_q, self.n_select, self.n_certify, self.z_certify, self.delta)

    def __call__(self, count_p, count_q, build_p=None, build_q=None, zero_min: int = 10) -> np.ndarray:
        return self.predict(count_p, count_q)


def _pattern_candidates(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, context: _Context) -> list[Candidate]:
    patterns, count_a, count_b = pattern_counts(atoms, a, b)
    if patterns.shape[0] < 2:
        return []
    candidates = []
    for forward, (numerator, denominator) in ((True, (count_a, count_b)), (False, (count_b, count_a))):
        length, predicted, order = _best_prefix(numerator, denominator, context)
        candidates.append(Candidate(PatternSet(atoms, patterns[order[:length]]), forward, predicted))
    return candidates


def sorted_quantiles(ordered: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``np.quantile(ordered, levels, method="inverted_cdf")`` of values already sorted, by indexing (the same
    order statistics: index ceil(n q - 1), clipped at 0, as numpy computes it), without numpy's partition."""
    n = ordered.size
    index = n * np.asarray(levels, dtype=np.float64) - 1.0
    below = np.floor(index)
    chosen = np.where(index - below == 0, below, below + 1).astype(np.intp)
    return ordered[np.clip(chosen, 0, n - 1)]


def _grid(pooled_sorted: np.ndarray, points: int, tails: bool) -> np.ndarray:
    """Thresholds: ``points`` quantiles of the pooled scores; with ``tails``, also the values leaving 2, 4, 8, ...
    samples outside (events of probability ~1e-4 matter for (epsilon, delta) claims)."""
    levels = np.linspace(0.0, 1.0, points)
    if tails:
        n = pooled_sorted.size
        counts = 2.0 ** np.arange(1, max(2, int(math.log2(max(n / points, 2))) + 1))
        levels = np.concatenate([levels, counts / n, 1.0 - counts / n])
    levels = np.clip(levels, 0.0, 1.0)
    return np.unique(sorted_quantiles(pooled_sorted, levels))


def region_candidates(projection: Projection, a: np.ndarray, b: np.ndarray, rank, *, tails: bool = True,
                      score_a: np.ndarray | None = None, score_b: np.ndarray | None = None) -> list[Candidate]:
    """Best half-lines (each end, each direction) and best interval (each direction) of a real score, with
    thresholds from GRID_HALF_LINES (intervals: GRID_INTERVALS) quantiles of the pooled scores of ``a`` and
    ``b`` (refined in the tails when ``tails``), each chosen and predicted by ``rank(count_p, count_q)``.
    ``score_a``/``score_b``: the scores, when already computed. Each interval carries the standard error of its
    ln(p / q) estimate (``Candidate.error``)."""
    score_a = projection.score(a) if score_a is None else score_a
    score_b = projection.score(b) if score_b is None else score_b
    score_a, score_b = np.sort(score_a[~np.isnan(score_a)]), np.sort(score_b[~np.isnan(score_b)])
    pooled = np.sort(np.concatenate([score_a, score_b]))
    if pooled.size == 0 or pooled[0] == pooled[-1]:
        return []
    candidates: list[Candidate] = []
    grid = _grid(pooled, GRID_HALF_LINES, tails)
    (below_a, below_b), (above_a, above_b) = half_line_counts(score_a, score_b, grid)
    for region_a, region_b, low in ((below_a, below_b, False), (above_a, above_b, True)):
        for forward, (numerator, denominator) in ((True, (region_a, region_b)), (False, (region_b, region_a))):
            scores = rank(numerator, denominator)
            best = int(np.argmax(scores))
            if np.isfinite(scores[best]):
                t = float(grid[best])
                region = ScoreRegion(projection, t, math.inf) if low else ScoreRegion(projection, -math.inf, t)
                candidates.append(Candidate(region, forward, float(scores[best])))
    coarse = np.unique(sorted_quantiles(pooled, np.linspace(0.0, 1.0, GRID_INTERVALS)))
    low_a, high_a = np.searchsorted(score_a, coarse, "left"), np.searchsorted(score_a, coarse, "right")
    low_b, high_b = np.searchsorted(score_b, coarse, "left"), np.searchsorted(score_b, coarse, "right")
    i, j = np.triu_indices(coarse.size, k=1)
    inside_a, inside_b = high_a[j] - low_a[i], high_b[j] - low_b[i]
    for forward, (numerator, denominator) in ((True, (inside_a, inside_b)), (False, (inside_b, inside_a))):
        scores = rank(numerator, denominator)
        if scores.size:
            best = int(np.argmax(scores))
            if np.isfinite(scores[best]):
                region = ScoreRegion(projection, float(coarse[i[best]]), float(coarse[j[best]]))
                error = log_ratio_error(numerator[best], denominator[best], score_a.size if forward else score_b.size,
                                        score_b.size if forward else score_a.size)
                candidates.append(Candidate(region, forward, float(scores[best]), error=error))
    return candidates


def half_line_counts(sorted_a: np.ndarray, sorted_b: np.ndarray, grid: np.ndarray):
    """((#a <= t, #b <= t), (#a >= t, #b >= t)) for every threshold t of ``grid``, from sorted scores."""
    below = (np.searchsorted(sorted_a, grid, "right"), np.searchsorted(sorted_b, grid, "right"))
    above = (sorted_a.size - np.searchsorted(sorted_a, grid, "left"), sorted_b.size - np.searchsorted(sorted_b, grid, "left"))
    return below, above


def log_ratio_error(count_p: float, count_q: float, n_p: int, n_q: int) -> float:
    """Standard error of ln(p / q) estimated from count_p of n_p and count_q of n_q samples (delta method:
    sqrt((1 - p) / count_p + (1 - q) / count_q), a count of 0 taken as 1)."""
    p, q = count_p / max(n_p, 1), count_q / max(n_q, 1)
    return math.sqrt(max(1.0 - p, 0.0) / max(count_p, 1.0) + max(1.0 - q, 0.0) / max(count_q, 1.0))


def _logistic_projection(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> Linear | None:
    """Fit P[d | y] by L2-regularised logistic regression on (a subsample of) the selection batch."""
    take_a = a[rng.permutation(a.shape[0])[:LOGISTIC_SAMPLES]]
    take_b = b[rng.permutation(b.shape[0])[:LOGISTIC_SAMPLES]]
    features = Linear.features(atoms, np.concatenate([take_a, take_b]))
    mean, scale = features.mean(axis=0), features.std(axis=0)
    useful = scale > 0
    if not useful.any():
        return None
    scale = np.where(useful, scale, 1.0)
    x = (features - mean) / scale
    x = np.hstack([x, np.ones((x.shape[0], 1))])
    y = np.concatenate([np.ones(take_a.shape[0]), np.zeros(take_b.shape[0])])
    penalty = 1e-4

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        value = np.mean(np.logaddexp(0.0, z) - y * z) + penalty * w[:-1] @ w[:-1]
        gradient = x.T @ (1.0 / (1.0 + np.exp(-z)) - y) / x.shape[0]
        gradient[:-1] += 2 * penalty * w[:-1]
        return value, gradient

    fit = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 200})
    weights = np.where(useful, fit.x[:-1], 0.0)
    if not np.any(weights):
        return None
    return Linear(atoms, weights, mean, scale)


def score_projections(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> list[Projection]:
    """The real scores searched for half-lines: each coordinate (up to MAX_SCORE_COLUMNS) and, for vectors
    and outputs with atoms, a logistic-regression score learned on the selection outputs ``a``, ``b``."""
    width = a.shape[1]
    projections: list[Projection] = [Column(j, width) for j in range(min(width, MAX_SCORE_COLUMNS))]
    has_atoms = any(v.size for v in atoms.values) or any(atoms.has_nan)
    if width > 1 or has_atoms:
        learned = _logistic_projection(atoms, a, b, rng)
        if learned is not None:
            projections.append(learned)
    return projections


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


def conservative_upper(count, n_select: int, n_certify: int, z_certify: float) -> np.ndarray:
    """The upper confidence bound a proportion seen ``count`` times in ``n_select`` selection samples is
    expected to get at certification (n_certify samples, z_certify standard errors), taken conservatively
    (one-sided Wilson bounds at SELECTION_Z, then at z_certify); vectorised."""
    p = _wilson(count, n_select, SELECTION_Z, upper=True)
    return _wilson(p * n_certify, n_certify, z_certify, upper=True)


def search_witnesses(a: np.ndarray, b: np.ndarray, *, n_certify: int, z_certify: float, delta: float,
                     rng: np.random.Generator) -> list[Candidate]:
    """All candidate events for selection outputs ``a`` (under d) and ``b`` (under d_prime), best first:
    the structural, product and held-out-ranked search of ``search_structure.structured_search``."""
    from .search_structure import structured_search

    return structured_search(a, b, n_certify=n_certify, z_certify=z_certify, delta=delta, rng=rng)


def magnitude_search(a: np.ndarray, b: np.ndarray, *, n_certify: int, z_certify: float, delta: float,
                     rng: np.random.Generator) -> list[Candidate]:
    """The magnitude-only search (atoms and half-lines ranked on the same selection batch), kept for
    comparison: all candidate events for ``a`` (under d) and ``b`` (under d_prime), best first."""
    context = _Context(min(a.shape[0], b.shape[0]), n_certify, z_certify, delta)
    atoms = find_atoms(np.concatenate([a, b]))
    candidates = _pattern_candidates(atoms, a, b, context)
    projections = score_projections(atoms, a, b, rng)
    for projection in projections:
        candidates += region_candidates(projection, a, b, context, tails=False)
    candidates = [c for c in candidates if c.predicted > -math.inf]
    return sorted(candidates, key=lambda c: -c.predicted)
