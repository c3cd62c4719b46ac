"""Tail-level tests of score audits: the half-line placed at an order statistic of the certification scores.

A half-line {score >= t} fixed on the selection split has a random false-positive count at certification,
and in the far tail (where the (epsilon, delta) bound at small delta lives) a Clopper-Pearson bound on a count
of 0-3 is all a fixed threshold can hope for: which of them it gets is luck. A *tail level* j fixes the count
instead of the threshold: t is placed just beyond the (j+1)-th most extreme certification score of one side,
and the probability of that side's tail is bounded by Clopper-Pearson at count j for every such t at once.

Why this is valid (the order-statistic argument behind Clopper-Pearson): for scores X_1..X_n i.i.d. and
c = the Clopper-Pearson upper bound of level 1 - e at count j, let s0 = sup {s : P(X >= s) > c}. If the chosen
t (with at most j scores >= t) had P(X >= t) > c, then t <= s0 and at most j scores would be >= s for every
s in [t, s0] with P(X >= s) > c, an event of probability <= P[Binomial(n, c) <= j] = e. So one error e covers
the tail bound whatever t the certification scores of that side put it at. The other side's scores are
independent of t, so their count at t gets an ordinary Clopper-Pearson bound. (The same argument with every
score negated covers the lower tail of the scores with the canary.)

Tied scores (discrete scores: a count, a rounded loss) are ordered by (score, U) with U a seeded uniform per run,
independent of everything else: the test {(score, U) above the threshold pair} is a randomised half-line, a
post-processing of the training run, so every bound above holds for it as it stands, and with no two runs
equal the level's threshold has exactly j tail-side runs beyond it. The tail bound is then the plain
Clopper-Pearson bound at that threshold's own count, never a larger count's (without the uniforms a threshold
just beyond a tied order statistic has fewer than j runs beyond it, and its bound rests on j). The selection
split's scores are ordered the same way (its own uniforms), so the level chosen there is the level certified.

The level j, which side's tail, and how the point's error is shared between its two bounds (the tail bound
needs most of it: its count is tiny, the other count is large) are chosen on the selection split only
(:func:`select_tail_level`), by the bound predicted at certification: the threshold predicted where the
order statistic's survival has its median, read from the selection scores (beyond their TAIL_FIT most extreme
ones, from the exponential tail fitted to them: a peaks-over-threshold extrapolation), and the other side's
rate there shrunk by a one-sided Wilson bound. A poor prediction costs tightness, never validity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._numeric import round_down
from .tradeoff_points import CertifiedThreshold, epsilon_lower_bound, mu_lower_bound

__all__ = ["TailLevel", "select_tail_level", "certify_tail_level", "level_at", "break_ties", "TAIL_FIT", "LEVEL_SHARES",
           "SIDES"]

#: Most selection scores of the tail side the exponential tail is fitted to (at most a twentieth of them).
TAIL_FIT = 40
#: Shares of a tail-level point's error given to its tail bound (the rest to the other side's bound).
LEVEL_SHARES = (0.5, 0.7, 0.8, 0.9, 0.95)
#: "without": the upper tail of the scores without the canary; "with": the lower tail of the scores with it.
SIDES = ("without", "with")
_LEVELS_GEOMETRIC = 40


@dataclass(frozen=True)
class TailLevel:
    """A tail-level test chosen on the selection split: ``level`` j at ``n_tail`` certification scores of
    ``side``, the share of the point's error spent on the tail bound, and the bound it was predicted to give."""

    level: int
    side: str
    share: float
    n_tail: int
    predicted: float


def level_at(level: TailLevel, n: int) -> int:
    """The level for a prefix of ``n`` tail-side scores: the same tail probability (j + 1) / n_tail."""
    return max(0, min(n - 1, math.floor((level.level + 1) * n / level.n_tail) - 1))


def break_ties(positive: np.ndarray, negative: np.ndarray, rng: np.random.Generator | None
               ) -> tuple[np.ndarray, np.ndarray, bool]:
    """(positive, negative, broken): the scores as they are when no two are equal (or ``rng`` is None), else
    their ranks in the joint order of (score, U), U a uniform from ``rng`` per score: the order of randomised
    half-lines (module docstring), with no two runs equal."""
    joint = np.concatenate([positive, negative])
    if rng is None or joint.size < 2 or np.unique(joint).size == joint.size:
        return positive, negative, False
    order = np.lexsort((rng.random(joint.size), joint))
    ranks = np.empty(joint.size, dtype=np.float64)
    ranks[order] = np.arange(joint.size, dtype=np.float64)
    return ranks[:positive.size], ranks[positive.size:], True


