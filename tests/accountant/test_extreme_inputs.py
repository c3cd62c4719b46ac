"""Giant and extreme inputs: answered analytically where a closed form exists, otherwise refused with
dpaudit's own error before anything large is allocated; nested sampling planned in bounded memory."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant, ZCDPAccountant, epsilon_upper, gdp_delta, gdp_epsilon
from dpaudit.accountant.families.sampled_tree import inner_factor
from dpaudit.accountant.pld import MAX_CELLS
from dpaudit.errors import UnsupportedEventError
from dpaudit.events import (
    ZCDP,
    BandMF,
    Composed,
    DiscreteLaplace,
    Gaussian,
    MixtureOfGaussians,
    Laplace,
    PoissonSampled,
    SampledWithReplacement,
    SelfComposed,
)


def test_gaussian_compositions_are_exact_gdp_at_any_count():
    acct = PLDAccountant().compose(SelfComposed(Gaussian(1.0), 10**15))
    mu = math.sqrt(10**15)
    upper = acct.epsilon(1e-5)
    assert upper == pytest.approx(gdp_epsilon(mu, 1e-5), rel=1e-12)
    lower, upper_again = acct.epsilon_interval(1e-5)
    assert lower <= upper == upper_again
    assert lower >= upper * (1 - 1e-6)
    assert acct.delta(upper) <= 1e-5
    assert acct.step() == 0.0  # no grid
    assert epsilon_upper(SelfComposed(Gaussian(1.0), 10**15), 1e-5).epsilon == upper


def test_gaussian_curve_brackets_the_exact_value():
    acct = PLDAccountant("replace_one").compose(Composed([Gaussian(2.0), SelfComposed(Gaussian(3.0), 7)]))
    mu = 2 * math.sqrt(1 / 4 + 7 / 9)
    lower, upper = acct.epsilon_interval(1e-6)
    assert lower <= gdp_epsilon(mu, 1e-6) <= upper
    low_delta, up_delta = acct.delta_interval(1.0)
    assert low_delta <= gdp_delta(mu, 1.0) <= up_delta
    assert up_delta - low_delta < 1e-12


def test_no_noise_limit_is_infinite_not_an_overflow():
    acct = PLDAccountant().compose(Gaussian(1e-300))
    assert acct.epsilon(1e-5) == math.inf
    assert acct.delta(1.0) == 1.0
    assert epsilon_upper(Gaussian(1e-300), 1e-5).epsilon == math.inf


def test_losses_beyond_the_float_range_are_refused_with_our_error():
    with pytest.raises(UnsupportedEventError, match="RDPAccountant"):
        PLDAccountant().compose(Composed([Gaussian(1e-300), Laplace(1.0)])).epsilon(1e-5)
    assert epsilon_upper(Composed([Gaussian(1e-300), Laplace(1.0)]), 1e-5).epsilon == math.inf


@pytest.mark.parametrize("event", [Laplace(1.0), PoissonSampled(0.1, Gaussian(1.0))])
def test_a_too_fine_fixed_grid_is_refused_naming_the_argument(event):
    with pytest.raises(UnsupportedEventError, match="discretisation_interval"):
        PLDAccountant(discretisation_interval=1e-12).compose(event).epsilon(1e-5)


def test_little_noise_on_a_wide_leaf_is_planned_at_its_own_scale():
    """A mixture of Gaussians at noise 1e-3 spans ~2 * 10^6 in loss: the first build is at its scale, not at a
    step of 2e-3 (10^9 cells). Its value is the Gaussian's at the largest sensitivity or below."""
    acct = PLDAccountant().compose(MixtureOfGaussians(1e-3, [0, 1, 2], [0.2, 0.3, 0.5]))
    lower, upper = acct.epsilon_interval(1e-6)
    assert 0 < lower <= upper <= gdp_epsilon(2000.0, 1e-6) * (1 + 1e-3)


def test_a_leaf_with_no_finite_loss_is_infinite_not_a_raw_error():
    """Banded MF at noise 1e-3, sampled: every loss of its pessimistic PLD is +inf; the PLD answers infinity
    (sound) and the tightest bound comes from RDP."""
    event = BandMF(1e-3, 4, 100, 0.1)
    assert PLDAccountant().compose(event).epsilon(1e-6) == math.inf
    assert math.isfinite(epsilon_upper(event, 1e-6).epsilon)


def test_sampling_with_replacement_of_a_billion_draws_is_refused():
    acct = PLDAccountant("replace_one").compose(SampledWithReplacement(10, 10**9, Gaussian(1.0)))
    with pytest.raises(UnsupportedEventError, match="with replacement"):
        acct.epsilon(1e-5)


def test_nested_sampling_is_planned_in_bounded_cells():
    event = PoissonSampled(0.01, SelfComposed(PoissonSampled(0.3, Gaussian(2.0)), 2))
    acct = PLDAccountant().compose(event)
    upper = acct.epsilon(1e-5)
    rdp = RDPAccountant().compose(event).epsilon(1e-5)
    lower, _ = acct.epsilon_interval(1e-5)
    assert 0 < upper <= rdp * 1.5 and lower <= rdp
    acct._check_cells(acct.leaf_step())  # the planned grid passes the size check
    assert MAX_CELLS >= 2**18


def test_a_doubly_sampled_tree_with_a_zcdp_step_is_planned_in_bounded_cells():
    # its planning once refined the outer grid to the sampled losses' scale (1e-4) and built the inner
    # composition, zCDP profile included, on it: millions of cells, no answer in 20 minutes
    tree = PoissonSampled(0.007075, PoissonSampled(0.016447, Composed([ZCDP(0.004772), Laplace(6.96),
                                                                       DiscreteLaplace(3.011, 1)])))
    acct = PLDAccountant().compose(tree)
    lower, upper = acct.epsilon_interval(1e-5)
    assert 0 < lower <= upper <= 3e-5  # (RDP's bound: 3.5e-3)
    assert upper - lower <= 0.1 * upper
    with pytest.raises(UnsupportedEventError, match="subsampled"):
        ZCDPAccountant().compose(tree)
    (leaf,) = acct.leaves
    assert inner_factor(leaf, "add_remove") >= 256  # the inner tree on a grid about 1/(q e^L) times coarser
    acct._check_cells(acct.leaf_step())


def test_rdp_delta_of_a_giant_composition_is_one_not_an_overflow():
    acct = RDPAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 10**15))
    assert acct.delta(1.0) == 1.0
    assert 0.0 < acct.delta(1e12) < 1e-300  # far beyond the curve: tiny, still rounded up from 0


# ------------------------------------------------------------------ fuzz (bounded; 200 trees in the benchmark)
_leaves = st.one_of(
    st.builds(Gaussian, st.floats(0.6, 4.0)),
    st.builds(Laplace, st.floats(0.5, 8.0)),
)


def _sampled(inner):
    return st.builds(PoissonSampled, st.floats(0.01, 0.3), inner)


_trees = st.recursive(
    _leaves,
    lambda inner: st.one_of(_sampled(inner), st.builds(SelfComposed, inner, st.integers(1, 4))),
    max_leaves=3,
)


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_trees)
def test_fuzzed_trees_are_bracketed_and_below_every_upper_bound(tree):
    acct = PLDAccountant().compose(tree)
    lower, upper = acct.epsilon_interval(1e-5)
    assert 0.0 <= lower <= upper
    try:
        rdp = RDPAccountant().compose(tree).epsilon(1e-5)
    except UnsupportedEventError:
        return
    assert lower <= rdp  # the lower end is below every sound upper bound
    assert epsilon_upper(tree, 1e-5).epsilon <= min(upper, rdp)
