"""Exact optimal homogeneous composition of (epsilon, delta)-DP mechanisms, in log space and bounded memory.

Kairouz, Oh & Viswanath (2015) show that k-fold (adaptive) composition of (epsilon0, delta0)-DP
mechanisms is worst when each step is binary randomized response; Murtagh & Vadhan (2016) give the
exact delta on the continuous epsilon axis:

    delta(eps) = 1 - (1 - delta0)^k (1 - delta_pure(eps)),
    delta_pure(eps) = sum_{j: L_j > eps} P_j (1 - e^{eps - L_j}),

where L_j = (2j - k) epsilon0 is the privacy loss after j "high" outcomes, P_j the Binomial(k, p) pmf
with p = e^{epsilon0} / (1 + e^{epsilon0}) and Q_j = P_j e^{-L_j} the Binomial(k, 1 - p) pmf. On a
segment [L_{s-1}, L_s) the set of losses above eps is fixed, so delta_pure(eps) = A - e^eps B with tail
sums A = sum_{j>=s} P_j, B = sum_{j>=s} Q_j, and the target is met at eps = ln(A - delta) - ln(B).

Bounded memory and time for any k <= :data:`MAX_K` (10^12): only a window of binomial terms is ever
evaluated, in chunks of :data:`CHUNK` terms (ln P_j by Loader's saddle-point form,
:mod:`dpaudit.accountant._binomial`, accurate for every k). Above the window the mass is bounded
analytically (P_{j+1}/P_j decreases, so the tail is at most a geometric series) and charged in full to
A (never subtracted through B), so the function solved is an upper bound on delta_pure everywhere and
its root an upper bound on the exact epsilon. The window ends where P_j < e^{-80} delta, so the bound
costs nothing at float precision. The segment is located by scanning down from the window's top (the
breakpoints where delta crosses the target lie within a few standard deviations, O(sqrt(k)) terms),
its tail sums are recomputed with a rigorous bound on their float error (per-term error bounds of ln P_j,
pairwise summation), and the solution is checked to lie inside the segment. Time is O(sqrt(k)) (about
a second at k = 10^12), memory O(CHUNK).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .._numeric import round_up
from .._validation import check_delta, check_epsilon, check_positive_int
from ..errors import InfeasibleBudgetError, InvalidArgument
from ..guarantee import Guarantee
from ._binomial import UNIT_ROUNDOFF, LogBinomial
from .closed_form import fraction_up

__all__ = ["optimal", "optimal_delta", "MAX_K", "CHUNK"]

_U = UNIT_ROUNDOFF
#: Largest number of composed steps accepted by :func:`optimal` and :func:`optimal_delta`.
MAX_K: int = 10**12
#: Binomial terms evaluated at once (memory is O(CHUNK) whatever k is).
CHUNK: int = 1 << 15
#: Terms smaller than e^-80 times the relevant delta are bounded analytically instead of summed.
_TAIL_MARGIN = 80.0
#: Safety net on the number of terms one call may scan (the analysis gives < 60 standard deviations).
_MAX_SCAN = 2 * 10**8


def check_k(k, name: str = "k") -> int:
    """k as a positive int, refused above :data:`MAX_K` with a message naming the limit."""
    k = check_positive_int(k, name)
    if k > MAX_K:
        raise InvalidArgument(
            name, f"{name}={k} exceeds the supported maximum {MAX_K:.0e} steps for exact optimal composition "
            "(use basic or advanced composition, or a numeric accountant, beyond it)"
        )
    return k


class _Sum:
    """A running sum of exp(log-terms) with a common shift and a rigorous relative error bound."""

    def __init__(self) -> None:
        self.shift = -math.inf
        self.total = 0.0
        self.error = 0.0  # absolute, in units of e^shift
        self.operations = 0  # roundings of the running total (chunk additions and rescalings)

    def add(self, log_terms: np.ndarray, eta: np.ndarray) -> None:
        if log_terms.size == 0:
            return
        top = float(log_terms.max())
        if top == -math.inf:
            return
        if top > self.shift:
            if self.total > 0.0:
                factor = math.exp(self.shift - top)
                self.total *= factor
                self.error = self.error * factor + self.total * _U * (abs(self.shift - top) + 2.0)
                self.operations += 1
            self.shift = top
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            offset = log_terms - self.shift
            weights = np.exp(offset)
            # error of each ln-term (eta) and of forming and exponentiating its offset
            spread = np.where(weights > 0.0, weights * np.expm1(eta + _U * (np.abs(offset) + 2.0)), 0.0)
        chunk_total = float(np.sum(weights))
        self.error += float(np.sum(spread)) + chunk_total * _U * (math.log2(weights.size) + 2.0)
        self.total += chunk_total
        self.operations += 1

    def log_value(self) -> tuple[float, float]:
        """ln of the sum and a bound r on its relative error (the true sum lies in total * [1 - r, 1 + r])."""
        if self.total <= 0.0:
            return -math.inf, 0.0
        relative = self.error / self.total + self.operations * _U + 4.0 * _U
        return self.shift + math.log(self.total), relative


class _Composition:
    """The privacy-loss distribution of k-fold epsilon0 randomized response, evaluated in windows."""

    def __init__(self, epsilon0: float, k: int) -> None:
        self.k = k
        self.epsilon0 = epsilon0
        self.binomial = LogBinomial.build(epsilon0, k)
        self.first_positive = k // 2 + 1  # smallest j with L_j > 0

    def loss(self, j: int) -> float:
        return float((2 * j - self.k) * self.epsilon0)

    def breakpoint(self, start: int) -> float:
        """Left end of the segment whose losses above eps are exactly those with index >= start."""
        return 0.0 if start <= self.first_positive else self.loss(start - 1)

    def terms(self, a: int, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """ln P_j, ln Q_j, their error bounds and L_j for j in [a, b)."""
        j = np.arange(a, b, dtype=np.float64)
        log_p, eta = self.binomial.log_pmf(j)
        losses = (2.0 * j - float(self.k)) * self.epsilon0
        with np.errstate(invalid="ignore"):
            log_q = log_p - losses
        eta_q = eta + 2.0 * _U * (np.abs(losses) + np.abs(log_q))
        return log_p, log_q, eta, eta_q, losses

    def tail(self, start: int, stop: int) -> tuple[float, float, float, float]:
        """ln A, ln B over j in [start, stop] (summed precisely), with bounds on their relative errors."""
        sum_p, sum_q = _Sum(), _Sum()
        for a in range(start, stop + 1, CHUNK):
            log_p, log_q, eta, eta_q, _ = self.terms(a, min(stop + 1, a + CHUNK))
            sum_p.add(log_p, eta)
            sum_q.add(log_q, eta_q)
        log_a, error_a = sum_p.log_value()
        log_b, error_b = sum_q.log_value()
        return log_a, log_b, error_a, error_b

    def window_top(self, log_level: float) -> tuple[int, float]:
        """Top J of the window (P_j <= e^level beyond) and ln of a bound on the P-mass above it."""
        if self.k - self.first_positive < CHUNK:  # small k: every term fits in one chunk, nothing is cut
            return self.k, -math.inf
        top = self.binomial.upper_cut(self.first_positive, log_level)
        return top, self.binomial.log_upper_tail_bound(top)


def _log_sub(log_x: float, log_y: float) -> float:
    """ln(e^x - e^y) for x > y."""
    return log_x + math.log(-math.expm1(log_y - log_x))


@dataclass
class _ScanState:
    """Where the scan stopped: precise sums of the chunks above [a, b) and that chunk's terms."""

    above_p: _Sum
    above_q: _Sum
    a: int
    b: int
    log_p: np.ndarray
    log_q: np.ndarray
    eta: np.ndarray
    eta_q: np.ndarray

    def tail(self, rr: _Composition, start: int, stop: int) -> tuple[float, float, float, float]:
        """Precise ln A, ln B over [start, stop] (as :meth:`_Composition.tail`), reusing the scan's sums."""
        if start > self.b:
            return rr.tail(start, stop)
        sum_p, sum_q = copy.copy(self.above_p), copy.copy(self.above_q)
        offset = max(start - self.a, 0)
        sum_p.add(self.log_p[offset:], self.eta[offset:])
        sum_q.add(self.log_q[offset:], self.eta_q[offset:])
        for a in range(start, self.a, CHUNK):  # a neighbour below the chunk (a few terms)
            log_p, log_q, eta, eta_q, _ = rr.terms(a, min(self.a, a + CHUNK))
            sum_p.add(log_p, eta)
            sum_q.add(log_q, eta_q)
        log_a, error_a = sum_p.log_value()
        log_b, error_b = sum_q.log_value()
        return log_a, log_b, error_a, error_b


