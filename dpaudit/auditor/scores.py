"""Score audits of training runs from many runs: ``audit_scores``.

Any training framework can be audited from one number per (run, canary), higher meaning "more evidence
the canary was in" (its negated loss, a likelihood ratio, the white-box projection of the noisy
gradients on the canary's direction, ...).

:func:`audit_scores`: ``scores_with[i]`` from runs trained with the canary, ``scores_without[j]`` from
runs without it (independent runs). Half-line tests {score >= t} are chosen on a seeded random split
and certified on the rest (:mod:`dpaudit.auditor.tradeoff_points`); the certified (alpha_u, beta_u)
points give assumption-free ``mu_lower`` and ``epsilon_lower`` (Dong, Roth & Su 2022; Kairouz, Oh &
Viswanath 2015; as in Jagielski et al. 2020 and Nasr et al. 2021/2023).

One training run with many canaries: :mod:`dpaudit.auditor.one_run` (re-exported here).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._numeric import round_down
from .._validation import check_delta, check_epsilon, check_flag, check_nonnegative_int, check_probability
from ..errors import InvalidArgument, InvalidArgumentType
from .._json import json_ready
from .one_run import OneRunResult, audit_one_run, one_run_epsilon, one_run_p_value
from .score_inputs import check_included, check_scores
from .score_looks import Chosen, certify_score_looks
from .score_tail_levels import select_tail_level
from .tradeoff_points import (
    CertifiedThreshold,
    count_at_least,
    epsilon_lower_bound,
    mu_lower_bound,
    predicted_thresholds,
    split_order,
)

__all__ = [
    "audit_scores",
    "ScoreAuditResult",
    "TprAtFpr",
    "audit_one_run",
    "OneRunResult",
    "one_run_p_value",
    "one_run_epsilon",
    "check_scores",
    "check_included",
    "DEFAULT_FPRS",
]

#: False-positive rates at which audit_scores reports the true-positive rate.
DEFAULT_FPRS: tuple[float, ...] = (0.001, 0.01, 0.1)


# ------------------------------------------------------------------------------------------ audit_scores
@dataclass(frozen=True)
class TprAtFpr:
    """The true-positive rate of the threshold chosen (on the selection split) for a target false-positive
    rate, measured on the certification split; each interval is a two-sided Clopper-Pearson interval at
    the audit's confidence level on its own (not simultaneous with the bounds)."""

    fpr_target: float
    threshold: float
    fpr_estimate: float
    fpr_interval: tuple[float, float]
    tpr_estimate: float
    tpr_interval: tuple[float, float]

    def to_dict(self) -> dict[str, Any]:
        return json_ready({f.name: getattr(self, f.name) for f in fields(self)})


