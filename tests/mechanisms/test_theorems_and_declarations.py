"""The accuracy formulas as the lectures state them (errata corrected), and every privacy declaration."""

from __future__ import annotations

import math

import pytest

from dpaudit.accountant import advanced, amplify
from dpaudit.events import Gaussian, Laplace, PoissonSampled, PureDP, RandomizedResponse, SelfComposed
from dpaudit.guarantee import Guarantee
from dpaudit.mechanisms import examples, theorems

from .helpers import rng


def test_theorem_3_is_theorem_8_with_l1_sensitivity_k_delta():
    for k, epsilon, beta, sensitivity in [(1, 1.0, 0.05, 1.0), (7, 0.3, 0.2, 2.5)]:
        assert theorems.laplace_max_error(k, epsilon, beta, sensitivity) == pytest.approx(
            theorems.laplace_vector_error(k, epsilon, beta, k * sensitivity))


def test_advanced_form_per_query_epsilon_composes_to_epsilon():
    k, epsilon, delta = 50, 1.0, 1e-5
    per_query = 1.0 / theorems.laplace_noise_scale(k, epsilon, 1.0, delta)
    assert per_query == pytest.approx(epsilon / math.sqrt(8 * k * math.log(1 / delta)))
    assert advanced(per_query, k, delta).epsilon <= epsilon


def test_exponential_mechanism_theorem():
    assert theorems.exponential_mechanism_error(5, 2.0, 0.1, 3.0) == pytest.approx(2 * 3.0 / 2.0 * math.log(5 / 0.1))


def test_above_threshold_theorem_4():
    assert theorems.above_threshold_alpha(100, 0.5, 0.01) == pytest.approx(8 * (math.log(100) + math.log(200)) / 0.5)


def test_net_theorems():
    assert theorems.log_net_size_bound(10, 20, 0.5) == pytest.approx(math.ceil(math.log(20) / 0.25) * math.log(10))
    assert theorems.net_mechanism_alpha(0.2, 1.0, 0.1, 100, 0.01) == pytest.approx(0.2 + 0.02 * math.log(1000))


def test_factorization_bounds():
    assert theorems.factorization_error_bound(2.0, 6.0, 4) == pytest.approx(6.0)
    assert theorems.factorization_error_tail(2.0, 6.0, 1.0, 4, 0.1) == pytest.approx(
        2.0 * (6.0 + math.sqrt(2 * math.log(10))) / 2.0)


def test_binary_tree_bound_by_hand():
    # T = 8: L = 4, b = 4, J = 3 nodes at most, l = ln(16 / 0.5) = 3.47 > 3 -> sqrt(2) b (J + l)
    log_term = math.log(16 / 0.5)
    chernoff = math.sqrt(2) * 4 * (3 + log_term)
    union = 3 * 4 * math.log(15 / 0.5)
    assert theorems.binary_tree_error(8, 1.0, 0.5) == pytest.approx(min(chernoff, union))
    # l <= J branch: a long stream and a large beta
    length, beta = 2**20, 0.9
    levels, terms = 21, 20
    log_term = math.log(2 * length / beta)
    assert log_term <= terms
    assert theorems.binary_tree_error(length, 2.0, beta) <= levels / 2.0 * math.sqrt(8 * terms * log_term) + 1e-9


EXPECTED = {
    "laplace": (Guarantee(1.0), Laplace(1.0)),
    "laplace_k_queries": (Guarantee(1.0), SelfComposed(Laplace(3.0), 3)),
    "histogram": (Guarantee(1.0), Laplace(1.0)),
    "bounded_sum": (Guarantee(1.0), Laplace(1.0)),
    "exponential": (Guarantee(1.0), PureDP(1.0)),
    "report_noisy_max": (Guarantee(1.0), PureDP(1.0)),
    "above_threshold": (Guarantee(1.0), PureDP(1.0)),
    "net": (Guarantee(1.0), PureDP(1.0)),
    "binary_tree": (Guarantee(1.0), Laplace(1.0)),
    "randomized_response": (Guarantee(1.0), RandomizedResponse(1.0, 2)),
    "randomized_response_k4": (Guarantee(1.0), RandomizedResponse(1.0, 4)),
    "poisson_subsampled": (amplify(1.0, 0.0, 0.2), PoissonSampled(0.2, Laplace(1.0))),
}


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.name)
def test_privacy_declarations(example):
    mechanism = example.mechanism
    if example.name in EXPECTED:
        privacy, event = EXPECTED[example.name]
        assert mechanism.privacy == privacy and mechanism.event == event
    elif example.name.startswith("dpsgd"):  # DP-SGD declares its event and the PLD epsilon of it at delta
        from dpaudit.accountant import PLDAccountant

        expected = SelfComposed(PoissonSampled(mechanism.sampling_probability, Gaussian(mechanism.noise_multiplier)),
                                mechanism.steps)
        assert mechanism.event == expected
        assert mechanism.privacy == Guarantee(PLDAccountant().compose(expected).epsilon(mechanism.delta), mechanism.delta)
    elif "gaussian" in example.name or "factorization" in example.name:
        assert mechanism.privacy == Guarantee(1.0, 1e-5)
        assert mechanism.event == Gaussian(mechanism.sigma / mechanism.sensitivity)
    else:
        assert mechanism.privacy.epsilon == 1.0 and mechanism.event is not None
    assert repr(mechanism).startswith(type(mechanism).__name__ + "(")
    mechanism(example.data, 2, rng())
