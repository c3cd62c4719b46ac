"""Multi-resolution self-composition: coarsening a pessimistic PLD dominates it; fine leaves coarsened while
composing stay sound and are tighter than one grid at the final step."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, gaussian_delta, gaussian_epsilon
from dpaudit.accountant.leaf import Leaf
from dpaudit.accountant.pld_core.grid import GridPLD
from dpaudit.accountant.leaf_plds import build_leaf
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed


def _q_masses(pld: GridPLD) -> float:
    return float(np.sum(pld.pmf * np.exp(-pld.losses)))


@settings(max_examples=40, deadline=None)
@given(offset=st.integers(-50, 50), size=st.integers(1, 60), factor=st.sampled_from([2, 3, 4, 8]),
       seed=st.integers(0, 2**31))
def test_coarsening_keeps_p_and_q_mass_and_never_lowers_delta(offset, size, factor, seed):
    rng = np.random.default_rng(seed)
    pmf = rng.random(size) * (rng.random(size) < 0.7)
    step = 0.0137
    losses = (offset + np.arange(size)) * step
    pmf = pmf / max(1.0, float(np.sum(pmf * np.exp(-losses))), float(pmf.sum()))  # a sub-probability pair
    fine = GridPLD(step, offset, pmf, 0.01, 0.0, True)
    coarse = fine.coarsen(factor)
    assert coarse.step == step * factor
    assert coarse.pmf.sum() == pytest.approx(fine.pmf.sum(), rel=1e-12, abs=1e-300)
    assert _q_masses(coarse) == pytest.approx(_q_masses(fine), rel=1e-9, abs=1e-300)
    assert np.all(coarse.pmf >= 0)
    for eps in np.linspace(0.0, (offset + size + 1) * step + 0.1, 23):
        assert coarse.delta(float(eps)) >= fine.delta(float(eps)) - 1e-15


def test_coarsening_is_refused_for_optimistic_grids():
    with pytest.raises(ValueError, match="pessimistic"):
        GridPLD(0.1, 0, np.ones(3) / 3, 0.0, 0.0, False).coarsen(2)


def test_fine_leaves_coarsened_while_composing_stay_above_the_exact_gaussian_and_close_to_it():
    """k Gaussians (mu = 0.05 each) compose exactly to mu = 0.05 sqrt(k): the multi-resolution upper bound
    is above the exact curve at every epsilon and far closer than one grid at the final step."""
    mu, k = 0.05, 4096
    exact_mu = mu * math.sqrt(k)
    leaf = build_leaf(Leaf("gaussian", mu), "add_remove", 0.0005, True)[0]
    multi = leaf.self_compose(k, final_step=0.0005 * 32)
    coarse = build_leaf(Leaf("gaussian", mu), "add_remove", 0.0005 * 32, True)[0].self_compose(k)
    assert multi.step == coarse.step == 0.016
    for eps in (0.0, 1.0, 3.0, 6.0):
        exact = float(gaussian_delta(eps, exact_mu))
        assert multi.delta(eps) >= exact
        assert multi.delta(eps) - exact <= 0.25 * (coarse.delta(eps) - exact) + 1e-12
    assert multi.epsilon(1e-6) <= gaussian_epsilon(1e-6, exact_mu) * 1.002


@pytest.mark.parametrize(("q", "sigma", "steps"), [(0.01, 1.0, 10_000), (0.1, 0.8, 1000), (0.001, 0.6, 10_000)])
def test_automatic_grid_is_at_least_as_tight_as_one_grid_at_the_final_step(q, sigma, steps):
    event = SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)
    auto = PLDAccountant().compose(event)
    assert auto.leaf_step() < auto.step()
    one_grid = PLDAccountant(discretisation_interval=auto.leaf_step()).compose(event).epsilon(1e-5)
    lower, upper = auto.epsilon_interval(1e-5)
    assert lower <= upper <= one_grid * (1 + 5e-4)


# ------------------------------------------------------------------ one direction at a time
DPSGD_LIKE = [(0.01, 1.0, 2000, 1e-5), (0.2, 0.7, 60, 1e-6), (0.5, 1.0, 4, 0.3)]


def _full_max(event, delta: float) -> float:
    """Both adjacency directions on the planned grids (the read-out before direction screening)."""
    accountant = PLDAccountant().compose(event)
    with accountant._budgets(delta):  # the grids planned for this delta
        remove, add = accountant._plds(True)  # fills the cache: the screen is skipped
    return accountant.epsilon(delta)


@pytest.mark.parametrize("q, sigma, steps, delta", DPSGD_LIKE)
def test_screened_epsilon_equals_both_directions_on_the_planned_grids(q, sigma, steps, delta):
    event = SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)
    screened = PLDAccountant().compose(event)
    assert screened.epsilon(delta) == _full_max(event, delta)
    # the add direction was only screened (by its Chernoff bound or on a coarser grid), not computed on the
    # planned grids; with leaves on the final grid (factor 1) no coarser grid exists and it may be computed
    if screened._leaf_factor() > 1:
        assert ("upper", "add", False) not in screened._grids
    with screened._budgets(delta):
        remove, add = screened._plds(True)  # later read-outs get both directions on the planned grids
    reference = PLDAccountant().compose(event)
    with reference._budgets(delta):
        ref_remove, ref_add = reference._plds(True)
    np.testing.assert_array_equal(remove.pmf, ref_remove.pmf)
    np.testing.assert_array_equal(add.pmf, ref_add.pmf)


def test_screen_that_fails_computes_the_other_direction_on_the_planned_grids(monkeypatch):
    from dataclasses import replace

    event = SelfComposed(PoissonSampled(0.2, Gaussian(0.7)), 60)
    original = PLDAccountant._upper

    def loose_screen(self, direction, coarse=False):  # a screen bound above everything: it cannot decide
        pld, symmetric = original(self, direction, coarse)
        return (replace(pld, inf_mass=0.5), symmetric) if coarse else (pld, symmetric)

    monkeypatch.setattr(PLDAccountant, "_upper", loose_screen)
    monkeypatch.setattr(PLDAccountant, "_chernoff_epsilon", lambda self, direction, delta, fine=False: math.inf)
    accountant = PLDAccountant().compose(event)
    value = accountant.epsilon(1e-6)
    assert ("upper", "add", False) in accountant._grids
    monkeypatch.undo()
    assert value == _full_max(event, 1e-6)


def test_one_direction_composition_matches_the_pair():
    from collections import Counter

    from dpaudit.accountant.pld import compose_leaves

    leaves = Counter({Leaf("gaussian", 1.0, sampling="poisson", q=0.05): 300, Leaf("gaussian", 2.0): 1})
    step = 1e-3
    remove, add = compose_leaves(leaves, "add_remove", step, True, 4)
    only_remove = compose_leaves(leaves, "add_remove", step, True, 4, only="remove")
    only_add = compose_leaves(leaves, "add_remove", step, True, 4, only="add")
    assert only_remove[1] is None and only_add[0] is None
    np.testing.assert_array_equal(only_remove[0].pmf, remove.pmf)
    np.testing.assert_array_equal(only_add[1].pmf, add.pmf)
    symmetric = compose_leaves(Counter({Leaf("gaussian", 1.0): 3}), "add_remove", step, True, 1, only="add")
    assert symmetric[0] is symmetric[1]


def test_leaf_upper_tail_is_cut_on_the_declared_side():
    from dpaudit.accountant.pld_core.grid import TAIL_MASS

    leaf = Leaf("gaussian", 1.0, sampling="poisson", q=0.01)
    remove, add = build_leaf(leaf, "add_remove", 3e-4, True)
    for pld in (remove, add):
        assert pld.inf_mass <= TAIL_MASS  # the cut mass is charged to +inf (P(L > top) <= TAIL_MASS / 4)
        assert pld.pmf.sum() + pld.inf_mass == pytest.approx(1.0, abs=1e-12)
    assert remove.losses[-1] < 3.5  # heavy upper tail cut where P(L > v) ~ 1e-16 (default quantile: 4.4)
