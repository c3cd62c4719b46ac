"""A witness family added at run time is searched by the audit: one module and one registry entry suffice."""

from __future__ import annotations

import math

import numpy as np

import dpaudit
from dpaudit.auditor.witness import Column, ScoreRegion
from dpaudit.auditor.witness_search import registry
from dpaudit.auditor.witness_search.batch import SelectionBatch
from dpaudit.auditor.witness_search.candidate import Candidate
from dpaudit.auditor.witness_search.selector import rank_key, search_witnesses

from .mechanisms_for_tests import histogram, laplace_unit


class PooledMedianHalfLines:
    """The trivial family of docs/guides/extending.md: y[0] >= m and y[0] <= m at the pooled median m."""

    name = "pooled-median half-lines"
    costly = False

    def __init__(self) -> None:
        self.batches: list[SelectionBatch] = []

    def candidates(self, batch: SelectionBatch) -> list[Candidate]:
        self.batches.append(batch)
        median = float(np.nanmedian(np.concatenate([batch.a[:, 0], batch.b[:, 0]])))
        found = []
        for region in (ScoreRegion(Column(0, batch.width), median, math.inf),
                       ScoreRegion(Column(0, batch.width), -math.inf, median)):
            in_a, in_b = int(region.indicator(batch.a).sum()), int(region.indicator(batch.b).sum())
            for forward, (p, q) in ((True, (in_a, in_b)), (False, (in_b, in_a))):
                found.append(Candidate(region, forward, float(batch.whole_batch.predict(p, q))))
        return found


def test_an_audit_runs_through_a_family_added_to_the_registry(monkeypatch):
    family = PooledMedianHalfLines()
    monkeypatch.setattr(registry, "FAMILIES", (family,))  # only the new family: its event must be the witness
    result = dpaudit.audit(laplace_unit, [0.0], [1.0], epsilon=1.0, samples=40_000, seed=1, workers=1)
    assert len(family.batches) == 1 and family.batches[0].a.shape == (4_000, 1)
    assert "y <= " in result.event or "y >= " in result.event
    median = float(result.witness["high"] if result.witness["low"] in ("-inf", -math.inf) else result.witness["low"])
    assert abs(median - 0.5) < 0.1  # the pooled median of Lap(0, 1) and Lap(1, 1)
    # P[y <= 0.5 | d] / P[y <= 0.5 | d'] = (1 - e^-0.5 / 2) / (e^-0.5 / 2) = e^0.83: a valid, weaker bound
    assert 0.6 < result.epsilon_lower < 0.83 + 1e-9 and not result.violated


def test_an_added_family_competes_with_the_registered_ones(monkeypatch):
    family = PooledMedianHalfLines()
    monkeypatch.setattr(registry, "FAMILIES", registry.FAMILIES + (family,))
    rng = np.random.default_rng(3)
    a, b = histogram([1.0, 1.0, 1.0], 20_000, rng), histogram([2.0, 1.0, 1.0], 20_000, rng)
    found = search_witnesses(a, b, n_certify=100_000, z_certify=2.24, delta=0.0, rng=np.random.default_rng(0))
    assert len(family.batches) == 1
    median = float(np.median(np.concatenate([a[:, 0], b[:, 0]])))
    ours = [c for c in found if isinstance(c.witness, ScoreRegion) and median in (c.witness.low, c.witness.high)]
    assert len(ours) == 4  # both half-lines, both directions, ranked among the registered families' events
    assert [rank_key(c) for c in found] == sorted((rank_key(c) for c in found), reverse=True)
    assert found[0].predicted >= max(c.predicted for c in ours) and len(found) > len(ours)

