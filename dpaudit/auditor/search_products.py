"""Product events and a nonlinear learned score for vector outputs (issue 18).

- Product events: intersections of per-coordinate half-lines, grown greedily on the build half of the
  selection batch (each step adds the coordinate half-line that most increases the predicted bound of the
  intersection: a greedy approximation of the likelihood-ratio set of a product distribution, whose
  ratio is the product of the coordinates' ratios); every prefix of the greedy sequence is then scored on
  the held-out half.
- A gradient-boosting score (scikit-learn's HistGradientBoostingClassifier, Ke et al. 2017 / Friedman
  2001) fit on the build half; its thresholds are chosen and predicted on the held-out half, and the
  fitted trees are frozen into a :class:`~dpaudit.auditor.witness.TreeEnsemble` (no scikit-learn needed to
  certify or to re-read a baseline). scikit-learn is optional: without it this family is skipped.
"""

from __future__ import annotations

import math

import numpy as np

from .search import Candidate, predicted_bound
from .witness import Column, Intersection, ScoreRegion, SignVote, TreeEnsemble

__all__ = ["product_candidates", "boosted_candidates", "sign_vote_candidates", "fit_tree_ensemble", "boosting_available",
           "BOOSTING_MISSING", "MAX_PRODUCT_COLUMNS",
           "PRODUCT_STEPS"]

MAX_PRODUCT_COLUMNS = 32
PRODUCT_STEPS = 4
PRODUCT_GRID = 32
BOOST_SAMPLES = 5_000  # per input
GREEDY_ROWS = 15_000  # build rows per input the greedy product search uses
BOOST_ITERATIONS = 20
SELECTION_Z = 2.0


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


BOOSTING_MISSING = ("scikit-learn is not installed: the gradient-boosting score was not searched for these vector "
                    "outputs (products of half-lines, sign votes and the logistic score were); pip install 'dpaudit[learn]'")


def boosting_available() -> bool:
    """Whether scikit-learn's HistGradientBoostingClassifier can be imported (without importing it twice)."""
    import importlib.util
    import sys

    if "sklearn.ensemble" in sys.modules:
        return sys.modules["sklearn.ensemble"] is not None
    try:
        return importlib.util.find_spec("sklearn") is not None
    except (ImportError, ValueError):
        return False


def fit_tree_ensemble(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> TreeEnsemble | None:
    """Fit a histogram gradient-boosting classifier (input d vs d_prime) and freeze its trees; None when
    scikit-learn is not installed or the fit fails."""
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:
        return None
    take_a = a[rng.permutation(a.shape[0])[:BOOST_SAMPLES]]
    take_b = b[rng.permutation(b.shape[0])[:BOOST_SAMPLES]]
    x = np.concatenate([take_a, take_b])
    x = np.where(np.isposinf(x), 1e300, np.where(np.isneginf(x), -1e300, x))
    y = np.concatenate([np.ones(take_a.shape[0]), np.zeros(take_b.shape[0])])
    model = HistGradientBoostingClassifier(max_iter=BOOST_ITERATIONS, learning_rate=0.25, max_leaf_nodes=8, max_depth=3,
                                           early_stopping=False, random_state=int(rng.integers(2**31 - 1)))
    try:
        try:  # one thread: the audit's parallelism is over blocks, and oversubscribed OpenMP is very slow
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - shipped with scikit-learn
            threadpool_limits = None
        if threadpool_limits is None:
            model.fit(x, y)
        else:
            with threadpool_limits(limits=1):
                model.fit(x, y)
        trees = []
        for (predictor,) in model._predictors:
            nodes = predictor.nodes
            leaf = nodes["is_leaf"].astype(bool)
            trees.append({"feature": nodes["feature_idx"].astype(np.int64), "threshold": nodes["num_threshold"].astype(np.float64),
                          "missing_left": nodes["missing_go_to_left"].astype(bool),
                          "left": np.where(leaf, -1, nodes["left"].astype(np.int64)),
                          "right": np.where(leaf, -1, nodes["right"].astype(np.int64)),
                          "value": nodes["value"].astype(np.float64)})
        baseline = float(np.ravel(model._baseline_prediction)[0])
    except (AttributeError, KeyError, ValueError, IndexError):  # a scikit-learn without these internals
        return None
    return TreeEnsemble(tuple(trees), baseline)


def boosted_candidates(build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray], rank,
                       rng: np.random.Generator) -> list[Candidate]:
    """Regions of a gradient-boosting score fit on ``build``: thresholds chosen on ``build``, predicted on ``held``
    (``search_scores.held_out_regions``)."""
    from .search_scores import held_out_regions

    if min(build[0].shape[0], build[1].shape[0]) < 50:
        return []
    ensemble = fit_tree_ensemble(build[0], build[1], rng)
    if ensemble is None:
        return []
    return held_out_regions(ensemble, build, held, rank, tails=False)


def sign_vote_candidates(build: tuple[np.ndarray, np.ndarray], held: tuple[np.ndarray, np.ndarray], rank) -> list[Candidate]:
    """Regions of a sign vote (witness.SignVote): centres are the pooled build-half medians, weights the
    signs of the build-half differences P[y_j > centre | d] - P[y_j > centre | d_prime] (0 when not
    significant at 3 standard errors); thresholds chosen on the build half and predicted on the held-out half
    (``search_scores.held_out_regions``)."""
    from .search_scores import held_out_regions

    a, b = build
    if min(a.shape[0], b.shape[0]) < 50 or a.shape[1] < 2:
        return []
    columns = min(a.shape[1], MAX_PRODUCT_COLUMNS * 2)
    pooled = np.concatenate([a[:, :columns], b[:, :columns]])
    with np.errstate(invalid="ignore"):
        centres = np.nanmedian(np.where(np.isfinite(pooled), pooled, np.nan), axis=0)
    if np.isnan(centres).any():
        return []
    above_a, above_b = (a[:, :columns] > centres).mean(axis=0), (b[:, :columns] > centres).mean(axis=0)
    error = np.sqrt(0.25 / a.shape[0] + 0.25 / b.shape[0])
    weights = np.where(np.abs(above_a - above_b) > 3 * error, np.sign(above_a - above_b), 0.0)
    if np.count_nonzero(weights) < 2:
        return []
    return held_out_regions(SignVote(centres, weights), build, held, rank)
