"""Certified epsilon lower bounds from event counts (Clopper-Pearson, Bonferroni-split confidence).

For an event S with P[M(d) in S] = p and P[M(d') in S] = q, (epsilon, delta)-DP requires
p <= e^epsilon q + delta, hence epsilon >= ln((p - delta) / q). With a one-sided lower confidence bound
p_lo on p and an upper bound q_hi on q, each of level 1 - alpha/2, ln((p_lo - delta) / q_hi) is a lower
bound on epsilon holding with probability >= 1 - alpha. Certifying m events at once splits alpha
over them (Bonferroni), so all m bounds hold together.

Pooled pairs (:func:`pooled_epsilon_lower_bound`). Both directions of DP hold at once: for an event E likelier
under d and an event E' likelier under d', P_d(E) <= e^eps P_d'(E) + delta and P_d'(E') <= e^eps P_d(E') + delta,
so, summed and halved, A <= e^eps B + delta with A = (P_d(E) + P_d'(E')) / 2 and B = (P_d'(E) + P_d(E')) / 2.
With n certification samples per input, count_d(E) + count_d'(E') is a sum of 2n independent Bernoulli trials
of mean A (two binomials of different success probabilities: a Poisson binomial), and likewise for B. Hoeffding
(1956), "On the distribution of the number of successes in independent trials", Ann. Math. Statist. 27,
Theorem 4: a Poisson binomial S of N trials and mean N p satisfies P[S >= c] <= P[Bin(N, p) >= c] for
c >= N p + 1 and P[S <= c] <= P[Bin(N, p) <= c] for c <= N p - 1. The Clopper-Pearson bound of the pooled
count alone is not enough: between the mean and one trial beyond it the Poisson binomial's tail can be the
heavier (n = 2, alpha = 0.05: its lower bound fails with probability 0.0503, and by a relative alpha / (4 n)
at every n, at means of a fraction of a trial). So the pooled bounds are kept one trial inside the point
estimate, A_lo = min(CP_lower(S, N), (S - 1) / N) and B_hi = max(CP_upper(S, N), (S + 1) / N): then
A_lo > A forces S >= c with c >= N A + 1 and c at or above the binomial's own failure threshold, so Theorem 4
bounds the failure by alpha (and symmetrically for B_hi). At alpha <= 0.25 the clamp moves the lower bound only
at a count of 1 and the upper bound only at N - 1, where neither certifies anything; ``tests/auditor/test_pooled.py``
checks the coverage exactly (pmf by convolution). The two counts come from the same samples; the union bound over
the two sides needs no independence. A pooled pair is ONE certified event of the Bonferroni split.
"""

from __future__ import annotations

import math

from .._numeric import round_down
from ..errors import InvalidArgument
from ..stats import clopper_pearson_lower, clopper_pearson_upper

__all__ = ["epsilon_lower_bound", "pooled_epsilon_lower_bound", "pooled_bound", "certification_ceiling", "side_alpha"]


def side_alpha(confidence_level: float, certified_events: int) -> float:
    """Error probability allotted to each one-sided bound: (1 - confidence) / (2 m)."""
    return (1.0 - confidence_level) / (2.0 * certified_events)


def epsilon_lower_bound(count_p: int, n_p: int, count_q: int, n_q: int, delta: float, alpha: float) -> tuple[float, float, float]:
    """(epsilon_lower, p_lower, q_upper) for one event and direction; epsilon_lower is rounded down
    and is 0 when the event proves nothing (p_lower <= delta)."""
    p_low = float(clopper_pearson_lower(count_p, n_p, alpha))
    q_high = float(clopper_pearson_upper(count_q, n_q, alpha))
    return _bound_from_ends(p_low, q_high, delta), p_low, q_high


def _bound_from_ends(p_low: float, q_high: float, delta: float) -> float:
    """ln((p_low - delta) / q_high) rounded down, 0 when p_low <= delta."""
    if p_low <= delta:
        return 0.0
    value = math.log(p_low - delta) - math.log(q_high)
    # Beta quantiles and logarithms carry ~1e-15 relative error: step below it.
    return max(0.0, round_down(value - 1e-12 * max(1.0, abs(value))))


def pooled_bound(count_p: int, count_q: int, trials: int, delta: float, alpha: float) -> tuple[float, float, float]:
    """(epsilon_lower, p_lower, q_upper) of a pooled pair from its pooled counts: ``count_p`` = count_d(E) +
    count_d'(E') and ``count_q`` = count_d'(E) + count_d(E'), each out of ``trials`` = 2 n; p_lower and q_upper
    bound the averages A and B (module docstring: Clopper-Pearson kept one trial inside the estimate)."""
    p_low = min(float(clopper_pearson_lower(count_p, trials, alpha)), max(0.0, (count_p - 1) / trials))
    q_high = min(1.0, max(float(clopper_pearson_upper(count_q, trials, alpha)), (count_q + 1) / trials))
    return _bound_from_ends(p_low, q_high, delta), p_low, q_high


def pooled_epsilon_lower_bound(forward_counts: tuple[int, int], backward_counts: tuple[int, int], n_d: int, n_d_prime: int,
                               delta: float, alpha: float) -> tuple[float, float, float]:
    """(epsilon_lower, p_lower, q_upper) of a pooled pair: the event E likelier under d seen ``forward_counts`` =
    (count under d, count under d_prime) times and the event E' likelier under d_prime seen ``backward_counts`` =
    (count under d, count under d_prime) times, in ``n_d`` samples of d and ``n_d_prime`` of d_prime, which must be
    equal (the pooled count is a Poisson binomial of 2 n trials only then). Each one-sided bound errs with
    probability <= ``alpha``.

    Example:
        >>> round(pooled_epsilon_lower_bound((5200, 4800), (4800, 5200), 10_000, 10_000, 0.0, 0.025)[0], 4)
        0.0522
    """
    if n_d != n_d_prime:
        raise InvalidArgument("n_d_prime", f"n_d_prime={n_d_prime} must equal n_d={n_d}: a pooled pair is certified on "
                                           "equally many samples of each input")
    for name, counts in (("forward_counts", forward_counts), ("backward_counts", backward_counts)):
        if len(counts) != 2 or not all(0 <= int(c) <= n_d for c in counts):
            raise InvalidArgument(name, f"{name}={tuple(counts)!r} must be two counts (under d, under d_prime) in "
                                        f"[0, {n_d}]")
    count_p = int(forward_counts[0]) + int(backward_counts[1])
    count_q = int(forward_counts[1]) + int(backward_counts[0])
    return pooled_bound(count_p, count_q, 2 * n_d, delta, alpha)


def certification_ceiling(n: int, delta: float, alpha: float, pooled: bool = False) -> float:
    """The largest bound n certification samples per input could give: an event seen in all n samples
    under one input and in none under the other (``pooled``: a pooled pair, each part so, on 2 n trials)."""
    if pooled:
        return pooled_bound(2 * n, 0, 2 * n, delta, alpha)[0]
    return epsilon_lower_bound(n, n, 0, n, delta, alpha)[0]
