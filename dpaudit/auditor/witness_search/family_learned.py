"""Witness family: learned scores of vector outputs, thresholded on the build half and predicted held out.

- A gradient-boosting score (scikit-learn's HistGradientBoostingClassifier, Ke et al. 2017 / Friedman
  2001) fit on the build half; the fitted trees are frozen into a :class:`~dpaudit.auditor.witness.TreeEnsemble`
  (no scikit-learn needed to certify or to re-read a baseline). scikit-learn is optional: without it this
  score is skipped.
- A sign vote (:class:`~dpaudit.auditor.witness.SignVote`) of the coordinates that differ significantly.
- A product-likelihood score (:func:`fit_product_likelihood`). For independent coordinates the
  Neyman-Pearson statistic is sum_j ln(p_j(y_j) / q_j(y_j)) (a "naive Bayes" log likelihood ratio). Per
  coordinate, the build-half values are binned (each distinct value its own bin when there are at most
  MAX_BINS, else MAX_BINS quantile bins of the pooled values; NaN its own bin), and adjacent bins are merged
  while their log ratios do not differ by MERGE_Z standard errors (ChiMerge, Kerber 1992): noise
  coordinates collapse to one bin and are dropped, a location shift of heavy-tailed noise keeps two plateaus
  and its transition. Each merged bin's log ratio is ln((count_a * n_b / n_a + 1/2) / (count_b + 1/2)).

Every score's half-lines and intervals are chosen on the build half and predicted on the held-out half,
with fitted companions (``regions.held_out_regions``).
"""

from __future__ import annotations

import numpy as np

from ..threads import thread_pools
from ..witness import ProductLikelihood, SignVote, TreeEnsemble
from .batch import SelectionBatch
from .candidate import Candidate
from .regions import held_out_regions, sorted_quantiles

__all__ = ["LearnedScores", "boosted_candidates", "sign_vote_candidates", "product_likelihood_candidates",
           "fit_tree_ensemble", "fit_product_likelihood", "boosting_available", "preload_boosting", "BOOSTING_MISSING", "MAX_BINS",
           "MERGE_Z", "MAX_LIKELIHOOD_COLUMNS", "MAX_VOTE_COLUMNS"]


BOOST_SAMPLES = 5_000  # per input
BOOST_ITERATIONS = 20
MAX_VOTE_COLUMNS = 64
MAX_BINS = 16
MERGE_Z = 3.0  # adjacent bins whose log ratios differ by fewer standard errors are merged
MAX_LIKELIHOOD_COLUMNS = 64


class LearnedScores:
    """Regions of a gradient-boosting score, a sign vote and the product-likelihood score (vector outputs only)."""

    name = "learned scores"
    costly = True

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        if batch.width < 2:
            return []
        found = boosted_candidates(batch.build, batch.held, batch.held_out, batch.rng)
        found += sign_vote_candidates(batch.build, batch.held, batch.held_out)
        found += product_likelihood_candidates(batch.build, batch.held, batch.held_out)
        return found


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


def preload_boosting() -> bool:
    """Import scikit-learn's gradient boosting (and find the thread pools) now; whether it is installed. A process
    that forks many audits (the gate's entries, each in its own child) imports it once instead of in every child
    (~0.3 s each)."""
    try:
        from sklearn.ensemble import HistGradientBoostingClassifier  # noqa: F401 - imported for the children
    except Exception:  # noqa: BLE001 - a broken install: each fit reports it as today (no boosted score)
        return False
    thread_pools()  # the children inherit the thread pools found with it
    return True


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
    (``regions.held_out_regions``)."""
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
    (``regions.held_out_regions``)."""
    a, b = build
    if min(a.shape[0], b.shape[0]) < 50 or a.shape[1] < 2:
        return []
    columns = min(a.shape[1], MAX_VOTE_COLUMNS)
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
