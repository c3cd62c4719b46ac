"""audit_score_curve: a correct claim passes (validity), a wrong one is caught (power), same split as
audit_scores, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from dpaudit.auditor import audit_scores
from dpaudit.auditor.score_curve import audit_score_curve
from dpaudit.errors import InvalidArgument
from dpaudit.events import Gaussian, SelfComposed
from dpaudit.guarantee import Guarantee


def test_a_true_gdp_claim_is_not_violated():
    for seed in range(10):
        rng = np.random.default_rng(seed)
        r = audit_score_curve(rng.normal(1.0, 1.0, 1000), rng.normal(0.0, 1.0, 1000), claim=1.0, seed=seed)
        assert not r.violated and r.mu_lower <= 1.0


def test_a_claim_for_twice_the_noise_is_caught():
    rng = np.random.default_rng(0)
    claim = SelfComposed(Gaussian(2.0 * 5.0), 100)  # 1-GDP claimed; the scores separate by mu = 2
    r = audit_score_curve(rng.normal(2.0, 1.0, 1000), rng.normal(0.0, 1.0, 1000), claim, delta=1e-5)
    assert r.violated and r.worst.below_claim and r.claim_mu == pytest.approx(1.0)
    assert r.to_dict()["bound"] == "lower"


def test_an_epsilon_delta_claim_is_tested_on_its_curve():
    rng = np.random.default_rng(1)
    r = audit_score_curve(rng.normal(3.0, 1.0, 500), rng.normal(0.0, 1.0, 500), Guarantee(1.0, 1e-5))
    assert r.violated and r.claim_kind == "guarantee"


def test_the_split_is_audit_scores():
    rng = np.random.default_rng(2)
    w, wo = rng.normal(1.0, 1.0, 300), rng.normal(0.0, 1.0, 300)
    curve = audit_score_curve(w, wo, claim=2.0, seed=5)
    scores = audit_scores(w, wo, seed=5, selection_fraction=0.2)
    assert curve.selection_samples == scores.selection_with + scores.selection_without
    assert curve.certification_samples == scores.n_with + scores.n_without - curve.selection_samples


def test_bad_input():
    with pytest.raises(InvalidArgument, match="scores_with"):
        audit_score_curve([1.0, float("nan"), 2.0], [0.0, 1.0, 2.0], claim=1.0)
    with pytest.raises(InvalidArgument, match="claim"):
        audit_score_curve([1.0, 2.0, 3.0], [0.0, 1.0, 2.0], claim=-1.0)
