"""Closed-form composition and amplification theorems, as upper bounds rounded up.

Each function mirrors an expression of :mod:`dpaudit.symbolic` and is tested against it.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from .._numeric import round_up
from .._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_positive_int,
    check_real_sequence,
    check_sampling_probability,
)
from ..errors import InvalidArgument, UnsupportedEventError
from ..guarantee import Guarantee

__all__ = [
    "basic",
    "advanced",
    "amplify",
    "SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT",
    "fraction_up",
    "fraction_down",
]

def _one_sided_limit() -> float:
    """The root q* in (0, 1) of 1 - q = e^{-2q}, i.e. 1 + W0(-2 e^-2)/2, by Newton's method from 1 (the
    function is convex and decreasing there, so the iterates decrease monotonically to the root)."""
    q = 1.0
    for _ in range(100):
        step = (1.0 - q - math.exp(-2.0 * q)) / (-1.0 + 2.0 * math.exp(-2.0 * q))
        if step == 0.0 or not q - step < q:
            break
        q -= step
    return q


#: Largest q for which 1 - q >= e^{-2q}: the validity limit of the one-sided ("weaker hypothesis")
#: version of the secrecy-of-the-sample lemma, q* = 1 + W0(-2 e^-2)/2 ~= 0.7968 (computed without scipy
#: so that importing the accountant stays light).
SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT: float = _one_sided_limit()


def fraction_up(value: Fraction) -> float:
    """The smallest float >= an exact rational."""
    result = float(value)
    return math.nextafter(result, math.inf) if Fraction(result) < value else result


def fraction_down(value: Fraction) -> float:
    """The largest float <= an exact rational."""
    result = float(value)
    return math.nextafter(result, -math.inf) if Fraction(result) > value else result


def _broadcast(epsilons: np.ndarray, deltas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if epsilons.size == deltas.size:
        return epsilons, deltas
    if deltas.size == 1:
        return epsilons, np.full(epsilons.size, deltas[0])
    if epsilons.size == 1:
        return np.full(deltas.size, epsilons[0]), deltas
    raise InvalidArgument(
        "deltas", f"deltas has {deltas.size} entries but epsilons has {epsilons.size}; give equal lengths or a scalar"
    )


def basic(epsilons: Any, deltas: Any = 0.0, *, k: int | None = None) -> Guarantee:
    """Basic composition: running (epsilon_i, delta_i)-DP mechanisms (even adaptively) is
    (sum epsilon_i, sum delta_i)-DP (Dwork et al. 2006; Dwork & Roth 2014, Theorem 3.16).

    Args:
        epsilons: one per-step epsilon or a sequence of them.
        deltas: one per-step delta (applied to every step) or a sequence of the same length.
        k: compose k identical steps of the scalar ``epsilons`` and ``deltas`` (k * epsilon, k * delta)
            in O(1) time and memory, without building a list of k values; both must then be scalars.

    Returns:
        The total guarantee, summed exactly and rounded up; a delta sum >= 1 is reported as 1 (vacuous);
        an epsilon sum beyond the float range is math.inf.

    Example:
        >>> basic([0.25, 0.5], 1e-6)
        Guarantee(epsilon=0.75, delta=2e-06)
        >>> basic(0.25, 2**-50, k=10**12)
        Guarantee(epsilon=250000000000.0, delta=0.0008881784197001252)
    """
    eps = check_real_sequence(epsilons, "epsilons", minimum=0.0)
    dels = check_real_sequence(deltas, "deltas", minimum=0.0, below=1.0)
    if k is not None:
        k = check_positive_int(k, "k")
        for name, values in (("epsilons", eps), ("deltas", dels)):
            if values.size != 1:
                raise InvalidArgument(
                    name, f"{name} has {values.size} entries but k={k} composes one repeated step; give a scalar {name} with k"
                )
        return Guarantee(_multiple_up(float(eps[0]), k), min(1.0, _multiple_up(float(dels[0]), k)))
    eps, dels = _broadcast(eps, dels)
    return Guarantee(_exact_sum_up(eps), min(1.0, _exact_sum_up(dels)))


def _fraction_up_or_inf(value: Fraction) -> float:
    """fraction_up, with math.inf for a value beyond the float range (an upper bound)."""
    try:
        return fraction_up(value)
    except OverflowError:
        return math.inf


def _multiple_up(value: float, k: int) -> float:
    """k * value exactly, rounded up (math.inf beyond the float range)."""
    return _fraction_up_or_inf(Fraction(value) * k)


def _exact_sum_up(values: np.ndarray) -> float:
    """The exact sum of the floats in ``values``, rounded up (repeated values are multiplied, not added)."""
    distinct, counts = np.unique(values, return_counts=True)
    return _fraction_up_or_inf(sum((Fraction(float(v)) * int(c) for v, c in zip(distinct, counts)), Fraction(0)))


_LOG_FLOAT_MAX = math.log(sys.float_info.max)
_UNIT_ROUNDOFF = 2.0**-53


def _exp_up(log_value: float, log_error: float) -> float:
    """An upper bound on e^x for x <= log_value + log_error (math.inf beyond the float range)."""
    bound = log_value + log_error
    return math.inf if bound > _LOG_FLOAT_MAX else round_up(math.exp(bound), ulps=2)


def _advanced_epsilon(epsilon: float, k: int, delta_slack: float) -> float:
    """sqrt(2k ln(1/delta')) eps + k eps (e^eps - 1), rounded up; the second term in log space
    (ln k + ln eps + eps + ln(1 - e^-eps)) when e^eps overflows, so any finite answer is returned and
    math.inf only when the answer itself exceeds the float range. Exactly 0.0 for eps = 0."""
    if epsilon == 0.0:
        return 0.0
    first = math.sqrt(2.0 * float(k) * -math.log(delta_slack)) * epsilon
    if epsilon <= 700.0:
        second = float(k) * epsilon * math.expm1(epsilon)
    else:
        log_second = math.log(k) + math.log(epsilon) + epsilon + math.log1p(-math.exp(-epsilon))
        second = _exp_up(log_second, 4.0 * _UNIT_ROUNDOFF * (abs(log_second) + 2.0))
    return round_up(first + second, ulps=8)


def advanced(epsilon: float, k: int, delta_slack: float, delta: float = 0.0) -> Guarantee:
    """Advanced composition (Dwork, Rothblum & Vadhan 2010; Theorem 2 of the net-mechanism lecture),
    never looser than basic composition.

    The k-fold adaptive composition of (epsilon, delta)-DP mechanisms is (epsilon_total, k*delta +
    delta_slack)-DP with epsilon_total = sqrt(2k ln(1/delta_slack)) * epsilon + k*epsilon*(e^epsilon - 1).
    Basic composition (Dwork & Roth 2014, Thm 3.16) gives (k*epsilon, k*delta), and k*delta is below the
    returned delta, so epsilon_total is the smaller of the two theorems' epsilons: for large epsilon
    (e.g. epsilon = 1000, where e^epsilon overflows every float) basic composition decides it.

    Example:
        >>> round(advanced(0.1, 100, 1e-5).epsilon, 4)
        5.8502
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    k = check_positive_int(k, "k")
    delta_slack = check_delta(delta_slack, "delta_slack")
    if delta_slack == 0.0:
        raise InvalidArgument("delta_slack", "delta_slack=0.0 must be > 0 (advanced composition needs a slack)")
    delta = check_delta(delta, "delta")
    delta_total = fraction_up(k * Fraction(delta) + Fraction(delta_slack))
    return Guarantee(min(_advanced_epsilon(epsilon, k, delta_slack), _multiple_up(epsilon, k)), min(1.0, delta_total))


_SCHEME_RELATION = {"poisson": "add_remove", "without_replacement": "replace_one"}


def amplify(
    epsilon: float,
    delta: float,
    sampling_probability: float,
    *,
    scheme: str = "poisson",
    neighbouring: str | None = None,
    theorem: str = "tight",
) -> Guarantee:
    """Privacy amplification by subsampling.

    ``theorem="tight"`` (default): epsilon' = ln(1 + q(e^epsilon - 1)), delta' = q*delta. This holds for
    Poisson subsampling with rate q under add/remove-one (``scheme="poisson"``), and for sampling m of n
    records without replacement under replace-one with q = m/n (``scheme="without_replacement"``)
    (Balle, Barthe & Gaboardi 2018, Theorems 8 and 9). It is the exact amplified epsilon for
    randomized response.

    ``theorem="secrecy_of_sample"``: Lemma 3 of the lecture "Differential privacy and the secrecy of the
    sample": a 1-DP mechanism (so any epsilon <= 1) on a Poisson q-sample, q in (0, 1), is 2q-DP. Always
    looser than the tight form; kept because the lecture states it. ``"secrecy_of_sample_one_sided"``
    is its "weaker hypothesis" version (only P[A(T) in S] <= e P[A(T minus i) in S] is assumed), valid
    for q <= SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT ~= 0.797. Both need delta = 0 and Poisson sampling.

    Example:
        >>> round(amplify(1.0, 0.0, 0.1).epsilon, 4)
        0.1586
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    delta = check_delta(delta, "delta")
    q = check_sampling_probability(sampling_probability, "sampling_probability")
    scheme = check_choice(scheme, "scheme", tuple(_SCHEME_RELATION))
    relation = _SCHEME_RELATION[scheme] if neighbouring is None else neighbouring
    check_choice(relation, "neighbouring", ("add_remove", "replace_one"))
    if relation != _SCHEME_RELATION[scheme]:
        raise UnsupportedEventError(
            f"amplify: scheme={scheme!r} is only supported with neighbouring={_SCHEME_RELATION[scheme]!r} "
            f"(no amplification bound holds for {scheme} sampling under {relation!r} in general)"
        )
    theorem = check_choice(theorem, "theorem", ("tight", "secrecy_of_sample", "secrecy_of_sample_one_sided"))
    if theorem == "tight":
        return Guarantee(_amplified_epsilon(epsilon, q), fraction_up(Fraction(q) * Fraction(delta)))
    if scheme != "poisson" or delta != 0.0:
        raise InvalidArgument("theorem", f"theorem={theorem!r} needs Poisson sampling and delta = 0")
    if epsilon > 1.0:
        raise InvalidArgument("epsilon", f"epsilon={epsilon!r} must be <= 1 for theorem={theorem!r} (the lemma assumes a 1-DP mechanism)")
    limit = 1.0 if theorem == "secrecy_of_sample" else SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT
    if not q < limit:
        raise InvalidArgument(
            "sampling_probability",
            f"sampling_probability={q!r} must be < {limit:.6g} for theorem={theorem!r}",
        )
    return Guarantee(fraction_up(2 * Fraction(q)), 0.0)


def _amplified_epsilon(epsilon: float, q: float) -> float:
    """ln(1 + q(e^eps - 1)), rounded up, in log space: log1p(q expm1(eps)) while e^eps is finite,
    else ln(q e^eps + (1 - q)) = logaddexp(ln q + eps, ln(1 - q)) with its float error bounded
    (finite for every finite eps). Exactly 0.0 for eps = 0."""
    if epsilon == 0.0:
        return 0.0
    if q == 1.0:  # no sampling: ln(1 + (e^eps - 1)) = eps exactly
        return epsilon
    if epsilon <= 700.0:
        return round_up(math.log1p(q * math.expm1(epsilon)), ulps=4)
    log_q = math.log(q)
    value = float(np.logaddexp(log_q + epsilon, math.log1p(-q)))
    error = 4.0 * _UNIT_ROUNDOFF * (abs(log_q) + epsilon + abs(value) + 2.0)
    return round_up(value + error, ulps=2)
