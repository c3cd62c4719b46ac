"""The pilot witness search of sequential audits: when it stops, what it leaves unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit
from dpaudit.auditor.selection_looks import MIN_PILOT, PILOT_FUTILITY_SHARE, PILOT_SHARE, pilot_futile, pilot_rows
from dpaudit.auditor.witness import Column, ScoreRegion
from dpaudit.auditor.witness_search.candidate import Candidate

from . import mechanisms_for_tests as m


def laplace_scale_4(data, size, rng):
    """y = x + Lap(4): truly 0.25-DP on [0] -> [1], far below a claim of 1."""
    return np.asarray(data, float)[0] + rng.laplace(0.0, 4.0, size)


def _candidate(predicted: float) -> Candidate:
    return Candidate(ScoreRegion(Column(0, 1), 0.0, math.inf), True, predicted)


def test_the_pilot_is_an_eighth_of_the_selection_rows_and_at_least_min_pilot():
    assert pilot_rows(20_000, pilot=True) == math.ceil(20_000 * PILOT_SHARE) == 2_500
    assert pilot_rows(8 * MIN_PILOT - 8, pilot=True) is None  # a pilot below MIN_PILOT rows: one search
    assert pilot_rows(20_000, pilot=False) is None


@pytest.mark.parametrize(("predicted", "futile"), [(0.3, True), (PILOT_FUTILITY_SHARE - 1e-9, True), (PILOT_FUTILITY_SHARE, False),
                                                   (0.9, False), (1.5, False), (0.0, False), (-math.inf, False)])
def test_only_a_positive_prediction_below_half_the_claim_stops_the_search(predicted, futile):
    assert pilot_futile([_candidate(predicted), _candidate(predicted / 2)], epsilon=1.0) is futile


def test_no_candidate_does_not_stop_the_search():
    assert pilot_futile([], epsilon=1.0) is False


def test_a_mechanism_far_below_its_claim_is_certified_from_the_pilot_reproducibly():
    first = dpaudit.audit(laplace_scale_4, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1, stop_for_futility=True)
    again = dpaudit.audit(laplace_scale_4, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1, stop_for_futility=True)
    assert "at its pilot of 2500 rows" in first.method and not first.violated
    assert 0.0 < first.epsilon_lower <= 0.25
    assert first.selection_samples == 20_000  # the whole batch was drawn: it counts as used
    assert first.samples_used == first.selection_samples + first.certification_per_input
    assert (first.epsilon_lower, first.event, first.count_p, first.count_q) == (again.epsilon_lower, again.event, again.count_p,
                                                                               again.count_q)


def test_only_futility_stops_search_a_pilot():
    default = dpaudit.audit(laplace_scale_4, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1)
    fixed = dpaudit.audit(laplace_scale_4, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1, sequential=False)
    assert "pilot" not in default.method and default.event == fixed.event and default.stopped == "budget"


def test_a_pilot_near_the_claim_leaves_the_fixed_budget_search_unchanged():
    sequential = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1,
                               stop_for_futility=True)
    fixed = dpaudit.audit(m.laplace_unit, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1, sequential=False)
    assert "pilot" not in sequential.method
    assert sequential.event == fixed.event and sequential.candidates == fixed.candidates


def test_explicit_looks_search_the_whole_batch():
    result = dpaudit.audit(laplace_scale_4, [0.0], [1.0], epsilon=1.0, samples=200_000, seed=3, workers=1,
                           looks=[40_000, 200_000], stop_for_futility=True)
    assert "pilot" not in result.method
