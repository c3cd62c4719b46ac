"""The region scan: best half-lines and intervals of a real score, chosen on the whole batch or on the build half.

:func:`region_candidates` scans thresholds (quantiles of the pooled scores, refined in the tails for
(epsilon, delta) claims, where events of probability ~1e-4 matter) and returns the best half-line at each
end and the best interval, per direction, each chosen and predicted by one ranking.

Held-out regions (:func:`held_out_regions`). A score learned on the build half of the selection batch (a
gradient-boosting ensemble, a sign vote, a logistic regression on encoded atoms, the product-likelihood
score) has its half-lines and intervals chosen on the build half too, and every event so chosen is
predicted on the held-out half, which played no part in choosing it. Choosing ~5,000 thresholds and
intervals on the held-out half and predicting them on the same rows made the luckiest interval of a noisy
score look best: discrete Laplace at epsilon 0.05 (seed 3) certified 0.022 through such an interval where
the half-line certifies 0.046, and a boosting score predicted 1.006 for the histogram at true epsilon 1.

Fitted companions. The prediction ranks events by one-sided Wilson bounds at the selection size, which
shrink ln(p/q) by about two selection standard errors; at 5*10^4 held-out rows against 9*10^5
certification samples this favours wide events over the narrow ones that certify best (20 Laplace
answers: "at least 15 of 20 coordinates below the median", expected certified bound 0.50, over "at least
16", 0.56). So beside each chosen half-line of a learned score, the threshold a smooth model of the tail
log ratio prefers on the held-out half (``tail_fit.fitted_choice``: a weighted quadratic fit of
ln(count_p / count_q) in the threshold, accepted only when consistent with the counts) is attached as the
candidate's ``companion``; when that candidate is the best, both are certified (the confidence is split
over both, ``selector.select_for_certification``).
"""

from __future__ import annotations

import math

import numpy as np

from ..witness import PooledPair, Projection, ScoreRegion
from .candidate import Candidate, rank_key
from .prediction import WholeBatchPrediction, log_ratio_error
from .tail_fit import fitted_choice

__all__ = ["region_candidates", "half_line_counts", "sorted_quantiles", "held_out_regions", "GRID_HALF_LINES",
           "GRID_INTERVALS"]


