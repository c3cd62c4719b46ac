"""A smoothed choice of threshold: the half-line a fitted model of the tail log ratio predicts best.

Shared by the tail family (``family_tails.py``) and the fitted companions of learned scores
(``regions.held_out_regions``).
"""

from __future__ import annotations

import numpy as np

from .prediction import wilson

__all__ = ["fitted_choice", "FIT_MIN_COUNT", "FIT_POINTS", "FIT_DEGREE", "FIT_MAX_CHI2"]


FIT_MIN_COUNT = 10  # thresholds fitted on need this many selection hits under both inputs
FIT_POINTS = 256
FIT_DEGREE = 2  # ln ratio ~ polynomial of this degree in the threshold
FIT_MAX_CHI2 = 4.0  # reduced chi-square above which the linear model is rejected


def fitted_choice(grid: np.ndarray, numerator: np.ndarray, denominator: np.ndarray, n: int, n_certify: int,
                  z_certify: float, delta: float, risk: float = 0.0) -> tuple[float, float] | None:
    """The threshold maximising the predicted bound under a smoothed tail ratio, or None.

    The raw ratio of tail counts is noisy exactly where (epsilon, delta) events live (a few hundred hits), so
    the maximum of raw predictions lands on chance spikes. In the tail the log ratio of the two survival
    functions is smooth in the threshold (linear for Gaussian location pairs, constant for Laplace), so it
    is fitted by weighted least squares with a polynomial of degree FIT_DEGREE in t, ln(c_num / c_den) ~
    u + v t + w t^2, on thresholds leaving geometrically spaced counts outside (weights 1 / (1/c_num + 1/c_den), the inverse delta-method variance); the fit is
    used only when it is consistent with the counts (reduced chi-square <= FIT_MAX_CHI2). Each threshold is
    then predicted (within the fitted range: no extrapolation) with p = c_num / n and q = p e^-fit(t), shrunk at
    the certification size only (one-sided Wilson bounds at z_certify); the
    choice is certified on fresh samples like any other, so a poor model costs tightness, never soundness.
    ``risk`` > 0 maximises a lower quantile of the certified bound instead of its expectation: each prediction
    less ``risk`` times the bound's standard deviation at certification, sqrt(1 / (p n) + 1 / (q n)) with
    n = n_certify (the delta method for ln p - ln q), so of two thresholds within noise the wider wins."""
    order = np.argsort(numerator + denominator, kind="stable")  # tail counts grow away from the extreme
    total = (numerator + denominator)[order]
    wanted = np.unique(np.geomspace(max(1, total.min()), max(1, total.max()), FIT_POINTS).round())
    picks = order[np.clip(np.searchsorted(total, wanted), 0, order.size - 1)]
    picks = np.unique(picks)
    usable = picks[(numerator[picks] >= FIT_MIN_COUNT) & (denominator[picks] >= FIT_MIN_COUNT)]
    if usable.size < 5:
        return None
    t, cn, cd = grid[usable], numerator[usable].astype(float), denominator[usable].astype(float)
    y, weight = np.log(cn / cd), 1.0 / (1.0 / cn + 1.0 / cd)
    if np.ptp(t) == 0:
        return None
    coef = np.polyfit(t, y, FIT_DEGREE, w=np.sqrt(weight))
    chi2 = float(np.sum(weight * (y - np.polyval(coef, t)) ** 2)) / max(1, usable.size - FIT_DEGREE - 1)
    if not chi2 <= FIT_MAX_CHI2:
        return None
    inside = (numerator >= FIT_MIN_COUNT) & (grid >= t.min()) & (grid <= t.max())  # no extrapolation
    if not inside.any():
        return None
    p = numerator[inside] / n
    q = np.minimum(1.0, p * np.exp(-np.polyval(coef, grid[inside])))
    p_low = wilson(p * n_certify, n_certify, z_certify, upper=False) - delta
    q_high = wilson(q * n_certify, n_certify, z_certify, upper=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(p_low > 0, np.log(np.where(p_low > 0, p_low, 1.0)) - np.log(q_high), -np.inf)
        if risk > 0:
            scores = scores - risk * np.sqrt(1.0 / (p * n_certify) + 1.0 / (np.maximum(q, 1e-300) * n_certify))
    best = int(np.argmax(scores))
    if not (np.isfinite(scores[best]) and scores[best] > 0):
        return None
    return float(grid[inside][best]), float(scores[best])
