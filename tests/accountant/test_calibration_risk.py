"""Calibration to an attack-risk target (TPR at FPR, advantage) instead of, or with, (epsilon, delta)."""

from __future__ import annotations

import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant, calibrate
from dpaudit.accountant.risk import epsilon_for_tpr
from dpaudit.errors import InfeasibleBudgetError
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

Q, STEPS, DELTA = 0.05, 100, 1e-5


def dpsgd(sigma: float):
    return SelfComposed(PoissonSampled(Q, Gaussian(sigma)), STEPS)


def test_risk_target_is_met_and_tight():
    result = calibrate(dpsgd, bounds=(0.3, 10.0), max_tpr_at_fpr=(0.05, 0.01), tolerance=1e-3)
    assert result.tpr_upper <= 0.05 and result.epsilon is None and result.target_epsilon is None
    assert PLDAccountant().compose(dpsgd(result.value)).tpr_at_fpr(0.01) <= 0.05
    unsafe = result.bracket[1]
    assert unsafe < result.value and PLDAccountant().compose(dpsgd(unsafe)).tpr_at_fpr(0.01) > 0.05
    data = result.to_dict()
    assert data["max_tpr_at_fpr"] == [0.05, 0.01] and data["tpr_upper"] == result.tpr_upper


@pytest.mark.parametrize("tpr, fpr", [(0.05, 0.01), (0.3, 0.1)])
def test_risk_target_needs_less_noise_than_the_epsilon_target_of_equal_risk(tpr, fpr):
    """Kulynych et al. 2024: the (epsilon, delta) curve bounds every FPR at once, so the epsilon whose curve
    allows exactly `tpr` at `fpr` over-protects the mechanism at that FPR."""
    by_risk = calibrate(dpsgd, bounds=(0.3, 10.0), max_tpr_at_fpr=(tpr, fpr), tolerance=1e-3)
    epsilon = epsilon_for_tpr(tpr, fpr, DELTA)
    by_epsilon = calibrate(dpsgd, epsilon, DELTA, bounds=(0.3, 10.0), tolerance=1e-3)
    assert by_risk.value < 0.95 * by_epsilon.value
    # the epsilon-calibrated mechanism's own risk at that FPR is below the target: the noise it did not need
    assert PLDAccountant().compose(dpsgd(by_epsilon.value)).tpr_at_fpr(fpr) < tpr


def test_advantage_target_and_rdp_best():
    pld = calibrate(dpsgd, bounds=(0.3, 10.0), max_advantage=0.1, tolerance=1e-3)
    assert pld.advantage_upper <= 0.1 and PLDAccountant().compose(dpsgd(pld.value)).advantage() <= 0.1
    rdp = calibrate(dpsgd, bounds=(0.3, 10.0), max_advantage=0.1, accountant="rdp", tolerance=1e-3)
    assert RDPAccountant().compose(dpsgd(rdp.value)).advantage() <= 0.1 and rdp.value >= pld.value
    best = calibrate(dpsgd, bounds=(0.3, 10.0), max_advantage=0.1, accountant="best", tolerance=1e-3)
    assert best.value <= min(pld.value, rdp.value) * 1.002


def test_every_target_given_is_met():
    both = calibrate(dpsgd, 1.0, DELTA, bounds=(0.3, 10.0), max_tpr_at_fpr=(0.3, 0.1), tolerance=1e-3)
    alone = calibrate(dpsgd, 1.0, DELTA, bounds=(0.3, 10.0), tolerance=1e-3)
    assert both.epsilon <= 1.0 and both.tpr_upper <= 0.3 and both.value == pytest.approx(alone.value, rel=2e-3)


def test_unreachable_risk_targets_are_clear_errors():
    with pytest.raises(ValueError, match="max_tpr_at_fpr.*random guess"):
        calibrate(dpsgd, bounds=(0.3, 10.0), max_tpr_at_fpr=(0.005, 0.01))
    with pytest.raises(InfeasibleBudgetError, match="risk target.*tpr"):
        calibrate(dpsgd, bounds=(0.3, 2.0), max_tpr_at_fpr=(0.0101, 0.01))
    with pytest.raises(ValueError, match="max_tpr_at_fpr"):
        calibrate(dpsgd, bounds=(0.3, 10.0), max_tpr_at_fpr=(0.5, 1.0))
    with pytest.raises(TypeError, match="max_tpr_at_fpr"):
        calibrate(dpsgd, bounds=(0.3, 10.0), max_tpr_at_fpr=0.5)
    with pytest.raises(ValueError, match="max_advantage"):
        calibrate(dpsgd, bounds=(0.3, 10.0), max_advantage=1.5)


def test_a_target_is_required_and_epsilon_comes_with_delta():
    with pytest.raises(ValueError, match="target"):
        calibrate(dpsgd, bounds=(0.3, 10.0))
    with pytest.raises(ValueError, match="target_delta"):
        calibrate(dpsgd, 1.0, bounds=(0.3, 10.0))
