"""Small picklable mechanisms several benchmarks audit, and the witness-search cases two of them share."""

from __future__ import annotations

import math

import numpy as np


class DiscreteLaplace:
    """x + G1 - G2 with G1, G2 ~ Geometric(1 - e^-noise_epsilon): P[k] proportional to e^(-noise_epsilon |k - x|)."""

    def __init__(self, noise_epsilon: float) -> None:
        self.noise_epsilon = noise_epsilon

    def __call__(self, data, size, rng):
        p = 1.0 - math.exp(-self.noise_epsilon)
        return data[0] + rng.geometric(p, size) - rng.geometric(p, size)


class RareNaN:
    """Laplace noise of scale 1 whose outputs are NaN with probability 5e-5 on an input above 0 (epsilon infinite)."""

    def __call__(self, data, size, rng):
        out = data[0] + rng.laplace(0.0, 1.0, size)
        if data[0] > 0:
            out[rng.random(size) < 5e-5] = np.nan
        return out


def witness_cases() -> list[tuple]:
    """(name, mechanism, d, d_prime, claimed epsilon, true epsilon) of the witness search's hard cases: tiny epsilon
    on integers (a 2x twin and a correct mechanism) and a rare NaN branch."""
    return [("discrete Laplace, noise 0.004 on a shift of 2 (2x twin)", DiscreteLaplace(0.004), [0.0], [2.0], 0.004, 0.008),
            ("discrete Laplace, noise 0.005 on a shift of 2 (correct)", DiscreteLaplace(0.005), [0.0], [2.0], 0.01, 0.01),
            ("Laplace with a NaN branch p = 5e-5", RareNaN(), [0.0], [1.0], 1.0, math.inf)]