GRID_HALF_LINES = 512
GRID_INTERVALS = 96
COMPANION_GRID = 512
COMPANION_RISK = 2.0  # companions maximise the bound less this many standard deviations (fitted_choice)
SIGN_Z = 2.0  # a pooled pair predicted to certify nothing whose selection estimate is within this many standard errors
# of 0 carries its mirror (the other sign) as companion: the selection noise may hide the sign of the leak


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
                      score_a: np.ndarray | None = None, score_b: np.ndarray | None = None,
                      pool: bool = False) -> list[Candidate]:
    """Best half-lines (each end, each direction) and best interval (each direction) of a real score, with
    thresholds from GRID_HALF_LINES (intervals: GRID_INTERVALS) quantiles of the pooled scores of ``a`` and
    ``b`` (refined in the tails when ``tails``), each chosen and predicted by ``rank(count_p, count_q)``.
    ``score_a``/``score_b``: the scores, when already computed. Each interval carries the standard error of its
    ln(p / q) estimate (``Candidate.error``).

    When no half-line of an end and direction is predicted to certify anything (every conservative prediction
    <= 0: a leak of the order of the selection noise, as discrete Laplace at epsilon 0.008 with 10^5 selection
    rows), the largest prediction belongs to the event holding almost every output (its shrinkage is the
    smallest), which certifies 0, and the selection noise hides where the best threshold lies. The half-line
    then splits the pooled outputs at their median: for a small shift of a symmetric unimodal noise the median
    split is the best half-line (the sign test is the locally most powerful rank test of a Laplace location;
    for a Gaussian its asymptotic relative efficiency is 2/pi: Hajek, Sidak & Sen, *Theory of Rank Tests*, 1999). Its prediction with less shrinkage (``rank.outlook``)
    is kept as the candidate's ``outlook``, which ranks it among the events predicted to certify nothing.

    ``pool`` (``rank`` a ``WholeBatchPrediction``): also the pooled pair of the best half-line of each direction
    (``rank_key`` over both ends; ``witness.PooledPair``), its pooled counts predicted at twice the sizes
    (``WholeBatchPrediction.pooled``). Both directions of DP certified on 2 n trials: for a symmetric leak the
    standard error of the log ratio drops by about sqrt(2) (discrete Laplace at epsilon 0.008 on a shift of 2:
    the median half-lines y <= m and y >= m certify the same ratio, pooled on twice the samples). A pooled pair
    predicted to certify nothing whose pooled selection estimate ln(count_p / count_q) lies within SIGN_Z standard
    errors of 0 carries its mirror (the parts' roles swapped: the other sign) as ``companion``, certified beside
    it when it is the best candidate (discrete Laplace at epsilon 0.01, seed 55: the whole selection batch showed
    the sign reversed)."""
    score_a = projection.score(a) if score_a is None else score_a
    score_b = projection.score(b) if score_b is None else score_b
    score_a, score_b = np.sort(score_a[~np.isnan(score_a)]), np.sort(score_b[~np.isnan(score_b)])
    pooled = np.sort(np.concatenate([score_a, score_b]))
    if pooled.size == 0 or pooled[0] == pooled[-1]:
        return []
    candidates: list[Candidate] = []
    grid = _grid(pooled, GRID_HALF_LINES, tails)
    (below_a, below_b), (above_a, above_b) = half_line_counts(score_a, score_b, grid)
    middle = min(int(np.searchsorted(grid, sorted_quantiles(pooled, np.array([0.5]))[0])), grid.size - 1)  # the pooled median
    best_per_direction: dict[bool, tuple[Candidate, float, float]] = {}  # direction -> (half-line, count_a, count_b)
    for region_a, region_b, low in ((below_a, below_b, False), (above_a, above_b, True)):
        for forward, (numerator, denominator) in ((True, (region_a, region_b)), (False, (region_b, region_a))):
            scores = rank(numerator, denominator)
            best = int(np.argmax(scores))
            outlook = -math.inf
            if scores[best] <= 0 and hasattr(rank, "outlook"):  # nothing certifies conservatively: see below
                best = middle
                outlook = float(rank.outlook(numerator[best:best + 1], denominator[best:best + 1])[0])
            if np.isfinite(scores[best]):
                t = float(grid[best])
                region = ScoreRegion(projection, t, math.inf) if low else ScoreRegion(projection, -math.inf, t)
                candidates.append(Candidate(region, forward, float(scores[best]), outlook=outlook))
                kept = best_per_direction.get(forward)
                if kept is None or rank_key(candidates[-1]) > rank_key(kept[0]):
                    best_per_direction[forward] = (candidates[-1], float(region_a[best]), float(region_b[best]))
    if pool and len(best_per_direction) == 2:
        candidates.append(_pooled_pair(best_per_direction[True], best_per_direction[False], rank.pooled()))
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


def _pooled_pair(forward: tuple[Candidate, float, float], backward: tuple[Candidate, float, float], rank) -> Candidate:
    """The pooled pair of two half-lines (each with its selection counts under d and under d_prime), predicted by
    ``rank`` from the pooled counts count_d(E) + count_d'(E') against count_d'(E) + count_d(E')."""
    (event, forward_a, forward_b), (other, backward_a, backward_b) = forward, backward
    count_p, count_q = np.array([forward_a + backward_b]), np.array([forward_b + backward_a])
    predicted = float(rank.predict(count_p, count_q)[0])
    outlook, mirror = -math.inf, None
    if predicted <= 0:  # the leak is of the order of the selection noise
        outlook = float(rank.outlook(count_p, count_q)[0])
        estimate = math.log(max(count_p[0], 0.5) / max(count_q[0], 0.5))
        if estimate < SIGN_Z * log_ratio_error(count_p[0], count_q[0], rank.n_select, rank.n_select):
            mirror = PooledPair(other.witness, event.witness)  # the other sign, certified beside it (selector.py)
    return Candidate(PooledPair(event.witness, other.witness), True, predicted, companion=mirror, outlook=outlook)


def half_line_counts(sorted_a: np.ndarray, sorted_b: np.ndarray, grid: np.ndarray):
    """((#a <= t, #b <= t), (#a >= t, #b >= t)) for every threshold t of ``grid``, from sorted scores."""
    below = (np.searchsorted(sorted_a, grid, "right"), np.searchsorted(sorted_b, grid, "right"))
    above = (sorted_a.size - np.searchsorted(sorted_a, grid, "left"), sorted_b.size - np.searchsorted(sorted_b, grid, "left"))
    return below, above


