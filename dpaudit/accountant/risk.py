"""Attack risk read from an accountant's privacy curve: the true-positive rate any membership attack can
reach at each false-positive rate, its advantage, and its accuracy at a prior.

Kulynych, Gomez, Kaissis, du Pin Calmon & Troncoso 2024, "Attack-aware noise calibration for differential
privacy" (NeurIPS; the riskcal library): a claim whose trade-off function is f (Dong, Roth & Su 2022) bounds
every attack that tells whether a record was in (P = M(d)) or out (Q = M(d')):

* **TPR at FPR**: an attack with false-positive rate alpha has true-positive rate at most 1 - f(alpha);
* **advantage**: TPR - FPR <= max_alpha (1 - alpha - f(alpha)) = delta(0), the total-variation distance
  (Kulynych et al. 2024, Sec. 3; Dong-Roth-Su 2022, Prop. 2.12 at epsilon = 0);
* **accuracy at a prior** pi of a binary guess (the secret is 1 with probability pi): at most
  max(pi, 1 - pi) + min(pi, 1 - pi) delta(|ln(pi / (1 - pi))|) (one minus the Bayes risk of Kulynych et
  al. 2025, "The unified theory of privacy risk", Prop. D.1: for a claim on both orderings the best test
  against the likelier side is a hockey-stick divergence at that ratio).

The accountants' trade-off functions are **lower bounds** on the true one (profile upper bounds read on an
epsilon grid, Dong-Roth-Su 2022, Prop. 2.12; exactly G_mu for Gaussian compositions), so every number here
is an **upper bound** on what any attack can reach, rounded up.

Read-out: the profile is read on :data:`RISK_GRID_POINTS` epsilons from 0 to where delta falls to
:func:`risk_floor_delta` of the smallest false-positive rate asked (lines with smaller delta only matter at
false-positive rates far below it; dropping them keeps the trade-off a lower bound), so a PLD accountant
answers in a fraction of a second. Gaussian DP is read in closed form: TPR = Phi(Phi^-1(FPR) + mu),
advantage = 2 Phi(mu / 2) - 1.

Example:
    >>> from dpaudit.accountant import PLDAccountant
    >>> from dpaudit.events import Gaussian
    >>> acct = PLDAccountant().compose(Gaussian(1.0))
    >>> round(float(acct.tpr_at_fpr(0.01)), 4)
    0.0924
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_delta, check_probability
from ..errors import InvalidArgument
from ..tradeoff import ProfileTradeoff, _array
from .curves import accountant_profile, gdp_delta, gdp_tradeoff, guarantee_profile, guarantee_tradeoff

__all__ = ["STANDARD_FPRS", "RISK_GRID_POINTS", "AttackRisk", "attack_risk", "tpr_at_fpr", "advantage",
           "bayes_accuracy", "gdp_tpr_at_fpr", "gdp_advantage", "epsilon_for_tpr", "risk_floor_delta",
           "risk_tradeoff", "AttackRiskReadouts", "tpr_lower_from_tests",
           "guarantee_attack_risk"]

#: False-positive rates the command line and reports show by default.
STANDARD_FPRS = (0.001, 0.01, 0.1)
#: Epsilon grid points on which a numeric accountant's profile is read for its risk curve.
RISK_GRID_POINTS = 600
_U = 2.0**-53
_FAR_EPSILON = 1e3


def risk_floor_delta(smallest_fpr: float) -> float:
    """delta at which the risk grid ends: 1e-3 of the smallest positive false-positive rate asked, kept in
    [1e-8, 1e-6] (below 1e-8 a PLD's own error floor and tilted read-outs dominate; 1e-6 already resolves
    false-positive rates of 1e-3)."""
    return min(max(1e-3 * smallest_fpr, 1e-8), 1e-6)


def _mu(accountant: Any) -> float | None:
    """mu when the accountant's composition is exactly mu-GDP (it says so), else None."""
    gaussian_mu = getattr(accountant, "gaussian_mu", None)
    return gaussian_mu() if callable(gaussian_mu) else None


def _composed(accountant: Any) -> bool:
    leaves = getattr(accountant, "leaves", None)
    if not isinstance(leaves, dict):
        leaves = getattr(accountant, "_leaves", None)
    return bool(leaves)


