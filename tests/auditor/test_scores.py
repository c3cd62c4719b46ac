"""audit_scores (many runs) and audit_one_run (Steinke, Nasr & Jagielski 2023): validity, power, exact
formulas against independent mpmath evaluations, and clear errors on bad input."""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from dpaudit.accountant import gdp_epsilon
from dpaudit.auditor.scores import audit_one_run, audit_scores, one_run_epsilon, one_run_p_value
from dpaudit.auditor.tradeoff_points import epsilon_lower_bound, mu_lower_bound
from dpaudit.errors import InvalidArgument, InvalidArgumentType


def gaussian_scores(mu: float, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(mu, 1.0, n), rng.normal(0.0, 1.0, n)


def test_gaussian_shift_is_sound_over_seeds():
    """mu = 1 exactly: the bounds exceed the truth in at most a binomial allowance of 40 seeds at 90%."""
    mu, delta = 1.0, 1e-5
    true_epsilon = gdp_epsilon(mu, delta)
    above_mu = above_eps = 0
    for seed in range(40):
        a, b = gaussian_scores(mu, 3000, seed)
        r = audit_scores(a, b, epsilon=true_epsilon, delta=delta, confidence_level=0.9, seed=seed)
        above_mu += r.mu_lower > mu
        above_eps += r.violated
    allowance = binom.isf(1e-4, 40, 0.1)  # P[more than this] < 1e-4 for a valid 90% bound
    assert above_mu <= allowance and above_eps <= allowance


def test_gaussian_shift_power_and_tightness():
    a, b = gaussian_scores(1.0, 50_000, 3)
    r = audit_scores(a, b, epsilon=1.0, delta=1e-5, seed=3, sequential=False)
    assert r.violated and 0.93 < r.mu_lower <= 1.0 and r.epsilon_lower > 1.0
    assert 0.74 < r.auroc < 0.78  # Phi(1/sqrt 2) = 0.760
    from scipy.stats import norm

    for t in r.tpr_at_fpr:  # the intervals cover the chosen threshold's true rates
        assert t.tpr_interval[0] <= norm.sf(t.threshold - 1.0) <= t.tpr_interval[1]
        assert t.fpr_interval[0] <= norm.sf(t.threshold) <= t.fpr_interval[1]
        assert abs(t.fpr_estimate - t.fpr_target) < 3 * math.sqrt(t.fpr_target / 8000) + 1e-3
    assert r.epsilon_lower <= r.epsilon_ceiling and r.mu_lower <= r.mu_ceiling
    assert r.epsilon_gaussian_assumption > r.epsilon_lower  # labelled, not certified
    json.dumps(r.to_dict())
    assert "VIOLATED" in r.summary()


def test_no_signal_certifies_nothing_and_is_reproducible():
    a, b = gaussian_scores(0.0, 4000, 4)
    r1, r2 = audit_scores(a, b, epsilon=0.1, seed=7), audit_scores(a, b, epsilon=0.1, seed=7)
    assert r1 == r2 or r1.to_dict().keys() == r2.to_dict().keys()
    assert r1.epsilon_lower == r2.epsilon_lower and r1.epsilon_lower < 0.2 and not r1.violated


def test_certified_points_satisfy_their_formulas():
    a, b = gaussian_scores(2.0, 5000, 5)
    r = audit_scores(a, b, delta=1e-3, seed=0)
    for p in r.points:
        assert p.alpha_upper >= p.count_alpha / p.n_alpha and p.beta_upper >= p.count_beta / p.n_beta
        expected = max(math.log((1 - 1e-3 - p.beta_upper) / p.alpha_upper), math.log((1 - 1e-3 - p.alpha_upper) / p.beta_upper))
        assert p.epsilon_bound <= expected and p.epsilon_bound == pytest.approx(expected, rel=1e-9)
    assert r.epsilon_lower == max(p.epsilon_bound for p in r.points)


@settings(max_examples=50, deadline=None)
@given(st.floats(1e-6, 0.5), st.floats(1e-6, 0.5), st.floats(0.0, 1e-3))
def test_epsilon_and_mu_bounds_are_symmetric_and_monotone(alpha, beta, delta):
    e = float(epsilon_lower_bound(alpha, beta, delta))
    assert e == pytest.approx(float(epsilon_lower_bound(beta, alpha, delta)), rel=1e-12, abs=1e-12)
    assert float(epsilon_lower_bound(alpha / 2, beta, delta)) >= e  # a better test never gives less
    assert float(mu_lower_bound(alpha / 2, beta)) >= float(mu_lower_bound(alpha, beta))


@pytest.mark.parametrize("bad,match", [
    ([0.1, float("nan"), 0.3], r"scores_with\[1\]=nan"),
    ([0.1, 0.2, float("inf")], r"scores_with\[2\]=inf"),
    ([], "at least 2"),
    ([[0.1, 0.2], [0.3, 0.4]], "1-d"),
])
def test_bad_scores_raise_naming_the_index(bad, match):
    with pytest.raises(InvalidArgument, match=match):
        audit_scores(bad, [0.0, 1.0, 2.0])


def test_bad_score_types_and_arguments():
    with pytest.raises(InvalidArgumentType, match="scores_without"):
        audit_scores([1.0, 2.0], ["a", "b"])
    with pytest.raises(InvalidArgumentType, match="scores_without"):
        audit_scores([1.0, 2.0], "12")
    with pytest.raises(InvalidArgument, match="delta"):
        audit_scores([1.0, 2.0], [0.0, 1.0], delta=-1)
    with pytest.raises(InvalidArgument, match="confidence_level"):
        audit_scores([1.0, 2.0], [0.0, 1.0], confidence_level=1.0)
    with pytest.raises(InvalidArgument, match="epsilon"):
        audit_scores([1.0, 2.0], [0.0, 1.0], epsilon=float("nan"))


# ----------------------------------------------------------------------------------------------- one run
def mp_p_value(m: int, r: int, v: int, eps: float, delta: float) -> mpmath.mpf:
    """The bound of Steinke et al. 2023, Thm 3.1, in 50-digit arithmetic (independent of scipy)."""
    mpmath.mp.dps = 50
    p = mpmath.e ** eps / (1 + mpmath.e ** eps)

    def f(u: int) -> mpmath.mpf:
        if u <= 0:
            return mpmath.mpf(1)
        return mpmath.fsum(mpmath.binomial(r, j) * p**j * (1 - p) ** (r - j) for j in range(u, r + 1))

    fv = f(v)
    worst = max([(f(v - i) - fv) / i for i in range(1, m + 1)] + [mpmath.mpf(0)])
    return fv + 2 * m * delta * worst


@pytest.mark.parametrize("m,r,v,eps,delta", [(100, 40, 35, 1.0, 0.0), (100, 40, 35, 1.0, 1e-4), (500, 60, 60, 2.0, 1e-5),
                                             (50, 10, 6, 0.3, 1e-3)])
def test_one_run_p_value_matches_mpmath(m, r, v, eps, delta):
    ours = one_run_p_value(m, r, v, eps, delta)
    assert ours == pytest.approx(float(min(1, mp_p_value(m, r, v, eps, delta))), rel=1e-9)


def test_one_run_epsilon_perfect_guesses_closed_form():
    """All r guesses right, delta = 0: P[Bin(r, p) >= r] = p^r = alpha  =>  eps = logit(alpha^(1/r))."""
    for r in (5, 50, 500):
        p = 0.05 ** (1 / r)
        assert one_run_epsilon(1000, r, r, 0.0, 0.05) == pytest.approx(math.log(p / (1 - p)), rel=1e-8)
    # the reported epsilon passes the test, a slightly larger one does not
    eps = one_run_epsilon(1000, 200, 150, 1e-5, 0.05)
    assert one_run_p_value(1000, 200, 150, eps, 1e-5) <= 0.05 < one_run_p_value(1000, 200, 150, eps + 1e-6, 1e-5)
    assert eps < one_run_epsilon(1000, 200, 150, 0.0, 0.05)


def test_one_run_is_sound_for_randomized_response_canaries():
    """Each canary's score is its inclusion bit through eps-randomized response (exactly eps-DP per
    canary): the bound exceeds eps in at most a binomial allowance of 20 seeds at 90%."""
    epsilon, m = 1.0, 600
    keep = math.exp(epsilon) / (1 + math.exp(epsilon))
    above = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        included = rng.random(m) < 0.5
        noisy = np.where(rng.random(m) < keep, included, ~included)
        scores = noisy + 1e-3 * rng.random(m)  # tie-breaking jitter, independent of inclusion
        r = audit_one_run(scores, included, delta=0.0, confidence_level=0.9, epsilon=epsilon)
        above += r.violated
    assert above <= binom.isf(1e-4, 20, 0.1)
    assert r.epsilon_lower > 0.5  # and it has power


def test_one_run_ties_are_not_broken_by_position():
    """Scores carrying no information (all equal) in a file sorted by inclusion: ordering ties by index
    would make every guess right; the random tie-break certifies (almost) nothing."""
    included = np.repeat([1, 0], 500)
    r = audit_one_run(np.zeros(1000), included, delta=0.0)
    assert r.epsilon_lower < 0.5 and not audit_one_run(np.zeros(1000), included, epsilon=0.5).violated
    assert audit_one_run(np.zeros(1000), included, seed=3).epsilon_lower == audit_one_run(np.zeros(1000), included,
                                                                                             seed=3).epsilon_lower


def test_one_run_power_and_result():
    rng = np.random.default_rng(1)
    included = rng.random(1000) < 0.5
    r = audit_one_run(included * 6.0 + rng.normal(size=1000), included, delta=1e-5, epsilon=2.0)
    assert r.violated and r.correct == r.guesses and r.epsilon_lower <= r.epsilon_ceiling
    explicit = audit_one_run(included * 6.0 + rng.normal(size=1000), included, guesses=(r.k_plus, r.k_minus))
    assert explicit.candidates == 1 and explicit.epsilon_lower >= r.epsilon_lower
    json.dumps(r.to_dict())


@pytest.mark.parametrize("included,match,error", [
    ([0, 1, 2, 1], r"included\[2\]=2", InvalidArgument),
    ([0, 1, 1], "3 entries but scores has 4", InvalidArgument),
    ([0.0, 1.0, 0.5, 1.0], r"included\[2\]=0.5", InvalidArgument),
    (["a", "b", "c", "d"], "included", InvalidArgumentType),
    ([1, 1, 1, 1], "one class only", InvalidArgument),
    ([False] * 4, "one class only", InvalidArgument),
])
def test_one_run_bad_mask(included, match, error):
    with pytest.raises(error, match=match):
        audit_one_run([0.1, 0.2, 0.3, 0.4], included)


def test_one_run_bad_guesses():
    with pytest.raises(InvalidArgument, match="guesses"):
        audit_one_run([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], guesses=(3, 3))
    with pytest.raises(InvalidArgumentType, match="guesses"):
        audit_one_run([0.1, 0.2, 0.3, 0.4], [0, 1, 0, 1], guesses="all")
    with pytest.raises(InvalidArgument, match=r"scores\[0\]=nan"):
        audit_one_run([float("nan"), 0.2], [0, 1])


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 60), st.integers(0, 60), st.sampled_from([0.0, 1e-6, 1e-3]))
def test_one_run_bound_grows_with_correct_guesses_and_shrinks_with_delta(r, v, delta):
    v = min(v, r)
    e = one_run_epsilon(200, r, v, delta, 0.05)
    assert e >= 0.0
    if v < r:
        assert one_run_epsilon(200, r, v + 1, delta, 0.05) >= e
    assert e <= one_run_epsilon(200, r, v, 0.0, 0.05)


