"""User-level accounting by group privacy: the sensitivity scales for Gaussian and Laplace noise, k eps for eps-DP."""

from __future__ import annotations

import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant, ZCDPAccountant
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import (
    Composed,
    Gaussian,
    Laplace,
    MixtureOfGaussians,
    PoissonSampled,
    PureDP,
    SelfComposed,
    UserLevel,
)
from dpaudit.events_parser import parse_event


@pytest.mark.parametrize("accountant", [PLDAccountant, RDPAccountant, ZCDPAccountant])
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_gaussian_user_level_is_the_gaussian_at_k_times_the_sensitivity(accountant, neighbouring):
    user = accountant(neighbouring=neighbouring).compose(UserLevel(SelfComposed(Gaussian(4.0), 10), 4))
    record = accountant(neighbouring=neighbouring).compose(SelfComposed(Gaussian(1.0), 10))
    assert user.epsilon(1e-6) == pytest.approx(record.epsilon(1e-6), rel=1e-9)


def test_pure_and_laplace_steps_scale_by_k():
    acct = PLDAccountant().compose(UserLevel(Composed([PureDP(0.1), Laplace(10.0)]), 3))
    assert acct.epsilon(0.0) == pytest.approx(0.6, rel=1e-12)
    assert acct.epsilon(0.0) >= 0.6


def test_one_contribution_is_the_record_level_event_and_it_composes():
    tree = Composed([UserLevel(Gaussian(2.0), 1), SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100)])
    plain = Composed([Gaussian(2.0), SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100)])
    assert PLDAccountant().compose(tree).epsilon(1e-6) == pytest.approx(PLDAccountant().compose(plain).epsilon(1e-6))


def test_user_level_grows_with_the_contribution_bound():
    values = [PLDAccountant().compose(UserLevel(SelfComposed(Gaussian(3.0), 5), k)).epsilon(1e-6) for k in (1, 2, 4)]
    assert values[0] < values[1] < values[2]


@pytest.mark.parametrize("event", [PoissonSampled(0.1, Gaussian(1.0)), MixtureOfGaussians(1.0, [1.0], [1.0])])
def test_events_without_a_known_group_change_are_refused(event):
    with pytest.raises(UnsupportedEventError, match="group privacy"):
        PLDAccountant().compose(UserLevel(event, 2))


def test_bad_input_and_parsing():
    with pytest.raises(InvalidArgument, match="max_contributions"):
        UserLevel(Gaussian(1.0), 0)
    assert parse_event("UserLevel(Gaussian(1.0), 3)") == UserLevel(Gaussian(1.0), 3)