@dataclass(frozen=True)
class ScoreAuditResult:
    """Outcome of :func:`audit_scores`.

    ``epsilon_lower`` (at ``delta``) and ``mu_lower`` are lower bounds on the training algorithm's privacy
    parameters that hold (together) with probability >= ``confidence_level``, rounded down, assuming only
    that the runs are independent. ``violated``: epsilon_lower > the claimed ``epsilon`` (or mu_lower >
    the claimed ``mu``). ``auroc`` is a point estimate (not a bound); ``auroc_interval`` a conservative
    Hoeffding interval at ``confidence_level``. ``epsilon_gaussian_assumption`` is NOT assumption-free:
    the epsilon at delta of mu_lower-GDP, valid only if the trade-off curve is Gaussian (Nasr et al. 2023).
    """

    epsilon_lower: float
    mu_lower: float
    epsilon: float | None
    mu: float | None
    delta: float
    violated: bool
    confidence_level: float
    seed: int
    n_with: int
    n_without: int
    selection_with: int
    selection_without: int
    points: tuple[CertifiedThreshold, ...]
    threshold: float | None  # of the point giving epsilon_lower
    tpr_at_fpr: tuple[TprAtFpr, ...]
    auroc: float
    auroc_interval: tuple[float, float]
    epsilon_ceiling: float
    mu_ceiling: float
    epsilon_gaussian_assumption: float
    method: str
    seconds: float
    warnings: tuple[str, ...] = ()
    samples_used: tuple[int, int] | None = None  # runs (with, without) behind the bounds, selection included
    looks: int = 1  # certification looks made (``score_looks.py``)
    stopped: str = "budget"  # "violation", "futility" or "budget"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (infinities as strings)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("points", "tpr_at_fpr")}
        data["points"] = [p.to_dict() for p in self.points]
        data["tpr_at_fpr"] = [t.to_dict() for t in self.tpr_at_fpr]
        data["bound"] = "lower"
        data["auroc_note"] = "point estimate (not a bound); interval: Hoeffding, conservative"
        data["epsilon_gaussian_assumption_note"] = "assuming a Gaussian trade-off curve (not assumption-free)"
        return json_ready(data)

    def summary(self) -> str:
        claim = []
        if self.epsilon is not None:
            claim.append(f"claimed epsilon {self.epsilon:g}")
        if self.mu is not None:
            claim.append(f"claimed mu {self.mu:g}")
        verdict = "VIOLATED" if self.violated else "not violated"
        lines = [f"score audit ({self.n_with} runs with the canary, {self.n_without} without): {verdict}"
                 + (f" ({', '.join(claim)})" if claim else ""),
                 f"epsilon >= {self.epsilon_lower:.4f} at delta {self.delta:g}, mu >= {self.mu_lower:.4f} "
                 f"(confidence {self.confidence_level:g}; ceilings {self.epsilon_ceiling:.3g} / {self.mu_ceiling:.3g})",
                 f"AUROC {self.auroc:.4f} (estimate; {self.confidence_level:g} interval "
                 f"[{self.auroc_interval[0]:.3f}, {self.auroc_interval[1]:.3f}])"]
        for t in self.tpr_at_fpr:
            lines.append(f"TPR at FPR {t.fpr_target:g}: {t.tpr_estimate:.4f} [{t.tpr_interval[0]:.4f}, "
                         f"{t.tpr_interval[1]:.4f}] (measured FPR {t.fpr_estimate:.4g})")
        lines.append(f"assuming a Gaussian trade-off curve: epsilon ~ {self.epsilon_gaussian_assumption:.4f} "
                     "(not a certified bound)")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    """P[X > Y] + P[X = Y] / 2 for X ~ positive, Y ~ negative (Mann-Whitney), from ranks: O(n log n)."""
    negative = np.sort(negative)
    below = np.searchsorted(negative, positive, side="left").astype(np.float64)
    ties = np.searchsorted(negative, positive, side="right") - below
    return float((below.sum() + 0.5 * ties.sum()) / (positive.size * negative.size))


def _tpr_at_fpr(select_pos: np.ndarray, select_neg: np.ndarray, pos: np.ndarray, neg: np.ndarray,
                fprs: Sequence[float], confidence_level: float) -> tuple[TprAtFpr, ...]:
    from ..stats import clopper_pearson_interval

    select_neg = np.sort(select_neg)
    pos_sorted, neg_sorted = np.sort(pos), np.sort(neg)
    out = []
    for fpr in fprs:
        # smallest threshold whose empirical FPR on the selection negatives is <= fpr (ties included)
        allowed = int(math.floor(fpr * select_neg.size))
        threshold = float(np.nextafter(select_neg[select_neg.size - allowed - 1], math.inf))
        fp = int(count_at_least(neg_sorted, [threshold])[0])
        tp = int(count_at_least(pos_sorted, [threshold])[0])
        f_lo, f_hi = clopper_pearson_interval(fp, neg.size, confidence_level)
        t_lo, t_hi = clopper_pearson_interval(tp, pos.size, confidence_level)
        out.append(TprAtFpr(float(fpr), threshold, fp / neg.size, (float(f_lo), float(f_hi)), tp / pos.size,
                            (float(t_lo), float(t_hi))))
    return tuple(out)


