"""Sampled sub-trees at small delta: the certified interval against an exact reference (a 60-fold composition of a
Poisson-sampled randomized-response tree, enumerated by outcome counts) and the float error of the lower side's
remove direction, whose Q-masses are composed on their own (not the P-masses' error times e^{-loss})."""

from __future__ import annotations

import math
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import binom

from dpaudit.accountant import PLDAccountant
from dpaudit.accountant.leaf import Leaf
from dpaudit.accountant.leaf_plds import compose_leaves
from dpaudit.accountant.pld_core.subsampling import subsampled_lower_pair, subsampled_pair
from dpaudit.events import Gaussian, Laplace, PoissonSampled, PureDP, SelfComposed


def _pair(q: float, eps0: float, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(q P + (1-q) Q, Q) of PoissonSampled(q, SelfComposed(PureDP(eps0), k)) over the count of ones (binary
    randomized response is the worst case of PureDP)."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    counts = np.arange(k + 1)
    big_p, big_q = binom.pmf(counts, k, p), binom.pmf(counts, k, 1 - p)
    return q * big_p + (1 - q) * big_q, big_q


def _exact_epsilon(a: np.ndarray, b: np.ndarray, runs: int, delta: float) -> float:
    """Smallest eps with both directions' delta of the runs-fold product within ``delta``: the product's outcomes
    grouped by how often each of the m outcomes occurs (multinomial types, all of them enumerated)."""
    m = a.size
    types = []
    for bars in combinations(range(runs + m - 1), m - 1):
        edges = (-1,) + bars + (runs + m - 1,)
        types.append([edges[i + 1] - edges[i] - 1 for i in range(m)])
    t = np.array(types, dtype=float)
    log_count = gammaln(runs + 1.0) - gammaln(t + 1.0).sum(axis=1)
    mass_a, mass_b = np.exp(log_count + t @ np.log(a)), np.exp(log_count + t @ np.log(b))

    def curve(eps: float) -> float:
        return max(np.clip(mass_a - math.exp(eps) * mass_b, 0, None).sum(),
                   np.clip(mass_b - math.exp(eps) * mass_a, 0, None).sum())

    low, high = 0.0, float(np.max(np.abs(np.log(a / b)))) * runs + 1.0
    for _ in range(100):
        mid = 0.5 * (low + high)
        low, high = (low, mid) if curve(mid) <= delta else (mid, high)
    return high


@pytest.mark.parametrize("q, eps0, delta", [(0.05, 0.5, 1e-10), (0.02, 0.8, 1e-8)])
def test_many_fold_sampled_tree_at_small_delta_brackets_the_exact_epsilon_tightly(q, eps0, delta):
    runs = 60
    exact = _exact_epsilon(*_pair(q, eps0, 3), runs, delta)
    tree = SelfComposed(PoissonSampled(q, SelfComposed(PureDP(eps0), 3)), runs)
    lower, upper = PLDAccountant().compose(tree).epsilon_interval(delta)
    assert lower <= exact * (1 + 1e-9) <= upper * (1 + 2e-9)
    assert upper - lower <= 0.01 * upper


def _inner() -> Counter:
    return Counter({Leaf("gaussian", 1 / 2.5): 1, Leaf("laplace", 1 / 4.0): 1})


def test_composed_q_masses_are_the_p_masses_times_e_to_the_minus_loss():
    remove, _ = compose_leaves(_inner(), "add_remove", 2e-3, False)
    remove_q, _ = compose_leaves(_inner(), "add_remove", 2e-3, False, only="remove", measure="q")
    assert remove_q.step == remove.step and not remove_q.pessimistic
    lo = max(remove.offset, remove_q.offset)
    hi = min(remove.offset + remove.pmf.size, remove_q.offset + remove_q.pmf.size)
    p = remove.pmf[lo - remove.offset:hi - remove.offset]
    b = remove_q.pmf[lo - remove_q.offset:hi - remove_q.offset]
    implied = p * np.exp(-(lo + np.arange(hi - lo)) * remove.step)
    assert np.abs(implied - b).sum() <= 2 * (remove_q.error + remove.error * math.exp(-lo * remove.step)) + 1e-13
    assert remove_q.error < 1e-11


def test_lower_remove_error_is_not_the_p_error_amplified_and_both_sides_bracket_the_exact_delta():
    q, step = 0.02, 1e-3
    remove, add = compose_leaves(_inner(), "add_remove", step, False)
    remove_q, _ = compose_leaves(_inner(), "add_remove", step, False, only="remove", measure="q")
    plain, _ = subsampled_lower_pair(remove, add, q, step)
    separate, _ = subsampled_lower_pair(remove, add, q, step, remove_q)
    assert separate.error <= q * remove.error + remove_q.error + 1e-30
    assert separate.error < plain.error
    # the lower side's delta stays below the upper side's (a pessimistic pair of the same inner composition)
    upper_inner, _ = compose_leaves(_inner(), "add_remove", step, True)
    upper = subsampled_pair(upper_inner, q, "remove", True, step)
    for eps in (0.0, 0.01, 0.05, 0.1):
        assert separate.delta(eps) <= upper.delta(eps)
        assert plain.delta(eps) <= upper.delta(eps)


def test_lower_q_masses_require_an_optimistic_composition_on_one_grid():
    with pytest.raises(ValueError, match="measure"):
        compose_leaves(_inner(), "add_remove", 1e-3, True, measure="q")
    with pytest.raises(ValueError, match="measure"):
        compose_leaves(_inner(), "add_remove", 1e-3, False, measure="x")


@pytest.mark.parametrize("tree", [
    PoissonSampled(0.01, SelfComposed(PoissonSampled(0.3, Laplace(3.0)), 3)),
    SelfComposed(PoissonSampled(0.02, PoissonSampled(0.2, SelfComposed(Gaussian(1.5), 2))), 4),
])
def test_nested_sampled_trees_lower_end_below_upper_end_at_small_delta(tree):
    lower, upper = PLDAccountant().compose(tree).epsilon_interval(1e-10)
    assert 0 < lower <= upper <= 1.05 * lower
