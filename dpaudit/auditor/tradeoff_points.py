"""Certified trade-off points from two samples of a scalar score (the shared statistical core).

Setting: ``positive`` holds i.i.d. scores under one input (say d', "the canary was in") and ``negative``
i.i.d. scores under the other (d, "out"); a larger score is more evidence for d'. Every half-line
S_t = {score >= t} is a test of H0 = d against d' with type-I error alpha(t) = P_d(S_t) and type-II error
beta(t) = P_d'(not S_t). The procedure (Neyman-Pearson half-lines, chosen on one part of the data and
certified on the rest, as in DESIGN.md "Statistics the auditor must get right"):

1. :func:`predicted_thresholds` chooses a few thresholds on a *selection* split only, by the bounds they
   are predicted to certify (conservative Wilson predictions, :func:`dpaudit.auditor.witness_search.prediction.conservative_upper`);
2. :func:`certify_thresholds` counts each chosen half-line on the *certification* split and gives
   one-sided Clopper-Pearson upper bounds alpha_u >= alpha(t), beta_u >= beta(t), the error probability
   split (Bonferroni) over every bound of every certified threshold, so all hold together with
   probability >= the confidence level;
3. every certified (alpha_u, beta_u) implies two assumption-free lower bounds (Dong, Roth & Su 2022):
   :func:`mu_lower_bound` = Phi^-1(1 - alpha_u) - Phi^-1(beta_u) (mu-GDP forces beta >= G_mu(alpha)) and
   :func:`epsilon_lower_bound` = max(ln((1 - delta - beta_u) / alpha_u), ln((1 - delta - alpha_u) / beta_u))
   ((epsilon, delta)-DP forces beta >= 1 - delta - e^eps alpha and beta >= e^-eps (1 - delta - alpha),
   Kairouz, Oh & Viswanath 2015), both directions of the pair covered by the one half-line.

Used by :func:`dpaudit.audit_scores` (scores of training runs); the curve audit
(:mod:`dpaudit.auditor.curve`) computes the same mu and epsilon bounds from its certified points and
can call :func:`epsilon_lower_bound` / :func:`certify_counts` for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._numeric import round_down

__all__ = [
    "CertifiedThreshold",
    "epsilon_lower_bound",
    "mu_lower_bound",
    "certify_counts",
    "count_at_least",
    "candidate_thresholds",
    "predicted_thresholds",
    "certify_thresholds",
    "split_indices",
    "split_order",
    "GRID_THRESHOLDS",
]

#: Candidate thresholds examined on the selection split (quantiles of the pooled selection scores).
GRID_THRESHOLDS = 1024


def epsilon_lower_bound(alpha_upper: Any, beta_upper: Any, delta: float) -> np.ndarray:
    """max(0, ln((1 - delta - beta_u) / alpha_u), ln((1 - delta - alpha_u) / beta_u)), vectorised, nudged
    down by a relative 1e-12 (float error of the logs): no (epsilon', delta)-DP with epsilon' below it
    admits a test with type-I error <= alpha_u and type-II error <= beta_u (inf when a bound is 0)."""
    a = np.asarray(alpha_upper, dtype=np.float64)
    b = np.asarray(beta_upper, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        first = np.where((1.0 - delta - b > 0), np.log(np.maximum(1.0 - delta - b, 0.0)) - np.log(a), -np.inf)
        second = np.where((1.0 - delta - a > 0), np.log(np.maximum(1.0 - delta - a, 0.0)) - np.log(b), -np.inf)
    value = np.maximum(np.maximum(first, second), 0.0)
    value = np.where(np.isfinite(value), value - 1e-12 * np.maximum(1.0, np.abs(value)), value)
    return np.maximum(np.nan_to_num(value, nan=0.0), 0.0)


def mu_lower_bound(alpha_upper: Any, beta_upper: Any) -> np.ndarray:
    """Phi^-1(1 - alpha_u) - Phi^-1(beta_u), rounded down (-inf when undefined): the GDP bound of a test
    (:func:`dpaudit.accountant.curves.gdp_mu_lower`)."""
    from ..accountant.curves import gdp_mu_lower

    return gdp_mu_lower(np.clip(alpha_upper, 0.0, 1.0), np.clip(beta_upper, 0.0, 1.0))


def certify_counts(count_alpha: Any, n_alpha: int, count_beta: Any, n_beta: int, error_per_bound: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson upper bounds (each at level 1 - ``error_per_bound``) on the type-I error
    (``count_alpha`` of ``n_alpha`` H0 samples inside the rejection region) and the type-II error
    (``count_beta`` of ``n_beta`` alternative samples outside it)."""
    from ..stats import clopper_pearson_upper

    alpha_u = np.atleast_1d(clopper_pearson_upper(np.asarray(count_alpha), n_alpha, error_per_bound))
    beta_u = np.atleast_1d(clopper_pearson_upper(np.asarray(count_beta), n_beta, error_per_bound))
    return alpha_u.astype(np.float64), beta_u.astype(np.float64)


def count_at_least(sorted_scores: np.ndarray, thresholds: Any) -> np.ndarray:
    """How many of ``sorted_scores`` (ascending) are >= each threshold."""
    return sorted_scores.size - np.searchsorted(sorted_scores, np.asarray(thresholds, dtype=np.float64), side="left")


def split_indices(n: int, fraction: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A random split of range(n) into selection (round(fraction n), at least 1 and at most n - 1 when
    n >= 2) and certification indices."""
    return split_order(n, fraction, rng.permutation(n))


def split_order(n: int, fraction: float, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_indices` with the random permutation ``order`` of range(n) drawn already: the first
    round(fraction n) of it select (at least 1, at most n - 1 when n >= 2), the rest certify."""
    k = int(min(max(1, round(fraction * n)), n - 1)) if n >= 2 else 0
    return np.sort(order[:k]), np.sort(order[k:])


def candidate_thresholds(positive: np.ndarray, negative: np.ndarray, grid: int = GRID_THRESHOLDS) -> np.ndarray:
    """Distinct thresholds: quantiles of the pooled scores (at most ``grid``), each a score value, so
    every half-line {score >= t} of the pooled sample is represented up to the grid's resolution."""
    pooled = np.concatenate([positive, negative])
    if pooled.size == 0:
        return np.empty(0)
    return np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, min(grid, pooled.size)), method="inverted_cdf"))


