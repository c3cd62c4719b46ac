"""Known-bad twins: documented, kept apart, and different from their correct twin in the documented way."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dpaudit.mechanisms as mechanisms
from dpaudit.accountant import gaussian_delta
from dpaudit.mechanisms import buggy
from dpaudit.mechanisms.exact import above_threshold_pmf, laplace_cdf, pair_epsilon, report_noisy_max_pmf
from dpaudit.mechanisms.factorization import hierarchical_strategy

from .helpers import PASS, chi2_pvalue, ks_pvalue, laplace_cdf as lap_cdf, rng


def test_every_known_bad_is_documented_and_not_exported():
    assert len(buggy.KNOWN_BAD) >= 18
    for cls in buggy.KNOWN_BAD:
        assert cls.__doc__ and "true" in cls.__doc__.lower(), cls
        assert isinstance(cls.bug, str) and cls.bug
        assert issubclass(cls.twin, mechanisms.Mechanism) and cls.twin.__module__ != buggy.__name__
        assert cls.__name__ not in mechanisms.__all__ and not hasattr(mechanisms, cls.__name__)


def _instances():
    return [
        buggy.LaplaceHalfScale(1.0), buggy.HistogramWrongScale(0.5, 5), buggy.BoundedSumMissingClip(1.0),
        buggy.BoundedSumNoiseIgnoresClipBound(1.0), buggy.GaussianHalfSigma(1.0),
        buggy.GaussianClassicBeyondEpsilonOne(10.0), buggy.NoisyMaxReturnsValue(1.0, 5), buggy.NoisyMaxHalfScale(1.0, 5),
        buggy.ExponentialMechanismMissingHalf(1.0, range_size=5), buggy.AboveThresholdWithoutThresholdNoise(1.0, 0.5, 10),
        buggy.SparseVectorReturnsNoisyValue(1.0), buggy.SparseVectorWithoutQueryNoise(1.0),
        buggy.SparseVectorQueryNoiseIgnoresCutoff(1.0, c=2), buggy.SparseVectorWithoutCutoff(1.0),
        buggy.RandomizedResponseBinaryFormula(1.0, 4),
        buggy.SubsampledClaimsLinearAmplification(mechanisms.BoundedSum(1.0, 0.0, 1.0), 0.2),
        buggy.BinaryTreeNoiseNotScaledByDepth(1.0, 16),
        buggy.FactorizationNoiseIgnoresMeasurementNorm(1.0, 1e-5, hierarchical_strategy(8)),
        buggy.LaplaceSnappedNoiseOffGrid(1.0), buggy.LaplaceRareNaNBranch(1.0), buggy.LaplaceDtypeLeak(1.0),
        buggy.HistogramReplaceOne(1.0, 5),
    ]


def test_every_known_bad_claims_less_than_the_truth():
    instances = _instances()
    assert {type(m) for m in instances} == set(buggy.KNOWN_BAD)
    for mechanism in instances:
        true_epsilon = getattr(mechanism, "true_epsilon", None)
        true_delta = getattr(mechanism, "true_delta", None)
        assert (true_epsilon is None or true_epsilon > mechanism.privacy.epsilon
                or (true_delta is not None and true_delta > mechanism.privacy.delta)), type(mechanism)


def test_laplace_family_scales():
    bad = buggy.LaplaceHalfScale(1.0)
    assert ks_pvalue(bad([0.0], 20_000, rng(70)), lap_cdf(0.0, 0.5)) > PASS and bad.true_epsilon == 2.0
    assert buggy.HistogramWrongScale(0.25, 5).scale == 0.25 and buggy.HistogramWrongScale(0.25, 5).true_epsilon == 4.0
    no_clip = buggy.BoundedSumMissingClip(1.0)
    assert ks_pvalue(no_clip([0.5, 0.5, 5.0], 20_000, rng(71)), lap_cdf(6.0, 1.0)) > PASS
    # the catalog pair: P[y <= 1] is 1/2 vs F(1 - 6) = e^-5 / 2 -> ratio e^5
    assert math.log(laplace_cdf(0.0, 1.0) / laplace_cdf(1.0 - 6.0, 1.0)) == pytest.approx(5.0)
    ignores = buggy.BoundedSumNoiseIgnoresClipBound(1.0, -5.0, 5.0)
    assert ignores.scale == 1.0 and ignores.true_epsilon == 5.0


def test_gaussian_twins_exact_delta():
    half = buggy.GaussianHalfSigma(1.0, 1e-5)
    classic = math.sqrt(2 * math.log(1.25e5))
    assert half.sigma == pytest.approx(classic / 2)
    assert half.true_delta == pytest.approx(1.7e-3, rel=0.02)  # the catalog's value
    assert half.privacy.delta == 1e-5
    beyond = buggy.GaussianClassicBeyondEpsilonOne(10.0, 1e-5)
    assert beyond.sigma == pytest.approx(classic / 10)
    assert beyond.true_delta == pytest.approx(gaussian_delta(10.0, 10 / classic)) and beyond.true_delta > 2e-5
    assert buggy.GaussianClassicBeyondEpsilonOne(1.0, 1e-5).true_delta < 1e-5  # still fine at epsilon = 1


def test_noisy_max_twins():
    value = buggy.NoisyMaxReturnsValue(1.0, 5)
    out = value(np.zeros(5), 40_000, rng(72))
    assert out.shape == (40_000,) and out.dtype == np.float64
    assert (out <= 0).mean() == pytest.approx(2.0**-5, abs=0.004)  # the catalog's witness probability
    # exact: P[max <= 0] on [0]*5 vs [1]*5 is (1/2)^5 / (F(-1))^5 = e^{5/b} = e^{5 eps / 2}
    assert math.log(0.5**5 / laplace_cdf(-1.0, 2.0) ** 5) == pytest.approx(value.true_epsilon)
    half = buggy.NoisyMaxHalfScale(1.0, 5)
    p = report_noisy_max_pmf([1] * 5, half.scale)
    q = report_noisy_max_pmf([0, 2, 2, 2, 2], half.scale)
    assert pair_epsilon(p, q) == pytest.approx(1.98, abs=0.01) and pair_epsilon(p, q) > 1.0
    assert chi2_pvalue(half([0, 2, 2, 2, 2], 30_000, rng(73)), q) > PASS


def test_exponential_missing_half():
    bad = buggy.ExponentialMechanismMissingHalf(1.0, range_size=5)
    p, q = bad.probabilities([1, 0, 0, 0, 0]), bad.probabilities([0, 1, 1, 1, 1])
    assert pair_epsilon(p, q) == pytest.approx(math.log(math.e * (1 + 4 * math.e) / (math.e + 4)))
    assert pair_epsilon(p, q) > 1.0
    good = mechanisms.ExponentialMechanism(1.0, range_size=5)
    assert pair_epsilon(good.probabilities([1, 0, 0, 0, 0]), good.probabilities([0, 1, 1, 1, 1])) <= 1.0


def test_sparse_vector_twins():
    no_rho = buggy.AboveThresholdWithoutThresholdNoise(1.0, 0.0, 4)
    out = no_rho([-1.0, -1.0, -1.0, -1.0], 30_000, rng(74))
    # all ⊥ has probability prod F(T - q_i) with no threshold noise: F(1)^4 for Lap(4)
    assert (out == 0).all(axis=1).mean() == pytest.approx((1 - 0.5 * math.exp(-0.25)) ** 4, abs=0.01)
    assert no_rho.true_epsilon == 1.0

    value = buggy.SparseVectorReturnsNoisyValue(1.0)
    out = value([1.0] * 10, 20_000, rng(75))
    assert out.shape == (20_000, 10) and out.dtype == np.float64
    assert set(np.unique(out[(out == -1000) | (out == -2000)])) <= {-1000.0, -2000.0}
    tops = out[(out != -1000) & (out != -2000)]
    assert tops.size > 0 and np.unique(tops).size == tops.size  # noisy values, not 1
    assert ((out == -2000).sum(axis=1) > 0).any()

    no_noise = buggy.SparseVectorWithoutQueryNoise(1.0)
    equal = no_noise([1.0] * 10, 5_000, rng(76))
    assert (equal == equal[:, :1]).all()  # equal answers: all ⊤ or all ⊥
    pattern = no_noise([2.0] * 5 + [0.0] * 5, 5_000, rng(77))
    assert (pattern == np.array([1] * 5 + [0] * 5)).all(axis=1).mean() > 0.3  # impossible on [1]*10

    lee = buggy.SparseVectorQueryNoiseIgnoresCutoff(1.0, c=2)
    assert (lee.threshold_scale, lee.query_scale) == (4.0, pytest.approx(4 / 3))
    assert lee.true_epsilon == pytest.approx(13 / 4)
    out = lee([5.0] * 10, 2_000, rng(78))
    assert ((out == 1).sum(axis=1) <= 2).all() and set(np.unique(out)) <= {-1, 0, 1}
    chen = buggy.SparseVectorWithoutCutoff(1.0)
    assert ((chen([5.0] * 10, 2_000, rng(79)) == 1).sum(axis=1) > 2).any()  # no cutoff
    # the correct twin on the same pair stays within epsilon
    correct = mechanisms.AboveThreshold(1.0, 0.5, 10)
    assert pair_epsilon(above_threshold_pmf([0] * 5 + [1] * 5, 0.5, 2, 4),
                        above_threshold_pmf([1] * 5 + [0] * 5, 0.5, 2, 4)) <= correct.privacy.epsilon


def test_other_twins():
    rr = buggy.RandomizedResponseBinaryFormula(1.0, 4)
    p, q = rr.probabilities(0), rr.probabilities(1)
    assert pair_epsilon(p, q) == pytest.approx(rr.true_epsilon) and rr.true_epsilon == pytest.approx(1 + math.log(3))
    assert chi2_pvalue(rr([0], 30_000, rng(80)), p) > PASS

    linear = buggy.SubsampledClaimsLinearAmplification(mechanisms.BoundedSum(1.0, 0.0, 1.0), 0.2)
    assert linear.privacy.epsilon == pytest.approx(0.2) and linear.true_epsilon == pytest.approx(math.log1p(0.2 * (math.e - 1)))

    tree = buggy.BinaryTreeNoiseNotScaledByDepth(1.0, 16)
    assert tree.scale == 1.0 and tree.true_epsilon == 5.0
    residual = tree(np.zeros(16), 20_000, rng(81))[:, 0]
    assert ks_pvalue(residual, lap_cdf(0.0, 1.0)) > PASS

    factor = buggy.FactorizationNoiseIgnoresMeasurementNorm(1.0, 1e-5, hierarchical_strategy(8))
    correct = mechanisms.FactorizationMechanism(1.0, 1e-5, hierarchical_strategy(8))
    assert factor.sigma == pytest.approx(correct.sigma / 2.0) and factor.true_epsilon > 1.0


def test_twins_keep_their_twins_output_encoding():
    data = np.array([0.0, 1.0, 2.0])
    for bad, good in [(buggy.NoisyMaxHalfScale(1.0, 3), mechanisms.ReportNoisyMax(1.0, 3)),
                      (buggy.LaplaceHalfScale(1.0, k=3), mechanisms.LaplaceMechanism(1.0, k=3)),
                      (buggy.AboveThresholdWithoutThresholdNoise(1.0, 1.0, 3), mechanisms.AboveThreshold(1.0, 1.0, 3))]:
        a, b = bad(data, 10, rng()), good(data, 10, rng())
        assert a.shape == b.shape and a.dtype == b.dtype
