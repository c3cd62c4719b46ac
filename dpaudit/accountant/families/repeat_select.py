"""The repeat-and-select family: hyperparameter tuning, ``RepeatAndSelect(event, mean, shape)`` (best of K runs, K random).

Source: Papernot & Steinke (2022), "Hyperparameter tuning with Renyi differential privacy" (ICLR;
arXiv:2110.03620), as dp_accounting's RDP accountant applies it (``_compute_rdp_repeat_and_select``). With
eps(.) the Renyi-DP curve of one run of the inner tree and K's mean mu:

* K ~ Poisson(mu) (``shape`` = inf), Thm 6: eps'(l) = eps(l) + mu delta_hat + ln(mu) / (l - 1), where one
  run is (eps_hat, delta_hat)-DP at eps_hat = ln(1 + 1 / (l - 1)); delta_hat from the inner curve by the
  conversion of Canonne, Kamath & Steinke (2020, Prop. 12) and, where smaller, the bound
  delta <= TV <= sqrt(1 - e^{-D_l}) (Bretagnolle-Huber; D_l >= KL).
* K truncated negative binomial with shape eta >= 0 (0 logarithmic, 1 geometric), Thm 2:
  eps'(l) = eps(l) + (1 + eta) min_l^ [(1 - 1/l^) eps(l^) + ln(1/gamma) / l^] + ln(mu) / (l - 1), with
  gamma the law's parameter for mean mu (found by bisection, rounded towards the larger bound).
* Renyi divergence is non-decreasing in the order, so each value is lowered to the smallest at any larger order.

The leaf (kind "repeat", built by the tree walk: mean, shape in ``extra``, the inner tree's leaves in
``inner``) has a Renyi-DP curve only (RDPAccountant); no PLD pair is known, so PLDAccountant refuses it.
"""

from __future__ import annotations

import math

import numpy as np

from ..leaf import Leaf
from ..registry import Family

__all__ = ["FAMILY", "repeat_and_select_rdp", "truncated_negative_binomial_gamma"]


def _tnb_mean(gamma: float, shape: float) -> float:
    """Mean of the truncated negative binomial law (Papernot & Steinke 2022, Def. 1)."""
    if gamma >= 1.0:
        return 1.0
    if shape == 1.0:
        return 1.0 / gamma
    log_gamma = math.log(gamma)
    if shape == 0.0:
        return (1.0 / gamma - 1.0) / -log_gamma
    return shape * (1.0 / gamma - 1.0) / -math.expm1(shape * log_gamma)


def truncated_negative_binomial_gamma(shape: float, mean: float) -> float:
    """The parameter gamma in (0, 1] of the truncated negative binomial law with this shape and mean; the
    bisection returns the lower end (a smaller gamma only enlarges the bound)."""
    if shape == 1.0:
        return 1.0 / mean
    low, high = 0.0, min(1.0, 2.0 * (shape + 1.0) / mean)  # mean <= 2 (shape + 1) / gamma
    while high > low * (1.0 + 1e-12) and high - low > 1e-300:
        middle = (low + high) / 2.0
        if _tnb_mean(middle, shape) < mean:
            high = middle
        else:
            low = middle
    return low


def _delta_at(orders: np.ndarray, rdp: np.ndarray, epsilon: float) -> float:
    """Upper bound on delta at ``epsilon`` of a mechanism with this Renyi-DP curve."""
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        conversion = (orders - 1) * (rdp - epsilon + np.log1p(-1.0 / orders)) - np.log(orders)
        total_variation = np.where(rdp > 0, 0.5 * np.log(-np.expm1(-rdp)), -np.inf)
    log_delta = np.minimum(conversion, total_variation)
    return min(1.0, math.exp(float(np.nanmin(log_delta))))


def repeat_and_select_rdp(orders: np.ndarray, rdp: np.ndarray, mean: float, shape: float) -> np.ndarray:
    """Renyi-DP curve at ``orders`` of the best of K runs of a mechanism with curve ``rdp`` (see module notes)."""
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    log_mean = math.log(mean)
    if math.isinf(shape):
        hat = np.array([_delta_at(orders, rdp, math.log1p(1.0 / (a - 1.0))) for a in orders])
        out = rdp + mean * hat + log_mean / (orders - 1.0)
    else:
        gamma = truncated_negative_binomial_gamma(shape, mean)
        with np.errstate(invalid="ignore"):
            inner = (1.0 - 1.0 / orders) * rdp - math.log(gamma) / orders
        out = rdp + (1.0 + shape) * float(np.nanmin(inner)) + log_mean / (orders - 1.0)
    out = np.where(np.isnan(out), math.inf, out)
    return np.minimum.accumulate(out[::-1])[::-1]  # monotone in the order


def _check(leaf: Leaf, relation: str) -> str | None:
    if leaf.sampling is not None:
        return "no analysis of a sampler over repeated runs with selection is implemented"
    return None


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    return ("no PLD is known for repeating a mechanism a random number of times and releasing the best run "
            "(use RDPAccountant: Papernot & Steinke 2022)")


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    from ...errors import UnsupportedEventError

    raise UnsupportedEventError(_pld_check(leaf, relation))


def _not_an_event(event) -> None:
    return None  # repeat leaves are built by the tree walk (:mod:`..event_tree`), which flattens the inner tree


FAMILY = Family(
    name="repeat_select", events=(), kinds=("repeat",), normal_form=_not_an_event, pld_pair=_pld_pair,
    pld_check=_pld_check, rdp_check=_check,
    rdp_from_inner=lambda orders, inner, leaf: repeat_and_select_rdp(orders, inner, leaf.param, leaf.extra),
)