# ------------------------------------------------------------------------------------------ tail levels
# jax-privacy 2.0.0, CanaryScoreAuditor(a, b).epsilon_clopper_pearson(0.05, 1e-5) (Bonferroni over its
# thresholds, one-sided) on gaussian_scores(3.0, 10_000, seed) for seeds 0, 1, 2.
JAX_CLOPPER_PEARSON_SHIFT_3 = (5.5095, 5.5613, 5.6768)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tail_test_at_small_delta_is_at_least_jax_clopper_pearson(seed):
    """The best test at delta = 1e-5 lies in the tail (a false-positive count of 0-3 at certification): the
    tail level certifies at least what jax_privacy's Clopper-Pearson estimate gives on the same scores."""
    a, b = gaussian_scores(3.0, 10_000, seed)
    r = audit_scores(a, b, delta=1e-5, seed=seed)
    assert r.epsilon_lower >= JAX_CLOPPER_PEARSON_SHIFT_3[seed]
    tail = [p for p in r.points if p.tail_level is not None]
    assert tail and tail[0].epsilon_bound == r.epsilon_lower and tail[0].tail_level <= 8
    assert r.epsilon_lower <= gdp_epsilon(3.0, 1e-5)


@pytest.mark.parametrize("side", ["without", "with"])
def test_tail_level_bound_holds_at_its_error_over_seeds(side):
    """The order-statistic argument: the tail bound at count j holds for the threshold the certification
    scores put it at, with probability >= 1 - its error (500 seeds, known Gaussian scores)."""
    from scipy.stats import norm

    from dpaudit.auditor.score_tail_levels import TailLevel, certify_tail_level

    level, error = TailLevel(level=1, side=side, share=0.9, n_tail=400, predicted=0.0), 0.1
    failures = 0
    for seed in range(500):
        a, b = gaussian_scores(2.0, 400, 1000 + seed)
        p = certify_tail_level(a, b, level, error, 1e-5)
        if side == "without":
            assert p.count_alpha <= 1
            failures += norm.sf(p.threshold) > p.alpha_upper
        else:
            assert p.count_beta <= 1
            failures += norm.cdf(p.threshold - 2.0) > p.beta_upper
    assert failures <= binom.isf(1e-4, 500, error * 0.9)  # a valid bound fails at most this often
    assert failures >= 10  # and the bound is not vacuous: it is close to its stated error