def _count(ordered: np.ndarray, region: ScoreRegion) -> float:
    """How many of the sorted (NaN-free) scores lie in ``region`` (low <= score <= high)."""
    return float(np.searchsorted(ordered, region.high, "right") - np.searchsorted(ordered, region.low, "left"))


def _fitted_half_lines(projection: Projection, held_scores: tuple[np.ndarray, np.ndarray], rank) -> dict[bool, ScoreRegion]:
    """Per direction (forward or not), the half-line of ``projection`` (either end) that
    ``tail_fit.fitted_choice`` predicts best on the held-out scores (sorted, NaN removed, per input); a
    direction is missing when every fit is rejected."""
    score_a, score_b = held_scores
    pooled = np.sort(np.concatenate([score_a, score_b]))
    if pooled.size == 0 or pooled[0] == pooled[-1]:
        return {}
    grid = np.unique(sorted_quantiles(pooled, np.linspace(0.0, 1.0, COMPANION_GRID)))
    n = min(score_a.size, score_b.size)
    below_counts, above_counts = half_line_counts(score_a, score_b, grid)
    best: dict[bool, tuple[float, ScoreRegion]] = {}
    for below, (count_a, count_b) in ((True, below_counts), (False, above_counts)):
        for forward, (numerator, denominator) in ((True, (count_a, count_b)), (False, (count_b, count_a))):
            fitted = fitted_choice(grid, numerator, denominator, n, rank.n_certify, rank.z_certify, rank.delta, COMPANION_RISK)
            if fitted is None or (forward in best and best[forward][0] >= fitted[1]):
                continue
            t = fitted[0]
            region = ScoreRegion(projection, -math.inf, t) if below else ScoreRegion(projection, t, math.inf)
            best[forward] = (fitted[1], region)
    return {forward: region for forward, (_, region) in best.items()}


def held_out_regions(projection: Projection, build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray],
                     rank, *, tails: bool = True, companions: bool = True,
                     scores: tuple[np.ndarray, np.ndarray] | None = None) -> list[Candidate]:
    """Half-lines and intervals of ``projection`` chosen on the build outputs (:func:`region_candidates`
    with Wilson shrinkage at the build size), each predicted by ``rank`` (``prediction.HeldOutPrediction``) from its
    held-out counts (and build counts, for the zero-count rule); each carries as companion the fitted
    half-line of its direction (:func:`_fitted_half_lines`), when one is found. ``scores``: the projection
    of the build rows followed by the held-out rows, per input, when already computed."""
    n_build = min(build[0].shape[0], build[1].shape[0])
    if n_build == 0 or min(held[0].shape[0], held[1].shape[0]) == 0:
        return []
    if scores is None:
        scores = (projection.score(np.concatenate([build[0], held[0]])), projection.score(np.concatenate([build[1], held[1]])))
    build_scores = tuple(np.sort(x[~np.isnan(x)]) for x in (scores[0][: build[0].shape[0]], scores[1][: build[1].shape[0]]))
    held_scores = tuple(np.sort(x[~np.isnan(x)]) for x in (scores[0][build[0].shape[0]:], scores[1][build[1].shape[0]:]))
    choose = WholeBatchPrediction(n_build, rank.n_certify, rank.z_certify, rank.delta)
    chosen = region_candidates(projection, build[0], build[1], choose, tails=tails, score_a=build_scores[0],
                               score_b=build_scores[1])
    fitted = _fitted_half_lines(projection, held_scores, rank) if companions and chosen else {}
    out = []
    for candidate in chosen:
        region = candidate.witness
        held_a, held_b = (_count(x, region) for x in held_scores)
        build_a, build_b = (_count(x, region) for x in build_scores)
        counts = (held_a, held_b, build_a, build_b) if candidate.forward else (held_b, held_a, build_b, build_a)
        predicted = float(rank(*(np.array([c]) for c in counts))[0])
        if np.isfinite(predicted):
            out.append(Candidate(region, candidate.forward, predicted, fitted.get(candidate.forward)))
    return out
