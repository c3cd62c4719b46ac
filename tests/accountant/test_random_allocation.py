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
    """epsilon of one record allocated to one of two Gaussian steps (independent of the family's FFT): the
    hockey-stick curves as iterated integrals over the two noise coordinates, the outer by Gauss-Hermite,
    the inner by Gauss-Legendre over the smooth region beyond the kink; max over the remove and add
    directions, each solved by bisection."""
    s = 1.0 / z
    outer, outer_w = np.polynomial.hermite_e.hermegauss(120)
    outer_w = outer_w / outer_w.sum()
    unit, unit_w = np.polynomial.legendre.leggauss(200)

    def inner(lo, hi, f):  # integral of phi(g) f(g) over [lo, hi], per outer node
        mid, half = (hi + lo) / 2, (hi - lo) / 2
        g = mid[:, None] + half[:, None] * unit[None, :]
        phi = np.exp(-g * g / 2) / math.sqrt(2 * math.pi)
        return (half[:, None] * unit_w[None, :] * phi * f(g)).sum(axis=1)

    def remove(eps):  # E_P[(1 - 2 e^eps / S)_+], S = e^{s g1 + s^2/2} + e^{s g2 - s^2/2}
        y2 = np.exp(s * outer - s * s / 2)
        room = 2 * math.exp(eps) - y2
        lo = np.where(room > 0, (np.log(np.maximum(room, 1e-300)) - s * s / 2) / s, -14.0)
        lo = np.maximum(lo, -14.0)
        hi = np.maximum(lo, 14.0)
        values = inner(lo, hi, lambda g: 1 - 2 * math.exp(eps) / (np.exp(s * g + s * s / 2) + y2[:, None]))
        return float((outer_w * values).sum())

    def add(eps):  # E_Q[(1 - e^eps S / 2)_+], S = e^{s g1 - s^2/2} + e^{s g2 - s^2/2}
        y2 = np.exp(s * outer - s * s / 2)
        room = 2 * math.exp(-eps) - y2
        hi = np.where(room > 0, (np.log(np.maximum(room, 1e-300)) + s * s / 2) / s, -14.0)
        hi = np.minimum(np.maximum(hi, -14.0), 14.0)
        values = inner(np.full_like(hi, -14.0), hi,
                       lambda g: 1 - math.exp(eps) * (np.exp(s * g - s * s / 2) + y2[:, None]) / 2)
        return float((outer_w * np.where(room > 0, values, 0.0)).sum())

    def solve(curve):
        lo, hi = 0.0, 20.0
        for _ in range(60):
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
    with pytest.raises(UnsupportedEventError, match="its own sampling"):
        PLDAccountant().compose(PoissonSampled(0.5, RandomAllocation(1.0, 10)))
    with pytest.raises(UnsupportedEventError):
        RDPAccountant().compose(RandomAllocation(1.0, 10))
    with pytest.raises(InvalidArgument, match="num_steps"):
        RandomAllocation(1.0, 0)
    with pytest.raises(InvalidArgument, match="noise_multiplier"):
        RandomAllocation(-1.0, 10)
    assert parse_event("RandomAllocation(1.5, 100)") == RandomAllocation(1.5, 100)
