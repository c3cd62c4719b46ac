"""Small module-level (picklable) mechanisms with known epsilon, for auditor tests."""

from __future__ import annotations

import math

import numpy as np


def laplace_unit(data, size, rng):
    """y = x + Lap(1): exactly 1-DP for |x - x'| <= 1; the pair [0] -> [1] has epsilon 1."""
    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)


def randomized_response_1(data, size, rng):
    """Binary randomized response with epsilon = 1 on the bit data[0]."""
    keep = rng.random(size) < np.e / (1 + np.e)
    return np.where(keep, data[0], 1 - data[0])


def exponential_noisy_max(data, size, rng):
    """argmax(q + Exp(2)): 1-DP; the pair [1]*5 -> [0,2,2,2,2] has epsilon exactly 1."""
    return np.argmax(np.asarray(data, float)[None, :] + rng.exponential(2.0, (size, len(data))), axis=1)


def noisy_max_value(data, size, rng):
    """Returns the noisy maximum itself: claimed 1-DP but 2.5-DP on [0]*5 -> [1]*5."""
    return np.max(np.asarray(data, float)[None, :] + rng.laplace(0.0, 2.0, (size, len(data))), axis=1)


def histogram(data, size, rng):
    return np.asarray(data, float)[None, :] + rng.laplace(0.0, 1.0, (size, len(data)))


def svt_without_query_noise(data, size, rng):
    rho = rng.laplace(0.0, 2.0, (size, 1))
    return np.where(np.asarray(data, float)[None, :] >= 1.0 + rho, 1, 0)


def gaussian_half_sigma(data, size, rng):
    sigma = np.sqrt(2 * np.log(1.25 / 1e-5)) / 2.0
    return np.asarray(data, float)[0] + rng.normal(0.0, sigma, size)


def sentinel_or_value(data, size, rng):
    """Mixed output: NaN (a sentinel) or a Laplace value, each with probability 1/2, independent of data
    for the sentinel and 1-DP in the value: overall 1-DP for [0] -> [1]."""
    value = np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)
    return np.where(rng.random(size) < 0.5, np.nan, value)


def crashes(data, size, rng):
    raise ZeroDivisionError("boom")


def wrong_length(data, size, rng):
    return np.zeros(size + 1)


def strings(data, size, rng):
    return np.array(["a"] * size)


def width_depends_on_data(data, size, rng):
    return np.zeros((size, len(data)))


class DiscreteLaplace:
    """x + G1 - G2, P[k] proportional to e^(-noise_epsilon |k - x|): noise_epsilon * |x - x'|-DP (picklable)."""

    def __init__(self, noise_epsilon: float) -> None:
        self.noise_epsilon = noise_epsilon

    def __call__(self, data, size, rng):
        p = 1.0 - math.exp(-self.noise_epsilon)
        return data[0] + rng.geometric(p, size) - rng.geometric(p, size)