def _key(accountant: Any) -> Any:
    leaves = getattr(accountant, "leaves", None)
    if not isinstance(leaves, dict):
        leaves = getattr(accountant, "_leaves", None)
    return tuple(sorted((repr(k), v) for k, v in leaves.items())) if isinstance(leaves, dict) else None


def _profile_reader(accountant: Any) -> Callable[[np.ndarray], np.ndarray]:
    """delta at an array of epsilons (upper bounds): the PLD's grid read-out without small-delta tilting
    when the accountant offers it, else its public ``delta``."""
    read = getattr(accountant, "_risk_profile", None)
    return read if callable(read) else (lambda grid: accountant_profile(accountant, grid))


def _epsilon_top(accountant: Any, floor: float) -> float:
    """Where the grid ends: the epsilon at which delta falls to ``floor`` above the delta that no epsilon
    removes (the plateau of (epsilon, delta) steps; beyond it every line is dominated)."""
    plateau = float(_profile_reader(accountant)(np.array([_FAR_EPSILON]))[0])
    for target in (plateau + floor, plateau + 1e-6, plateau + 1e-4, plateau + 1e-2):
        if target >= 1.0:
            break
        value = accountant.epsilon(target)
        if math.isfinite(value):
            return max(value, 1e-3)
    return 50.0


def risk_tradeoff(accountant: Any, smallest_fpr: float) -> ProfileTradeoff:
    """The trade-off lower bound used for risk: the accountant's profile (upper bounds, from its public
    ``delta``) on :data:`RISK_GRID_POINTS` epsilons from 0 to where delta falls to
    :func:`risk_floor_delta`, plus its pure epsilon if finite, as a :class:`~dpaudit.tradeoff.ProfileTradeoff`.
    Cached on the accountant until its composition changes."""
    floor = risk_floor_delta(smallest_fpr)
    key = (floor, _key(accountant))
    cache = getattr(accountant, "_risk_curve", None)
    if cache is not None and key[1] is not None and cache[0] == key:
        return cache[1]
    grid = np.linspace(0.0, _epsilon_top(accountant, floor), RISK_GRID_POINTS)
    pure = getattr(accountant, "_pure_epsilon", getattr(accountant, "_pure", None))
    value = pure() if callable(pure) else pure
    if isinstance(value, (int, float)) and math.isfinite(value):
        grid = np.unique(np.append(grid, float(value)))
    curve = ProfileTradeoff(grid, _profile_reader(accountant)(grid))
    try:
        accountant._risk_curve = (key, curve)
    except AttributeError:  # pragma: no cover - accountants with __slots__
        pass
    return curve


def _out(values: np.ndarray, scalar: bool) -> Any:
    return float(values) if scalar else values


# ------------------------------------------------------------------------------------------- GDP
def gdp_tpr_at_fpr(mu: float, fprs: Any) -> Any:
    """Phi(Phi^-1(FPR) + mu): the largest true-positive rate of any test at each false-positive rate under
    mu-GDP (1 - G_mu(FPR), Dong, Roth & Su 2022, Def. 2.6), rounded up. Vectorised over ``fprs``.

    Example:
        >>> round(gdp_tpr_at_fpr(1.0, 0.05), 4)
        0.2595
    """
    scalar = np.ndim(fprs) == 0
    alphas = _array(fprs, "fprs", low=0.0, high=1.0)
    tpr = np.maximum(1.0 - gdp_tradeoff(mu, alphas) + 2 * _U, alphas)
    return _out(np.clip(tpr, 0.0, 1.0), scalar)


def gdp_advantage(mu: float) -> float:
    """2 Phi(mu / 2) - 1 = delta(0) of mu-GDP: the largest TPR - FPR of any test (rounded up)."""
    return float(gdp_delta(mu, 0.0))


# -------------------------------------------------------------------------------- any accountant
def tpr_at_fpr(accountant: Any, fprs: Any) -> Any:
    """Upper bound on the true-positive rate of any membership attack at each false-positive rate: 1 - f(FPR)
    with f the trade-off lower bound of the accountant's composition (exact G_mu for Gaussian
    compositions); never below FPR; rounded up. A scalar gives a float, an array an array of its shape."""
    scalar = np.ndim(fprs) == 0
    alphas = _array(fprs, "fprs", low=0.0, high=1.0)
    if not _composed(accountant):
        return _out(alphas.copy(), scalar)
    mu = _mu(accountant)
    if mu is not None:
        return gdp_tpr_at_fpr(mu, fprs)
    positive = alphas[alphas > 0]
    curve = risk_tradeoff(accountant, float(positive.min()) if positive.size else 0.0)
    tpr = np.maximum(1.0 - curve(alphas) + 2 * _U, alphas)
    return _out(np.clip(tpr, 0.0, 1.0), scalar)