def _locate(rr: _Composition, top: int, log_tail: float, log_target: float) -> tuple[int | None, _ScanState]:
    """Highest segment start s whose left breakpoint has delta above the target (None: eps = 0 seems to
    meet it). Scans down from the window's top in chunks, with running log tail sums for locating and,
    alongside, precise sums with error bounds that the caller reuses (it checks the segment and moves
    to a neighbour if the coarse location was off)."""
    log_a_above, log_b_above = log_tail, -math.inf
    above_p, above_q = _Sum(), _Sum()
    b, scanned = top + 1, 0
    while True:
        a = max(rr.first_positive, b - CHUNK)
        log_p, log_q, eta, eta_q, losses = rr.terms(a, b)
        state = _ScanState(copy.copy(above_p), copy.copy(above_q), a, b, log_p, log_q, eta, eta_q)
        tail_p = np.logaddexp(np.logaddexp.accumulate(log_p[::-1])[::-1], log_a_above)
        tail_q = np.logaddexp(np.logaddexp.accumulate(log_q[::-1])[::-1], log_b_above)
        breakpoints = losses - 2.0 * rr.epsilon0
        if a == rr.first_positive:
            breakpoints[0] = 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            excess = tail_p + np.log(-np.expm1(np.minimum(log_target - tail_p, 0.0)))  # ln(A + U - delta)
            above = (tail_p > log_target) & (excess > breakpoints + tail_q)
        if above.any():
            return a + int(np.flatnonzero(above)[-1]), state
        if a <= rr.first_positive:
            return None, state
        log_a_above, log_b_above = float(tail_p[0]), float(tail_q[0])
        above_p.add(log_p, eta)
        above_q.add(log_q, eta_q)
        scanned += b - a
        if scanned > _MAX_SCAN:
            raise InvalidArgument("k", f"k={rr.k}: optimal composition needs more than {_MAX_SCAN:.0e} binomial terms here")
        b = a


