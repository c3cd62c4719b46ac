"""Curve audits in attack-risk terms: a certified lower bound on the best attack's TPR at standard FPRs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpaudit.accountant import PLDAccountant, tpr_lower_from_tests
from dpaudit.auditor.curve import audit_curve
from dpaudit.events import Gaussian
from dpaudit.mechanisms import GaussianMechanism


def test_hull_of_certified_tests():
    # one test (FPR <= 0.1, TPR >= 0.5): below it the mixture with (0, 0), above it with (1, 1)
    tpr = tpr_lower_from_tests([0.1], [0.5], [0.0, 0.05, 0.1, 0.55, 1.0])
    assert np.allclose(tpr, [0.0, 0.25, 0.5, 0.75, 1.0], atol=1e-12) and np.all(tpr <= [0.0, 0.25, 0.5, 0.75, 1.0])
    # a dominated test changes nothing
    assert np.array_equal(tpr_lower_from_tests([0.1, 0.2], [0.5, 0.6], [0.05, 0.15]),
                          tpr_lower_from_tests([0.1], [0.5], [0.05, 0.15]))


@settings(max_examples=40, deadline=None)
@given(points=st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=8))
def test_hull_is_concave_monotone_and_above_each_test(points):
    alphas, betas = zip(*points)
    grid = np.linspace(0, 1, 101)
    tpr = tpr_lower_from_tests(alphas, betas, grid)
    assert np.all(np.diff(tpr) >= -1e-12) and np.all(tpr >= grid - 1e-12)
    assert np.all(tpr[1:-1] >= 0.5 * (tpr[:-2] + tpr[2:]) - 1e-9)
    for a, b in points:
        assert tpr_lower_from_tests(alphas, betas, a) >= 1 - b - 1e-12


def test_gaussian_audit_risk_is_below_the_accountant_risk_and_close():
    mechanism = GaussianMechanism(1.0, 1e-5)
    result = audit_curve(mechanism, [0.0], [1.0], samples=200_000, seed=3, workers=1)
    risk = result.to_dict()["attack_tpr_lower"]
    assert risk["bound"].startswith("lower") and [r["fpr"] for r in risk["tpr_at_fpr"]] == [0.001, 0.01, 0.1]
    lower = np.array([r["tpr_lower"] for r in risk["tpr_at_fpr"]])
    upper = PLDAccountant().compose(Gaussian(mechanism.sigma)).tpr_at_fpr([0.001, 0.01, 0.1])
    assert np.all(lower <= upper)
    assert lower[2] > 0.8 * upper[2]  # the audit sees most of the risk at FPR 0.1
    exact = norm.cdf(norm.ppf(0.1) + 1.0 / mechanism.sigma)
    assert lower[2] <= exact <= upper[2] + 1e-12
