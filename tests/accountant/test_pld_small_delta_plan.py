"""The PLD accountant's plan at small delta, its refusals of giant compositions, and sampled sub-trees' lower side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant, epsilon_upper
from dpaudit.accountant.pld_core.grid import TAIL_MASS, budgets, tail_mass
from dpaudit.accountant.pld_tilted import TiltedPLD, check_tilted_cells
from dpaudit.accountant.leaf_plds import build_leaf
from dpaudit.errors import AccountingTooLargeError, UnsupportedEventError
from dpaudit.events import (Composed, DiscreteGaussian, Gaussian, Laplace, PoissonSampled, SelfComposed,
                            TreeAggregation)


def dpsgd(q: float, sigma: float, steps: int) -> SelfComposed:
    return SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)


@pytest.mark.parametrize("event", [dpsgd(0.01, 1.0, 10**15), SelfComposed(Laplace(1.0), 10**15)])
def test_giant_compositions_are_refused_before_allocating_and_epsilon_upper_answers(event):
    accountant = PLDAccountant().compose(event)
    for read in (lambda: accountant.epsilon(1e-5), lambda: accountant.epsilon_interval(1e-5),
                 lambda: accountant.delta(10.0)):
        with pytest.raises(AccountingTooLargeError) as refused:
            read()
        assert isinstance(refused.value, UnsupportedEventError)  # callers catching the old type still do
        assert "RDPAccountant" in str(refused.value) and refused.value.cells > 2**21
    best = epsilon_upper(event, 1e-5)
    assert best.method == "rdp" and math.isfinite(best.epsilon)
    assert best.epsilon == RDPAccountant().compose(event).epsilon(1e-5)


def test_a_tilted_grid_too_large_is_refused_before_it_is_built():
    leaf = next(iter(PLDAccountant().compose(PoissonSampled(0.003749, TreeAggregation(7.423, 1000))).leaves))
    with pytest.raises(AccountingTooLargeError):
        check_tilted_cells({leaf: 1}, "add_remove", 1e-9, 500.0)
    check_tilted_cells({leaf: 1}, "add_remove", 1e-2, 1.0)  # a coarse grid at a small tilt is fine


def test_budgets_set_the_tail_cut_inside_their_block_only():
    assert tail_mass() == TAIL_MASS
    with budgets(1e-20, 1e-14):
        assert tail_mass() == 1e-20
    assert tail_mass() == TAIL_MASS


def test_small_delta_epsilon_is_planned_for_its_delta_and_stays_certified():
    """At delta 1e-10 the default float budget (1e-10) alone would exceed delta; planned for the target, the
    interval stays within 0.5% and the reads agree."""
    accountant = PLDAccountant().compose(dpsgd(0.01, 1.0, 100))
    lower, upper = accountant.epsilon_interval(1e-10)
    assert accountant._level is not None and accountant._level[0] < TAIL_MASS
    assert lower <= upper <= 1.005 * lower
    assert accountant.delta(upper) <= 1e-10 * (1 + 1e-9)
    assert upper <= RDPAccountant().compose(dpsgd(0.01, 1.0, 100)).epsilon(1e-10)


def test_tilted_coarsening_keeps_an_upper_bound():
    """Coarsening a tilted PLD (the pair's connect-the-dots split, re-weighted) only raises delta."""
    pld = build_leaf(next(iter(PLDAccountant().compose(PoissonSampled(0.05, Gaussian(1.0))).leaves)),
                     "add_remove", 1e-3, True, lam=4.0, only="remove")[0]
    fine = TiltedPLD.tilt(pld, 4.0).self_compose(64)
    coarse = TiltedPLD.tilt(pld, 4.0).self_compose(64, final_step=8e-3)
    assert coarse.step == pytest.approx(8e-3)
    for eps in np.linspace(0.0, 2.0, 9):
        assert coarse.delta(eps) >= fine.delta(eps) * (1 - 1e-9)


def test_sampled_subtree_lower_side_keeps_discrete_gaussian_steps():
    """A discrete Gaussian's exact pair is attained by one record: a sampled sub-tree with one keeps a tight lower
    end (it used to drop the step and stay ~75% below the upper end)."""
    tree = PoissonSampled(0.2, Composed([Gaussian(2.0), DiscreteGaussian(1.0, 1)]))
    lower, upper = PLDAccountant().compose(tree).epsilon_interval(1e-5)
    assert 0.95 * upper <= lower <= upper
