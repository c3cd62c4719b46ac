"""User-level accounting: the sensitivity scales for unsampled Gaussian and Laplace noise (k eps for eps-DP);
Poisson-sampled Gaussian steps (DP-SGD) are the exact binomial mixture; group privacy on the RDP curve and
on the privacy profile otherwise; beside tensorflow_privacy's user-level statement."""

from __future__ import annotations

import pytest

import math
import sys
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate
from scipy.stats import binom, norm

from dpaudit.accountant import PLDAccountant, RDPAccountant, ZCDPAccountant, user_level_epsilon
from dpaudit.accountant.families.user_level import MIXTURE_STATEMENT, RDP_STATEMENT, group_rdp
from dpaudit.accountant.user_level import PROFILE_STATEMENT, RDP_PROFILE_STATEMENT, RECORD_STATEMENT, group_privacy_epsilon
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _reference_tf_privacy import tf_privacy_user_epsilon  # noqa: E402

DPSGD = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)


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


def test_events_without_a_known_group_change_are_refused():
    with pytest.raises(UnsupportedEventError, match="group privacy"):
        PLDAccountant().compose(UserLevel(MixtureOfGaussians(1.0, [1.0], [1.0]), 2))
    with pytest.raises(UnsupportedEventError, match="no Renyi-DP curve"):
        RDPAccountant().compose(UserLevel(MixtureOfGaussians(1.0, [1.0], [1.0]), 2))


@pytest.mark.parametrize("bad", [0, -2, 2.5, True, "3"])
def test_bad_input_and_parsing(bad):
    with pytest.raises((InvalidArgument, TypeError), match="max_contributions"):
        UserLevel(Gaussian(1.0), bad)
    with pytest.raises((InvalidArgument, TypeError), match="max_contributions"):
        user_level_epsilon(Gaussian(1.0), bad, 1e-5)
    assert parse_event("UserLevel(Gaussian(1.0), 3)") == UserLevel(Gaussian(1.0), 3)


def test_one_contribution_of_dpsgd_is_the_example_level_figure():
    example = PLDAccountant().compose(DPSGD).epsilon(1e-5)
    assert PLDAccountant().compose(UserLevel(DPSGD, 1)).epsilon(1e-5) == example
    result = user_level_epsilon(DPSGD, 1, 1e-5)
    assert result.epsilon_upper == example and result.statement == RECORD_STATEMENT


@pytest.mark.parametrize("sigma, steps, k", [(1.0, 1000, 2), (1.0, 1000, 3), (2.0, 300, 10)])
def test_dpsgd_user_level_is_never_looser_than_tensorflow_privacy(sigma, steps, k):
    event = SelfComposed(PoissonSampled(0.01, Gaussian(sigma)), steps)
    ours = PLDAccountant().compose(UserLevel(event, k))
    assert set(leaf.kind for leaf in ours.leaves) == {"user"}
    tf_statement = tf_privacy_user_epsilon(0.01, sigma, steps, k, 1e-5)
    upper = ours.epsilon(1e-5)
    assert upper < tf_statement < math.inf
    assert upper > PLDAccountant().compose(UserLevel(event, k - 1)).epsilon(1e-5)


def test_the_dpsgd_mixture_interval_is_tight():
    lower, upper = PLDAccountant().compose(UserLevel(DPSGD, 3)).epsilon_interval(1e-5)
    assert lower <= upper <= (1 + 1e-3) * lower


def test_the_mixture_matches_a_direct_integral_of_one_step():
    """One step, k = 3, q = 0.3: delta(eps) = int (P - e^eps Q)_+ of sum_j Bin(j; 3, q) N(j mu, 1) vs N(0, 1)
    (remove) and of the reversed pair (add), by quadrature; the PLD interval brackets the larger."""
    mu, q, k, eps = 1.0 / 0.8, 0.3, 3, 0.7
    weights = binom.pmf(np.arange(k + 1), k, q)

    def mixture(x):
        return sum(w * norm.pdf(x, j * mu) for j, w in enumerate(weights))

    remove = integrate.quad(lambda x: max(mixture(x) - math.exp(eps) * norm.pdf(x), 0.0), -12, 20, limit=400)[0]
    add = integrate.quad(lambda x: max(norm.pdf(x) - math.exp(eps) * mixture(x), 0.0), -12, 20, limit=400)[0]
    low, high = PLDAccountant().compose(UserLevel(PoissonSampled(q, Gaussian(0.8)), k)).delta_interval(eps)
    assert low <= max(remove, add) * (1 + 1e-9) and max(remove, add) <= high
    assert high - low < 1e-3 * high


