"""PLDAccountant.epsilon_interval's lower end: sound against exact values (small sampled trees of
randomized response enumerated outcome by outcome; the optimistic placement of grid cells against the
hockey-stick curve of the cells themselves) and within 1% of the upper end on DP-SGD points."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

import dpaudit.accountant.pld as pld_module
from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.accountant.families.sampled_tree import inner_factor
from dpaudit.accountant.pld_core.merging import merge_onto_grid
from dpaudit.errors import UnsupportedEventError
from dpaudit.events import ZCDP, Composed, Gaussian, Laplace, PoissonSampled, PureDP, SelfComposed

DELTA = 1e-5


# ---------------------------------------------------------------- exact values by enumeration
def _sampled_rr_pair(q: float, eps0: float, k: int, q_inner: float | None) -> tuple[np.ndarray, np.ndarray]:
    """The pair (q P + (1-q) Q, Q) of PoissonSampled(q, SelfComposed(X, k)) over the count of ones, X = PureDP(eps0)
    (worst case: binary randomized response, P(1) = e^eps0 / (1 + e^eps0) with the record, 1 - that without) or
    X = PoissonSampled(q_inner, PureDP(eps0))."""
    p = math.exp(eps0) / (1 + math.exp(eps0))
    with_record = p if q_inner is None else q_inner * p + (1 - q_inner) * (1 - p)
    counts = np.arange(k + 1)
    big_p, big_q = binom.pmf(counts, k, with_record), binom.pmf(counts, k, 1 - p)
    return q * big_p + (1 - q) * big_q, big_q


def _exact_epsilon(first: np.ndarray, second: np.ndarray, runs: int, delta: float) -> float:
    """Smallest eps >= 0 with max(delta_{A,B}(eps), delta_{B,A}(eps)) <= delta for the runs-fold product."""
    a = np.array([math.prod(c) for c in itertools.product(first, repeat=runs)])
    b = np.array([math.prod(c) for c in itertools.product(second, repeat=runs)])

    def curve(eps: float) -> float:
        return max(np.clip(a - math.exp(eps) * b, 0, None).sum(), np.clip(b - math.exp(eps) * a, 0, None).sum())

    if curve(0.0) <= delta:
        return 0.0
    low, high = 0.0, float(np.max(np.abs(np.log(a / b)))) + 1.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (low, mid) if curve(mid) <= delta else (mid, high)
    return high


@settings(max_examples=25, deadline=None)
@given(q=st.floats(0.01, 0.5), eps0=st.floats(0.1, 2.0), k=st.integers(1, 3), runs=st.integers(1, 3),
       q_inner=st.one_of(st.none(), st.floats(0.05, 0.9)), delta=st.sampled_from([1e-2, 1e-3, 1e-5]))
def test_sampled_tree_interval_brackets_the_exact_epsilon(q, eps0, k, runs, q_inner, delta):
    step = PureDP(eps0) if q_inner is None else PoissonSampled(q_inner, PureDP(eps0))
    tree = SelfComposed(PoissonSampled(q, SelfComposed(step, k)), runs)
    exact = _exact_epsilon(*_sampled_rr_pair(q, eps0, k, q_inner), runs, delta)
    lower, upper = PLDAccountant().compose(tree).epsilon_interval(delta)
    assert lower <= exact * (1 + 1e-9) + 1e-12
    assert upper >= exact * (1 - 1e-9) - 1e-12


@pytest.mark.parametrize("q, eps0, k, runs, q_inner", [(0.2, 1.0, 3, 2, None), (0.05, 0.5, 3, 3, None),
                                                        (0.3, 1.5, 2, 3, 0.4), (0.5, 0.3, 3, 1, 0.1)])
def test_sampled_tree_lower_end_is_tight(q, eps0, k, runs, q_inner):
    step = PureDP(eps0) if q_inner is None else PoissonSampled(q_inner, PureDP(eps0))
    tree = SelfComposed(PoissonSampled(q, SelfComposed(step, k)), runs)
    exact = _exact_epsilon(*_sampled_rr_pair(q, eps0, k, q_inner), runs, DELTA)
    lower, _ = PLDAccountant().compose(tree).epsilon_interval(DELTA)
    assert exact > 0 and lower >= 0.99 * exact


@pytest.mark.parametrize("q, delta", [(0.002, 1e-8), (0.0005, 1e-10)])
def test_a_sub_tree_composed_on_a_coarser_inner_grid_brackets_the_exact_epsilon_tightly(q, delta):
    # at these rates the inner tree is composed on a grid 32 and 128 times coarser than the sampled pair's
    tree = SelfComposed(PoissonSampled(q, SelfComposed(PureDP(0.8), 3)), 2)
    exact = _exact_epsilon(*_sampled_rr_pair(q, 0.8, 3, None), 2, delta)
    acct = PLDAccountant().compose(tree)
    (leaf,) = acct.leaves
    assert inner_factor(leaf, "add_remove") >= 32
    lower, upper = acct.epsilon_interval(delta)
    assert lower <= exact * (1 + 1e-9) <= upper * (1 + 2e-9)
    assert upper - lower <= 0.01 * upper


@pytest.mark.parametrize("tree", [
    PoissonSampled(0.1637, SelfComposed(PoissonSampled(0.09763, Laplace(8.21)), 4)),
    PoissonSampled(0.00987, SelfComposed(Laplace(2.591), 10)),
    SelfComposed(PoissonSampled(0.05, SelfComposed(Laplace(2.0), 10)), 100),
])
def test_sampled_subtree_interval_is_within_five_percent(tree):
    lower, upper = PLDAccountant().compose(tree).epsilon_interval(DELTA)
    assert 0 < lower <= upper <= 1.05 * lower
    assert lower <= RDPAccountant().compose(tree).epsilon(DELTA)


def test_leaves_without_an_attained_pair_are_dropped_from_the_lower_side():
    """A sampled zCDP step has no pair one record attains: the lower side keeps the Gaussian alone (dropping
    the zCDP output is a post-processing), whose mixture is the sampled Gaussian leaf itself."""
    lower, upper = PLDAccountant().compose(PoissonSampled(0.1, Composed([Gaussian(1.0), ZCDP(0.001)]))).epsilon_interval(DELTA)
    alone, _ = PLDAccountant().compose(PoissonSampled(0.1, Gaussian(1.0))).epsilon_interval(DELTA)
    assert 0 < lower <= upper
    assert lower == pytest.approx(alone, rel=0.01)


# ---------------------------------------------------------------- DP-SGD
#: dp_accounting 0.6.0, pessimistic PLD (connect the dots) at value_discretization_interval 1e-4, delta 1e-5:
#: an independent upper bound on the exact epsilon (benchmarks/bench_accounting_interval.py).
DP_ACCOUNTING_UPPER = {(0.001, 0.6, 100_000): 6.113126854110341, (0.01, 1.0, 10_000): 6.18774497574583,
                       (0.1, 0.5, 1000): 126.16656544543282}


@pytest.mark.parametrize("q, sigma, steps", [(0.01, 1.0, 10_000), (0.1, 0.5, 1000), (0.001, 0.6, 100_000)])
def test_dpsgd_lower_end_within_one_percent_and_below_every_upper_bound(q, sigma, steps):
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps))
    lower, upper = acct.epsilon_interval(DELTA)
    assert lower <= min(upper, DP_ACCOUNTING_UPPER[(q, sigma, steps)])
    assert upper - lower <= 0.01 * upper


# ---------------------------------------------------------------- optimistic placement
def _hockey(losses: np.ndarray, p: np.ndarray, q_mass: np.ndarray, eps: float) -> float:
    return float(np.clip(p - math.exp(eps) * q_mass, 0, None).sum())


@settings(max_examples=60, deadline=None)
@given(data=st.data(), m=st.integers(2, 40), step=st.sampled_from([1e-3, 0.05, 0.3]), first=st.integers(-30, 10),
       spike=st.booleans())
def test_placement_is_below_the_cells_hockey_stick_curve(data, m, step, first, spike):
    """Every placement (vectorised, chords up or down) is a merge of the cells plus losses rounded down, so
    its hockey-stick curve lies below the cells' own at every epsilon, negative ones included (Blackwell)."""
    a = np.array(data.draw(st.lists(st.floats(1e-6, 1.0), min_size=m, max_size=m)))
    if spike:  # an accumulation at one end: most of the mass in the end cell
        a[data.draw(st.sampled_from([0, m - 1]))] += 50.0 * a.sum()
    a /= a.sum()
    offsets = np.array(data.draw(st.lists(st.floats(-0.4999, 0.5), min_size=m, max_size=m))) * step
    points = (first + np.arange(m)) * step
    losses = points + offsets
    tb = a * np.exp(-offsets)  # e^{e_k} times the Q-mass
    err = 4 * 2.0**-53 * (a + tb)
    out = merge_onto_grid(step, a, tb, err, np.ones(m, dtype=bool))
    grid = (first - 1 + np.arange(m + 1)) * step
    assert out.sum() <= a.sum() * (1 + 1e-12)
    for eps in np.linspace(losses.min() - step, losses.max() + step, 41):
        placed = _hockey(grid, out, out * np.exp(-grid), eps)
        assert placed <= _hockey(losses, a, a * np.exp(-losses), eps) + 1e-12


