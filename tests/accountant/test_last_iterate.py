"""The last-iterate heuristic: against direct numerical integration, the Gaussian special case, the
mixture-of-Gaussians PLD, monotonicity, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.integrate import quad
from scipy.stats import binom, norm

from dpaudit import accountant
from dpaudit.accountant import gdp_epsilon
from dpaudit.accountant.last_iterate import last_iterate_delta
from dpaudit.errors import InvalidArgument, InvalidArgumentType


def _integrated_delta(sigma: float, q: float, steps: int, epsilon: float) -> float:
    """max of both hockey-stick divergences by quadrature of (p - e^eps q)_+ over the real line."""
    s = sigma * math.sqrt(steps)
    k = np.arange(steps + 1)
    w = binom.pmf(k, steps, q)

    def p(x: float) -> float:
        return float(np.dot(w, norm.pdf(x, loc=k, scale=s)))

    def q_(x: float) -> float:
        return float(norm.pdf(x, scale=s))

    lo, hi = -12 * s, steps + 12 * s
    points = list(np.linspace(lo, hi, 41))
    forward = quad(lambda x: max(p(x) - math.exp(epsilon) * q_(x), 0.0), lo, hi, points=points, limit=400,
                   epsabs=1e-13)[0]
    backward = quad(lambda x: max(q_(x) - math.exp(epsilon) * p(x), 0.0), lo, hi, points=points, limit=400,
                    epsabs=1e-13)[0]
    return max(forward, backward)


@pytest.mark.parametrize("sigma,q,steps,epsilon", [(1.0, 0.1, 10, 1.0), (0.6, 0.3, 8, 2.0), (2.0, 0.5, 20, 0.3)])
def test_delta_matches_direct_integration(sigma, q, steps, epsilon):
    ours = last_iterate_delta(noise_multiplier=sigma, sampling_probability=q, steps=steps, epsilon=epsilon)
    assert ours == pytest.approx(_integrated_delta(sigma, q, steps, epsilon), rel=1e-6, abs=1e-12)


def test_epsilon_inverts_the_integrated_curve():
    sigma, q, steps, delta = 0.8, 0.2, 12, 1e-3
    eps = accountant.last_iterate_epsilon(noise_multiplier=sigma, sampling_probability=q, steps=steps, delta=delta)
    assert _integrated_delta(sigma, q, steps, eps) <= delta * (1 + 1e-6)
    assert _integrated_delta(sigma, q, steps, eps * (1 - 1e-4)) > delta


def test_full_batch_is_gaussian():
    """q = 1: P = N(T, sigma^2 T) against N(0, sigma^2 T), i.e. sqrt(T)/sigma-GDP."""
    for sigma, steps in ((1.0, 1), (5.0, 100), (0.7, 30)):
        ours = accountant.last_iterate_epsilon(noise_multiplier=sigma, sampling_probability=1.0, steps=steps, delta=1e-5)
        assert ours == pytest.approx(gdp_epsilon(math.sqrt(steps) / sigma, 1e-5), rel=1e-9)


def test_matches_the_mixture_of_gaussians_pld():
    from dpaudit.accountant import PLDAccountant
    from dpaudit.events import MixtureOfGaussians

    sigma, q, steps = 1.0, 0.3, 8
    k = np.arange(steps + 1)
    w = binom.pmf(k, steps, q)
    keep = w > 1e-30
    pld = PLDAccountant().compose(MixtureOfGaussians(sigma * math.sqrt(steps), list(k[keep].astype(float)),
                                                     list(w[keep] / w[keep].sum()))).epsilon(1e-5)
    ours = accountant.last_iterate_epsilon(noise_multiplier=sigma, sampling_probability=q, steps=steps, delta=1e-5)
    assert ours <= pld <= ours * (1 + 1e-5)  # the PLD is a pessimistic discretisation of the same curve


@settings(max_examples=4, deadline=None)
@given(st.floats(0.5, 5.0), st.floats(0.01, 1.0), st.integers(1, 30))
def test_more_noise_less_epsilon(sigma, q, steps):
    a = accountant.last_iterate_epsilon(noise_multiplier=sigma, sampling_probability=q, steps=steps, delta=1e-5)
    b = accountant.last_iterate_epsilon(noise_multiplier=1.5 * sigma, sampling_probability=q, steps=steps, delta=1e-5)
    assert 0.0 <= b <= a


def test_below_the_composition_bound():
    """The last iterate never reveals more than all the iterates (the accountant's upper bound)."""
    from dpaudit.accountant import dpsgd_epsilon

    heuristic = accountant.last_iterate_epsilon(noise_multiplier=1.0, sampling_probability=0.1, steps=100, delta=1e-5)
    assert heuristic < dpsgd_epsilon(noise_multiplier=1.0, target_delta=1e-5, sampling_probability=0.1, steps=100)


@pytest.mark.parametrize("kwargs,name", [
    ({"noise_multiplier": 0.0}, "noise_multiplier"),
    ({"noise_multiplier": float("nan")}, "noise_multiplier"),
    ({"sampling_probability": 0.0}, "sampling_probability"),
    ({"sampling_probability": 1.5}, "sampling_probability"),
    ({"steps": 0}, "steps"),
    ({"steps": 2.5}, "steps"),
    ({"delta": 0.0}, "delta"),
    ({"delta": 1.0}, "delta"),
])
def test_bad_input_names_the_argument(kwargs, name):
    args = {"noise_multiplier": 1.0, "sampling_probability": 0.1, "steps": 10, "delta": 1e-5, **kwargs}
    with pytest.raises(InvalidArgument, match=name):
        accountant.last_iterate_epsilon(**args)


def test_wrong_type_is_a_type_error():
    with pytest.raises(InvalidArgumentType, match="noise_multiplier"):
        accountant.last_iterate_epsilon(noise_multiplier="1", sampling_probability=0.1, steps=10, delta=1e-5)
