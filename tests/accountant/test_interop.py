"""dp_accounting interop: conversions both ways and equal numbers where both libraries support an event
(skipped when the optional dependency dp-accounting is absent)."""

from __future__ import annotations

import math

import numpy as np
import pytest

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting import dp_event as de  # noqa: E402
from dp_accounting.pld import pld_privacy_accountant  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant  # noqa: E402

from dpaudit.accountant import PLDAccountant, RDPAccountant  # noqa: E402
from dpaudit.errors import InvalidArgumentType, UnsupportedEventError  # noqa: E402
from dpaudit.events import (  # noqa: E402
    ApproxDP,
    BoundedRange,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    MixtureOfGaussians,
    PoissonSampled,
    PureDP,
    RandomizedResponse,
    RepeatAndSelect,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    TruncatedSubsampledGaussian,
    ZCDP,
    from_dp_accounting,
    to_dp_accounting,
)

Rel = dp_accounting.NeighboringRelation


def test_round_trip_of_every_event_with_a_counterpart():
    tree = Composed([SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100), Laplace(2.0), DiscreteLaplace(2.0, 3),
                     RandomizedResponse(1.0, 4), ZCDP(0.1), TreeAggregation(1.0, 7),
                     SampledWithoutReplacement(100, 10, Laplace(1.0))])
    converted = to_dp_accounting(tree)
    assert isinstance(converted, de.ComposedDpEvent)
    back = from_dp_accounting(converted)
    assert back.events[0] == tree.events[0] and back.events[4] == ZCDP(0.1) and back.events[5] == TreeAggregation(1.0, 7)
    rr = back.events[3]
    assert rr.num_buckets == 4 and 1.0 <= rr.epsilon <= 1.0 + 1e-14  # never a smaller epsilon
    assert isinstance(to_dp_accounting(PureDP(0.5)), de.RandomizedResponseDpEvent)
    assert from_dp_accounting(de.NoOpDpEvent()) == PureDP(0.0)
    assert from_dp_accounting(de.SingleEpochTreeAggregationDpEvent(1.0, [3, 8])) == TreeAggregation(1.0, 8)


def test_every_dp_accounting_event_type_is_converted_or_refused_by_name():
    import inspect

    samples = {
        "NoOpDpEvent": de.NoOpDpEvent(), "GaussianDpEvent": de.GaussianDpEvent(1.0),
        "LaplaceDpEvent": de.LaplaceDpEvent(1.0), "DiscreteLaplaceDpEvent": de.DiscreteLaplaceDpEvent(0.5, 1),
        "RandomizedResponseDpEvent": de.RandomizedResponseDpEvent(0.5, 2), "ZCDpEvent": de.ZCDpEvent(0.1),
        "SelfComposedDpEvent": de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), 2),
        "ComposedDpEvent": de.ComposedDpEvent([de.GaussianDpEvent(1.0)]),
        "PoissonSampledDpEvent": de.PoissonSampledDpEvent(0.1, de.GaussianDpEvent(1.0)),
        "SampledWithReplacementDpEvent": de.SampledWithReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)),
        "SampledWithoutReplacementDpEvent": de.SampledWithoutReplacementDpEvent(100, 10, de.GaussianDpEvent(1.0)),
        "SingleEpochTreeAggregationDpEvent": de.SingleEpochTreeAggregationDpEvent(1.0, 5),
        "RepeatAndSelectDpEvent": de.RepeatAndSelectDpEvent(de.GaussianDpEvent(1.0), 3.0, 1.0),
        "MixtureOfGaussiansDpEvent": de.MixtureOfGaussiansDpEvent(1.0, [0.0, 1.0], [0.5, 0.5]),
        "TruncatedSubsampledGaussianDpEvent": de.TruncatedSubsampledGaussianDpEvent(100, 0.1, 12, 1.0),
        "EpsilonDeltaDpEvent": getattr(de, "EpsilonDeltaDpEvent", lambda e, d: None)(1.0, 1e-6),
    }
    refused = {"NonPrivateDpEvent", "UnsupportedDpEvent", "DpEvent"}
    for name, cls in vars(de).items():
        if not (inspect.isclass(cls) and issubclass(cls, de.DpEvent)) or name in refused:
            continue
        assert name in samples, f"no test sample for dp_accounting's {name}"
        converted = from_dp_accounting(samples[name])
        assert to_dp_accounting(converted) is not None or name == "NoOpDpEvent"


def test_round_trip_of_the_2026_events():
    tree = Composed([MixtureOfGaussians(1.0, [0.0, 2.0], [0.75, 0.25]), TruncatedSubsampledGaussian(100, 0.1, 12, 1.0),
                     RepeatAndSelect(SelfComposed(Gaussian(2.0), 3), 4.0, 0.5)])
    back = from_dp_accounting(to_dp_accounting(tree))
    assert back == tree
    assert from_dp_accounting(de.MixtureOfGaussiansDpEvent(1.0, [0.0], [1.0])) == PureDP(0.0)
    with pytest.raises(UnsupportedEventError, match=r"MixtureOfGaussiansDpEvent at root has no counterpart: standard_deviation 0"):
        from_dp_accounting(de.MixtureOfGaussiansDpEvent(0.0, [1.0], [1.0]))


