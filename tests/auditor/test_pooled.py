"""Pooled pairs: an event of each direction certified as one (certify.pooled_bound, regions' pooled candidate).

Coverage of the pooled Clopper-Pearson bounds on a Poisson binomial (exact pmf by convolution), validity on
simulated counts and on a correct discrete Laplace, power on its 2x twin, re-certification, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

import dpaudit
from dpaudit.auditor.certify import certification_ceiling, epsilon_lower_bound, pooled_bound, pooled_epsilon_lower_bound
from dpaudit.auditor.looks import plan_looks
from dpaudit.auditor.sequential import Tally, certify_in_looks
from dpaudit.auditor.witness import Column, PooledPair, ScoreRegion, witness_from_dict
from dpaudit.auditor.witness_search.candidate import Candidate
from dpaudit.auditor.witness_search.selector import select_for_certification
from dpaudit.stats import clopper_pearson_lower, clopper_pearson_upper

from . import mechanisms_for_tests as m


def _pooled_pmf(n: int, p1: float, p2: float) -> np.ndarray:
    """P[Bin(n, p1) + Bin(n, p2) = k], k = 0..2n."""
    k = np.arange(n + 1)
    return np.convolve(binom.pmf(k, n, p1), binom.pmf(k, n, p2))


def _ends(n: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """The pooled lower and upper bounds of every count 0..2n."""
    ends = [pooled_bound(k, k, 2 * n, 0.0, alpha)[1:] for k in range(2 * n + 1)]
    return np.array([e[0] for e in ends]), np.array([e[1] for e in ends])


def _worst_failure(n: int, alpha: float, mean: float, splits: int = 41) -> tuple[float, float]:
    """Over splits p1 = mean + t, p2 = mean - t: the largest probability that the pooled lower bound lies above the
    mean, and that the pooled upper bound lies below it."""
    low, high = _ends(n, alpha)
    worst_low = worst_high = 0.0
    for t in np.linspace(0.0, min(mean, 1.0 - mean), splits):
        pmf = _pooled_pmf(n, mean + t, mean - t)
        worst_low = max(worst_low, float(pmf[low > mean].sum()))
        worst_high = max(worst_high, float(pmf[high < mean].sum()))
    return worst_low, worst_high


def _edges(n: int, alpha: float) -> list[float]:
    """Means just inside every jump of the coverage: a hair below each Clopper-Pearson lower end and above each
    upper end of the pooled count (where a failure region grows by one count)."""
    k = np.arange(2 * n + 1)
    lows = np.atleast_1d(clopper_pearson_lower(k, 2 * n, alpha))
    highs = np.atleast_1d(clopper_pearson_upper(k, 2 * n, alpha))
    means = [v * (1 - 1e-9) for v in lows if 0 < v < 1] + [v * (1 + 1e-9) for v in highs if 0 < v < 1]
    return [m for m in means if 0 < m < 1]


# ---------------------------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("alpha", [1e-3, 0.0125, 0.05, 0.1, 0.25])
def test_pooled_bounds_cover_every_poisson_binomial_at_the_edges(n, alpha):
    for mean in _edges(n, alpha):
        worst_low, worst_high = _worst_failure(n, alpha, mean)
        assert worst_low <= alpha * (1 + 1e-9) and worst_high <= alpha * (1 + 1e-9), (n, alpha, mean)


def test_clopper_pearson_of_the_pooled_count_alone_would_not_cover():
    # why the pooled bounds stay one trial inside the estimate: n = 2, alpha = 0.05, p1 = 2 p, p2 = 0 (mean p just
    # below the Clopper-Pearson lower end of a count of 1 out of 4)
    n, alpha = 2, 0.05
    mean = float(clopper_pearson_lower(1, 2 * n, alpha)) * (1 - 1e-9)
    pmf = _pooled_pmf(n, 2 * mean, 0.0)
    plain = np.atleast_1d(clopper_pearson_lower(np.arange(2 * n + 1), 2 * n, alpha))
    assert pmf[plain > mean].sum() > 1.005 * alpha
    assert _worst_failure(n, alpha, mean)[0] <= alpha


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 12), alpha=st.floats(1e-4, 0.3), edge=st.floats(0.0, 1.0), split=st.floats(0.0, 1.0))
def test_pooled_bounds_cover_at_any_edge_and_split(n, alpha, edge, split):
    means = _edges(n, alpha)
    if not means:
        return
    mean = means[min(int(edge * len(means)), len(means) - 1)]
    t = split * min(mean, 1.0 - mean)
    pmf = _pooled_pmf(n, mean + t, mean - t)
    low, high = _ends(n, alpha)
    assert pmf[low > mean].sum() <= alpha * (1 + 1e-9)
    assert pmf[high < mean].sum() <= alpha * (1 + 1e-9)


def test_pooled_bound_is_the_doubled_sample_clopper_pearson_bound_at_real_counts():
    # the clamp one trial inside the estimate moves nothing at counts a certification sees
    pooled = pooled_epsilon_lower_bound((520_000, 480_000), (480_000, 520_000), 1_000_000, 1_000_000, 0.0, 0.0125)
    assert pooled == epsilon_lower_bound(1_040_000, 2_000_000, 960_000, 2_000_000, 0.0, 0.0125)
    single = epsilon_lower_bound(520_000, 1_000_000, 480_000, 1_000_000, 0.0, 0.0125)[0]
    assert pooled[0] > single


def test_the_ceiling_of_a_pooled_pair_is_what_its_counts_could_certify():
    n, alpha = 10_000, 0.0125
    best = pooled_epsilon_lower_bound((n, 0), (0, n), n, n, 0.0, alpha)[0]
    assert certification_ceiling(n, 0.0, alpha, pooled=True) == best > certification_ceiling(n, 0.0, alpha)


# ---------------------------------------------------------------------------------------------- validity
def test_simulated_tight_pairs_are_flagged_at_most_at_the_stated_rate():
    """Both events at the claim exactly, their probabilities twice apart: a pooled bound above eps is a false alarm;
    2000 fixed-seed draws of the four counts."""
    epsilon, n, alpha = 0.2, 5_000, 0.025
    q_forward, q_backward = 0.05, 0.10  # P_d'(E), P_d(E')
    p_forward, p_backward = math.exp(epsilon) * q_forward, math.exp(epsilon) * q_backward  # P_d(E), P_d'(E')
    rng = np.random.default_rng(7)
    draws = 2000
    counts = rng.binomial(n, [p_forward, q_forward, q_backward, p_backward], size=(draws, 4))
    alarms = sum(pooled_epsilon_lower_bound((c[0], c[1]), (c[2], c[3]), n, n, 0.0, alpha)[0] > epsilon for c in counts)
    assert alarms / draws <= 2 * alpha + 3 * math.sqrt(2 * alpha * (1 - 2 * alpha) / draws)


def test_pooled_pairs_monitored_at_every_look_stay_below_the_error():
    epsilon, q = 0.5, 0.05
    p = math.exp(epsilon) * q
    plan = plan_looks(100_000)
    rng = np.random.default_rng(12)
    alpha = 0.05 / 2
    alarms = 0
    for _ in range(400):
        def draw(blocks):
            sizes = np.array([plan.sizes[b] for b in blocks])[:, None]
            # columns: E (likelier under d), E' (likelier under d'); the parts differ in rate
            return rng.binomial(sizes, [[p, 0.5 * q]]), rng.binomial(sizes, [[q, 0.5 * p]])

        outcome = certify_in_looks(plan, draw, [Tally(forward=0, backward=1)], 0.0, alpha, epsilon, lambda *_: False)
        alarms += outcome.best.bound > epsilon
        assert outcome.best.pooled
    assert alarms / 400 <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


@pytest.mark.parametrize("seed", range(50, 56))
def test_the_correct_discrete_laplace_is_certified_above_zero_and_never_flagged(seed):
    fair = dpaudit.audit(m.DiscreteLaplace(0.005), [0.0], [2.0], epsilon=0.01, samples=1_000_000, seed=seed, workers=1,
                         sequential=False)
    assert 0.0 < fair.epsilon_lower <= 0.01 and not fair.violated


# ---------------------------------------------------------------------------------------------- power
def test_the_2x_twin_is_caught_by_the_pooled_median_half_lines():
    # seed 53: the best single half-line (and the half-line y <= 0 known in advance) certify below the claim
    twice = dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=53, workers=1,
                          sequential=False)
    assert twice.violated and twice.direction == "both, pooled" and twice.certified_events == 1
    assert isinstance(witness_from_dict(twice.witness), PooledPair)
    assert "pooled with" in twice.event and twice.certification_samples == 2 * (1_000_000 - twice.selection_samples)
    known = dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=53, workers=1,
                          sequential=False, witness=ScoreRegion(Column(0, 1), -math.inf, 0.0), direction="d -> d_prime")
    assert not known.violated


def test_the_selector_certifies_a_pooled_pair_only_above_every_single_event():
    below, above = ScoreRegion(Column(0, 1), -math.inf, 0.0), ScoreRegion(Column(0, 1), 2.0, math.inf)
    pair = Candidate(PooledPair(below, above), True, 0.4)
    single = Candidate(below, True, 0.5)
    assert [c.witness for c in select_for_certification([single, pair], 2)] == [below]
    better = Candidate(PooledPair(below, above), True, 0.6)
    assert [c.witness for c in select_for_certification([better, single], 2)] == [better.witness, below]
    # predicted to certify nothing, its sign left open by the selection: its mirror beside it
    mirror = PooledPair(above, below)
    open_sign = Candidate(PooledPair(below, above), True, -0.01, companion=mirror, outlook=-0.001)
    assert [c.witness for c in select_for_certification([open_sign], 1)] == [open_sign.witness, mirror]


# ---------------------------------------------------------------------------------------------- results
def test_pooled_pairs_are_identical_on_every_backend_caught_in_looks_and_recertified_from_their_dict():
    serial = dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=50, workers=1,
                           sequential=False)
    assert serial.direction == "both, pooled"
    processes = dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=50, workers=2,
                              sequential=False)
    assert (processes.epsilon_lower, processes.count_p, processes.count_q, processes.event) == \
           (serial.epsilon_lower, serial.count_p, serial.count_q, serial.event)
    looks = [dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=1_000_000, seed=51, workers=w)
             for w in (1, 2)]
    assert looks[0].direction == "both, pooled" and looks[0].violated
    assert (looks[0].epsilon_lower, looks[0].samples_used, looks[0].event) == \
           (looks[1].epsilon_lower, looks[1].samples_used, looks[1].event)
    again = dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], epsilon=0.004, samples=200_000, seed=1, workers=1,
                          sequential=False, witness=serial.witness, direction=serial.direction)
    assert again.direction == "both, pooled" and again.event == serial.event and again.certified_events == 1
    assert again.certification_samples == 2 * 200_000
    assert serial.epsilon_lower <= serial.ceiling
    data = serial.to_dict()
    assert data["direction"] == "both, pooled" and data["witness"]["kind"] == "pooled"
    assert 0.0 < data["epsilon_estimate"] < 0.02  # counts out of 2 n


# ---------------------------------------------------------------------------------------------- bad input
def test_unequal_sample_counts_are_refused_by_the_pooled_certifier():
    with pytest.raises(ValueError, match="n_d_prime=900 must equal n_d=1000"):
        pooled_epsilon_lower_bound((10, 5), (5, 10), 1000, 900, 0.0, 0.025)
    with pytest.raises(ValueError, match="forward_counts"):
        pooled_epsilon_lower_bound((1001, 5), (5, 10), 1000, 1000, 0.0, 0.025)
    with pytest.raises(ValueError, match="backward_counts"):
        pooled_epsilon_lower_bound((10, 5), (-1, 10), 1000, 1000, 0.0, 0.025)


def test_a_pooled_witness_takes_no_single_direction_and_no_curve():
    pair = PooledPair(ScoreRegion(Column(0, 1), -math.inf, 0.0), ScoreRegion(Column(0, 1), 2.0, math.inf))
    with pytest.raises(ValueError, match="direction"):
        dpaudit.audit(m.DiscreteLaplace(0.004), [0.0], [2.0], samples=1000, witness=pair, direction="d -> d_prime")
    with pytest.raises(ValueError, match="pooled pair"):
        dpaudit.audit_curve(m.DiscreteLaplace(0.004), [0.0], [2.0], claim=0.5, samples=1000, witness=pair.to_dict())
    with pytest.raises(TypeError, match="part by part"):
        pair.indicator(np.zeros((3, 1)))
    assert witness_from_dict(pair.to_dict()) == pair