def advantage(accountant: Any) -> float:
    """Upper bound on the advantage TPR - FPR of any membership attack: delta(0) of the composition (its
    total-variation distance; 2 Phi(mu/2) - 1 for mu-GDP), rounded up."""
    if not _composed(accountant):
        return 0.0
    mu = _mu(accountant)
    if mu is not None:
        return gdp_advantage(mu)
    return min(1.0, float(accountant.delta(0.0)))


def bayes_accuracy(accountant: Any, prior: Any) -> Any:
    """Upper bound on the accuracy of any attack guessing a binary secret that is 1 with probability
    ``prior``: max(pi, 1 - pi) + min(pi, 1 - pi) delta(|ln(pi / (1 - pi))|) (module docstring), rounded up.
    One minus it is a lower bound on riskcal's Bayes risk. Vectorised over ``prior`` in [0, 1]."""
    scalar = np.ndim(prior) == 0
    pi = _array(prior, "prior", low=0.0, high=1.0)
    likelier, other = np.maximum(pi, 1.0 - pi), np.minimum(pi, 1.0 - pi)
    if not _composed(accountant):
        return _out(likelier, scalar)
    with np.errstate(divide="ignore"):
        eps = np.abs(np.log(likelier) - np.log(other))
    deltas = accountant_profile(accountant, eps, _mu(accountant))
    value = (likelier + other * deltas) * (1.0 + 8 * _U)
    return _out(np.clip(value, 0.0, 1.0), scalar)


def epsilon_for_tpr(tpr: float, fpr: float, delta: float) -> float:
    """The epsilon whose (epsilon, delta)-DP trade-off curve allows exactly true-positive rate ``tpr`` at
    false-positive rate ``fpr``: the attack risk an (epsilon, delta) target stands for.

    (epsilon, delta)-DP allows TPR = min(1, delta + e^eps FPR, 1 - e^-eps (1 - delta - FPR)) at FPR
    (Kairouz, Oh & Viswanath 2015; Dong-Roth-Su 2022, Prop. 2.5), increasing in epsilon, so the answer is
    max(ln((tpr - delta) / fpr), ln((1 - delta - fpr) / (1 - tpr))). InvalidArgument naming ``tpr`` when
    even epsilon = 0 allows more than ``tpr`` (tpr < fpr + delta).
    """
    fpr = check_probability(fpr, "fpr", low_open=True, high_open=True)
    tpr = check_probability(tpr, "tpr", high_open=True)
    delta = check_delta(delta, "delta")
    if tpr < fpr + delta:
        raise InvalidArgument("tpr", f"tpr={tpr!r} must be >= fpr + delta = {fpr + delta!r}: every "
                                     f"(epsilon, {delta!r})-DP claim allows at least that")
    first = math.log((tpr - delta) / fpr)
    second = math.log((1.0 - delta - fpr) / (1.0 - tpr)) if 1.0 - delta - fpr > 0 else 0.0
    return max(first, second, 0.0)


def tpr_lower_from_tests(alpha_upper: Any, beta_upper: Any, fprs: Any = STANDARD_FPRS) -> np.ndarray:
    """Lower bound on the best attack's true-positive rate at each FPR from certified tests: a test with
    type-I error <= alpha_u and type-II error <= beta_u is an attack with FPR <= alpha_u and TPR >= 1 - beta_u;
    mixing tests (and the trivial ones, (0, 0) and (1, 1)) reaches every point under their upper concave
    hull, and the best TPR is non-decreasing in FPR, so the hull at each FPR is a lower bound (it holds
    whenever every test's bounds do), rounded down."""
    a = np.clip(np.ravel(_array(alpha_upper, "alpha_upper", low=0.0, high=1.0)), 0.0, 1.0)
    t = np.clip(1.0 - np.ravel(_array(beta_upper, "beta_upper", low=0.0, high=1.0)), 0.0, 1.0)
    query = _array(fprs, "fprs", low=0.0, high=1.0)
    xs = np.concatenate([[0.0, 1.0], a])
    ys = np.concatenate([[0.0, 1.0], t])
    order = np.lexsort((-ys, xs))
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs[order], ys[order]):
        if hull and hull[-1][0] == x:
            continue  # same FPR: the first (largest TPR) is kept
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (x - x1) <= (y - y1) * (x2 - x1):  # the middle point is under the chord: drop it
                hull.pop()
            else:
                break
        hull.append((float(x), float(y)))
    hx, hy = np.array([p[0] for p in hull]), np.array([p[1] for p in hull])
    value = np.interp(query, hx, np.maximum.accumulate(hy)) - 4 * _U
    return np.clip(value, 0.0, 1.0)