def test_placement_keeps_an_accumulation_second_order():
    """90% of the mass piled just above a grid point (a subsampled loss's infimum), the rest smooth above:
    rounding the pile down would lose ~0.4 step of mean loss; the chords lose far less."""
    step, m = 1e-3, 200
    points = np.arange(m) * step
    offsets = np.full(m, 0.1 * step)
    offsets[0] = 0.4 * step
    a = np.exp(-np.arange(m) / 40.0)
    a[0] = 9 * a[1:].sum()
    a /= a.sum()
    out = merge_onto_grid(step, a, a * np.exp(-offsets), 4 * 2.0**-53 * a, np.ones(m, dtype=bool))
    grid = (np.arange(m + 1) - 1) * step
    lost = float((a * (points + offsets)).sum() - (out * grid).sum())
    assert 0 <= lost < 0.02 * step


# ---------------------------------------------------------------- a refused optimistic grid
def test_refused_optimistic_grid_is_coarsened_not_zero(monkeypatch):
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000))
    planned = acct.step(pessimistic=False)
    compose = pld_module.compose_leaves

    def refusing(leaves, relation, step, pessimistic, fine=1, only=None, **options):
        if not pessimistic and step < 3 * planned:
            raise UnsupportedEventError("test: optimistic grid too large")
        return compose(leaves, relation, step, pessimistic, fine, only, **options)

    monkeypatch.setattr(pld_module, "compose_leaves", refusing)
    lower, upper = acct.epsilon_interval(DELTA)
    assert acct.interval_grids()[0] == pytest.approx(4 * planned)
    assert 0 < lower <= upper
    assert upper - lower <= 0.05 * upper
