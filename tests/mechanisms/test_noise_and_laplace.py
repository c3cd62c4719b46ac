"""Laplace-family samplers: exact distribution (KS) with power against a 20% scale error."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpaudit.events import Laplace, SelfComposed
from dpaudit.guarantee import Guarantee
from dpaudit.mechanisms import BoundedSum, HistogramMechanism, LaplaceMechanism
from dpaudit.mechanisms import _noise
from dpaudit.mechanisms.theorems import laplace_max_error

from .helpers import FAIL, PASS, ks_pvalue, laplace_cdf, rng

N = 20_000


@pytest.mark.parametrize("scale", [0.5, 1.0, 3.0])
def test_laplace_noise_is_exactly_laplace_and_a_wrong_scale_fails(scale):
    samples = _noise.laplace(rng(1), scale, N)
    assert ks_pvalue(samples, laplace_cdf(0.0, scale)) > PASS
    assert ks_pvalue(samples, laplace_cdf(0.0, 1.2 * scale)) < FAIL  # power: 20% off is caught
    assert ks_pvalue(samples, laplace_cdf(0.0, scale / 1.2)) < FAIL


def test_other_noises():
    assert ks_pvalue(_noise.exponential(rng(2), 2.0, N), stats.expon(scale=2.0).cdf) > PASS
    assert ks_pvalue(_noise.exponential(rng(2), 2.0, N), stats.expon(scale=2.4).cdf) < FAIL
    assert ks_pvalue(_noise.gumbel(rng(3), N), stats.gumbel_r.cdf) > PASS
    assert ks_pvalue(_noise.normal(rng(4), 1.5, N), stats.norm(scale=1.5).cdf) > PASS
    signs = _noise.random_signs(rng(5), (100, 101))
    assert signs.shape == (100, 101) and set(np.unique(signs)) == {-1.0, 1.0}
    assert abs(signs.mean()) < 0.02


def test_laplace_mechanism_scalar_distribution_and_power():
    mechanism = LaplaceMechanism(1.0)
    out = mechanism([3.0], N, rng(6))
    assert out.shape == (N,) and out.dtype == np.float64
    assert ks_pvalue(out, laplace_cdf(3.0, 1.0)) > PASS
    assert ks_pvalue(out, laplace_cdf(3.0, 1.2)) < FAIL
    assert ks_pvalue(LaplaceMechanism(1.2)([3.0], N, rng(6)), laplace_cdf(3.0, 1.0)) < FAIL  # a wrong epsilon fails


def test_laplace_mechanism_k_queries_pure_and_advanced():
    pure = LaplaceMechanism(2.0, sensitivity=0.5, k=4)
    assert pure.scale == pytest.approx(0.5 * 4 / 2.0)
    data = np.array([1.0, -2.0, 0.0, 10.0])
    out = pure(data, N, rng(7))
    assert out.shape == (N, 4)
    for j in range(4):
        assert ks_pvalue(out[:, j], laplace_cdf(data[j], pure.scale)) > PASS
    assert abs(np.corrcoef(out[:, 0], out[:, 1])[0, 1]) < 0.03  # independent coordinates
    assert pure.privacy == Guarantee(2.0, 0.0)
    assert pure.event == SelfComposed(Laplace(noise_multiplier=2.0), 4)  # b / Delta = k / epsilon

    approx = LaplaceMechanism(1.0, k=100, delta=1e-5)
    assert approx.scale == pytest.approx(math.sqrt(8 * 100 * math.log(1e5)))
    assert approx.privacy == Guarantee(1.0, 1e-5)
    assert approx.accuracy(0.05) == pytest.approx(approx.scale * math.log(100 / 0.05))
    with pytest.raises(ValueError, match="epsilon"):
        LaplaceMechanism(100.0, k=20, delta=0.4)  # neither advanced nor basic composition gives epsilon here
    assert LaplaceMechanism(100.0, k=2, delta=0.4).privacy == Guarantee(100.0, 0.4)  # basic composition: 2 x 26.1


def test_theorem_3_values():
    assert laplace_max_error(10, 0.5, 0.1, sensitivity=2.0) == pytest.approx(2.0 * 10 / 0.5 * math.log(100))
    assert laplace_max_error(10, 0.5, 0.1, sensitivity=2.0, delta=1e-6) == pytest.approx(
        2.0 * math.sqrt(80 * math.log(1e6)) / 0.5 * math.log(100))
    assert LaplaceMechanism(0.5, 2.0, k=10).accuracy(0.1) == pytest.approx(laplace_max_error(10, 0.5, 0.1, 2.0))


def test_laplace_error_is_max_abs_error():
    mechanism = LaplaceMechanism(1.0, k=2)
    assert mechanism.error([1.0, 2.0], [[1.5, 1.0], [0.0, 2.0]]).tolist() == [1.0, 1.0]
    assert LaplaceMechanism(1.0).error([1.0], [3.0, -1.5]).tolist() == [2.0, 2.5]


def test_histogram():
    mechanism = HistogramMechanism(0.5, 5)
    out = mechanism([1, 1, 1, 1, 1], N, rng(8))
    assert out.shape == (N, 5)
    assert ks_pvalue(out[:, 0], laplace_cdf(1.0, 2.0)) > PASS
    assert ks_pvalue(out[:, 0], laplace_cdf(1.0, 2.4)) < FAIL
    assert mechanism.accuracy(0.05) == pytest.approx(math.log(100) / 0.5)
    assert mechanism.event == Laplace(noise_multiplier=2.0) and mechanism.neighbouring == "add_remove"


def test_bounded_sum_clips_and_is_laplace():
    mechanism = BoundedSum(1.0, -1.0, 1.0)
    out = mechanism([0.5, 0.5, 5.0], N, rng(9))
    assert ks_pvalue(out, laplace_cdf(2.0, 1.0)) > PASS
    wide = BoundedSum(0.5, -3.0, 2.0)
    assert wide.scale == 6.0 and wide.contribution == 3.0
    out = wide([-10.0, 1.0], N, rng(10))
    assert ks_pvalue(out, laplace_cdf(-2.0, 6.0)) > PASS
    assert BoundedSum(1.0)([], 3, rng()).shape == (3,)  # the empty dataset sums to 0
    assert BoundedSum(1.0).error([0.5, 5.0], [1.5, 2.0]).tolist() == [0.0, 0.5]
    assert BoundedSum(2.0, 0.0, 4.0).accuracy(0.1) == pytest.approx(2.0 * math.log(10))