def test_sampling_users_is_the_sampled_group_change():
    users = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, UserLevel(Gaussian(2.0), 4)), 500))
    scaled = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(0.5)), 500))
    assert users.leaves == scaled.leaves and users.epsilon(1e-6) == scaled.epsilon(1e-6)
    # records sampled, each of the user's four independently: the binomial mixture, less than sampling users
    records = PLDAccountant().compose(SelfComposed(UserLevel(PoissonSampled(0.01, Gaussian(2.0)), 4), 500))
    assert records.epsilon(1e-6) < users.epsilon(1e-6)


def test_without_the_exact_pair_group_privacy_decides_and_says_so():
    event = SelfComposed(PoissonSampled(0.05, PureDP(1.0)), 20)
    with pytest.raises(UnsupportedEventError, match="RDPAccountant"):
        PLDAccountant().compose(UserLevel(event, 2))
    result = user_level_epsilon(event, 2, 1e-6)
    assert result.statement == PROFILE_STATEMENT and math.isfinite(result.epsilon_upper)
    assert result.epsilon_upper > PLDAccountant().compose(event).epsilon(1e-6)
    candidates = result.to_dict()["candidates"]
    assert candidates[MIXTURE_STATEMENT] == math.inf
    assert result.epsilon_upper <= min(candidates[RDP_STATEMENT], candidates[RDP_PROFILE_STATEMENT])


def test_replace_one_sampled_steps_use_group_privacy():
    event = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 20)
    assert not PLDAccountant("replace_one").supports(UserLevel(event, 2))
    record = PLDAccountant("replace_one").compose(event).epsilon(1e-5)
    result = user_level_epsilon(event, 2, 1e-5, neighbouring="replace_one")
    assert result.statement == PROFILE_STATEMENT and record < result.epsilon_upper < math.inf
    assert record < result.candidates[RDP_STATEMENT] < math.inf


@pytest.mark.parametrize("k, c", [(2, 1), (3, 2), (4, 2), (5, 3)])
def test_group_rdp_is_mironovs_bound_and_covers_the_exact_gaussian_group(k, c):
    orders = np.array([1.5, 2.0, 3.0, 8.0])
    curve = group_rdp(orders, lambda a: np.asarray(a) / 2.0, k)  # Gaussian(1.0): eps(a) = a / 2
    assert curve == pytest.approx(3.0**c * 2.0**c * np.maximum(orders, 2.0) / 2.0)
    assert (curve >= orders * k * k / 2.0).all()  # the exact k-fold group change, N(k, 1) vs N(0, 1)


def test_mixture_user_level_composes_with_other_events():
    tree = Composed([UserLevel(SelfComposed(PoissonSampled(0.02, Gaussian(1.2)), 100), 2), Gaussian(5.0)])
    alone = PLDAccountant().compose(UserLevel(SelfComposed(PoissonSampled(0.02, Gaussian(1.2)), 100), 2))
    assert PLDAccountant().compose(tree).epsilon(1e-6) > alone.epsilon(1e-6)


@settings(max_examples=4, deadline=None)
@given(st.floats(0.005, 0.2), st.floats(0.8, 3.0), st.integers(2, 4))
def test_the_mixture_lies_between_the_record_level_and_group_privacy(q, sigma, k):
    event = SelfComposed(PoissonSampled(q, Gaussian(sigma)), 10)
    record = PLDAccountant().compose(event)
    user = PLDAccountant().compose(UserLevel(event, k)).epsilon(1e-6)
    assert record.epsilon(1e-6) < user <= group_privacy_epsilon(record, k, 1e-6)
    # and below every record sampled with the user: users sampled at rate q (sensitivity k) when q k <= 1
    users = PLDAccountant().compose(SelfComposed(PoissonSampled(q, UserLevel(Gaussian(sigma), k)), 10))
    assert user <= users.epsilon(1e-6) * (1 + 1e-9)