def _tail_quantile(descending: np.ndarray, survival: np.ndarray, extrapolate: bool = True) -> np.ndarray:
    """The score whose survival is ``survival`` under the selection sample ``descending`` (sorted down): the
    interpolated order statistics, and beyond the k = min(TAIL_FIT, n/20) most extreme the exponential tail
    fitted to them (mean excess over the (k+1)-th), unless ``extrapolate`` is False (ranks of tied scores:
    within an atom the other side's runs interleave evenly, beyond the most extreme one nothing is known)."""
    n = descending.size
    position = survival * (n + 1) - 1.0
    inside = np.interp(position, np.arange(n), descending)
    k = min(TAIL_FIT, n // 20) if extrapolate else 0
    if k < 2:
        return np.where(position < 0, np.inf, inside)
    base = float(descending[k])
    scale = float(np.mean(descending[:k] - base))
    with np.errstate(divide="ignore"):
        beyond = base + scale * np.log((k + 1) / (survival * (n + 1)))
    return np.where(position < k, beyond, inside)


def _sides(positive: np.ndarray, negative: np.ndarray):
    """(side, tail scores, other scores): the tail side's extreme scores come first when sorted down, and the
    other side's scores beyond a threshold are its correct rejections."""
    return (("without", negative, positive), ("with", -positive, -negative))


def select_tail_level(positive: np.ndarray, negative: np.ndarray, *, n_positive: int, n_negative: int,
                      error_pair: float, delta: float, rng: np.random.Generator | None = None) -> TailLevel | None:
    """The tail level with the largest predicted epsilon bound, from the selection scores ``positive`` (with
    the canary) and ``negative`` (without); ``n_positive``/``n_negative`` are the certification sizes and
    ``error_pair`` the error of the point's two bounds together; ``rng`` breaks ties (:func:`break_ties`). None
    when the selection is too small."""
    from scipy.stats import beta as beta_distribution
    from scipy.stats import norm

    from ..stats import clopper_pearson_upper
    from .witness_search.prediction import SELECTION_Z, wilson

    positive, negative, broken = break_ties(positive, negative, rng)
    sizes = {"without": (n_negative, n_positive), "with": (n_positive, n_negative)}
    best: TailLevel | None = None
    for side, tail, other in _sides(positive, negative):
        n_tail, n_other = sizes[side]
        if tail.size < 2 * TAIL_FIT or n_tail < 2 or n_other < 1:
            continue
        levels = np.unique(np.concatenate([np.arange(8), np.geomspace(8, max(8, n_tail // 2), _LEVELS_GEOMETRIC).astype(int)]))
        levels = levels[levels < n_tail]
        survival = beta_distribution.ppf(0.5, levels + 1, n_tail - levels)
        threshold = _tail_quantile(np.sort(tail)[::-1], survival, extrapolate=not broken)
        beyond = other.size - np.searchsorted(np.sort(other), threshold, side="right")
        rate = wilson(beyond, other.size, SELECTION_Z, upper=False)
        for share in LEVEL_SHARES:
            tail_upper = np.asarray(clopper_pearson_upper(levels, n_tail, error_pair * share), dtype=np.float64)
            z_other = float(norm.isf(error_pair * (1.0 - share)))
            other_upper = wilson((1.0 - rate) * n_other, n_other, z_other, upper=True)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = np.where(1.0 - delta - other_upper > 0,
                                 np.log(np.maximum(1.0 - delta - other_upper, 1e-300)) - np.log(tail_upper), -np.inf)
            k = int(np.argmax(value))
            if np.isfinite(value[k]) and value[k] > 0 and (best is None or value[k] > best.predicted):
                best = TailLevel(int(levels[k]), side, share, n_tail, float(value[k]))
    return best


def certify_tail_level(positive: np.ndarray, negative: np.ndarray, level: TailLevel, error_pair: float, delta: float,
                       ties: tuple[np.ndarray, np.ndarray] | None = None) -> CertifiedThreshold:
    """Certify ``level`` on the certification scores ``positive`` (with) and ``negative`` (without), the
    level scaled to their sizes (:func:`level_at`); the half-line {score >= t} it puts t at, with the tail
    bound at count j (module docstring) and the other bound at its count, the error shared as chosen.
    ``ties``: one uniform per score (positive's, negative's) ordering tied scores (a randomised half-line)."""
    from ..stats import clopper_pearson_upper

    values = np.concatenate([positive, negative])
    broken = ties is not None and np.unique(values).size < values.size
    if broken:
        order = np.lexsort((np.concatenate(ties), values))
        ranks = np.empty(values.size, dtype=np.float64)
        ranks[order] = np.arange(values.size, dtype=np.float64)
        by_rank = values[order]  # the score of each rank
        positive, negative = ranks[:positive.size], ranks[positive.size:]
    positive, negative = np.sort(positive), np.sort(negative)
    tail_error, other_error = error_pair * level.share, error_pair * (1.0 - level.share)
    if level.side == "without":
        j = level_at(level, negative.size)
        threshold = float(np.nextafter(negative[negative.size - 1 - j], np.inf))  # at most j scores >= it
        count_alpha = int(negative.size - np.searchsorted(negative, threshold, side="left"))
        count_beta = int(np.searchsorted(positive, threshold, side="left"))
        alpha_u = float(clopper_pearson_upper(j, negative.size, tail_error))
        beta_u = float(clopper_pearson_upper(count_beta, positive.size, other_error))
    else:
        j = level_at(level, positive.size)
        threshold = float(positive[j])  # at most j scores with the canary below it
        count_alpha = int(negative.size - np.searchsorted(negative, threshold, side="left"))
        count_beta = int(np.searchsorted(positive, threshold, side="left"))
        beta_u = float(clopper_pearson_upper(j, positive.size, tail_error))
        alpha_u = float(clopper_pearson_upper(count_alpha, negative.size, other_error))
    if broken:  # the score at the threshold's rank: runs scoring it are split by their uniforms
        threshold = float(by_rank[int(math.floor(threshold))])
    mu = float(mu_lower_bound(alpha_u, beta_u))
    return CertifiedThreshold(threshold, "epsilon", count_alpha, count_beta, int(negative.size), int(positive.size), alpha_u,
                              beta_u, error_pair / 2.0, round_down(mu) if math.isfinite(mu) else mu,
                              round_down(float(epsilon_lower_bound(alpha_u, beta_u, delta))),
                              tail_level=j, tail_side=level.side, tail_share=level.share, ties_broken=broken)
