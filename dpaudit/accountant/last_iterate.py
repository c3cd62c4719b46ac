"""The last-iterate heuristic of DP-SGD: what the final model alone reveals when the losses are linear.

Steinke, Nasr, Ganesh, Balle, Choquette-Choo, Jagielski, Hayes, Thakurta, Smith & Terzis (ICLR 2025,
"The Last Iterate Advantage: Empirical Auditing and Principled Heuristic Analysis of Differentially Private
SGD"): with linear losses, the last iterate of T steps of DP-SGD (sampling probability q, noise multiplier
sigma, clipping norm 1) reveals about one record exactly as much as one sample of

    P = Binomial(T, q) + N(0, sigma^2 T)   against   Q = N(0, sigma^2 T),

(the record's gradient summed over the steps that sampled it, plus the summed noise). Its (epsilon, delta)
curve is their heuristic: every final-model audit they ran stayed below it, but it is **not a bound**
(there are contrived losses that beat it). dpaudit reports it beside final-model audits as the natural
target, never as a guarantee.

The curve is computed exactly, not on a grid: the privacy loss L(x) = log sum_k w_k exp((k x - k^2 / 2) /
s^2), s^2 = sigma^2 T, w_k the binomial weights, is increasing and convex in x, so each hockey-stick divergence
is attained on a half-line whose end solves L(x) = +-epsilon (a root, found by bracketing), and is a sum of
normal tails there. Binomial weights below 1e-20 in either tail are dropped and their mass added to delta
(the curve moves up by at most 2e-20). Both orderings (P against Q and Q against P, add and remove) are
taken: the result is the larger epsilon.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr, logsumexp
from scipy.stats import binom

from .._numeric import round_up
from .._validation import check_delta, check_epsilon, check_positive, check_positive_int, check_sampling_probability
from ..errors import InvalidArgument

__all__ = ["last_iterate_epsilon", "last_iterate_delta", "LAST_ITERATE_LABEL", "MAX_STEPS"]

#: How every read-out of this module is to be labelled.
LAST_ITERATE_LABEL = ("last-iterate heuristic (Steinke et al. ICLR 2025): exact for linear losses, not a bound "
                      "on general training")
#: Most steps accepted (the binomial window grows like sqrt(steps); beyond this the work is not bounded usefully).
MAX_STEPS = 10**8
_TAIL = 1e-20


class _Pair:
    """P = sum_k w_k N(k, s^2) against Q = N(0, s^2), the binomial weights cut to [lo, hi]."""

    def __init__(self, sigma: float, q: float, steps: int) -> None:
        self.s = sigma * math.sqrt(steps)
        if q >= 1.0:
            lo = hi = steps
        else:
            lo = int(binom.ppf(_TAIL, steps, q))
            hi = int(binom.isf(_TAIL, steps, q)) + 1
            lo, hi = max(0, lo - 1), min(steps, hi)
        self.k = np.arange(lo, hi + 1, dtype=np.float64)
        self.log_w = binom.logpmf(self.k, steps, q) if q < 1.0 else np.zeros(1)
        self.dropped = max(0.0, 1.0 - float(np.exp(logsumexp(self.log_w))))
        self.log_w0 = float(self.log_w[0]) if lo == 0 else -math.inf  # L(x) -> log w_0 as x -> -inf

    def loss(self, x: float) -> float:
        """The privacy loss log p(x) / q(x)."""
        return float(logsumexp(self.log_w + (self.k * x - 0.5 * self.k**2) / self.s**2))

    def _solve(self, level: float) -> float:
        """The x with L(x) = level (L increasing; the caller checks the level is reachable)."""
        lo, hi = -self.s, self.s
        while self.loss(lo) > level:
            lo = 2.0 * lo - self.s
        while self.loss(hi) < level:
            hi = 2.0 * hi + self.s
        return float(brentq(lambda x: self.loss(x) - level, lo, hi, xtol=1e-13 * max(1.0, abs(hi)), rtol=1e-15,
                            maxiter=500))

    def delta(self, epsilon: float) -> float:
        """max(H_{e^eps}(P || Q), H_{e^eps}(Q || P)), the dropped binomial mass added."""
        s = self.s
        x = self._solve(epsilon)  # {p > e^eps q} = {X > x}
        forward = (math.exp(float(logsumexp(self.log_w + log_ndtr((self.k - x) / s))))
                   - math.exp(epsilon + float(log_ndtr(-x / s))))
        backward = 0.0
        if -epsilon > self.log_w0:  # else q <= e^eps p everywhere
            y = self._solve(-epsilon)  # {q > e^eps p} = {X < y}
            backward = (math.exp(float(log_ndtr(y / s)))
                        - math.exp(epsilon + float(logsumexp(self.log_w + log_ndtr((y - self.k) / s)))))
        return min(1.0, max(forward, backward, 0.0) + self.dropped)


def _checked(noise_multiplier: float, sampling_probability: float, steps: int) -> _Pair:
    sigma = check_positive(noise_multiplier, "noise_multiplier")
    q = check_sampling_probability(sampling_probability)
    steps = check_positive_int(steps, "steps")
    if steps > MAX_STEPS:
        raise InvalidArgument("steps", f"steps={steps} must be <= {MAX_STEPS}")
    return _Pair(sigma, q, steps)


def last_iterate_delta(*, noise_multiplier: float, sampling_probability: float, steps: int, epsilon: float) -> float:
    """delta(epsilon) of the last-iterate heuristic (a heuristic, not a bound; see the module docstring).

    Example:
        >>> round(last_iterate_delta(noise_multiplier=1.0, sampling_probability=1.0, steps=1, epsilon=1.0), 6)
        0.126937
    """
    pair = _checked(noise_multiplier, sampling_probability, steps)
    epsilon = check_epsilon(epsilon, "epsilon", allow_inf=True)
    if math.isinf(epsilon):
        return 0.0
    return round_up(pair.delta(epsilon))


def last_iterate_epsilon(*, noise_multiplier: float, sampling_probability: float, steps: int, delta: float) -> float:
    """epsilon(delta) of the last-iterate heuristic of DP-SGD, Steinke et al. (ICLR 2025): the (epsilon, delta)
    curve of Binomial(steps, q) + N(0, sigma^2 steps) against N(0, sigma^2 steps), both orderings.

    A **heuristic**, not a bound: it is exact for the final model of DP-SGD with linear losses and bounded every
    final-model audit its authors ran, but training can leak more. Report it beside final-model audits as their
    target, never as a guarantee. Computed exactly (normal tails at the roots of the privacy loss; module
    docstring), rounded up.

    Args:
        noise_multiplier: sigma, the noise's standard deviation in units of the clipping norm (> 0).
        sampling_probability: q, each record's chance of being in a step's batch (Poisson; 1 = full batch).
        steps: T, the number of noisy steps.
        delta: where epsilon is read, in (0, 1).

    Returns:
        float: the heuristic epsilon (0 if delta is already met at epsilon = 0).

    Example:
        >>> round(last_iterate_epsilon(noise_multiplier=1.0, sampling_probability=1.0, steps=1, delta=1e-5), 3)
        4.377
    """
    pair = _checked(noise_multiplier, sampling_probability, steps)
    delta = check_delta(delta, "delta")
    if delta <= 0.0:
        raise InvalidArgument("delta", f"delta={delta!r} must be > 0 (the heuristic curve is Gaussian: delta = 0 "
                                       "needs epsilon = inf)")
    if pair.delta(0.0) <= delta:
        return 0.0
    if pair.dropped >= delta:
        raise InvalidArgument("delta", f"delta={delta!r} is below the binomial mass the computation drops (2e-20)")
    hi = 1.0
    while pair.delta(hi) > delta:
        hi *= 2.0
    lo = hi / 2.0 if hi > 1.0 else 0.0
    eps = float(brentq(lambda e: pair.delta(e) - delta, lo, hi, xtol=1e-12, rtol=1e-13, maxiter=500))
    eps = round_up(eps, 64)
    while pair.delta(eps) > delta:  # the root's upper side: delta(eps) <= delta holds at the returned value
        eps = round_up(eps + 1e-12 * max(1.0, eps), 64)
    return eps
