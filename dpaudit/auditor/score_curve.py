"""``audit_score_curve``: a claimed trade-off curve tested from one score per run, with and without a canary.

The curve audit of :func:`dpaudit.audit_curve` for scores already drawn (the runs of a training audit): the
tests are half-lines {score >= t} (reject "the canary was out" when the score is high). On the same seeded
selection split as :func:`dpaudit.audit_scores` given the same ``selection_fraction`` (so the two can share the
runs), two thresholds are chosen from the selection scores only: the one predicted to lie furthest below the
claimed curve (in probit units) and the one with the best predicted mu bound. On the certification scores each
gets one-sided Clopper-Pearson upper bounds alpha_u >= P_out(score >= t), beta_u >= P_in(score < t), the error split
(Bonferroni) over the four bounds. A point with beta_u < f(alpha_u) contradicts the claim f with no
assumption (f is non-increasing: beta <= beta_u < f(alpha_u) <= f(alpha); Dong, Roth & Su 2022): the claim
is **violated** (for instance a claim made for twice the noise the training used).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._numeric import round_down
from .._validation import check_nonnegative_int, check_probability
from ..accountant.curves import gdp_epsilon_lower, gdp_mu_lower
from .curve import _CLAIM_GRID, CurveAuditResult, CurvePoint, _epsilon_lower, _probit_margin, resolve_claim
from .audit import DIRECTIONS
from .score_inputs import check_scores
from .tradeoff_points import candidate_thresholds, certify_counts, count_at_least, split_order

__all__ = ["audit_score_curve", "SCORE_SPLIT_KEY"]

#: Spawn key of the selection split (the same as :func:`dpaudit.audit_scores`', so both see one split).
SCORE_SPLIT_KEY = (13,)


def audit_score_curve(scores_with: Any, scores_without: Any, claim: Any, *, delta: float | None = None,
                      confidence_level: float = 0.95, seed: int = 0, selection_fraction: float = 0.2
                      ) -> CurveAuditResult:
    """Test ``claim`` (a privacy event, a Guarantee, a GDP mu or a trade-off function, as for
    :func:`dpaudit.audit_curve`) against certified points from scores of runs with / without a canary
    (higher = more evidence it was in). All points hold together with probability >= ``confidence_level``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> r = audit_score_curve(rng.normal(2.0, 1.0, 2000), rng.normal(0.0, 1.0, 2000), claim=1.0)
        >>> r.violated  # a 1-GDP claim for scores that separate by mu = 2
        True
    """
    from scipy.stats import norm

    from .witness_search.prediction import conservative_upper

    started = time.perf_counter()
    positive = check_scores(scores_with, "scores_with")
    negative = check_scores(scores_without, "scores_without")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    selection_fraction = check_probability(selection_fraction, "selection_fraction", low_open=True, high_open=True)
    resolved = resolve_claim(claim, None, delta)
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=SCORE_SPLIT_KEY))
    order_pos, order_neg = rng.permutation(positive.size), rng.permutation(negative.size)  # as audit_scores draws them
    sel_pos, cert_pos = split_order(positive.size, selection_fraction, order_pos)
    sel_neg, cert_neg = split_order(negative.size, selection_fraction, order_neg)
    s_pos, s_neg = np.sort(positive[sel_pos]), np.sort(negative[sel_neg])
    c_pos, c_neg = np.sort(positive[cert_pos]), np.sort(negative[cert_neg])
    error = 1.0 - confidence_level
    per_bound = error / 4.0  # two points at most, two bounds each
    z = float(norm.isf(per_bound))
    thresholds = candidate_thresholds(s_pos, s_neg)
    chosen: list[tuple[float, str]] = []
    if thresholds.size:
        in_pos, in_neg = count_at_least(s_pos, thresholds), count_at_least(s_neg, thresholds)
        alpha_pred = conservative_upper(in_neg, s_neg.size, c_neg.size, z)
        beta_pred = conservative_upper(s_pos.size - in_pos, s_pos.size, c_pos.size, z)
        trivial = ((in_pos == s_pos.size) & (in_neg == s_neg.size)) | ((in_pos == 0) & (in_neg == 0))
        margin = np.where(trivial, -np.inf, _probit_margin(resolved(alpha_pred), beta_pred))
        mu_pred = np.where(trivial, -np.inf, gdp_mu_lower(alpha_pred, beta_pred))
        for values, role in ((margin, "claim"), (mu_pred, "middle")):
            k = int(np.argmax(values))
            if np.isfinite(values[k]) and all(float(thresholds[k]) != t for t, _ in chosen):
                chosen.append((float(thresholds[k]), role))
    share = error / max(1, len(chosen))
    points = []
    for t, role in chosen:
        count_alpha = int(count_at_least(c_neg, [t])[0])
        count_beta = int(c_pos.size - count_at_least(c_pos, [t])[0])
        alpha_u, beta_u = (float(v[0]) for v in certify_counts([count_alpha], c_neg.size, [count_beta], c_pos.size,
                                                                share / 2.0))
        claimed = float(resolved(np.array([alpha_u]))[0])
        mu = float(gdp_mu_lower(alpha_u, beta_u))
        points.append(CurvePoint(alpha_u, beta_u, DIRECTIONS[1], f"score >= {t:.6g}",
                                 {"kind": "score_half_line", "threshold": t}, role, count_alpha, count_beta,
                                 int(min(c_pos.size, c_neg.size)), share, claimed,
                                 round_down(mu) if math.isfinite(mu) else mu, beta_u < claimed))
    mu_lower = max([0.0] + [p.mu_bound for p in points if math.isfinite(p.mu_bound)])
    epsilon_lower = _epsilon_lower(points, resolved.delta)
    assumed = gdp_epsilon_lower(mu_lower, resolved.delta) if mu_lower > 0 else 0.0
    worst = max(points, key=lambda p: float(_probit_margin(p.claimed_beta, p.beta_upper))) if points else None
    from ..stats import clopper_pearson_upper

    tiny = float(clopper_pearson_upper(0, int(min(c_pos.size, c_neg.size)), per_bound))
    warnings = [] if points else ["no threshold separated the scores on the selection split: nothing was certified"]
    return CurveAuditResult(
        violated=any(p.below_claim for p in points), mu_lower=mu_lower, epsilon_lower=epsilon_lower,
        delta=resolved.delta, epsilon_lower_by_delta=((resolved.delta, epsilon_lower),),
        epsilon_gaussian_assumption=round_down(assumed), claim=resolved.description, claim_kind=resolved.kind,
        claim_mu=resolved.mu, points=tuple(points), worst=worst,
        witness=None if worst is None else {"event": worst.witness, "direction": worst.direction},
        samples=int(positive.size + negative.size), selection_samples=int(s_pos.size + s_neg.size),
        certification_samples=int(c_pos.size + c_neg.size), confidence_level=confidence_level, seed=seed,
        mu_ceiling=round_down(float(gdp_mu_lower(tiny, tiny))),
        method=(f"scores: selection {s_pos.size}+{s_neg.size} (seeded split, as audit_scores), certification "
                f"{c_pos.size}+{c_neg.size}; {len(points)} half-line tests {{score >= t}} (H0: the canary was out), "
                f"one-sided Clopper-Pearson on both error rates, Bonferroni over {2 * len(points)} bounds"),
        seconds=time.perf_counter() - started,
        claim_curve=tuple(zip(_CLAIM_GRID.tolist(), resolved(_CLAIM_GRID).tolist())), warnings=tuple(warnings))
