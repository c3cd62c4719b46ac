"""Issue 18, selection that holds in every seed: learned scores thresholded on the build half and predicted on
the held-out half, fitted companions, the product-likelihood score, structural families that cost nothing
without structure. Fixed seeds, workers=1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

import dpaudit
from dpaudit.auditor.witness_search.candidate import Candidate, is_interval
from dpaudit.auditor.witness_search.family_atoms import _support_leak
from dpaudit.auditor.witness_search.family_learned import fit_product_likelihood
from dpaudit.auditor.witness_search.prediction import HeldOutPrediction as _Ranker
from dpaudit.auditor.witness_search.prediction import WholeBatchPrediction as _Context
from dpaudit.auditor.witness_search.regions import held_out_regions, region_candidates, sorted_quantiles
from dpaudit.auditor.witness_search.selector import WIDE_MARGIN, prefer_wide, select_for_certification
from dpaudit.auditor.witness_search.tail_fit import fitted_choice
from dpaudit.auditor.witness import (
    Column,
    ColumnAtoms,
    Derived,
    DerivedPatternSet,
    ProductLikelihood,
    ScoreRegion,
    witness_from_dict,
)
from dpaudit.mechanisms import HistogramMechanism, LaplaceMechanism, buggy
from dpaudit.mechanisms.catalog import catalog_entry


def _discrete_laplace(noise_epsilon: float):
    def mechanism(data, size, rng):
        p = 1.0 - math.exp(-noise_epsilon)
        return data[0] + rng.geometric(p, size) - rng.geometric(p, size)
    return mechanism


# ------------------------------------------------------------------------------------------ power
@pytest.mark.parametrize("seed", [3, 6])
def test_discrete_laplace_at_small_epsilon_certifies_in_every_seed(seed):
    # seed 3 certified 0.022 when intervals of a learned score were chosen and predicted on the same rows;
    # seed 6 picked 11 <= y <= 16 (8% of the mass; its expected certified bound is ~0.035, that draw gave 0.044)
    fair = dpaudit.audit(_discrete_laplace(0.05), [0], [1], epsilon=0.05, samples=1_000_000, seed=seed, workers=1,
                         sequential=False)
    assert 0.04 <= fair.epsilon_lower <= 0.05 and fair.certified_events == 1
    assert not is_interval(witness_from_dict(fair.witness))  # a half-line: the wider event within noise
    twice = dpaudit.audit(_discrete_laplace(0.1), [0], [1], epsilon=0.05, samples=1_000_000, seed=seed, workers=1,
                          sequential=False)
    assert twice.violated


def test_twenty_laplace_answers_certify_half_their_epsilon():
    # seed 4 certified 0.487 ("at least 15 of 20 coordinates below the median", chosen by its Wilson bound)
    result = dpaudit.audit(LaplaceMechanism(1.0, k=20), np.zeros(20), np.ones(20), epsilon=1.0, samples=1_000_000, seed=4,
                           workers=1, sequential=False)
    assert 0.5 <= result.epsilon_lower <= 1.0 and not result.violated
    assert 2 <= result.certified_events <= 3  # the best and its fitted companions, all in the confidence split


def test_replace_one_histogram_reaches_095_of_its_epsilon():
    result = dpaudit.audit(buggy.HistogramReplaceOne(1.0, 5), [5.0] * 5, [6.0, 4.0, 5.0, 5.0, 5.0], epsilon=1.0,
                           samples=1_000_000, seed=0, workers=1, sequential=False)
    assert 1.9 <= result.epsilon_lower <= 2.0


# --------------------------------------------------------------------------------------- validity
@pytest.mark.parametrize("mechanism, d, d_prime", [
    (HistogramMechanism(1.0, 5), [5.0] * 5, [6.0, 5.0, 5.0, 5.0, 5.0]),
    (LaplaceMechanism(1.0, k=4), np.zeros(4), np.ones(4)),
    (_discrete_laplace(1.0), [0], [1]),
])
def test_correct_mechanisms_are_not_flagged_at_fixed_seeds(mechanism, d, d_prime):
    bounds = [dpaudit.audit(mechanism, d, d_prime, epsilon=1.0, samples=20_000, seed=seed, workers=1).epsilon_lower
              for seed in range(6)]
    assert max(bounds) <= 1.0, bounds


def test_structure_families_cost_nothing_without_structure():
    # noisy max (Laplace value) at claimed 0.5, seed 2: an exponent seen 10 times under one input and never
    # under the other in the 10^4 rows searched was certified beside the half-line (two events)
    entry = catalog_entry("noisy_max_laplace_value")
    d, d_prime = entry.pair
    result = dpaudit.audit(entry.factory(0.5), d, d_prime, epsilon=0.5, samples=1_000_000, confidence_level=0.99, seed=2,
                           workers=1, sequential=False)
    assert result.certified_events == 1 and "exponent" not in result.event and result.epsilon_lower > 1.19


def test_support_leaks_must_hold_on_every_selection_row():
    feature = Derived("exponent", 0, 1)
    atoms = ColumnAtoms((np.array([-6.0, -5.0]),), (False,))
    event = Candidate(DerivedPatternSet(feature, atoms, np.array([[0]], dtype=np.int32)), True, 5.0)
    rank = _Ranker(50_000, 900_000, 2.24, 0.0, 100_000)
    numerator = np.full((100_000, 1), -5.0)
    numerator[:40] = -6.0
    clean = np.full((100_000, 1), -5.0)
    leak = _support_leak(event, (numerator, clean), rank)
    assert leak is not None and leak.predicted > 3
    clean[77_777] = -6.0  # seen once under the other input, beyond the subsample searched: no support leak
    assert _support_leak(event, (numerator, clean), rank) is None


# --------------------------------------------------------------------------------------- held out
def test_learned_score_regions_are_predicted_on_rows_that_did_not_choose_them():
    rng = np.random.default_rng(0)
    build = (rng.normal(0.0, 1.0, (20_000, 1)), rng.normal(1.0, 1.0, (20_000, 1)))  # separates on the build half only
    held = (rng.normal(0.0, 1.0, (20_000, 1)), rng.normal(0.0, 1.0, (20_000, 1)))
    rank = _Ranker(20_000, 900_000, 2.24, 0.0, 40_000)
    chosen_on_build = region_candidates(Column(0, 1), *build, _Context(20_000, 900_000, 2.24, 0.0))
    assert max(c.predicted for c in chosen_on_build) > 0.5
    held_out = held_out_regions(Column(0, 1), build, held, rank, companions=False)
    assert held_out and max(c.predicted for c in held_out) < 0.05
    assert {c.witness for c in held_out} <= {c.witness for c in chosen_on_build}  # same events, other counts


def test_companions_prefer_the_wider_threshold_within_noise():
    # "at least k of 20 coordinates below the median", 20 Laplace answers, expected counts at 5*10^4 rows:
    # the expected certified bound at 9*10^5 samples is 0.50, 0.56, 0.59, 0.50 for k = 15 .. 18
    k = np.arange(21)
    p_d = 1 - 0.5 * math.exp(-0.5 / 20)
    count_p = 50_000 * binom.sf(k - 1, 20, p_d)
    count_q = 50_000 * binom.sf(k - 1, 20, 1 - p_d)
    best = fitted_choice(k.astype(float), count_p, count_q, 50_000, 900_000, 2.24, 0.0)
    robust = fitted_choice(k.astype(float), count_p, count_q, 50_000, 900_000, 2.24, 0.0, risk=2.0)
    assert best[0] == 17 and robust[0] == 16


def test_an_interval_within_noise_of_the_best_half_line_gives_way_to_it():
    # candidates best first, as the search returns them (discrete Laplace at epsilon 0.05, seed 6)
    interval = Candidate(ScoreRegion(Column(0, 1), 11.0, 16.0), False, 0.040, error=0.016)
    other_interval = Candidate(ScoreRegion(Column(0, 1), -50.0, -3.0), True, 0.038, error=0.006)
    half_line = Candidate(ScoreRegion(Column(0, 1), -np.inf, 0.0), True, 0.036)
    assert prefer_wide([interval, other_interval, half_line]) == [half_line, interval, other_interval]
    clear = Candidate(interval.witness, False, 0.036 + 2 * WIDE_MARGIN * 0.016, error=0.016)
    assert prefer_wide([clear, half_line]) == [clear, half_line]  # beats it by more than the margin: stays
    assert prefer_wide([half_line, interval]) == [half_line, interval]


def test_the_best_candidates_companion_is_certified_beside_it():
    a = np.arange(10.0)[:, None]
    low, wide = ScoreRegion(Column(0, 1), -np.inf, 2.0), ScoreRegion(Column(0, 1), -np.inf, 5.0)
    chosen = select_for_certification([Candidate(low, True, 1.0, companion=wide)], 1, selection=(a, a))
    assert [c.witness for c in chosen] == [low, wide]
    same_on_selection = ScoreRegion(Column(0, 1), -np.inf, 2.5)  # the same rows as `low`: not certified twice
    assert len(select_for_certification([Candidate(low, True, 1.0, companion=same_on_selection)], 1, selection=(a, a))) == 1


# ------------------------------------------------------------------------------- product likelihood
def test_product_likelihood_keeps_informative_coordinates_only():
    rng = np.random.default_rng(1)
    a = rng.laplace(0.0, 1.0, (40_000, 4))
    b = rng.laplace(0.0, 1.0, (40_000, 4))
    b[:, 1] += 1.0  # coordinate 1 shifts
    b[:, 3] = np.where(rng.random(40_000) < 0.2, np.nan, b[:, 3])  # coordinate 3: NaN under d_prime only
    score = fit_product_likelihood(a, b)
    assert score.columns == (1, 3)
    table = dict(zip(score.columns, score.tables))
    assert table[1][0] == pytest.approx(1.0, abs=0.1) and table[1][-2] == pytest.approx(-1.0, abs=0.1)  # the two plateaus
    assert table[3][-1] < -5  # the NaN bin: far more likely under d_prime
    back = witness_from_dict(ScoreRegion(score, 0.5, np.inf).to_dict())
    assert isinstance(back.projection, ProductLikelihood)
    assert np.array_equal(back.indicator(b), score.score(b) >= 0.5)


def test_product_likelihood_of_identical_inputs_is_nothing():
    rng = np.random.default_rng(2)
    assert fit_product_likelihood(rng.normal(size=(30_000, 3)), rng.normal(size=(30_000, 3))) is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=300),
       st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_sorted_quantiles_match_numpy(values, levels):
    ordered = np.sort(np.array(values))
    expected = np.quantile(ordered, np.array(levels), method="inverted_cdf")
    assert np.array_equal(sorted_quantiles(ordered, np.array(levels)), expected)
