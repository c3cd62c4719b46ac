"""Learned scores of vector outputs, thresholded without fooling the ranking (issue 18).

Held-out regions (:func:`held_out_regions`). A score learned on the build half of the selection batch (a
gradient-boosting ensemble, a sign vote, a logistic regression on encoded atoms, the product-likelihood
score below) has its half-lines and intervals chosen on the build half too, and every event so chosen is
predicted on the held-out half, which played no part in choosing it. Choosing ~5,000 thresholds and
intervals on the held-out half and predicting them on the same rows made the luckiest interval of a noisy
score look best: discrete Laplace at epsilon 0.05 (seed 3) certified 0.022 through such an interval where
the half-line certifies 0.046, and a boosting score predicted 1.006 for the histogram at true epsilon 1.

Fitted companions. The prediction ranks events by one-sided Wilson bounds at the selection size, which
shrink ln(p/q) by about two selection standard errors; at 5*10^4 held-out rows against 9*10^5
certification samples this favours wide events over the narrow ones that certify best (20 Laplace
answers: "at least 15 of 20 coordinates below the median", expected certified bound 0.50, over "at least
16", 0.56). So beside each chosen half-line of a learned score, the threshold a smooth model of the tail
log ratio prefers on the held-out half (``search_tails.fitted_choice``: a weighted quadratic fit of
ln(count_p / count_q) in the threshold, accepted only when consistent with the counts) is attached as the
candidate's ``companion``; when that candidate is the best, both are certified (the confidence is split
over both, ``search_structure.select_for_certification``).

Product-likelihood score (:func:`fit_product_likelihood`). For independent coordinates the Neyman-Pearson
statistic is sum_j ln(p_j(y_j) / q_j(y_j)) (a "naive Bayes" log likelihood ratio). Per coordinate, the
build-half values are binned (each distinct value its own bin when there are at most MAX_BINS, else
MAX_BINS quantile bins of the pooled values; NaN its own bin), and adjacent bins are merged while their log
ratios do not differ by MERGE_Z standard errors (ChiMerge, Kerber 1992): noise coordinates collapse to one
bin and are dropped, a location shift of heavy-tailed noise keeps two plateaus and its transition. Each
merged bin's log ratio is ln((count_a * n_b / n_a + 1/2) / (count_b + 1/2)).
"""

from __future__ import annotations

import math

import numpy as np

from .search import Candidate, _Context, half_line_counts, region_candidates, sorted_quantiles
from .search_tails import fitted_choice
from .witness import ProductLikelihood, Projection, ScoreRegion

__all__ = ["held_out_regions", "fit_product_likelihood", "product_likelihood_candidates", "MAX_BINS", "MERGE_Z",
           "MAX_LIKELIHOOD_COLUMNS"]

MAX_BINS = 16
MERGE_Z = 3.0  # adjacent bins whose log ratios differ by fewer standard errors are merged
MAX_LIKELIHOOD_COLUMNS = 64
COMPANION_GRID = 512
COMPANION_RISK = 2.0  # companions maximise the bound less this many standard deviations (fitted_choice)


def _count(ordered: np.ndarray, region: ScoreRegion) -> float:
    """How many of the sorted (NaN-free) scores lie in ``region`` (low <= score <= high)."""
    return float(np.searchsorted(ordered, region.high, "right") - np.searchsorted(ordered, region.low, "left"))


def _fitted_half_lines(projection: Projection, held_scores: tuple[np.ndarray, np.ndarray], rank) -> dict[bool, ScoreRegion]:
    """Per direction (forward or not), the half-line of ``projection`` (either end) that
    ``search_tails.fitted_choice`` predicts best on the held-out scores (sorted, NaN removed, per input); a
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
    """Half-lines and intervals of ``projection`` chosen on the build outputs (``search.region_candidates``
    with Wilson shrinkage at the build size), each predicted by ``rank`` (``search_structure._Ranker``) from its
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
    choose = _Context(n_build, rank.n_certify, rank.z_certify, rank.delta)
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