@dataclass(frozen=True)
class AttackRisk:
    """What a composition's privacy curve allows any membership attack (every number an upper bound):
    ``tpr_upper[i]`` at ``fprs[i]``, the ``advantage_upper`` (TPR - FPR), the accountant that said so."""

    fprs: tuple[float, ...]
    tpr_upper: tuple[float, ...]
    advantage_upper: float
    accountant: str

    def to_dict(self) -> dict[str, Any]:
        return {"bound": "upper (any attack)", "accountant": self.accountant,
                "tpr_at_fpr": [{"fpr": f, "tpr_upper": t} for f, t in zip(self.fprs, self.tpr_upper)],
                "advantage_upper": self.advantage_upper}


def guarantee_attack_risk(epsilon: float, delta: float, fprs: Any = STANDARD_FPRS) -> AttackRisk:
    """:class:`AttackRisk` of an (epsilon, delta)-DP claim: TPR <= 1 - f_{eps,delta}(FPR) = min(1, delta +
    e^eps FPR, 1 - e^-eps (1 - delta - FPR)) (Dong-Roth-Su 2022, Prop. 2.5) and advantage <= delta(0) of its
    dominating pair, delta + (1 - delta) tanh(eps / 2) (Kairouz, Oh & Viswanath 2015), rounded up."""
    alphas = np.atleast_1d(_array(fprs, "fprs", low=0.0, high=1.0)).ravel()
    tpr = np.clip(np.maximum(1.0 - guarantee_tradeoff(epsilon, delta, alphas) + 2 * _U, alphas), 0.0, 1.0)
    edge = float(guarantee_profile(epsilon, delta, np.array([0.0]))[0])
    return AttackRisk(tuple(float(a) for a in alphas), tuple(float(t) for t in tpr), min(1.0, edge), "(epsilon, delta) claim")


def attack_risk(accountant: Any, fprs: Any = STANDARD_FPRS, name: str | None = None) -> AttackRisk:
    """:class:`AttackRisk` of the accountant's composition at ``fprs`` (default :data:`STANDARD_FPRS`)."""
    alphas = np.atleast_1d(_array(fprs, "fprs", low=0.0, high=1.0)).ravel()
    tprs = np.atleast_1d(accountant.tpr_at_fpr(alphas))
    label = name if name is not None else type(accountant).__name__
    return AttackRisk(tuple(float(a) for a in alphas), tuple(float(t) for t in tprs), float(accountant.advantage()), label)


class AttackRiskReadouts:
    """The attack-risk read-outs every accountant offers (mixed into PLD, RDP, zCDP and Opacus-style
    accountants); ``_risk_source`` is the accountant whose curve is read (itself unless it delegates)."""

    def _risk_source(self) -> Any:
        return self

    def tpr_at_fpr(self, fprs: Any) -> Any:
        """Upper bound on the true-positive rate of any membership attack at each false-positive rate in
        ``fprs`` (1 - f(FPR), f the trade-off function the claim guarantees; Kulynych et al. 2024),
        rounded up; float for a scalar, else an ndarray of its shape."""
        return tpr_at_fpr(self._risk_source(), fprs)

    def advantage(self) -> float:
        """Upper bound on the advantage (TPR - FPR) of any membership attack: delta(0), rounded up."""
        return advantage(self._risk_source())

    def bayes_accuracy(self, prior: Any) -> Any:
        """Upper bound on the accuracy of any attack guessing a binary secret of prior ``prior``."""
        return bayes_accuracy(self._risk_source(), prior)