def _solve_epsilon(rr: _Composition, pure_delta: float) -> float:
    """An upper bound (float errors included) on the smallest eps >= 0 with delta_pure(eps) <= pure_delta."""
    log_target = math.log(pure_delta)
    top, log_tail = rr.window_top(log_target - _TAIL_MARGIN)
    start, state = _locate(rr, top, log_tail, log_target)
    if start is None:  # the coarse scan says delta(0) <= target: confirmed (or not) with error bounds below
        start = rr.first_positive
    moved = 0
    for _ in range(64):
        low, high = rr.breakpoint(start), rr.loss(start)
        log_a, log_b, error_a, error_b = state.tail(rr, start, top)
        log_a_up = float(np.logaddexp(log_a + math.log1p(error_a), log_tail))
        log_b_low = log_b + math.log1p(-min(error_b, 0.5))
        if log_a_up <= log_target:  # delta_pure <= target on the whole segment: the root is lower
            epsilon_up = -math.inf
        else:
            x = math.exp(log_target - log_a_up)
            epsilon_up = _log_sub(log_a_up, log_target) - log_b_low
            pad = 4.0 * _U * (abs(log_a_up) + abs(log_b_low) + abs(epsilon_up) + 2.0)
            pad += 2.0 * _U * (x / (1.0 - x)) * (abs(log_target) + abs(log_a_up) + 4.0)
            epsilon_up += pad
        if epsilon_up < low:
            if start <= rr.first_positive:
                return 0.0
            if moved == +1:  # from the segment above: delta(low) < target, so eps* <= low
                return round_up(low, ulps=2)
            start, moved = start - 1, -1
        elif epsilon_up > high:
            if start >= top or moved == -1:  # delta(high) <= target is known: eps* <= high
                return round_up(high, ulps=2)
            start, moved = start + 1, +1
        else:
            return epsilon_up
    raise RuntimeError("optimal composition: the segment search did not settle")  # pragma: no cover


def _log_delta_pure_upper(rr: _Composition, epsilon_total: float) -> float:
    """ln of an upper bound (float errors included) on delta_pure(epsilon_total)."""
    binomial = rr.binomial
    start = max(rr.first_positive, int(math.floor(epsilon_total / (2.0 * rr.epsilon0) + rr.k / 2.0)) - 1)
    while start <= rr.k and rr.loss(start) <= epsilon_total:
        start += 1
    while start - 1 >= rr.first_positive and rr.loss(start - 1) > epsilon_total:
        start -= 1
    if start > rr.k:
        return -math.inf
    # A lower bound on delta_pure from one term fixes the scale below which terms are negligible.
    probe = min(rr.k, max(start + 1, binomial.mode))
    log_probe = binomial.log_pmf_scalar(probe)[0] + math.log(-math.expm1(min(epsilon_total - rr.loss(probe), -1e-300)))
    level = log_probe - _TAIL_MARGIN
    if rr.k < CHUNK:  # small k: sum every term from start, nothing is cut
        top, bottom = rr.k, start
    else:
        top = binomial.upper_cut(start, level)
        bottom = max(start, binomial.lower_cut(binomial.mode, level))
    log_outside = float(np.logaddexp(binomial.log_upper_tail_bound(top),
                                     binomial.log_lower_tail_bound(bottom) if bottom > start else -math.inf))
    log_a, log_b, error_a, error_b = rr.tail(bottom, top)
    log_a_up = float(np.logaddexp(log_a + math.log1p(error_a), log_outside))
    log_b_low = log_b + math.log1p(-min(error_b, 0.5))
    exponent = epsilon_total + log_b_low - log_a_up  # delta_pure <= A_up (1 - e^exponent)
    if exponent >= 0.0:
        return -math.inf if log_outside == -math.inf else log_outside
    # float error of the exponent, amplified by d ln(1 - e^x)/dx = e^x / (1 - e^x)
    slack = 4.0 * _U * (abs(epsilon_total) + abs(log_b_low) + abs(log_a_up) + 2.0)
    sensitivity = math.exp(exponent) / -math.expm1(exponent)
    return log_a_up + math.log(-math.expm1(exponent)) + sensitivity * slack + 4.0 * _U * (abs(log_a_up) + 2.0)


