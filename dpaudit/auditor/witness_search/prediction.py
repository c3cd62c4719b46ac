"""Predicted certified bounds from selection counts: what ranks every candidate event before certification.

Each candidate is ranked by the bound it is *predicted* to certify on the certification batch: its
selection frequencies, taken conservatively (one-sided Wilson bounds), pushed through the certification
bound at the certification sample size. Events chosen and predicted on the whole selection batch use
:class:`WholeBatchPrediction` (SELECTION_Z standard errors); events chosen on the build half and predicted on
the held-out half use :class:`HeldOutPrediction` (HELD_OUT_Z, and the zero-count rule of
:func:`held_out_predicted`). The chosen events are then certified on fresh samples, so the optimism of
choosing a maximum never reaches the reported bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = ["wilson", "predicted_bound", "conservative_upper", "log_ratio_error", "held_out_predicted",
           "WholeBatchPrediction", "HeldOutPrediction", "SELECTION_Z", "HELD_OUT_Z", "OUTLOOK_Z"]


SELECTION_Z = 2.0  # conservative shrink of selection frequencies (in standard errors), against the
# optimism of picking the best of many candidates on the same batch
OUTLOOK_Z = 1.0  # the outlook of events predicted to certify nothing (``regions.region_candidates``): less shrinkage,
# enough to keep events seen a handful of times (extreme tails) from ranking first
HELD_OUT_Z = 3.0  # held-out predictions: one standard error more than the whole-batch ones (SELECTION_Z)


def wilson(count, n, z, upper: bool):
    """One-sided Wilson bound (upper or lower) on a proportion seen ``count`` times in ``n`` (vectorised)."""
    count = np.asarray(count, dtype=np.float64)
    p = count / n
    denominator = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * np.sqrt(np.maximum(p * (1 - p), 0.0) / n + z * z / (4 * n * n)) / denominator
    return np.clip(centre + half if upper else centre - half, 0.0, 1.0)


def predicted_bound(count_p, count_q, n_select: int, n_certify: int, z_certify: float, delta: float,
                    z_select: float = SELECTION_Z) -> np.ndarray:
    """Bound ln((p_lo - delta) / q_hi) expected at certification, from selection counts (vectorised): one-sided
    Wilson bounds at ``z_select`` standard errors of the selection size, then at the certification size."""
    p = wilson(count_p, n_select, z_select, upper=False)
    q = wilson(count_q, n_select, z_select, upper=True)
    p_low = wilson(p * n_certify, n_certify, z_certify, upper=False) - delta
    q_high = wilson(q * n_certify, n_certify, z_certify, upper=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        bound = np.log(np.where(p_low > 0, p_low, np.nan)) - np.log(q_high)
    return np.where(np.isnan(bound), -np.inf, bound)


def conservative_upper(count, n_select: int, n_certify: int, z_certify: float) -> np.ndarray:
    """The upper confidence bound a proportion seen ``count`` times in ``n_select`` selection samples is
    expected to get at certification (n_certify samples, z_certify standard errors), taken conservatively
    (one-sided Wilson bounds at SELECTION_Z, then at z_certify); vectorised."""
    p = wilson(count, n_select, SELECTION_Z, upper=True)
    return wilson(p * n_certify, n_certify, z_certify, upper=True)


def log_ratio_error(count_p: float, count_q: float, n_p: int, n_q: int) -> float:
    """Standard error of ln(p / q) estimated from count_p of n_p and count_q of n_q samples (delta method:
    sqrt((1 - p) / count_p + (1 - q) / count_q), a count of 0 taken as 1)."""
    p, q = count_p / max(n_p, 1), count_q / max(n_q, 1)
    return math.sqrt(max(1.0 - p, 0.0) / max(count_p, 1.0) + max(1.0 - q, 0.0) / max(count_q, 1.0))


def held_out_predicted(count_p, count_q, n_select: int, n_certify: int, z_certify: float, delta: float,
                       build_p=None, build_q=None, n_total: int | None = None, zero_min: int = 10) -> np.ndarray:
    """Predicted certified bound ln((p_lo - delta) / q_hi) from held-out counts (vectorised).

    As :func:`predicted_bound` (Wilson bounds at HELD_OUT_Z, then at the certification size), except
    that an event never seen under the denominator input in the whole selection batch (held-out half and,
    ``build_q``, build half) but at least ``zero_min`` times under the numerator input is ranked by what
    certification could prove: q_hi = -ln(alpha) / n_certify (the Clopper-Pearson upper bound of a zero
    count at level alpha), with p from the whole batch (``n_total`` samples). ``zero_min`` keeps chance
    splits out: under equal probabilities a k-versus-0 split has probability 2^-k.

    HELD_OUT_Z is one standard error above the whole-batch SELECTION_Z of the magnitude search's events
    (coordinates and the one-hot logistic score, chosen and predicted on the whole selection batch): an event
    of the families searched beside them is certified instead only when its held-out evidence beats them by
    that margin, so on outputs without such structure (the catalog) their noise does not displace the
    magnitude search's choice (a boosting score at 1.91 predicted over a logistic one at 1.87 certified 2.16
    against 2.45).
    """
    bound = predicted_bound(count_p, count_q, n_select, n_certify, z_certify, delta, HELD_OUT_Z)
    if build_q is None or build_p is None:
        return bound
    count_p, count_q = np.broadcast_arrays(np.asarray(count_p, dtype=np.float64), np.asarray(count_q, dtype=np.float64))
    total_p = count_p + np.asarray(build_p, dtype=np.float64)
    zero = (count_q == 0) & (np.asarray(build_q) == 0) & (total_p >= zero_min)
    if not np.any(zero):
        return bound
    alpha = float(norm.sf(z_certify))
    q_high = -math.log(alpha) / n_certify
    p = wilson(total_p, n_total or 2 * n_select, SELECTION_Z, upper=False)
    p_low = wilson(p * n_certify, n_certify, z_certify, upper=False) - delta
    with np.errstate(divide="ignore", invalid="ignore"):
        zero_bound = np.where(p_low > 0, np.log(np.where(p_low > 0, p_low, 1.0)) - math.log(q_high), -np.inf)
    return np.where(zero, np.maximum(bound, zero_bound), bound)


@dataclass
class WholeBatchPrediction:
    """Prediction from the counts of the batch the events are chosen on (Wilson shrinkage only)."""

    n_select: int
    n_certify: int
    z_certify: float
    delta: float

    def predict(self, count_p, count_q) -> np.ndarray:
        return predicted_bound(count_p, count_q, self.n_select, self.n_certify, self.z_certify, self.delta)

    def outlook(self, count_p, count_q) -> np.ndarray:
        """The predicted bound with OUTLOOK_Z standard errors of selection shrinkage instead of SELECTION_Z."""
        return predicted_bound(count_p, count_q, self.n_select, self.n_certify, self.z_certify, self.delta, OUTLOOK_Z)

    def __call__(self, count_p, count_q, build_p=None, build_q=None, zero_min: int = 10) -> np.ndarray:
        return self.predict(count_p, count_q)

    def pooled(self) -> WholeBatchPrediction:
        """The prediction of a pooled pair's counts (``certify.pooled_bound``): each pooled count is out of twice the
        selection rows and will be out of twice the certification samples."""
        return WholeBatchPrediction(2 * self.n_select, 2 * self.n_certify, self.z_certify, self.delta)


class HeldOutPrediction:
    """Held-out prediction for one audit (:func:`held_out_predicted`)."""

    def __init__(self, n_select: int, n_certify: int, z_certify: float, delta: float, n_total: int | None = None) -> None:
        self.n_select, self.n_certify, self.z_certify, self.delta = n_select, n_certify, z_certify, delta
        self.n_total = n_total or 2 * n_select

    def __call__(self, count_p, count_q, build_p=None, build_q=None, zero_min: int = 10) -> np.ndarray:
        return held_out_predicted(count_p, count_q, self.n_select, self.n_certify, self.z_certify, self.delta,
                                  build_p, build_q, self.n_total, zero_min)