@pytest.mark.parametrize("event, name", [(DiscreteGaussian(1.0), "DiscreteGaussian"), (BoundedRange(1.0), "BoundedRange")])
def test_events_without_counterpart_are_named_with_their_path(event, name):
    with pytest.raises(UnsupportedEventError, match=rf"{name} at root.events\[1\]"):
        to_dp_accounting(Composed([Gaussian(1.0), event]))


@pytest.mark.parametrize("node, name", [
    (de.NonPrivateDpEvent(), "NonPrivateDpEvent"), (de.UnsupportedDpEvent(), "UnsupportedDpEvent"),
    (de.ZCDpEvent(0.1, 0.2), "ZCDpEvent")])
def test_dp_accounting_nodes_without_counterpart_are_named(node, name):
    with pytest.raises(UnsupportedEventError, match=rf"{name} at root.event"):
        from_dp_accounting(de.SelfComposedDpEvent(node, 3))
    with pytest.raises(InvalidArgumentType):
        from_dp_accounting("Gaussian(1.0)")


def _dp_pld(event, relation=Rel.ADD_OR_REMOVE_ONE):
    acct = pld_privacy_accountant.PLDAccountant(relation, value_discretization_interval=1e-4)
    return acct.compose(event)


def _dp_rdp(event, relation=Rel.ADD_OR_REMOVE_ONE, orders=None):
    acct = rdp_privacy_accountant.RdpAccountant(orders=orders, neighboring_relation=relation)
    return acct.compose(event)


@pytest.mark.parametrize("event", [SelfComposed(DiscreteLaplace(2.0, 2), 20), SelfComposed(Laplace(3.0), 30),
                                   SelfComposed(PoissonSampled(0.05, Gaussian(1.2)), 200)])
def test_pld_equals_dp_accounting_within_1e3(event):
    ours = PLDAccountant().compose(event).epsilon(1e-6)
    theirs = _dp_pld(to_dp_accounting(event)).get_epsilon(1e-6)
    assert abs(ours - theirs) <= 1e-3 * theirs


def test_rdp_of_zcdp_and_tree_aggregation_equal_dp_accountings():
    orders = [1.5, 2.0, 4.0, 16.0, 64.0]
    for event in (SelfComposed(ZCDP(0.02), 10), SelfComposed(TreeAggregation(2.0, 100), 3)):
        ours = RDPAccountant(orders=orders).compose(event)
        theirs = _dp_rdp(to_dp_accounting(event), Rel.REPLACE_SPECIAL, orders)
        assert np.allclose(ours.rdp, theirs._rdp, rtol=1e-12)
        assert ours.epsilon(1e-6) <= theirs.get_epsilon(1e-6) * (1 + 1e-9)  # CKS conversion: never looser


def test_replace_one_noise_multiplier_convention():
    """dp_accounting's PLD doubles the sensitivity under REPLACE_ONE as dpaudit does; its RDP accountant does
    not: there a dpaudit Gaussian(z) under replace-one is GaussianDpEvent(z / 2)."""
    event = SelfComposed(Gaussian(2.0), 4)
    ours_pld = PLDAccountant("replace_one").compose(event).epsilon(1e-6)
    theirs_pld = _dp_pld(to_dp_accounting(event), Rel.REPLACE_ONE).get_epsilon(1e-6)
    assert abs(ours_pld - theirs_pld) <= 1e-3 * theirs_pld
    ours_rdp = RDPAccountant("replace_one").compose(event).epsilon(1e-6)
    halved = _dp_rdp(de.SelfComposedDpEvent(de.GaussianDpEvent(1.0), 4), Rel.REPLACE_ONE).get_epsilon(1e-6)
    same = _dp_rdp(to_dp_accounting(event), Rel.REPLACE_ONE).get_epsilon(1e-6)
    assert ours_rdp <= halved * (1 + 1e-9) and abs(ours_rdp - halved) <= 0.05 * halved
    assert same < 0.6 * ours_rdp


def test_approx_dp_counterpart_when_available():
    if getattr(de, "EpsilonDeltaDpEvent", None) is None:
        with pytest.raises(UnsupportedEventError, match="ApproxDP"):
            to_dp_accounting(ApproxDP(1.0, 1e-6))
        assert isinstance(to_dp_accounting(ApproxDP(1.0, 0.0)), de.RandomizedResponseDpEvent)
    else:  # pragma: no cover - newer dp_accounting
        assert from_dp_accounting(to_dp_accounting(ApproxDP(1.0, 1e-6))) == ApproxDP(1.0, 1e-6)
    assert math.isfinite(PLDAccountant().compose(ApproxDP(1.0, 1e-6)).epsilon(1e-5))