def _pure_delta_target(target_delta: float, delta: float, k: int) -> float:
    """delta_pure needed so that 1 - (1 - delta0)^k (1 - delta_pure) <= target_delta (rounded down)."""
    if delta == 0.0:
        return target_delta
    value = -math.expm1(math.log1p(-target_delta) - k * math.log1p(-delta))
    return value * (1.0 - 16.0 * _U) if value > 0.0 else value


def _basic_bound(epsilon: float, k: int) -> float:
    """k * epsilon rounded up (math.inf when it exceeds the float range)."""
    try:
        return fraction_up(Fraction(epsilon) * k)
    except OverflowError:
        return math.inf


def optimal(epsilon: float, k: int, target_delta: float, delta: float = 0.0) -> Guarantee:
    """Exact optimal homogeneous composition (Kairouz-Oh-Viswanath 2015; Murtagh-Vadhan 2016).

    The smallest epsilon_total such that every k-fold adaptive composition of (epsilon, delta)-DP
    mechanisms is (epsilon_total, target_delta)-DP, on the continuous epsilon axis, rounded up.
    Memory O(:data:`CHUNK`) and time O(sqrt(k)) for any k <= :data:`MAX_K`.

    Raises:
        InfeasibleBudgetError (a ValueError): when target_delta < 1 - (1 - delta)^k, which no
            epsilon_total can meet.
        InvalidArgument: k > MAX_K.

    Example:
        >>> round(optimal(1.0, 1000, 1e-5).epsilon, 4)
        577.8332
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    k = check_k(k)
    target_delta = check_delta(target_delta, "target_delta")
    delta = check_delta(delta, "delta")
    pure_delta = _pure_delta_target(target_delta, delta, k)
    if pure_delta < 0.0:
        raise InfeasibleBudgetError(
            f"target_delta={target_delta!r} is below 1 - (1 - delta)^k = {-math.expm1(k * math.log1p(-delta)):.6g}: "
            "the per-step deltas alone exceed it"
        )
    if epsilon == 0.0:
        return Guarantee(0.0, target_delta)
    # k * epsilon (basic composition) is always valid here and is the exact answer when pure_delta = 0.
    basic_bound = _basic_bound(epsilon, k)
    if pure_delta == 0.0 or not math.isfinite(basic_bound):
        return Guarantee(basic_bound, target_delta)
    upper = _solve_epsilon(_Composition(epsilon, k), pure_delta)
    return Guarantee(min(basic_bound, round_up(upper, ulps=2) if upper > 0.0 else 0.0), target_delta)


def optimal_delta(epsilon: float, k: int, target_epsilon: float, delta: float = 0.0) -> float:
    """The exact delta of k-fold composition of (epsilon, delta)-DP mechanisms at target_epsilon:
    1 - (1 - delta)^k (1 - delta_pure(target_epsilon)), rounded up (bounded memory, any k <= MAX_K).

    Example:
        >>> optimal_delta(1.0, 1, 1.0)
        0.0
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    k = check_k(k)
    target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
    delta = check_delta(delta, "delta")
    pure = 0.0
    if epsilon > 0.0 and target_epsilon < _basic_bound(epsilon, k):
        log_pure = _log_delta_pure_upper(_Composition(epsilon, k), target_epsilon)
        # a positive delta below the float range is reported as the smallest positive float, never as 0
        pure = 0.0 if log_pure == -math.inf else min(1.0, max(math.exp(min(log_pure, 0.0)), math.ulp(0.0)))
    if delta == 0.0:
        return 0.0 if pure == 0.0 else min(1.0, round_up(pure, ulps=4))
    total = 1.0 if pure >= 1.0 else -math.expm1(k * math.log1p(-delta) + math.log1p(-pure))
    return min(1.0, round_up(total, ulps=8))
