"""Attack risk read from the accountants' curves: TPR at FPR, advantage, accuracy at a prior."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dpaudit.accountant import OpacusAccountant, PLDAccountant, RDPAccountant, ZCDPAccountant
from dpaudit.accountant.risk import attack_risk, epsilon_for_tpr, gdp_advantage, gdp_tpr_at_fpr
from dpaudit.events import ApproxDP, Gaussian, Laplace, PoissonSampled, SelfComposed, ZCDP

DPSGD = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 200)
FPRS = np.array([0.0, 1e-4, 1e-3, 0.01, 0.05, 0.1, 0.3, 0.5, 0.9, 1.0])


@pytest.fixture(scope="module")
def composed():
    return {"pld": PLDAccountant().compose(DPSGD), "rdp": RDPAccountant().compose(DPSGD),
            "zcdp": ZCDPAccountant().compose(SelfComposed(ZCDP(0.05), 4))}


@pytest.mark.parametrize("mu", [0.1, 0.5, 1.0, 3.0])
def test_gdp_equals_the_closed_form(mu):
    fprs = np.array([1e-6, 1e-3, 0.01, 0.1, 0.5, 0.9])
    exact = norm.cdf(norm.ppf(fprs) + mu)
    tpr = gdp_tpr_at_fpr(mu, fprs)
    assert np.all(tpr >= exact) and np.allclose(tpr, exact, rtol=1e-9, atol=1e-12)
    assert gdp_advantage(mu) >= 2 * norm.cdf(mu / 2) - 1
    assert gdp_advantage(mu) == pytest.approx(2 * norm.cdf(mu / 2) - 1, rel=1e-9)


def test_pld_of_gaussians_reads_the_gdp_closed_form():
    acct = PLDAccountant().compose(SelfComposed(Gaussian(2.0), 4))  # mu = 1
    assert acct.tpr_at_fpr(0.05) == pytest.approx(norm.cdf(norm.ppf(0.05) + 1.0), rel=1e-9)
    assert acct.advantage() == pytest.approx(2 * norm.cdf(0.5) - 1, rel=1e-9)


@pytest.mark.parametrize("name", ["pld", "rdp", "zcdp"])
def test_trade_off_shape(composed, name):
    """TPR(FPR) >= FPR, non-decreasing, concave (1 - f with f convex), within [0, 1]; advantage bounds
    TPR - FPR; scalar in, float out."""
    acct = composed[name]
    tpr = acct.tpr_at_fpr(FPRS)
    assert tpr.shape == FPRS.shape and np.all((tpr >= FPRS) & (tpr <= 1.0))
    assert np.all(np.diff(tpr) >= -1e-12)
    grid = np.linspace(0.0, 1.0, 401)
    values = acct.tpr_at_fpr(grid)
    assert np.all(values[1:-1] >= 0.5 * (values[:-2] + values[2:]) - 1e-9)  # concave
    assert np.max(values - grid) <= acct.advantage() + 1e-12
    assert isinstance(acct.tpr_at_fpr(0.01), float)


def test_tighter_accountant_gives_lower_risk(composed):
    pld, rdp = composed["pld"], composed["rdp"]
    positive = FPRS[FPRS > 0]  # at FPR 0 both read delta where their grids end (about 1e-3 of the smallest FPR)
    assert np.all(pld.tpr_at_fpr(positive) <= rdp.tpr_at_fpr(positive) + 1e-12)
    assert pld.advantage() <= rdp.advantage()


def test_tpr_is_above_the_true_curve_of_the_laplace_mechanism():
    """Laplace(b = 1): the likelihood-ratio test of Lap(0, 1) against Lap(1, 1) (Neyman-Pearson) has
    TPR = e FPR for FPR < e^-1 / 2; the bound must sit on or above it, and close to it."""
    acct = PLDAccountant().compose(Laplace(1.0))
    fprs = np.array([0.01, 0.05, 0.1])
    exact = np.where(fprs < 0.5 * math.exp(-1), math.e * fprs, 1 - math.exp(-1) / (4 * fprs))
    tpr = acct.tpr_at_fpr(fprs)
    assert np.all(tpr >= exact - 1e-12) and np.allclose(tpr, exact, atol=2e-3)


def test_approx_dp_gives_its_own_trade_off():
    acct = PLDAccountant().compose(ApproxDP(1.0, 1e-3))
    fprs = np.array([0.01, 0.1, 0.4])
    expected = np.minimum(1.0, np.minimum(1e-3 + math.e * fprs, 1 - math.exp(-1.0) * (1 - 1e-3 - fprs)))
    assert np.allclose(acct.tpr_at_fpr(fprs), expected, atol=1e-6)
    assert np.all(acct.tpr_at_fpr(fprs) >= expected - 1e-12)


def test_bayes_accuracy(composed):
    acct = composed["pld"]
    assert acct.bayes_accuracy(0.5) == pytest.approx(0.5 + 0.5 * acct.advantage())
    accuracy = acct.bayes_accuracy(np.array([0.0, 0.01, 0.2, 0.8, 0.99, 1.0]))
    assert accuracy[0] == accuracy[-1] == 1.0
    assert np.allclose(accuracy[1:3], accuracy[-2:-4:-1])  # symmetric in the prior
    assert np.all(accuracy[1:-1] >= np.maximum([0.01, 0.2, 0.8, 0.99], [0.99, 0.8, 0.2, 0.01]))


def test_empty_accountant_allows_no_attack():
    for acct in (PLDAccountant(), RDPAccountant(), ZCDPAccountant()):
        assert acct.advantage() == 0.0
        assert np.array_equal(acct.tpr_at_fpr([0.0, 0.2, 1.0]), [0.0, 0.2, 1.0])


def test_opacus_accountant_reads_its_backing_accountant():
    opacus = OpacusAccountant("rdp")
    for _ in range(3):
        opacus.step(noise_multiplier=1.0, sample_rate=0.05)
    backing = RDPAccountant().compose(SelfComposed(PoissonSampled(0.05, Gaussian(1.0)), 3))
    assert opacus.tpr_at_fpr(0.01) == backing.tpr_at_fpr(0.01)
    assert opacus.advantage() == backing.advantage()


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan"), "0.1", [0.1, 2.0]])
def test_bad_fprs_are_refused(composed, bad):
    with pytest.raises((ValueError, TypeError), match="fprs"):
        composed["rdp"].tpr_at_fpr(bad)


def test_attack_risk_summary(composed):
    risk = attack_risk(composed["rdp"])
    data = risk.to_dict()
    assert [row["fpr"] for row in data["tpr_at_fpr"]] == [0.001, 0.01, 0.1]
    assert data["advantage_upper"] == composed["rdp"].advantage() and "upper" in data["bound"]


def test_epsilon_for_tpr_inverts_the_approx_dp_curve():
    for eps, delta, fpr in [(1.0, 1e-5, 0.01), (3.0, 1e-6, 0.001), (0.5, 0.0, 0.3)]:
        tpr = min(1.0, delta + math.exp(eps) * fpr, 1 - math.exp(-eps) * (1 - delta - fpr))
        assert epsilon_for_tpr(tpr, fpr, delta) == pytest.approx(eps, rel=1e-9)
    with pytest.raises(ValueError, match="tpr"):
        epsilon_for_tpr(0.005, 0.01, 1e-5)


@settings(max_examples=25, deadline=None)
@given(eps=st.floats(0.05, 5.0), delta=st.floats(0.0, 1e-3), k=st.integers(1, 5),
       fprs=st.lists(st.floats(0.0, 1.0), min_size=2, max_size=6))
def test_rdp_risk_is_a_trade_off_function(eps, delta, k, fprs):
    """For any composition: TPR >= FPR, monotone in FPR, never below the exact (eps, delta) curve of one
    step (composition can only add risk)."""
    acct = RDPAccountant().compose(SelfComposed(ApproxDP(eps, 0.0), k))
    fprs = np.sort(np.array(fprs))
    tpr = acct.tpr_at_fpr(fprs)
    assert np.all(tpr >= fprs) and np.all(np.diff(tpr) >= -1e-12) and np.all(tpr <= 1.0)
    one_step = np.minimum(1.0, np.minimum(math.exp(eps) * fprs, 1 - math.exp(-eps) * (1 - fprs)))
    assert np.all(tpr >= one_step - 1e-9)


@settings(max_examples=25, deadline=None)
@given(mu=st.floats(0.01, 6.0), fprs=st.lists(st.floats(1e-9, 1.0 - 1e-9), min_size=1, max_size=6))
def test_gdp_property(mu, fprs):
    fprs = np.sort(np.array(fprs))
    tpr = gdp_tpr_at_fpr(mu, fprs)
    assert np.all(tpr >= fprs) and np.all(np.diff(tpr) >= 0)
    assert np.all(tpr >= norm.cdf(norm.ppf(fprs) + mu) - 1e-15)