#: Share of the runs that chooses the tests (the rest certifies them); DISCRETE_SELECTION for discrete scores.
SELECTION_FRACTION = 0.2
DISCRETE_SELECTION = 0.05


#: Scores taking at most this many distinct values (on the selection split) are discrete: their half-lines are the
#: atoms' boundaries, few enough to certify a second one.
DISCRETE_ATOMS = 64


def _beyond_atom(s_pos: np.ndarray, s_neg: np.ndarray, threshold: float, delta: float) -> float | None:
    """For discrete scores, the atom boundary next to ``threshold`` on the side of its epsilon bound's smaller error
    (the next value up when the false positives decide it, down when the false negatives do), or None. Far in the
    tail the selection split holds a handful of runs per atom, so its predictions there are too pessimistic to pick
    the more extreme atom on their own."""
    values = np.unique(np.concatenate([s_pos, s_neg]))
    if values.size > DISCRETE_ATOMS:
        return None
    alpha = float(np.mean(s_neg >= threshold))
    beta = float(np.mean(s_pos < threshold))
    up = math.log(max(1.0 - delta - beta, 1e-300)) - math.log(max(alpha, 1e-300)) >= \
        math.log(max(1.0 - delta - alpha, 1e-300)) - math.log(max(beta, 1e-300))
    index = int(np.searchsorted(values, threshold))
    neighbour = index + 1 if up else index - 1
    return float(values[neighbour]) if 0 < neighbour < values.size else None


def _choose(s_pos: np.ndarray, s_neg: np.ndarray, n_pos: int, n_neg: int, error_per_bound: float, delta: float,
            rng: np.random.Generator | None = None) -> list[Chosen]:
    """The tests chosen on the selection split: the half-line of the best predicted mu bound and, for epsilon,
    the half-line or the tail level (``score_tail_levels.py``) with the larger predicted bound; for discrete scores
    (at most DISCRETE_ATOMS values) also the next atom boundary beyond the epsilon half-line (:func:`_beyond_atom`).
    When one half-line is best for both (separable scores: both error counts 0), it stays alone: a second point
    would halve the error of its bounds."""
    fixed = predicted_thresholds(s_pos, s_neg, n_positive=n_pos, n_negative=n_neg, error_per_bound=error_per_bound,
                                 delta=delta)
    chosen: list[Chosen] = [(t, role) for t, role, _, _ in fixed]
    if len(fixed) < 2:
        return chosen
    beyond = _beyond_atom(s_pos, s_neg, fixed[1][0], delta)
    if beyond is not None:
        return chosen + [(beyond, "epsilon")] if all(beyond != t for t, _ in chosen) else chosen
    tail = select_tail_level(s_pos, s_neg, n_positive=n_pos, n_negative=n_neg, error_pair=2.0 * error_per_bound,
                             delta=delta, rng=rng)
    if tail is None or tail.predicted <= fixed[1][3]:
        return chosen
    return [chosen[0], tail]


