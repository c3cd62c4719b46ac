"""The random-allocation family: upper and lower ends bracket an independent quadrature, special cases, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import Composed, Gaussian, PoissonSampled, RandomAllocation, SelfComposed
from dpaudit.events_parser import parse_event


def _two_step_reference(z: float, delta: float) -> float:
    """epsilon of one record allocated to one of two Gaussian steps, by Gauss-Hermite quadrature over the
    two noise coordinates (independent of the family's FFT): max over the remove and add directions."""
    s = 1.0 / z
    nodes, weights = np.polynomial.hermite_e.hermegauss(160)
    weights = weights / weights.sum()
    g1, g2 = np.meshgrid(nodes, nodes, indexing="ij")
    w = np.outer(weights, weights)
    q_sum = np.exp(s * g1 - s * s / 2) + np.exp(s * g2 - s * s / 2)  # S under Q
    p_sum = np.exp(s * g1 + s * s / 2) + np.exp(s * g2 - s * s / 2)  # S under P (the record in step 1)

    def remove(eps):
        return float((w * np.maximum(0.0, 1.0 - 2.0 * math.exp(eps) / p_sum)).sum())

    def add(eps):
        return float((w * np.maximum(0.0, 1.0 - math.exp(eps) * q_sum / 2.0)).sum())

    def solve(curve):
        lo, hi = 0.0, 20.0
        for _ in range(80):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if curve(mid) > delta else (lo, mid)
        return hi

    return max(solve(remove), solve(add))


def test_interval_brackets_the_two_step_quadrature():
    low, high = PLDAccountant().compose(RandomAllocation(2.0, 2)).epsilon_interval(1e-4)
    reference = _two_step_reference(2.0, 1e-4)
    assert low <= reference <= high
    assert high <= low * 1.02


def test_one_step_is_the_gaussian():
    low, high = PLDAccountant().compose(RandomAllocation(2.0, 1)).epsilon_interval(1e-6)
    exact = PLDAccountant().compose(Gaussian(2.0)).epsilon(1e-6)
    assert low <= exact * (1 + 1e-6) and exact <= high * (1 + 1e-6)
    assert high <= low * 1.01


def test_allocation_is_close_to_poisson_sampling_and_composes():
    epochs = SelfComposed(RandomAllocation(2.0, 10), 3)
    low, high = PLDAccountant().compose(epochs).epsilon_interval(1e-6)
    poisson = PLDAccountant().compose(SelfComposed(PoissonSampled(0.1, Gaussian(2.0)), 30)).epsilon(1e-6)
    assert 0 < low <= high <= poisson * 1.1
    with_gaussian = PLDAccountant().compose(Composed([epochs, Gaussian(5.0)])).epsilon(1e-6)
    assert with_gaussian > high


def test_outside_its_analysis_is_refused_and_bad_input_is_named():
    with pytest.raises(UnsupportedEventError, match="add_remove"):
        PLDAccountant(neighbouring="replace_one").compose(RandomAllocation(1.0, 10))
    with pytest.raises(UnsupportedEventError, match="its own sampling"):
        PLDAccountant().compose(PoissonSampled(0.5, RandomAllocation(1.0, 10)))
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().compose(RandomAllocation(1.0, 10))
    with pytest.raises(InvalidArgument, match="num_steps"):
        RandomAllocation(1.0, 0)
    with pytest.raises(InvalidArgument, match="noise_multiplier"):
        RandomAllocation(-1.0, 10)
    assert parse_event("RandomAllocation(1.5, 100)") == RandomAllocation(1.5, 100)
