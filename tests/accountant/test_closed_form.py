"""Closed-form theorems: pinned values, reference values, exact rounding."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from dpaudit.accountant import (
    SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT,
    Guarantee,
    advanced,
    amplify,
    basic,
)


def test_guarantee_is_a_frozen_value_with_float_fields():
    g = Guarantee(1, 0)
    assert isinstance(g.epsilon, float) and isinstance(g.delta, float)
    with pytest.raises(AttributeError):
        g.epsilon = 2.0  # type: ignore[misc]
    assert g == Guarantee(1.0, 0.0) and hash(g) == hash(Guarantee(1.0, 0.0))


def test_basic_sums_heterogeneous_lists_exactly_and_rounds_up():
    total = basic([0.25, 0.5], [1e-6, 2e-6])
    assert total.epsilon == 0.75  # exactly representable: no rounding needed
    assert Fraction(total.delta) >= Fraction(1e-6) + Fraction(2e-6)
    assert total.delta == pytest.approx(3e-6, rel=1e-15)
    assert basic(0.5) == Guarantee(0.5, 0.0)
    assert basic([0.5, 0.25], 1e-6).delta >= 2e-6
    total = basic([0.1] * 10)
    assert Fraction(total.epsilon) >= 10 * Fraction(0.1)  # never under-reports the exact float sum
    assert total.epsilon == pytest.approx(1.0, rel=1e-15)


def test_basic_caps_a_vacuous_delta_at_one():
    assert basic([1.0] * 3, 0.5).delta == 1.0


@pytest.mark.parametrize(("eps", "k", "slack", "expected"), [
    (0.1, 100, 1e-5, 5.850235093),   # independently: sqrt(200 ln 1e5)*0.1 + 10*(e^0.1 - 1)
    (1.0, 1, 1e-5, 6.5168077406),
    (0.01, 1000, 1e-9, 2.1363437982),
])
def test_advanced_pinned_values(eps, k, slack, expected):
    exact = math.sqrt(2 * k * math.log(1 / slack)) * eps + k * eps * (math.exp(eps) - 1)
    assert exact == pytest.approx(expected, rel=1e-6)
    best = min(exact, k * eps)  # never looser than basic composition
    assert advanced(eps, k, slack).epsilon == pytest.approx(best, rel=1e-13)
    assert advanced(eps, k, slack).epsilon >= best


@pytest.mark.parametrize(("eps", "k", "slack"), [(1000.0, 10, 1e-5), (1.0, 1, 1e-5), (3.0, 50, 1e-9), (0.05, 10**6, 1e-5)])
def test_advanced_is_the_minimum_of_advanced_and_basic_composition(eps, k, slack):
    got = advanced(eps, k, slack, 1e-9)
    assert math.isfinite(got.epsilon)
    assert got.epsilon <= basic(eps, 1e-9, k=k).epsilon
    assert Fraction(got.epsilon) >= min(Fraction(eps) * k, Fraction(math.sqrt(2 * k * math.log(1 / slack)) * eps)
                                        + k * Fraction(eps) * Fraction(math.expm1(min(eps, 700.0))) * (1 - Fraction(1, 10**12)))
    assert got.delta >= k * 1e-9 + slack  # the delta of the weaker theorem (advanced) is reported
    assert advanced(1000.0, 10, 1e-5).epsilon == 10**4


def test_advanced_delta_is_k_delta_plus_slack():
    assert advanced(0.1, 10, 1e-6, 1e-7).delta == pytest.approx(1e-6 + 10 * 1e-7, rel=1e-15)


def test_amplify_pinned_values_and_limits():
    assert amplify(1.0, 0.0, 0.1).epsilon == pytest.approx(math.log(1 + 0.1 * (math.e - 1)), rel=1e-14)
    assert amplify(1.0, 0.0, 1.0).epsilon == pytest.approx(1.0, rel=1e-15)
    assert amplify(2.0, 1e-4, 0.5).delta == pytest.approx(5e-5, rel=1e-15)
    assert amplify(1.0, 0.0, 0.01, scheme="without_replacement").epsilon == amplify(1.0, 0.0, 0.01).epsilon
    # The unsafe shortcut q * eps is always below the truth.
    assert amplify(5.0, 0.0, 0.01).epsilon > 0.05


def test_secrecy_of_the_sample_lemma_is_valid_and_looser():
    q = 0.3
    lemma = amplify(1.0, 0.0, q, theorem="secrecy_of_sample")
    assert lemma.epsilon == pytest.approx(0.6)
    assert lemma.epsilon >= amplify(1.0, 0.0, q).epsilon
    assert SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT == pytest.approx(0.7968121300200202, rel=1e-12)
    assert 1 - SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT == pytest.approx(math.exp(-2 * SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT), rel=1e-12)
    assert amplify(1.0, 0.0, 0.79, theorem="secrecy_of_sample_one_sided").epsilon == pytest.approx(1.58)


def test_reference_poisson_amplification(reference):
    for row in reference["pure_dp_poisson_amplification"]["rows"]:
        got = amplify(row["eps"], 0.0, row["q"]).epsilon
        assert got == pytest.approx(row["amplified_remove_dir"], rel=1e-9)
        assert got >= row["amplified_remove_dir"] * (1 - 1e-15)
        assert got >= row["amplified_add_dir"]  # add/remove takes the larger direction


def test_reference_pure_composition_closed_forms(reference):
    for row in reference["pure_dp_composition"]:
        assert basic([row["eps0"]] * row["k"]).epsilon == pytest.approx(row["basic"], rel=1e-9)
        best = min(row["advanced_drv"], row["basic"])  # advanced() is never looser than basic composition
        assert advanced(row["eps0"], row["k"], row["delta"]).epsilon == pytest.approx(best, rel=1e-9)
