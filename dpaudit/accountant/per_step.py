"""Inverse budgeting: the largest per-step epsilon whose k-fold composition meets a target.

Every answer is a lower bound on the exact inverse (rounded down) and is checked against the forward
theorem before it is returned, so composing k steps of the returned epsilon with the same theorem
never exceeds the target.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from fractions import Fraction

from .._validation import check_choice, check_delta, check_epsilon, check_positive_int, check_sampling_probability
from ..errors import InvalidArgument
from .closed_form import _advanced_epsilon, amplify, fraction_down
from .optimal import optimal

__all__ = ["per_step_epsilon", "PER_STEP_THEOREMS", "simplified_per_step_limit", "PER_STEP_OPTIMAL_MAX_K"]

PER_STEP_THEOREMS: tuple[str, ...] = ("basic", "advanced", "advanced_simplified", "optimal")
#: Largest k for theorem="optimal": inverting needs ~50 exact compositions of O(sqrt(k)) time each
#: (about 2 s in all at 10^9); "basic" and "advanced" take any k.
PER_STEP_OPTIMAL_MAX_K: int = 10**9


def _largest_feasible(compose: Callable[[float], float], target: float, hi: float) -> float:
    """Largest x in [0, hi] with compose(x) <= target, for compose non-decreasing and compose(hi) >= target.

    Solved with Brent's method to full float precision, then stepped down one float at a time until
    the forward (rounded-up) composition meets the target. When compose(0) already equals the target
    (a flat start, e.g. target_epsilon = 0 with delta > 0 in optimal composition), by bisection on the
    floats themselves, which finds the largest feasible float exactly.
    """
    if compose(hi) <= target:
        return hi
    if compose(0.0) >= target:
        return _largest_feasible_bisection(compose, target, hi)
    from scipy.optimize import brentq  # lazily: `dpaudit budget` starts without scipy.optimize

    x = brentq(lambda v: compose(v) - target, 0.0, hi, xtol=1e-300, rtol=4 * 2.0**-52, maxiter=500)
    while x > 0.0 and compose(x) > target:
        x = math.nextafter(x, 0.0)
    return x


def _largest_feasible_bisection(compose: Callable[[float], float], target: float, hi: float) -> float:
    """Largest float x in [0, hi) with compose(x) <= target (compose(0) <= target < compose(hi)), by
    bisection on the IEEE bit patterns (order-preserving for non-negative floats): at most 64 steps."""
    if compose(0.0) > target:
        return 0.0
    low_bits, high_bits = 0, struct.unpack("<q", struct.pack("<d", hi))[0]
    while high_bits - low_bits > 1:
        mid = (low_bits + high_bits) // 2
        if compose(struct.unpack("<d", struct.pack("<q", mid))[0]) <= target:
            low_bits = mid
        else:
            high_bits = mid
    return struct.unpack("<d", struct.pack("<q", low_bits))[0]


def simplified_per_step_limit(target_delta: float, k: int) -> float:
    """Largest total epsilon for which the lecture's per-step budget epsilon / sqrt(8 k ln(1/delta')) meets
    Theorem 2: sqrt(8 k L) ln(1 + sqrt(2 L / k)), L = ln(1/delta').

    With e' = epsilon / sqrt(8 k L), Theorem 2 composes to epsilon/2 + k e'(e^e' - 1), which is <= epsilon
    iff e^e' - 1 <= sqrt(2 L / k). The lecture's own sufficient condition (its relaxation needs e' <= 1,
    then epsilon <= 2L) is weaker for small k and tiny delta' (proofs/proof_advanced_composition.py).

    Example:
        >>> round(simplified_per_step_limit(1e-5, 1), 3)
        16.868
    """
    log_inv_delta = -math.log(target_delta)
    return math.sqrt(8.0 * k * log_inv_delta) * math.log1p(math.sqrt(2.0 * log_inv_delta / k))


def _simplified_per_step(target_epsilon: float, target_delta: float, k: int) -> float:
    """The lecture's epsilon' = epsilon / sqrt(8 k ln(1/delta')) (net-mechanism lecture, after Theorem 2),
    refused where it would not meet Theorem 2 (:func:`simplified_per_step_limit`)."""
    limit = simplified_per_step_limit(target_delta, k)
    if target_epsilon > limit:
        raise InvalidArgument(
            "target_epsilon",
            f"target_epsilon={target_epsilon!r} must be <= sqrt(8k ln(1/delta)) ln(1 + sqrt(2 ln(1/delta)/k)) = {limit:.6g} "
            f"for the lecture's simplified per-step budget to meet advanced composition (k={k}, delta={target_delta:g})",
        )
    value = math.nextafter(target_epsilon / math.sqrt(8.0 * k * -math.log(target_delta)), 0.0)
    while value > 0.0 and _advanced_epsilon(value, k, target_delta) > target_epsilon:  # float edge at the limit
        value = math.nextafter(value, 0.0)
    return value


def per_step_epsilon(
    target_epsilon: float,
    target_delta: float,
    k: int,
    theorem: str,
    *,
    sampling_probability: float | None = None,
) -> float:
    """Largest per-step epsilon (pure epsilon-DP steps) whose k-fold composition under ``theorem`` is
    (target_epsilon, target_delta)-DP.

    Args:
        target_epsilon: total epsilon allowed, >= 0.
        target_delta: total delta allowed, in [0, 1). For "advanced" all of it is the slack delta'.
        k: number of steps.
        theorem: "basic" (target/k), "advanced" (inverts :func:`.closed_form.advanced` exactly: the larger
            of the Dwork-Rothblum-Vadhan inverse and target/k),
            "advanced_simplified" (the lecture's epsilon/sqrt(8k ln(1/delta)), refused beyond
            :func:`simplified_per_step_limit`), or "optimal"
            (inverts the exact optimal composition of Kairouz-Oh-Viswanath).
        sampling_probability: if given, each step is a Poisson q-subsample of the mechanism, and the
            answer is the epsilon of the mechanism before amplification (inverting ln(1 + q(e^eps - 1))).

    Returns:
        The per-step epsilon, rounded down (composing k of them never exceeds the target).

    Example:
        >>> round(per_step_epsilon(1.0, 1e-5, 1000, "optimal"), 6)
        0.008487
    """
    target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
    target_delta = check_delta(target_delta, "target_delta")
    k = check_positive_int(k, "k")
    theorem = check_choice(theorem, "theorem", PER_STEP_THEOREMS)
    if theorem in ("advanced", "advanced_simplified") and target_delta == 0.0:
        raise InvalidArgument("target_delta", f"target_delta=0.0 must be > 0 for theorem={theorem!r}")
    if theorem == "optimal" and k > PER_STEP_OPTIMAL_MAX_K:
        raise InvalidArgument(
            "k", f"k={k} exceeds {PER_STEP_OPTIMAL_MAX_K:.0e}, the largest k for theorem='optimal' per-step budgets "
            "(use theorem='advanced' or 'basic' beyond it)"
        )

    if theorem == "basic":
        step = fraction_down(Fraction(target_epsilon) / k)
    elif theorem == "advanced":
        step = max(_largest_feasible(
            lambda x: _advanced_epsilon(x, k, target_delta), target_epsilon, target_epsilon / math.sqrt(2 * k * -math.log(target_delta))
        ), fraction_down(Fraction(target_epsilon) / k))  # advanced() is never looser than basic composition
    elif theorem == "advanced_simplified":
        step = _simplified_per_step(target_epsilon, target_delta, k)
    else:
        step = _largest_feasible(lambda x: optimal(x, k, target_delta).epsilon, target_epsilon, _optimal_upper_bracket(target_epsilon, target_delta, k))

    if sampling_probability is None:
        return step
    return _unamplify(step, check_sampling_probability(sampling_probability))


def _optimal_upper_bracket(target_epsilon: float, target_delta: float, k: int) -> float:
    """A per-step epsilon whose optimal composition reaches the target (grown geometrically)."""
    hi = max(target_epsilon / k, 1e-300) * 2.0
    while optimal(hi, k, target_delta).epsilon <= target_epsilon:
        hi *= 2.0
    return hi


def _unamplify(amplified: float, q: float) -> float:
    """Largest base epsilon with ln(1 + q(e^eps - 1)) <= amplified (rounded down, then verified)."""
    if q == 1.0 or amplified == 0.0:
        return amplified
    # ln(1 + (e^a - 1)/q), in log space once e^a / q overflows: a + ln(1 - (1 - q) e^-a) - ln q.
    ratio = math.expm1(amplified) / q if amplified <= 700.0 else math.inf
    if math.isfinite(ratio):
        candidate = math.log1p(ratio)
    else:
        candidate = amplified + math.log1p(-(1.0 - q) * math.exp(-amplified)) - math.log(q)
    hi = math.nextafter(candidate, math.inf) * (1 + 1e-12)
    return _largest_feasible(lambda x: amplify(x, 0.0, q).epsilon, amplified, hi)