def audit_scores(
    scores_with: Any,
    scores_without: Any,
    epsilon: float | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    seed: int = 0,
    *,
    mu: float | None = None,
    selection_fraction: float | None = None,
    fprs: Sequence[float] = DEFAULT_FPRS,
    sequential: bool = False,
    stop_for_futility: bool = False,
) -> ScoreAuditResult:
    """Certified privacy lower bounds from one score per training run, with and without a canary.

    Thresholds {score >= t} are chosen on a random ``selection_fraction`` of each array (seeded by
    ``seed``) and certified on the rest with one-sided Clopper-Pearson bounds on both error rates, the
    error 1 - confidence_level split over every certified bound (Bonferroni). Each certified point
    (alpha_u, beta_u) rules out mu'-GDP for mu' < Phi^-1(1-alpha_u) - Phi^-1(beta_u) and (eps', delta)-DP
    for eps' < max(ln((1-delta-beta_u)/alpha_u), ln((1-delta-alpha_u)/beta_u)) (Dong, Roth & Su 2022).

    Args:
        scores_with: one score per run trained WITH the canary (higher = more evidence it was in).
        scores_without: one score per independent run trained WITHOUT it.
        epsilon: the claimed epsilon (at ``delta``); ``violated`` is epsilon_lower > epsilon.
        delta: where epsilon_lower is reported.
        confidence_level: probability with which all reported bounds hold together.
        seed: seeds the selection split (the result is reproducible).
        mu: optionally a claimed GDP mu; then mu_lower > mu is also a violation.
        selection_fraction: share of each array used to choose thresholds (default: SELECTION_FRACTION, or
            DISCRETE_SELECTION when its first DISCRETE_SELECTION of the runs take at most DISCRETE_ATOMS values:
            discrete scores need few runs to find their atoms, and every run certified counts in their far tail).
        fprs: false-positive rates at which to report the TPR (with Clopper-Pearson intervals).
        sequential: for scores streamed in as the runs finish (both arrays in run order, of equal length):
            with a claim (``epsilon`` or ``mu``), certify on growing prefixes of the runs and stop on a certified
            violation (``score_looks.py``; ``samples_used``). Default False: every score given is used (runs
            already paid for: stopping early would only throw evidence away).
        stop_for_futility: with ``sequential=True``, also stop when the runs cannot certify a violation
            (verdict-only use; the bounds are then those of fewer runs).

    Returns:
        ScoreAuditResult with ``epsilon_lower``, ``mu_lower``, ``tpr_at_fpr``, ``auroc``, ``violated``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> r = audit_scores(rng.normal(1.0, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000), epsilon=5.0, delta=1e-5)
        >>> r.violated, 0.9 < r.mu_lower <= 1.0
        (False, True)
    """
    started = time.perf_counter()
    positive = check_scores(scores_with, "scores_with")
    negative = check_scores(scores_without, "scores_without")
    if epsilon is not None:
        epsilon = check_epsilon(epsilon, "epsilon", allow_inf=True)
    if mu is not None:
        mu = check_epsilon(mu, "mu", allow_inf=True)
    delta = check_delta(delta, "delta")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    if selection_fraction is not None:
        selection_fraction = check_probability(selection_fraction, "selection_fraction", low_open=True, high_open=True)
    if isinstance(fprs, (str, bytes)) or not isinstance(fprs, (Sequence, np.ndarray)):
        raise InvalidArgumentType("fprs", f"fprs={fprs!r} must be a sequence of false-positive rates")
    fprs = tuple(check_probability(f, "fprs", low_open=True, high_open=True) for f in fprs)
    sequential = check_flag(sequential, "sequential")
    futility = check_flag(stop_for_futility, "stop_for_futility")
    if futility and not sequential:
        raise InvalidArgument("stop_for_futility", "stop_for_futility=True stops streamed scores early; it contradicts "
                                                   "sequential=False (every score used): drop one of them")
    if sequential and positive.size != negative.size:
        raise InvalidArgument("scores_without", f"sequential=True reads the scores as one stream of runs: scores_with "
                                                f"({positive.size}) and scores_without ({negative.size}) must have "
                                                "equal lengths")

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13,)))
    order_pos, order_neg = rng.permutation(positive.size), rng.permutation(negative.size)
    if selection_fraction is None:  # decided on the first runs of the selection order only: never on certification runs
        pilot_pos, pilot_neg = (scores[split_order(scores.size, DISCRETE_SELECTION, order)[0]]
                                for scores, order in ((positive, order_pos), (negative, order_neg)))
        discrete = np.unique(np.concatenate([pilot_pos, pilot_neg])).size <= DISCRETE_ATOMS
        selection_fraction = DISCRETE_SELECTION if discrete else SELECTION_FRACTION
    sel_pos, cert_pos = split_order(positive.size, selection_fraction, order_pos)
    sel_neg, cert_neg = split_order(negative.size, selection_fraction, order_neg)
    s_pos, c_pos, s_neg, c_neg = positive[sel_pos], positive[cert_pos], negative[sel_neg], negative[cert_neg]

    error = 1.0 - confidence_level
    # two points at most (best predicted mu, best predicted epsilon), two bounds each
    planned = 2
    ties = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13, 1)))  # orders tied scores (tail levels)
    chosen = _choose(s_pos, s_neg, c_pos.size, c_neg.size, error / (2 * planned), delta, ties)
    per_bound = error / (2 * max(1, len(chosen)))
    looked = certify_score_looks(c_pos, c_neg, chosen, per_bound, delta, epsilon, mu, sequential, futility,
                                 (ties.random(c_pos.size), ties.random(c_neg.size)))
    points = looked.points
    mu_lower = max([0.0] + [p.mu_bound for p in points if p.mu_bound > 0])
    best = max(points, key=lambda p: p.epsilon_bound, default=None)
    epsilon_lower = 0.0 if best is None else best.epsilon_bound
    from ..stats import clopper_pearson_upper

    ceiling_a = float(clopper_pearson_upper(0, c_neg.size, per_bound))
    ceiling_b = float(clopper_pearson_upper(0, c_pos.size, per_bound))
    eps_ceiling = round_down(float(epsilon_lower_bound(ceiling_a, ceiling_b, delta)))
    mu_ceiling = round_down(float(mu_lower_bound(ceiling_a, ceiling_b)))
    assumed = 0.0
    if mu_lower > 0:
        if delta > 0:
            from ..accountant.curves import gdp_epsilon

            assumed = round_down(float(gdp_epsilon(mu_lower, delta)) * (1.0 - 1e-7))
        else:
            assumed = math.inf
    auroc = _auroc(positive, negative)
    half = math.sqrt(math.log(2.0 / error) / (2.0 * min(positive.size, negative.size)))
    warnings = []
    if not points:
        warnings.append("no threshold separated the scores on the selection split: nothing was certified")
    if auroc < 0.5 and mu_lower == 0.0:
        warnings.append(f"AUROC {auroc:.3f} < 0.5: are higher scores really more evidence that the canary was in?")
    violated = (epsilon is not None and epsilon_lower > epsilon) or (mu is not None and mu_lower > mu)
    method = (f"selection {s_pos.size}+{s_neg.size} (seeded split), certification {c_pos.size}+{c_neg.size}; "
              f"{len(points)} half-line tests"
              + (" (one at a tail level: its threshold at an order statistic of the certification scores"
                 + ("; tied scores ordered by seeded uniforms, a randomised half-line" if any(p.ties_broken for p in points)
                    else "") + ")" if any(p.tail_level is not None for p in points) else "")
              + f", one-sided Clopper-Pearson on both error rates, Bonferroni over {2 * len(points)} bounds")
    return ScoreAuditResult(
        epsilon_lower=epsilon_lower, mu_lower=mu_lower, epsilon=epsilon, mu=mu, delta=delta, violated=bool(violated),
        confidence_level=confidence_level, seed=seed, n_with=positive.size, n_without=negative.size,
        selection_with=s_pos.size, selection_without=s_neg.size, points=tuple(points),
        threshold=None if best is None else best.threshold,
        tpr_at_fpr=_tpr_at_fpr(s_pos, s_neg, c_pos, c_neg, fprs, confidence_level), auroc=auroc,
        auroc_interval=(max(0.0, auroc - half), min(1.0, auroc + half)), epsilon_ceiling=eps_ceiling,
        mu_ceiling=mu_ceiling, epsilon_gaussian_assumption=assumed,
        method=method + (f"; sequential: {looked.looks} look(s) on the first runs, stopped: {looked.stopped}" if sequential
                         and looked.looks > 1 else ""),
        seconds=time.perf_counter() - started, warnings=tuple(warnings),
        samples_used=(s_pos.size + looked.used_with, s_neg.size + looked.used_without), looks=looked.looks,
        stopped=looked.stopped)
