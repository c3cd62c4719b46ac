"""The privacy a measured shift implies, and whether it exceeds the claim.

A pair whose outputs are ``c(d) + P z`` with standardised noise ``z`` (independent Laplace(0, 1) and
N(0, 1) elements) and the same ``P`` on both inputs is, on that pair, exactly the noise distribution
shifted by ``delta_z`` with ``P delta_z = c(d) - c(d')``: pure epsilon ``sum |delta_z|`` over the Laplace
elements (the product of Laplace densities attains the sum on a set of positive probability), and a
Gaussian part that is mu-GDP with ``mu = ||delta_z||_2`` over the Gaussian elements (Dong, Roth & Su
2019); integer noise moved by k steps is ``DiscreteLaplace(scale, k)`` / ``DiscreteGaussian(sigma, k)``
(Canonne, Kamath & Steinke 2020). Composed, the pair is the event tree
``Composed(Laplace(1/|s_i|)..., Gaussian(1/mu), DiscreteLaplace(...)...)``; its
epsilon at the claimed delta comes from the PLD accountant as an interval (optimistic lower end,
pessimistic upper end), from the exact Gaussian curve (Balle & Wang 2018) when only Gaussian noise
moves, and in closed form at delta = 0.

A violation is declared only from a lower bound: the lower end exceeds the claim.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scipy.optimize import brentq
from scipy.special import log_ndtr

from ..accountant import PLDAccountant, gaussian_delta
from ..events import Composed, DiscreteLaplace, Gaussian, Laplace, PrivacyEvent, SelfComposed

__all__ = ["ShiftPrivacy", "shift_privacy", "shift_event", "exceeds_claim", "event_curve", "exceeds_curve",
           "EVENT_DELTAS", "laplace_gaussian_lower", "exceeds_claim_bracket", "exceeds_curve_bracket"]

#: The deltas at which a measured shift is compared with a claimed event's curve.
EVENT_DELTAS: tuple[float, ...] = (1e-9, 1e-6, 1e-3)

#: Relative slack for float error in a measured shift (outputs are computed in float64).
_SHIFT_SLACK = 1e-8
#: Relative slack for the double-precision Gaussian curve (its root is found to ~1e-12).
_CURVE_SLACK = 1e-9


def _gaussian_delta_float(epsilon: float, mu: float) -> float:
    """Balle & Wang's delta(epsilon) of mu-GDP in double precision, in log space so that it keeps its
    relative accuracy when delta is tiny: Phi(a) (1 - exp(epsilon + log Phi(b) - log Phi(a)))."""
    a, b = mu / 2.0 - epsilon / mu, -mu / 2.0 - epsilon / mu
    log_a = float(log_ndtr(a))
    return math.exp(log_a) * -math.expm1(min(0.0, epsilon + float(log_ndtr(b)) - log_a))


def _gaussian_epsilon(delta: float, mu: float) -> float:
    """The epsilon at which mu-GDP has ``delta`` (0 when it has less at epsilon 0), to ~1e-12 relative: the
    fast twin of :func:`dpaudit.accountant.gaussian_epsilon` (60-digit) for the many pairs of a replay."""
    if _gaussian_delta_float(0.0, mu) <= delta:
        return 0.0
    high = 1.0
    while _gaussian_delta_float(high, mu) > delta:
        high *= 2.0
    return float(brentq(lambda e: _gaussian_delta_float(e, mu) - delta, 0.0, high, xtol=1e-15, rtol=1e-14))


@dataclass(frozen=True)
class ShiftPrivacy:
    """The epsilon a shift implies at one delta: ``lower <= exact <= upper``."""

    delta: float
    lower: float
    upper: float


def shift_event(laplace: np.ndarray, mu: float, discrete: Sequence[PrivacyEvent] = ()) -> PrivacyEvent | None:
    """The event tree of a measured shift: one Laplace leaf per moved Laplace element (equal ones grouped),
    one Gaussian leaf for the Gaussian elements together, the discrete leaves as given; None when nothing
    moved."""
    leaves: list[PrivacyEvent] = list(discrete)
    for shift, count in sorted(Counter(float(s) for s in np.abs(laplace) if s > 0).items()):
        leaf = Laplace(noise_multiplier=1.0 / shift)
        leaves.append(leaf if count == 1 else SelfComposed(leaf, count))
    if mu > 0:
        leaves.append(Gaussian(noise_multiplier=1.0 / mu))
    if not leaves:
        return None
    return leaves[0] if len(leaves) == 1 else Composed(leaves)


def _pure_discrete(discrete: Sequence[PrivacyEvent]) -> float:
    """Pure epsilon of the discrete leaves: k / scale per discrete Laplace, inf with any discrete Gaussian."""
    return sum(e.sensitivity / e.scale if isinstance(e, DiscreteLaplace) else math.inf for e in discrete)


def shift_privacy(laplace: Any, mu: float, delta: float, discrete: Sequence[PrivacyEvent] = ()) -> ShiftPrivacy:
    """Epsilon at ``delta`` of the pair whose noise moves by ``laplace`` (per Laplace element, standard
    units), ``mu`` (L2 over the Gaussian elements) and the ``discrete`` events, bracketed: (lower, upper)."""
    shifts = np.abs(np.asarray(laplace, dtype=np.float64).reshape(-1))
    pure = float(shifts.sum()) + _pure_discrete(discrete)
    if pure == 0.0 and mu == 0.0:
        return ShiftPrivacy(delta, 0.0, 0.0)
    if math.isinf(float(shifts.sum())) or math.isinf(mu):
        return ShiftPrivacy(delta, math.inf, math.inf)
    if delta == 0.0:
        value = pure if mu == 0.0 else math.inf
        return ShiftPrivacy(delta, value * (1.0 - _SHIFT_SLACK), value * (1.0 + _SHIFT_SLACK))
    if discrete:
        return _accounted(shifts, mu, delta, discrete, pure)
    if pure == 0.0:  # Gaussian only: the exact curve
        upper = _gaussian_epsilon(delta, mu * (1.0 + _SHIFT_SLACK)) * (1.0 + _CURVE_SLACK) + 1e-12
        lower = _gaussian_epsilon(delta, mu * (1.0 - _SHIFT_SLACK)) * (1.0 - _CURVE_SLACK) - 1e-12
        return ShiftPrivacy(delta, max(0.0, lower), upper)
    # one Laplace element: delta(epsilon) = 1 - exp((epsilon - s) / 2) (the Laplace curve), exactly
    single = float(shifts.max()) + 2.0 * math.log1p(-delta)
    if mu == 0.0 and int(np.count_nonzero(shifts)) == 1:
        value = max(0.0, single)
        return ShiftPrivacy(delta, value * (1.0 - _SHIFT_SLACK), value * (1.0 + _SHIFT_SLACK))
    bracket = _accounted(shifts, mu, delta, (), pure)
    return ShiftPrivacy(delta, max(bracket.lower, single * (1.0 - _SHIFT_SLACK), 0.0), bracket.upper)


def _accounted(shifts: np.ndarray, mu: float, delta: float, discrete: Sequence[PrivacyEvent],
               pure: float) -> ShiftPrivacy:
    """The PLD accountant's interval for the shift's event tree (continuous shifts widened by the float
    slack for the upper end, narrowed for the lower end; discrete steps are exact)."""
    event = shift_event(shifts * (1.0 + _SHIFT_SLACK), mu * (1.0 + _SHIFT_SLACK), discrete)
    _, upper = PLDAccountant().compose(event).epsilon_interval(delta)
    event = shift_event(shifts * (1.0 - _SHIFT_SLACK), mu * (1.0 - _SHIFT_SLACK), discrete)
    lower, _ = PLDAccountant().compose(event).epsilon_interval(delta)
    if mu == 0.0:
        upper = min(upper, pure * (1.0 + _SHIFT_SLACK))
    return ShiftPrivacy(delta, max(lower, 0.0), upper)


def exceeds_claim(laplace: Any, mu: float, epsilon: float, delta: float,
                  discrete: Sequence[PrivacyEvent] = ()) -> tuple[bool, ShiftPrivacy]:
    """Whether the shift certainly exceeds (epsilon, delta), and its epsilon bracket at ``delta``.

    Cheap screens first: a pure-epsilon sum within the claim cannot exceed it; a Gaussian-only shift is
    decided on the exact curve at the claimed epsilon.
    """
    shifts = np.abs(np.asarray(laplace, dtype=np.float64).reshape(-1))
    pure = float(shifts.sum()) + _pure_discrete(discrete)
    if mu == 0.0 and pure * (1.0 + _SHIFT_SLACK) <= epsilon:  # within the claim even as pure DP
        # lower end: exact at delta = 0; else the largest single Laplace element's curve (a marginal)
        single = float(shifts.max(initial=0.0)) + 2.0 * math.log1p(-delta) if delta else pure
        return False, ShiftPrivacy(delta, max(0.0, single) * (1.0 - _SHIFT_SLACK), pure * (1.0 + _SHIFT_SLACK))
    bracket = shift_privacy(shifts, mu, delta, discrete)
    if pure == 0.0 and not discrete and delta > 0.0 and math.isfinite(mu):
        exact = gaussian_delta(epsilon, mu * (1.0 - _SHIFT_SLACK))
        return exact > delta, bracket
    return bracket.lower > epsilon, bracket


def event_curve(event: PrivacyEvent) -> list[tuple[float, float]]:
    """(delta, epsilon the event allows there): delta = 0 when the event claims pure DP, then each of
    :data:`EVENT_DELTAS` (PLD upper bounds: the claim read generously)."""
    accountant = PLDAccountant().compose(event)
    pure = accountant.epsilon(0.0)
    curve = [(0.0, pure)] if math.isfinite(pure) else []
    return curve + [(delta, accountant.epsilon(delta)) for delta in EVENT_DELTAS]


def exceeds_curve(laplace: Any, mu: float, curve: list[tuple[float, float]],
                  discrete: Sequence[PrivacyEvent] = ()) -> tuple[bool, ShiftPrivacy]:
    """Whether the shift's epsilon (lower bound) exceeds the claimed curve at one of its deltas; returns the
    bracket at the delta where it exceeds it most."""
    brackets = [(shift_privacy(laplace, mu, delta, discrete), allowed) for delta, allowed in curve]
    worst, allowed = max(brackets, key=lambda pair: pair[0].lower - pair[1])
    return worst.lower > allowed, worst


def _log_survival_laplace_gaussian(t: np.ndarray, b: float, sigma: float) -> np.ndarray:
    """log P(b L + sigma G > t) for L ~ Laplace(0, 1), G ~ N(0, 1) independent, in closed form:
    Phi(-t/sigma) - 1/2 e^(t/b + s^2/2) Phi(-t/sigma - s) + 1/2 e^(-t/b + s^2/2) Phi(t/sigma - s), s = sigma / b.
    The second term is at most half the first (it is E[1/2 e^((t - sigma G)/b); sigma G > t]), so the difference
    never cancels: log space throughout."""
    s = sigma / b
    first = log_ndtr(-t / sigma)
    second = math.log(0.5) + t / b + s * s / 2.0 + log_ndtr(-t / sigma - s)
    third = math.log(0.5) - t / b + s * s / 2.0 + log_ndtr(t / sigma - s)
    with np.errstate(divide="ignore", invalid="ignore"):
        head = first + np.log1p(-np.exp(np.minimum(second - first, 0.0)))
    return np.logaddexp(head, third)


def laplace_gaussian_lower(b: float, sigma: float, shift: float, delta: float) -> float:
    """A lower bound on the epsilon at ``delta`` of the output c + b L + sigma G shifted by ``shift`` (one Laplace and
    one Gaussian noise reaching one output): the best half-line {y > t} of the exact law of the sum (closed-form
    survival). The sum's density is log-concave, so its likelihood ratio is monotone and half-lines are the optimal
    tests: the bound is the pair's epsilon up to the grid. The scales are taken slightly larger and the shift
    slightly smaller (float slack), so the bound stays below the truth."""
    shift = abs(shift) * (1.0 - _SHIFT_SLACK)
    b, sigma = b * (1.0 + _SHIFT_SLACK), sigma * (1.0 + _SHIFT_SLACK)
    if shift == 0.0:
        return 0.0
    span = max(700.0 * b, 40.0 * sigma) + shift
    best, low, high = -math.inf, shift / 2.0 - 40.0 * sigma - 40.0 * b, shift / 2.0 + span
    for _ in range(3):  # a grid, then twice a finer one around its best point
        t = np.linspace(low, high, 801)
        moved, still = _log_survival_laplace_gaussian(t - shift, b, sigma), _log_survival_laplace_gaussian(t, b, sigma)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            if delta > 0:
                top = np.where(moved > math.log(delta), moved + np.log1p(-np.exp(math.log(delta) - moved)), -np.inf)
            else:
                top = moved
            values = np.where(np.isfinite(still) & np.isfinite(top), top - still, -np.inf)
        k = int(np.argmax(values))
        best = max(best, float(values[k]))
        step = (high - low) / 800.0
        low, high = t[k] - step, t[k] + step
    if not math.isfinite(best) or best <= 0.0:
        return 0.0
    return best * (1.0 - _CURVE_SLACK) - 1e-12


def exceeds_claim_bracket(bracket: Any, epsilon: float, delta: float) -> tuple[bool, ShiftPrivacy]:
    """Whether the pair's bracket ``bracket(delta) -> ShiftPrivacy`` certainly exceeds (epsilon, delta)."""
    found = bracket(delta)
    return found.lower > epsilon, found


def exceeds_curve_bracket(bracket: Any, curve: list[tuple[float, float]]) -> tuple[bool, ShiftPrivacy]:
    """Whether the pair's bracket exceeds the claimed curve at one of its deltas (the bracket where it exceeds it most)."""
    brackets = [(bracket(delta), allowed) for delta, allowed in curve]
    worst, allowed = max(brackets, key=lambda pair: pair[0].lower - pair[1])
    return worst.lower > allowed, worst
