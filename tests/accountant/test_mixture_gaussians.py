"""The mixture-of-Gaussians and truncated subsampled Gaussian families: special cases, the peer, bad input."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import (
    Composed,
    Gaussian,
    MixtureOfGaussians,
    PoissonSampled,
    SampledWithoutReplacement,
    SelfComposed,
    TruncatedSubsampledGaussian,
)


def _eps(event, delta=1e-6, neighbouring="add_remove"):
    return PLDAccountant(neighbouring=neighbouring).compose(event).epsilon(delta)


def test_two_point_mixture_is_the_poisson_sampled_gaussian():
    q, sigma = 0.1, 1.3
    mixture = SelfComposed(MixtureOfGaussians(sigma, [0.0, 1.0], [1 - q, q]), 50)
    sampled = SelfComposed(PoissonSampled(q, Gaussian(sigma)), 50)
    assert _eps(mixture) == pytest.approx(_eps(sampled), rel=1e-6)


def test_one_point_mixture_is_the_gaussian():
    """A one-point mixture is the Gaussian: its discretised PLD bound lies just above the Gaussian's exact
    (GDP) epsilon, never below it."""
    mixture, exact = _eps(MixtureOfGaussians(2.0, [1.5], [1.0])), _eps(Gaussian(2.0 / 1.5))
    assert exact <= mixture <= exact * (1 + 1e-5)


def test_poisson_sampled_mixture_folds_the_rate_into_the_mixture():
    inner = MixtureOfGaussians(1.0, [0.5, 1.0], [0.5, 0.5])
    folded = MixtureOfGaussians(1.0, [0.0, 0.5, 1.0], [0.8, 0.1, 0.1])
    assert _eps(SelfComposed(PoissonSampled(0.2, inner), 20)) == pytest.approx(_eps(SelfComposed(folded, 20)), rel=1e-9)


def test_mixture_composes_with_other_events_and_its_lower_side_is_below():
    tree = Composed([SelfComposed(MixtureOfGaussians(1.0, [0.0, 1.0, 2.0], [0.6, 0.3, 0.1]), 30), Gaussian(4.0)])
    acct = PLDAccountant().compose(tree)
    low, high = acct.epsilon_interval(1e-6)
    assert 0 < low <= high == acct.epsilon(1e-6)
    assert high <= low * 1.02


@settings(max_examples=8, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.2, 2.0))
def test_more_mass_on_the_larger_sensitivity_never_lowers_epsilon(w, c):
    light = MixtureOfGaussians(1.0, [c, 2 * c], [w, 1 - w])
    heavy = MixtureOfGaussians(1.0, [c, 2 * c], [w / 2, 1 - w / 2])
    assert _eps(SelfComposed(heavy, 5)) >= _eps(SelfComposed(light, 5)) * (1 - 1e-9)


def test_mixture_matches_dp_accounting():  # one fast point; the grid is benchmarks/bench_accounting_breadth.py
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import PLDAccountant as PeerPLD

    m = dp_accounting.dp_event
    sigma, c, p, count = 2.0, [0.5, 1.0, 2.0], [0.3, 0.3, 0.4], 3
    peer = PeerPLD(value_discretization_interval=1e-3).compose(
        m.SelfComposedDpEvent(m.MixtureOfGaussiansDpEvent(sigma, c, p), count)).get_epsilon(1e-6)
    ours = _eps(SelfComposed(MixtureOfGaussians(sigma, c, p), count))
    assert ours == pytest.approx(peer, rel=5e-3)


def test_mixture_outside_its_analysis_is_refused_by_name():
    event = MixtureOfGaussians(1.0, [1.0], [1.0])
    with pytest.raises(UnsupportedEventError, match="add_remove"):
        PLDAccountant(neighbouring="replace_one").compose(event)
    with pytest.raises(UnsupportedEventError, match="add_remove"):
        PLDAccountant(neighbouring="replace_one").compose(SampledWithoutReplacement(10, 2, event))
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().compose(event)


@pytest.mark.parametrize("args,name", [((0.0, [1.0], [1.0]), "standard_deviation"),
                                       ((1.0, [-1.0], [1.0]), "sensitivities"),
                                       ((1.0, [1.0, 2.0], [1.0]), "sampling_probs"),
                                       ((1.0, [1.0, 2.0], [0.5, 0.6]), "sampling_probs"),
                                       ((1.0, [math.nan], [1.0]), "sensitivities")])
def test_mixture_bad_input_names_the_argument(args, name):
    with pytest.raises(InvalidArgument, match=name):
        MixtureOfGaussians(*args)


def test_truncation_that_never_happens_is_the_poisson_sampled_gaussian():
    """On one grid (the automatic grid is planned from each family's own leaf discretisation, which may
    differ in the last digits)."""
    cut = SelfComposed(TruncatedSubsampledGaussian(1000, 0.1, 400, 1.0), 50)
    plain = SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 50)
    on_grid = [PLDAccountant(discretisation_interval=2e-3).compose(e).epsilon(1e-6) for e in (cut, plain)]
    assert on_grid[0] == pytest.approx(on_grid[1], rel=1e-6)
    assert _eps(cut) == pytest.approx(_eps(plain), rel=1e-5)


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_truncation_costs_privacy_and_the_lower_side_stays_below(neighbouring):
    cut = SelfComposed(TruncatedSubsampledGaussian(1000, 0.1, 105, 1.0), 20)
    plain = SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 20)
    ours = _eps(cut, neighbouring=neighbouring)
    assert ours > _eps(plain, neighbouring=neighbouring)
    low, high = PLDAccountant(neighbouring=neighbouring).compose(cut).epsilon_interval(1e-6)
    assert 0 <= low <= high


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_truncated_gaussian_matches_dp_accounting(neighbouring):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import PLDAccountant as PeerPLD

    m = dp_accounting.dp_event
    n, q, b, z, count = 10000, 0.01, 110, 1.0, 100
    relation = {"add_remove": dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
                "replace_one": dp_accounting.NeighboringRelation.REPLACE_ONE}[neighbouring]
    peer = PeerPLD(relation, value_discretization_interval=1e-3).compose(
        m.SelfComposedDpEvent(m.TruncatedSubsampledGaussianDpEvent(n, q, b, z), count)).get_epsilon(1e-6)
    ours = _eps(SelfComposed(TruncatedSubsampledGaussian(n, q, b, z), count), neighbouring=neighbouring)
    assert ours == pytest.approx(peer, rel=5e-3)


def test_truncated_gaussian_bad_input_and_samplers_are_refused():
    with pytest.raises(InvalidArgument, match="truncated_batch_size"):
        TruncatedSubsampledGaussian(10, 0.5, 11, 1.0)
    with pytest.raises(InvalidArgument, match="sampling_probability"):
        TruncatedSubsampledGaussian(10, 0.0, 5, 1.0)
    with pytest.raises(UnsupportedEventError, match="its own sampling"):
        PLDAccountant().compose(PoissonSampled(0.5, TruncatedSubsampledGaussian(10, 0.5, 5, 1.0)))
