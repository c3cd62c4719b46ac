"""The engine's history as an event tree, and the claim beside Opacus' own number."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpaudit import training
from dpaudit.accountant import OpacusAccountant, PLDAccountant
from dpaudit.events import Composed, Gaussian, PoissonSampled, SelfComposed

entries = st.tuples(st.floats(0.3, 5.0), st.sampled_from([0.001, 0.01, 0.1, 0.5, 1.0]), st.integers(1, 2000))


def test_history_becomes_a_composition_of_dpsgd_steps():
    tree = training.event_from_opacus([(1.0, 0.01, 1000), (2.0, 1.0, 5)])
    assert tree == Composed([SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000), SelfComposed(Gaussian(2.0), 5)])


@given(st.lists(entries, min_size=1, max_size=4))
def test_history_round_trips_through_dpaudits_opacus_accountant(history):
    acct = OpacusAccountant()
    for sigma, rate, steps in history:
        acct.compose(SelfComposed(PoissonSampled(rate, Gaussian(sigma)) if rate < 1 else Gaussian(sigma), steps))
    again = OpacusAccountant().compose(training.event_from_opacus(acct))
    assert again.history == acct.history


def test_engine_and_plain_objects_are_accepted():
    class Accountant:
        history = [(1.0, 0.1, 10)]

    class Engine:
        accountant = Accountant()

    assert training.event_from_opacus(Engine()) == training.event_from_opacus(Accountant())


@pytest.mark.parametrize("bad", [[], [(1.0, 0.1)], [(-1.0, 0.1, 10)], [(1.0, 1.5, 10)], [(1.0, 0.1, 0)], "history", 3])
def test_bad_histories_are_refused_with_their_name(bad):
    with pytest.raises((ValueError, TypeError), match="accountant|history"):
        training.event_from_opacus(bad)


@pytest.mark.parametrize("kind", ["prv", "rdp"])
def test_claim_sits_beside_opacus_own_number(kind):
    pytest.importorskip("opacus")
    from opacus.accountants import PRVAccountant, RDPAccountant

    acct = {"prv": PRVAccountant, "rdp": RDPAccountant}[kind]()
    for _ in range(100):
        acct.step(noise_multiplier=1.0, sample_rate=0.1)
    claim = training.claim_from_opacus(acct, delta=1e-5)
    assert claim.mechanism == kind and claim.history == ((1.0, 0.1, 100),)
    ours = PLDAccountant().compose(SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 100)).epsilon(1e-5)
    assert claim.epsilon_upper <= ours
    if kind == "prv":  # PRV is near-exact: within 1%
        assert abs(claim.epsilon_upper - claim.epsilon_opacus) <= 0.01 * claim.epsilon_opacus
    else:  # RDP is looser than the PLD
        assert claim.epsilon_upper < claim.epsilon_opacus
    assert math.isfinite(claim.to_dict()["epsilon_upper"])