# ------------------------------------------------------------------------------- product-likelihood score
def _log_ratio(count_a: np.ndarray, count_b: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """ln((count_a * scale + 1/2) / (count_b + 1/2)) and its delta-method variance."""
    a, b = count_a * scale + 0.5, count_b + 0.5
    return np.log(a / b), 1.0 / a + 1.0 / b


def _merged_groups(count_a: np.ndarray, count_b: np.ndarray, scale: float) -> np.ndarray:
    """Group label of each bin after merging adjacent bins while the closest pair's log ratios differ by
    fewer than MERGE_Z standard errors (bins never seen stay with a neighbour)."""
    starts = list(range(count_a.size))  # first bin of each group
    ga, gb = count_a.astype(np.float64).tolist(), count_b.astype(np.float64).tolist()
    while len(ga) > 1:
        ratio, variance = _log_ratio(np.array(ga), np.array(gb), scale)
        z = np.abs(np.diff(ratio)) / np.sqrt(variance[:-1] + variance[1:])
        k = int(np.argmin(z))
        if z[k] >= MERGE_Z:
            break
        ga[k] += ga.pop(k + 1)
        gb[k] += gb.pop(k + 1)
        starts.pop(k + 1)
    labels = np.zeros(count_a.size, dtype=np.int64)
    labels[np.array(starts[1:], dtype=np.int64)] = 1
    return np.cumsum(labels)


def _column_table(column_a: np.ndarray, column_b: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(edges, table) of one coordinate's estimated log density ratio; None when it does not separate."""
    pooled = np.concatenate([column_a, column_b])
    finite = pooled[~np.isnan(pooled)]
    if finite.size == 0:
        return None
    distinct = np.unique(finite)
    if distinct.size <= MAX_BINS:
        edges = distinct
    else:
        edges = np.unique(sorted_quantiles(np.sort(finite), np.linspace(0.0, 1.0, MAX_BINS + 1)[1:-1]))
    size = edges.size + 2  # bins 0 .. len(edges), then NaN

    def codes(y: np.ndarray) -> np.ndarray:
        code = np.searchsorted(edges, y, side="right")
        code[np.isnan(y)] = edges.size + 1
        return code

    count_a = np.bincount(codes(column_a), minlength=size)
    count_b = np.bincount(codes(column_b), minlength=size)
    groups = _merged_groups(count_a[:-1], count_b[:-1], scale)  # NaN is never merged with a value
    labels = np.append(groups, groups[-1] + 1)
    group_a = np.bincount(labels, weights=count_a)
    group_b = np.bincount(labels, weights=count_b)
    ratio, _ = _log_ratio(group_a, group_b, scale)
    table = ratio[labels]
    if np.unique(table[(count_a + count_b) > 0]).size < 2:
        return None  # every value seen falls in one merged bin: the coordinate does not separate
    return edges, table


def fit_product_likelihood(a: np.ndarray, b: np.ndarray) -> ProductLikelihood | None:
    """The product-likelihood score of outputs ``a`` (under d) against ``b`` (under d_prime), from the first
    MAX_LIKELIHOOD_COLUMNS coordinates; None when no coordinate separates the inputs."""
    scale = b.shape[0] / max(a.shape[0], 1)
    columns, edges, tables = [], [], []
    for j in range(min(a.shape[1], MAX_LIKELIHOOD_COLUMNS)):
        fitted = _column_table(np.asarray(a[:, j], dtype=np.float64), np.asarray(b[:, j], dtype=np.float64), scale)
        if fitted is not None:
            columns.append(j)
            edges.append(fitted[0])
            tables.append(fitted[1])
    if not columns:
        return None
    return ProductLikelihood(tuple(columns), tuple(edges), tuple(tables))


def product_likelihood_candidates(build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray], rank) -> list[Candidate]:
    """Regions of the product-likelihood score fit on ``build`` (:func:`held_out_regions`)."""
    if min(build[0].shape[0], build[1].shape[0]) < 50 or build[0].shape[1] < 2:
        return []
    score = fit_product_likelihood(build[0], build[1])
    if score is None:
        return []
    return held_out_regions(score, build, held, rank)