def predicted_thresholds(positive: np.ndarray, negative: np.ndarray, *, n_positive: int, n_negative: int,
                         error_per_bound: float, delta: float, grid: int = GRID_THRESHOLDS
                         ) -> list[tuple[float, str, float, float]]:
    """Choose half-line thresholds on the selection split only: the one with the best predicted mu bound
    and the one with the best predicted epsilon bound at ``delta`` (deduplicated), each as (threshold, role,
    predicted mu bound, predicted epsilon bound).

    ``positive``/``negative`` are the selection scores; ``n_positive``/``n_negative`` the certification
    sizes the predictions are made for, ``error_per_bound`` the error each certified bound will get.
    """
    from scipy.stats import norm

    from .witness_search.prediction import conservative_upper

    positive, negative = np.sort(positive), np.sort(negative)
    if positive.size == 0 or negative.size == 0:
        return []
    thresholds = candidate_thresholds(positive, negative, grid)
    if thresholds.size == 0:
        return []
    z = float(norm.isf(error_per_bound))
    in_pos, in_neg = count_at_least(positive, thresholds), count_at_least(negative, thresholds)
    alpha_pred = conservative_upper(in_neg, negative.size, n_negative, z)
    beta_pred = conservative_upper(positive.size - in_pos, positive.size, n_positive, z)
    trivial = ((in_pos == positive.size) & (in_neg == negative.size)) | ((in_pos == 0) & (in_neg == 0))
    mu_pred = np.where(trivial, -np.inf, mu_lower_bound(alpha_pred, beta_pred))
    eps_pred = np.where(trivial, -np.inf, epsilon_lower_bound(alpha_pred, beta_pred, delta))
    chosen: list[tuple[float, str, float, float]] = []
    for values, role in ((mu_pred, "mu"), (eps_pred, "epsilon")):
        k = int(np.argmax(values))
        if np.isfinite(values[k]) or values[k] == math.inf:
            t = float(thresholds[k])
            if all(t != c for c, _, _, _ in chosen):
                chosen.append((t, role, float(mu_pred[k]), float(eps_pred[k])))
    return chosen


@dataclass(frozen=True)
class CertifiedThreshold:
    """The half-line {score >= threshold}, certified: ``alpha_upper`` >= P_out(score >= t) and
    ``beta_upper`` >= P_in(score < t), each at level 1 - ``error_per_bound`` (all bounds together at the
    audit's confidence level); ``mu_bound`` and ``epsilon_bound`` are the lower bounds it implies."""

    threshold: float
    role: str  # why it was chosen: "mu" (best predicted mu bound) or "epsilon" (best predicted epsilon)
    count_alpha: int  # certification "out" scores >= threshold (false positives)
    count_beta: int  # certification "in" scores < threshold (false negatives)
    n_alpha: int
    n_beta: int
    alpha_upper: float
    beta_upper: float
    error_per_bound: float  # a tail-level point shares twice this between its bounds: tail_share to the tail bound
    mu_bound: float
    epsilon_bound: float
    tail_level: int | None = None  # a tail-level point (``score_tail_levels.py``): the count its tail bound rests on
    tail_side: str | None = None  # "without" (alpha_upper is the tail bound) or "with" (beta_upper is)
    tail_share: float | None = None
    ties_broken: bool = False  # a tail level on tied scores: the scores equal to ``threshold`` split by seeded uniforms

    def to_dict(self) -> dict[str, Any]:
        from .._json import json_ready

        return json_ready({**{k: getattr(self, k) for k in self.__dataclass_fields__},
                           "alpha_estimate": self.count_alpha / self.n_alpha,
                           "beta_estimate": self.count_beta / self.n_beta})


def certify_thresholds(positive: np.ndarray, negative: np.ndarray, chosen: list[tuple[float, str]],
                       error_per_bound: float, delta: float) -> list[CertifiedThreshold]:
    """Certify each chosen threshold on the certification scores ``positive`` (in) / ``negative`` (out)."""
    if not chosen:
        return []
    positive, negative = np.sort(positive), np.sort(negative)
    thresholds = np.array([t for t, _ in chosen])
    count_alpha = count_at_least(negative, thresholds)
    count_beta = positive.size - count_at_least(positive, thresholds)
    alpha_u, beta_u = certify_counts(count_alpha, negative.size, count_beta, positive.size, error_per_bound)
    mus = mu_lower_bound(alpha_u, beta_u)
    epsilons = epsilon_lower_bound(alpha_u, beta_u, delta)
    out = []
    for i, (t, role) in enumerate(chosen):
        mu = float(mus[i])
        out.append(CertifiedThreshold(t, role, int(count_alpha[i]), int(count_beta[i]), int(negative.size),
                                      int(positive.size), float(alpha_u[i]), float(beta_u[i]), error_per_bound,
                                      round_down(mu) if math.isfinite(mu) else mu, round_down(float(epsilons[i]))))
    return out