def test_separable_scores_keep_one_point():
    """Separable scores: the one half-line best for mu and epsilon is certified alone (no second point to halve
    its error)."""
    a, b = gaussian_scores(30.0, 400, 6)
    r = audit_scores(a, b, delta=1e-5, seed=0, sequential=False)
    assert len(r.points) == 1 and r.points[0].tail_level is None and r.points[0].count_alpha == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 30), st.sampled_from(["without", "with"]), st.booleans())
def test_tail_level_counts_never_exceed_the_level(seed, level, side, integers):
    """Whatever the scores (ties included), at most j certification scores of the tail side lie beyond the
    threshold of level j, and the tail bound is at least that count's share."""
    from dpaudit.auditor.score_tail_levels import TailLevel, certify_tail_level

    rng = np.random.default_rng(seed)
    a, b = rng.normal(1.0, 1.0, 200), rng.normal(0.0, 1.0, 150)
    if integers:
        a, b = np.round(a * 2), np.round(b * 2)
    p = certify_tail_level(a, b, TailLevel(level, side, 0.8, 200 if side == "with" else 150, 0.0), 0.05, 1e-5)
    tail_count, tail_bound, n = (p.count_alpha, p.alpha_upper, b.size) if side == "without" else (p.count_beta, p.beta_upper, a.size)
    assert tail_count <= level == p.tail_level and tail_bound >= level / n
    assert p.count_alpha == int(np.sum(b >= p.threshold)) and p.count_beta == int(np.sum(a < p.threshold))


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 30), st.sampled_from(["without", "with"]))
def test_tail_levels_on_tied_scores_rest_on_their_own_count(seed, level, side):
    """Tied scores ordered by seeded uniforms: exactly j tail-side runs lie beyond the level's randomised threshold,
    so the tail bound is plain Clopper-Pearson at the threshold's own count (never at a larger level's)."""
    from dpaudit.auditor.score_tail_levels import TailLevel, certify_tail_level
    from dpaudit.stats import clopper_pearson_upper

    rng = np.random.default_rng(seed)
    a, b = rng.binomial(10, 0.6, 300).astype(float), rng.binomial(10, 0.4, 250).astype(float)
    n_tail = 300 if side == "with" else 250
    ties = (rng.random(a.size), rng.random(b.size))
    p = certify_tail_level(a, b, TailLevel(level, side, 0.8, n_tail, 0.0), 0.05, 1e-5, ties)
    count, bound = (p.count_alpha, p.alpha_upper) if side == "without" else (p.count_beta, p.beta_upper)
    assert p.ties_broken and count == level == p.tail_level
    assert bound == float(clopper_pearson_upper(count, n_tail, 0.05 * 0.8))
    assert p.count_alpha <= int(np.sum(b >= p.threshold)) and p.count_alpha >= int(np.sum(b > p.threshold))


@pytest.mark.parametrize("seed", [0, 4])
def test_binomial_scores_certify_near_the_best_atom(seed):
    """Binomial(10, 0.6) against Binomial(10, 0.4), 10^5 runs each (true epsilon ln 1.5^10 = 4.05): discrete scores
    are chosen on 5% of the runs and the atom beyond the best predicted half-line is certified too (a tail level on a
    tie certified 1.8 when its threshold kept the level's count)."""
    g = np.random.default_rng(seed)
    a, b = g.binomial(10, 0.6, 100_000).astype(float), g.binomial(10, 0.4, 100_000).astype(float)
    r = audit_scores(a, b, delta=1e-5, seed=seed)
    assert 3.0 <= r.epsilon_lower <= 10 * math.log(1.5)
    assert r.selection_with == 5_000 and len(r.points) == 3  # mu, epsilon and the atom beyond it
