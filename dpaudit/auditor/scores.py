"""Score audits of training runs: ``audit_scores`` (many runs) and ``audit_one_run`` (one run).

Any training framework can be audited from one number per (run, canary), higher meaning "more evidence
the canary was in" (its negated loss, a likelihood ratio, the white-box projection of the noisy
gradients on the canary's direction, ...).

* :func:`audit_scores`: ``scores_with[i]`` from runs trained with the canary, ``scores_without[j]`` from
  runs without it (independent runs). Half-line tests {score >= t} are chosen on a seeded random split
  and certified on the rest (:mod:`dpaudit.auditor.tradeoff_points`); the certified (alpha_u, beta_u)
  points give assumption-free ``mu_lower`` and ``epsilon_lower`` (Dong, Roth & Su 2022; Kairouz, Oh &
  Viswanath 2015; as in Jagielski et al. 2020 and Nasr et al. 2021/2023).
* :func:`audit_one_run`: one training run with m canaries, each included independently with
  probability 1/2 (``included``). Guess "in" for the k+ highest scores, "out" for the k- lowest, abstain
  otherwise; with r = k+ + k- guesses of which v are correct, Steinke, Nasr & Jagielski 2023
  ("Privacy Auditing with One (1) Training Run", NeurIPS 2023, Theorem 3.1) show that for an
  (epsilon, delta)-DP training algorithm

      P[V >= v] <= f(v) + 2 m delta max_{1 <= i <= v} (f(v - i) - f(v)) / i,
      f(u) = P[Binomial(r, e^eps / (1 + e^eps)) >= u]

  (delta = 0: V is stochastically dominated by Binomial(r, e^eps/(1+e^eps))). The lower bound is the
  largest epsilon at which this p-value is <= 1 - confidence (exact binomial tails, bisection).
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
from .score_looks import certify_score_looks
from .tradeoff_points import (
    CertifiedThreshold,
    certify_thresholds,
    count_at_least,
    epsilon_lower_bound,
    mu_lower_bound,
    select_thresholds,
    split_indices,
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
_MIN_SCORES = 2


# ------------------------------------------------------------------------------------------ input checks
def check_scores(values: Any, name: str, minimum: int = _MIN_SCORES) -> np.ndarray:
    """A 1-d float64 array of finite scores (at least ``minimum``); the error names ``name`` and the first
    bad index. Nothing is dropped."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of numbers, not {type(values).__name__}")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of numbers ({exc})") from exc
    if array.dtype == bool or array.dtype == object or not (np.issubdtype(array.dtype, np.integer)
                                                            or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain real numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise InvalidArgument(name, f"{name} must be 1-d (one score per run or canary), got shape {array.shape}")
    if array.size < minimum:
        raise InvalidArgument(name, f"{name} has {array.size} scores; at least {minimum} are needed")
    array = array.astype(np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument(name, f"{name}[{index}]={float(array[index])!r} must be finite (rows are never dropped)")
    return array


def check_included(values: Any, length: int, name: str = "included") -> np.ndarray:
    """A 0/1 (or boolean) mask of ``length`` entries; the error names the first bad index."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of 0/1, not {type(values).__name__}")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of 0/1 ({exc})") from exc
    if array.ndim != 1:
        raise InvalidArgument(name, f"{name} must be 1-d (one 0/1 per canary), got shape {array.shape}")
    if array.size != length:
        raise InvalidArgument(name, f"{name} has {array.size} entries but scores has {length}")
    if array.dtype == bool:
        return array.copy()
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain 0/1, got dtype {array.dtype}")
    bad = ~((array == 0) | (array == 1))
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument(name, f"{name}[{index}]={array[index].item()!r} must be 0 or 1")
    return array == 1


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


def audit_scores(
    scores_with: Any,
    scores_without: Any,
    epsilon: float | None = None,
    delta: float = 1e-5,
    confidence_level: float = 0.95,
    seed: int = 0,
    *,
    mu: float | None = None,
    selection_fraction: float = 0.2,
    fprs: Sequence[float] = DEFAULT_FPRS,
    sequential: bool = True,
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
        selection_fraction: share of each array used to choose thresholds.
        fprs: false-positive rates at which to report the TPR (with Clopper-Pearson intervals).
        sequential: with a claim (``epsilon`` or ``mu``), certify on growing prefixes of the runs (in their
            order) and stop on a violation or for futility (``score_looks.py``; ``samples_used``); False: all runs.

    Returns:
        ScoreAuditResult with ``epsilon_lower``, ``mu_lower``, ``tpr_at_fpr``, ``auroc``, ``violated``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> r = audit_scores(rng.normal(1.0, 1.0, 20_000), rng.normal(0.0, 1.0, 20_000), epsilon=5.0, delta=1e-5,
        ...                  sequential=False)
        >>> r.violated, 0.8 < r.mu_lower <= 1.0
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
    selection_fraction = check_probability(selection_fraction, "selection_fraction", low_open=True, high_open=True)
    if isinstance(fprs, (str, bytes)) or not isinstance(fprs, (Sequence, np.ndarray)):
        raise InvalidArgumentType("fprs", f"fprs={fprs!r} must be a sequence of false-positive rates")
    fprs = tuple(check_probability(f, "fprs", low_open=True, high_open=True) for f in fprs)

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13,)))
    sel_pos, cert_pos = split_indices(positive.size, selection_fraction, rng)
    sel_neg, cert_neg = split_indices(negative.size, selection_fraction, rng)
    s_pos, c_pos, s_neg, c_neg = positive[sel_pos], positive[cert_pos], negative[sel_neg], negative[cert_neg]

    error = 1.0 - confidence_level
    # two points at most (best predicted mu, best predicted epsilon), two bounds each
    planned = 2
    chosen = select_thresholds(s_pos, s_neg, n_positive=c_pos.size, n_negative=c_neg.size,
                               error_per_bound=error / (2 * planned), delta=delta)
    per_bound = error / (2 * max(1, len(chosen)))
    looked = certify_score_looks(c_pos, c_neg, chosen, per_bound, delta, epsilon, mu, check_flag(sequential, "sequential"))
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
              f"{len(points)} half-line tests, one-sided Clopper-Pearson on both error rates, Bonferroni over "
              f"{2 * len(points)} bounds")
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


# ------------------------------------------------------------------------------------------ one run
def _one_run_p_values(canaries: int, guesses: int, correct: int, epsilons: np.ndarray, delta: float) -> np.ndarray:
    """:func:`one_run_p_value` at every epsilon of ``epsilons`` (vectorised)."""
    from scipy.special import expit
    from scipy.stats import binom

    epsilons = np.asarray(epsilons, dtype=np.float64)
    if correct <= 0:
        return np.ones_like(epsilons)
    p = expit(epsilons)[:, None]
    tail = binom.sf(correct - 1, guesses, p)  # (E, 1)
    if delta == 0:
        return np.minimum(1.0, tail[:, 0])
    i = np.arange(1, correct + 1)[None, :]
    worst = np.empty(epsilons.size)
    step = max(1, (1 << 22) // correct)  # bounded memory: at most ~4M binomial tails at once
    for start in range(0, epsilons.size, step):
        rows = slice(start, start + step)
        shifted = binom.sf(correct - i - 1, guesses, p[rows])  # (rows, v)
        worst[rows] = np.max((shifted - tail[rows]) / i, axis=1)
    return np.minimum(1.0, tail[:, 0] + 2.0 * canaries * delta * np.maximum(0.0, worst))


def one_run_p_value(canaries: int, guesses: int, correct: int, epsilon: float, delta: float) -> float:
    """Steinke, Nasr & Jagielski 2023, Theorem 3.1: an upper bound on P[>= ``correct`` of ``guesses``
    guesses are right] for an (epsilon, delta)-DP algorithm with ``canaries`` randomised canaries,
    f(v) + 2 m delta max_{1<=i<=v} (f(v-i) - f(v)) / i, f(u) = P[Binomial(r, e^eps/(1+e^eps)) >= u]
    (the max over i > v adds nothing: f(v - i) = 1 there and (1 - f(v))/i decreases)."""
    return float(_one_run_p_values(canaries, guesses, correct, np.array([float(epsilon)]), delta)[0])


def one_run_epsilon(canaries: int, guesses: int, correct: int, delta: float, significance: float) -> float:
    """The largest epsilon >= 0 at which :func:`one_run_p_value` <= ``significance``, rounded down (0 if none).

    Sound for the largest such epsilon (not only the first crossing): an (eps, delta)-DP algorithm is also
    (eps', delta)-DP for every eps' >= eps, so min_{eps' >= eps} p(eps') is a valid p-value. With delta = 0
    the p-value increases with epsilon (plain bisection); with delta > 0 it can only exceed the delta = 0
    one, so the answer lies below the pure-DP answer (closed form: a beta quantile); it is found on a grid
    of 256 points there and refined by bisection (a missed crossing between grid points only makes the
    result smaller).
    """
    if correct <= 0 or guesses <= 0:
        return 0.0

    def p(eps: float, d: float) -> float:
        return one_run_p_value(canaries, guesses, correct, eps, d)

    if p(0.0, 0.0) > significance:
        return 0.0
    # delta = 0: P[Binomial(r, p) >= v] = I_p(v, r - v + 1) (regularised incomplete beta), increasing in p,
    # so the crossing is p* = Beta(v, r - v + 1).ppf(significance), eps = logit(p*); then stepped down
    # until the exact tail confirms it (guards the ppf's last digits)
    from scipy.special import logit
    from scipy.stats import beta

    pure = float(logit(beta.ppf(significance, correct, guesses - correct + 1)))
    if not math.isfinite(pure):
        return math.inf if pure > 0 else 0.0
    for _ in range(64):
        if p(pure, 0.0) <= significance:
            break
        pure -= 1e-9 * max(1.0, abs(pure))
    else:
        return 0.0
    pure = max(0.0, pure)
    if delta == 0:
        return round_down(pure)
    grid = np.linspace(0.0, pure, 257)
    ok = _one_run_p_values(canaries, guesses, correct, grid, delta) <= significance
    if not ok.any():
        return 0.0
    last = int(np.flatnonzero(ok)[-1])
    if last == grid.size - 1:
        return round_down(float(grid[-1]))
    lo, hi = float(grid[last]), float(grid[last + 1])
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if p(mid, delta) <= significance:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return round_down(lo)


def _default_guess_grid(m: int) -> list[tuple[int, int]]:
    """k+ = m/2^j (j = 0, 1, ...; k+ >= 1), one-sided (k- = 0) and symmetric (k- = k+, total <= m)."""
    ks = sorted({max(1, m >> j) for j in range(0, 20) if (m >> j) >= 1})
    grid = [(k, 0) for k in ks]
    grid += [(k, k) for k in ks if 2 * k <= m]
    return grid


def _check_guesses(guesses: Any, m: int) -> list[tuple[int, int]]:
    if guesses is None:
        return _default_guess_grid(m)
    if isinstance(guesses, (int, np.integer)) and not isinstance(guesses, bool):
        guesses = [(int(guesses), 0)]
    elif isinstance(guesses, tuple) and len(guesses) == 2 and all(isinstance(g, (int, np.integer)) for g in guesses):
        guesses = [guesses]
    if not isinstance(guesses, (list, tuple)) or not guesses:
        raise InvalidArgumentType("guesses", f"guesses={guesses!r} must be None, an int k+, a pair (k+, k-) or a "
                                             "non-empty list of pairs")
    out = []
    for pair in guesses:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise InvalidArgumentType("guesses", f"guesses entry {pair!r} must be a pair (k+, k-)")
        k_plus = check_nonnegative_int(pair[0], "guesses")
        k_minus = check_nonnegative_int(pair[1], "guesses")
        if k_plus + k_minus == 0 or k_plus + k_minus > m:
            raise InvalidArgument("guesses", f"guesses (k+={k_plus}, k-={k_minus}) must make between 1 and m={m} "
                                             "guesses")
        out.append((k_plus, k_minus))
    return out


@dataclass(frozen=True)
class OneRunResult:
    """Outcome of :func:`audit_one_run`: ``epsilon_lower`` (at ``delta``) holds with probability >=
    ``confidence_level``, rounded down; the confidence is split (Bonferroni) over the ``candidates``
    guess counts tried, and ``k_plus``/``k_minus``/``correct`` describe the one that gave the bound."""

    epsilon_lower: float
    epsilon: float | None
    delta: float
    violated: bool
    confidence_level: float
    canaries: int
    included: int
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    candidates: int
    epsilon_ceiling: float  # the bound if every guess of the largest candidate were right
    method: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["bound"] = "lower"
        data["accuracy"] = self.correct / self.guesses if self.guesses else 0.0
        return json_ready(data)

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        claim = f" (claimed {self.epsilon:g})" if self.epsilon is not None else ""
        return (f"one-run audit, {self.canaries} canaries ({self.included} in): epsilon >= {self.epsilon_lower:.4f} "
                f"at delta {self.delta:g} with confidence {self.confidence_level:g}{claim}: {verdict}; "
                f"{self.correct}/{self.guesses} guesses right (k+={self.k_plus}, k-={self.k_minus}, "
                f"best of {self.candidates}); ceiling {self.epsilon_ceiling:.3g}")


def audit_one_run(
    scores: Any,
    included: Any,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    *,
    epsilon: float | None = None,
    guesses: Any = None,
    seed: int = 0,
) -> OneRunResult:
    """Epsilon lower bound from ONE training run with m canaries, each included with probability 1/2.

    Guess "in" for the k+ highest scores and "out" for the k- lowest, abstain on the rest, and certify with Steinke, Nasr & Jagielski 2023, Theorem 3.1
    (:func:`one_run_p_value`, exact binomial tails). The guess counts (k+, k-) are either given
    (``guesses``: an int k+, a pair, or a list of pairs) or taken from a default grid (k+ = m/2^j,
    one-sided and symmetric); the error 1 - confidence_level is split evenly over all of them
    (Bonferroni), so the maximum over them is still a valid bound.

    The inclusion mask must be drawn independently, each canary with probability 1/2, before training:
    the theorem's randomness is the canaries' inclusion. The guesses must depend on the scores only:
    equal scores are ordered by a random key drawn from ``seed`` (never by position, which may follow the
    mask, e.g. in a file sorted by inclusion).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> included = rng.random(1000) < 0.5
        >>> r = audit_one_run(included * 4.0 + rng.normal(size=1000), included, delta=0.0)
        >>> r.correct == r.guesses and r.epsilon_lower > 3.0  # perfect separation
        True
    """
    started = time.perf_counter()
    values = check_scores(scores, "scores")
    mask = check_included(included, values.size)
    delta = check_delta(delta, "delta")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon, "epsilon", allow_inf=True)
    seed = check_nonnegative_int(seed, "seed")
    m = values.size
    if mask.all() or not mask.any():
        raise InvalidArgument("included", f"included is {int(mask[0])} for all {m} canaries (one class only): each "
                                          "canary must be included independently with probability 1/2 (all in or all "
                                          f"out has probability 2^-{m}); is the mask the right column?")
    candidates = _check_guesses(guesses, m)
    significance = (1.0 - confidence_level) / len(candidates)
    tiebreak = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13, 1))).random(m)
    order = np.lexsort((tiebreak, -values))  # highest first; ties in a random order independent of the mask
    right_top = np.cumsum(mask[order])  # correct among the k highest guessed "in"
    right_bottom = np.cumsum(~mask[order[::-1]])  # correct among the k lowest guessed "out"
    counted = []
    for k_plus, k_minus in candidates:
        v = (int(right_top[k_plus - 1]) if k_plus else 0) + (int(right_bottom[k_minus - 1]) if k_minus else 0)
        pure = one_run_epsilon(m, k_plus + k_minus, v, 0.0, significance)
        counted.append((pure, (k_plus, k_minus), v))
    best = (0.0, candidates[0], 0)
    # the delta > 0 bound never exceeds the pure one: try candidates by decreasing pure bound
    for pure, (k_plus, k_minus), v in sorted(counted, key=lambda c: -c[0]):
        if pure <= best[0]:
            break
        eps = pure if delta == 0 else one_run_epsilon(m, k_plus + k_minus, v, delta, significance)
        if eps > best[0]:
            best = (eps, (k_plus, k_minus), v)
    largest = max(k_plus + k_minus for k_plus, k_minus in candidates)
    best_ceiling = one_run_epsilon(m, largest, largest, delta, significance)
    eps, (k_plus, k_minus), v = best
    if eps == 0.0:
        k_plus, k_minus = candidates[0]
        v = (int(right_top[k_plus - 1]) if k_plus else 0) + (int(right_bottom[k_minus - 1]) if k_minus else 0)
    method = (f"Steinke-Nasr-Jagielski 2023 Thm 3.1 ({'pure DP' if delta == 0 else 'approximate DP'}), exact "
              f"binomial tails; top-k+/bottom-k- guesses, Bonferroni over {len(candidates)} (k+, k-) candidates")
    return OneRunResult(
        epsilon_lower=eps, epsilon=epsilon, delta=delta, violated=bool(epsilon is not None and eps > epsilon),
        confidence_level=confidence_level, canaries=m, included=int(mask.sum()), k_plus=k_plus, k_minus=k_minus,
        guesses=k_plus + k_minus, correct=v, candidates=len(candidates), epsilon_ceiling=best_ceiling, method=method,
        seconds=time.perf_counter() - started)
