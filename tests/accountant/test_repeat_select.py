"""The repeat-and-select family (Papernot & Steinke 2022): special cases, the peer, composition, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.accountant.families.repeat_select import repeat_and_select_rdp, truncated_negative_binomial_gamma
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import Composed, Gaussian, PoissonSampled, RepeatAndSelect, SelfComposed


def _eps(event, delta=1e-6):
    return RDPAccountant().compose(event).epsilon(delta)


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 3.0])
def test_gamma_gives_the_mean(shape):
    gamma = truncated_negative_binomial_gamma(shape, 10.0)
    if shape == 0.0:
        mean = (1 / gamma - 1) / -math.log(gamma)
    else:
        mean = shape * (1 / gamma - 1) / (1 - gamma**shape)
    assert mean == pytest.approx(10.0, rel=1e-9) and mean >= 10.0  # the smaller gamma: the larger bound


def test_geometric_case_is_theorem_2_by_hand():
    orders = np.array([2.0, 4.0, 8.0])
    rdp = orders * 0.5 / 2  # a Gaussian: D_a = a mu^2 / 2 with mu^2 = 0.5
    out = repeat_and_select_rdp(orders, rdp, 4.0, 1.0)
    constant = 2 * min((1 - 1 / a) * r + math.log(4.0) / a for a, r in zip(orders, rdp))
    expected = rdp + constant + math.log(4.0) / (orders - 1)
    expected = np.minimum.accumulate(expected[::-1])[::-1]
    assert out == pytest.approx(expected, rel=1e-12)


def test_tuning_costs_more_than_one_run_and_grows_with_the_mean():
    one = _eps(Gaussian(2.0))
    few = _eps(RepeatAndSelect(Gaussian(2.0), 3.0))
    many = _eps(RepeatAndSelect(Gaussian(2.0), 30.0))
    assert one < few < many


@settings(max_examples=10, deadline=None)
@given(st.floats(1.0, 50.0), st.sampled_from([0.0, 0.5, 1.0, 2.0, math.inf]))
def test_curve_is_monotone_and_above_the_inner_curve(mean, shape):
    orders = RDPAccountant().orders
    rdp = orders * (1 / 1.5) ** 2 / 2
    out = repeat_and_select_rdp(orders, rdp, mean, shape)
    assert np.all(np.diff(out) >= -1e-12)
    finite = np.isfinite(out)
    assert finite.any() and np.all(out[finite] >= np.minimum.accumulate(rdp[::-1])[::-1][finite] - 1e-12)


def test_repeat_and_select_composes_in_a_tree():
    tuned = RepeatAndSelect(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100), 5.0, 1.0)
    both = _eps(Composed([tuned, Gaussian(3.0)]))
    assert both > _eps(tuned)
    acct = RDPAccountant().compose(SelfComposed(tuned, 2))
    assert acct.epsilon(1e-6) > _eps(tuned)


@pytest.mark.parametrize("mean,shape", [(10.0, math.inf), (10.0, 1.0), (10.0, 0.0), (5.0, 0.5)])
def test_repeat_and_select_matches_dp_accounting(mean, shape):
    dp_accounting = pytest.importorskip("dp_accounting")
    from dp_accounting.rdp.rdp_privacy_accountant import RdpAccountant

    m = dp_accounting.dp_event
    peer = RdpAccountant(orders=list(RDPAccountant().orders)).compose(
        m.RepeatAndSelectDpEvent(m.GaussianDpEvent(2.0), mean, shape)).get_epsilon(1e-6)
    ours = _eps(RepeatAndSelect(Gaussian(2.0), mean, shape))
    assert ours == pytest.approx(peer, rel=1e-6)


def test_pld_and_samplers_are_refused_with_the_reason():
    with pytest.raises(UnsupportedEventError, match="RDPAccountant"):
        PLDAccountant().compose(RepeatAndSelect(Gaussian(1.0), 3.0))
    with pytest.raises(UnsupportedEventError, match="sampler"):
        RDPAccountant().compose(PoissonSampled(0.5, RepeatAndSelect(Gaussian(1.0), 3.0)))
    assert not PLDAccountant().supports(RepeatAndSelect(Gaussian(1.0), 3.0))


@pytest.mark.parametrize("mean,shape,name", [(0.5, 1.0, "mean"), (math.inf, 1.0, "mean"), (3.0, -1.0, "shape"),
                                             (3.0, math.nan, "shape")])
def test_bad_input_names_the_argument(mean, shape, name):
    with pytest.raises(InvalidArgument, match=name):
        RepeatAndSelect(Gaussian(1.0), mean, shape)
