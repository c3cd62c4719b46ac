"""Adjacent-pair search: StatDP patterns, hypothesis datasets, two-stage certification."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import strategies as st

from dpaudit.auditor import dataset_pairs, search_pairs, statdp_query_pairs

from . import mechanisms_for_tests as m


def unclipped_sum(data, size, rng):
    return np.sum(np.asarray(data, float)) + rng.laplace(0.0, 1.0, size)


def clipped_sum(data, size, rng):
    return np.sum(np.clip(np.asarray(data, float), -1, 1)) + rng.laplace(0.0, 1.0, size)


def test_statdp_patterns():
    pairs = statdp_query_pairs(5)
    assert ([1] * 5, [2, 1, 1, 1, 1]) in pairs and ([1] * 5, [0, 2, 2, 2, 2]) in pairs
    assert all(max(abs(a - b) for a, b in zip(d, dp)) <= 1 for d, dp in pairs)


def test_dataset_pairs_are_deterministic_and_adjacent():
    first = dataset_pairs(st.integers(0, 5), count=10, seed=3)
    assert first == dataset_pairs(st.integers(0, 5), count=10, seed=3)
    assert all(len(b) == len(a) + 1 and b[: len(a)] == a for a, b in first)
    replaced = dataset_pairs(st.integers(0, 5), count=10, neighbouring="replace_one", seed=3)
    assert all(len(a) == len(b) and a[1:] == b[1:] for a, b in replaced)


def test_search_finds_the_leaking_pair_of_noisy_max_value():
    found = search_pairs(m.noisy_max_value, statdp_query_pairs(5), samples=200_000, screen_samples=10_000, seed=1, workers=1,
                         sequential=False)
    assert found.violated and found.epsilon_lower > 1.8
    assert len(found.screened) == len(statdp_query_pairs(5)) and len(found.certified) == 3
    assert found.result.confidence_level == 0.95 and "Bonferroni" in found.result.method
    assert "result" in found.to_dict()


def test_search_over_hypothesis_datasets_finds_a_missing_clip():
    pairs = dataset_pairs(st.floats(-10, 10, allow_nan=False), count=15, seed=0)
    assert search_pairs(unclipped_sum, pairs, samples=100_000, seed=0, workers=1).violated
    assert not search_pairs(clipped_sum, pairs, samples=100_000, seed=0, workers=1).violated


def test_bad_pairs():
    with pytest.raises(ValueError, match="pairs"):
        search_pairs(m.laplace_unit, [])
    with pytest.raises(ValueError, match="pairs"):
        search_pairs(m.laplace_unit, [([0.0],)])
