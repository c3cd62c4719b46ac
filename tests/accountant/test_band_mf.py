"""BandMF / DP-FTRL: b-min-separated sensitivity against a brute force over participation patterns, the
cyclic-Poisson amplified form, composition and bad input."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.errors import InvalidArgument, UnsupportedEventError
from dpaudit.events import BandMF, Composed, Gaussian, PoissonSampled, SelfComposed, to_dp_accounting
from dpaudit.events_parser import parse_event


def _brute_force_sensitivity(coefficients: np.ndarray, n: int, b: int) -> float:
    """max ||C u||_2 over participation vectors u in {0,1}^n whose ones are at least b apart (C: the
    lower-triangular banded Toeplitz matrix with these first-column coefficients)."""
    c = np.zeros((n, n))
    for j in range(n):
        for i, value in enumerate(coefficients):
            if j + i < n:
                c[j + i, j] = value
    best = 0.0
    for size in range(1, n + 1):
        for steps in itertools.combinations(range(n), size):
            if all(b2 - b1 >= b for b1, b2 in zip(steps, steps[1:])):
                u = np.zeros(n)
                u[list(steps)] = 1.0
                best = max(best, float(np.linalg.norm(c @ u)))
    return best


@pytest.mark.parametrize("n,b", [(9, 3), (10, 3), (8, 2)])
def test_min_separated_sensitivity_bounds_every_participation_pattern(n, b):
    rng = np.random.default_rng(n * 10 + b)
    coefficients = rng.uniform(0.1, 1.0, size=b)
    column_norm = float(np.linalg.norm(coefficients))
    event = BandMF(1.0, b, n, column_norm=column_norm)
    bound = math.sqrt(event.participations) * column_norm
    brute = _brute_force_sensitivity(coefficients, n, b)
    assert brute <= bound * (1 + 1e-12)
    if n % b == 0:  # every record's columns are complete: the bound is attained
        assert brute == pytest.approx(bound, rel=1e-12)


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_min_separated_bandmf_is_the_gaussian_at_its_sensitivity(neighbouring):
    ours = PLDAccountant(neighbouring=neighbouring).compose(BandMF(4.0, 100, 1000)).epsilon(1e-6)
    gaussian = PLDAccountant(neighbouring=neighbouring).compose(Gaussian(4.0 / math.sqrt(10))).epsilon(1e-6)
    assert ours == pytest.approx(gaussian, rel=1e-9)


def test_amplified_bandmf_is_dp_sgd_over_n_over_b_steps():
    amplified = BandMF(1.0, 10, 1000, sampling_probability=0.01)
    dpsgd = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 100)
    for accountant in (PLDAccountant, RDPAccountant):
        assert accountant().compose(amplified).epsilon(1e-6) == pytest.approx(
            accountant().compose(dpsgd).epsilon(1e-6), rel=1e-9)
    one_band = BandMF(1.0, 1, 100, sampling_probability=0.01)  # b = 1 is DP-SGD itself
    assert PLDAccountant().compose(one_band).epsilon(1e-6) == pytest.approx(
        PLDAccountant().compose(dpsgd).epsilon(1e-6), rel=1e-9)
    both = PLDAccountant().compose(Composed([amplified, Gaussian(5.0)])).epsilon(1e-6)
    assert both > PLDAccountant().compose(amplified).epsilon(1e-6)


def test_bad_input_and_relations_outside_the_analysis():
    with pytest.raises(InvalidArgument, match="num_bands"):
        BandMF(1.0, 11, 10)
    with pytest.raises(InvalidArgument, match="column_norm"):
        BandMF(1.0, 2, 10, column_norm=0.0)
    with pytest.raises(InvalidArgument, match="sampling_probability"):
        BandMF(1.0, 2, 10, sampling_probability=1.5)
    with pytest.raises(UnsupportedEventError, match="add_remove"):
        PLDAccountant(neighbouring="replace_one").compose(BandMF(1.0, 2, 10, sampling_probability=0.1))
    assert parse_event("BandMF(1.0, 4, 100, 0.05)") == BandMF(1.0, 4, 100, 0.05)


def test_conversion_to_dp_accounting_is_refused_with_the_reason():
    pytest.importorskip("dp_accounting")
    with pytest.raises(UnsupportedEventError, match="banded matrix factorisation"):
        to_dp_accounting(BandMF(1.0, 2, 10))
