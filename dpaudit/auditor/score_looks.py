"""Sequential certification of score audits: the chosen thresholds certified on growing prefixes of the runs.

Training runs arrive one after another; :func:`certify_score_looks` certifies the thresholds chosen on the
selection split (:func:`dpaudit.audit_scores`) on the first runs of each certification array (in their given
order), at looks on a geometric schedule (``looks.plan_looks``: the last look holds every run, the first at
least FIRST_RUNS), spending each bound's error over the looks as a point audit does (``looks.py``: every bound
of every look holds together, so stopping early never overstates the confidence). It stops on a violation
(``epsilon_lower > epsilon`` or ``mu_lower > mu``), for futility when asked (no threshold could certify one on
all the runs even with its error counts forecast in its favour, from the look holding FUTILITY_FROM of the runs),
or when every run is used. Only streamed scores are certified in looks: ``audit_scores`` uses every score given
unless told the scores stream in. Without a claim nothing can be violated: every run is used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .looks import FUTILITY_FROM, forecast_counts, plan_looks
from .score_tail_levels import TailLevel, certify_tail_level
from .tradeoff_points import CertifiedThreshold, certify_thresholds, epsilon_lower_bound, mu_lower_bound

__all__ = ["ScoreLooks", "certify_score_looks", "certify_chosen", "Chosen", "FIRST_RUNS"]

#: A test chosen on the selection split: a fixed half-line (threshold, role) or a tail level.
Chosen = tuple[float, str] | TailLevel

#: Smallest first look (certification runs of the larger array) of a score audit's schedule.
FIRST_RUNS = 64


@dataclass(frozen=True)
class ScoreLooks:
    """The certified thresholds of the last look made, the runs they rest on, the looks made and why it stopped."""

    points: list[CertifiedThreshold]
    used_with: int  # certification runs with the canary behind ``points``
    used_without: int
    looks: int
    stopped: str  # "violation", "futility" or "budget"


def _violates(points: list[CertifiedThreshold], epsilon: float | None, mu: float | None) -> bool:
    return any((epsilon is not None and p.epsilon_bound > epsilon) or (mu is not None and p.mu_bound > mu) for p in points)


def certify_chosen(positive: np.ndarray, negative: np.ndarray, chosen: list[Chosen], error_per_bound: float,
                   delta: float, ties: tuple[np.ndarray, np.ndarray] | None = None) -> list[CertifiedThreshold]:
    """Certify every chosen test on ``positive`` (with) and ``negative`` (without), in order, each bound at
    ``error_per_bound`` (a tail level shares twice that between its two bounds; ``ties``: one uniform per score
    ordering tied scores, ``score_tail_levels.break_ties``)."""
    fixed = certify_thresholds(positive, negative, [c for c in chosen if not isinstance(c, TailLevel)], error_per_bound, delta)
    points, taken = [], iter(fixed)
    for c in chosen:
        points.append(certify_tail_level(positive, negative, c, 2.0 * error_per_bound, delta, ties) if isinstance(c, TailLevel)
                      else next(taken))
    return points


def _could_violate(points: list[CertifiedThreshold], n_with: int, n_without: int, error: float, delta: float,
                   epsilon: float | None, mu: float | None) -> bool:
    """Whether any certified point certifies a violation on all the runs with both error counts forecast low
    (a tail level's tail count is its level, scaled to all the runs)."""
    from ..stats import clopper_pearson_upper

    for p in points:
        final_a = int(forecast_counts(p.count_alpha, p.n_alpha, n_without, "down"))
        final_b = int(forecast_counts(p.count_beta, p.n_beta, n_with, "down"))
        error_a = error_b = error
        if p.tail_level is not None:
            tail_error, other_error = 2.0 * error * p.tail_share, 2.0 * error * (1.0 - p.tail_share)
            if p.tail_side == "without":
                final_a, error_a, error_b = max(0, (p.tail_level + 1) * n_without // p.n_alpha - 1), tail_error, other_error
            else:
                final_b, error_b, error_a = max(0, (p.tail_level + 1) * n_with // p.n_beta - 1), tail_error, other_error
        alpha_u = float(clopper_pearson_upper(final_a, n_without, error_a))
        beta_u = float(clopper_pearson_upper(final_b, n_with, error_b))
        if epsilon is not None and float(epsilon_lower_bound(alpha_u, beta_u, delta)) > epsilon:
            return True
        if mu is not None and float(mu_lower_bound(alpha_u, beta_u)) > mu:
            return True
    return False


def certify_score_looks(positive: np.ndarray, negative: np.ndarray, chosen: list[Chosen], error_per_bound: float,
                        delta: float, epsilon: float | None, mu: float | None, sequential: bool,
                        futility: bool = False, ties: tuple[np.ndarray, np.ndarray] | None = None) -> ScoreLooks:
    """Certify ``chosen`` on prefixes of the certification scores ``positive`` (with) and ``negative`` (without).

    ``sequential=False`` (or no claim, or no threshold): one look on every run, exactly
    ``certify_chosen(positive, negative, chosen, error_per_bound, delta)``.
    """
    if not sequential or not chosen or (epsilon is None and mu is None):
        return ScoreLooks(certify_chosen(positive, negative, chosen, error_per_bound, delta, ties), positive.size, negative.size,
                          1, "budget")
    largest = max(positive.size, negative.size)
    plan = plan_looks(largest, first=FIRST_RUNS)
    points: list[CertifiedThreshold] = []
    stopped = "budget"
    for look, count in enumerate(plan.looks):
        n_with = math.ceil(positive.size * count / largest)
        n_without = math.ceil(negative.size * count / largest)
        points = certify_chosen(positive[:n_with], negative[:n_without], chosen, error_per_bound * plan.shares[look], delta,
                                None if ties is None else (ties[0][:n_with], ties[1][:n_without]))
        if look == len(plan.looks) - 1:
            break
        if _violates(points, epsilon, mu):
            stopped = "violation"
            break
        if futility and count >= FUTILITY_FROM * largest and not _could_violate(
                points, positive.size, negative.size, error_per_bound * plan.shares[-1], delta, epsilon, mu):
            stopped = "futility"
            break
    return ScoreLooks(points, n_with, n_without, look + 1, stopped)
