"""PLD accountant at delta 1e-9 and 1e-10 with long and short DP-SGD runs against exact values pinned here.

The exact epsilons were computed by Laplace inversion of the exact moment generating function of the
subsampled Gaussian's privacy loss (``tests/accountant/_reference_mgf.py``, run by
``benchmarks/bench_small_delta_reference.py``; no loss grid, no truncation, no FFT; converged to ~1e-11
relative). At the first two points dp_accounting's pessimistic PLD (0.6.0, interval 1e-4 and 3e-4) returns
11.7588 and 500.98, below the exact value: its FFT round-off is not bounded at such deltas, so it is no
reference there.
"""

from __future__ import annotations

import pytest

from dpaudit.accountant import PLDAccountant
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

# (q, sigma, steps, delta, exact epsilon (both directions), exact epsilon of the add direction)
EXACT = [
    (5e-4, 0.55, 300_000, 1e-10, 11.8133077239, 8.08136089),
    (0.004, 0.55, 2_000_000, 1e-10, 502.566428302, 409.805421),
    (5e-4, 5.0, 2_000_000, 1e-9, 0.776611981127, 0.775974223),
]


# few steps (where the inversion needs a long t-range: its t-grid re-centred on the answer by one wide bisection):
# (q, sigma, steps, delta, exact epsilon of the deciding direction)
EXACT_FEW_STEPS = [
    (5e-4, 1.0, 3000, 1e-9, 0.252752921819),
    (0.25, 0.55, 50, 1e-9, 53.9530063893),
    (0.25, 1.0, 50, 1e-10, 19.8350707975),
    (0.25, 5.0, 50, 1e-5, 1.42474472483),
    (0.03, 0.55, 50, 1e-10, 15.4318691154),
]


def _accountant(q: float, sigma: float, steps: int) -> PLDAccountant:
    return PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps))


@pytest.mark.parametrize("q, sigma, steps, delta, exact, add", EXACT)
def test_upper_bound_is_sound_and_within_1e3_of_exact(q, sigma, steps, delta, exact, add):
    upper = _accountant(q, sigma, steps).epsilon(delta)
    assert exact * (1 - 1e-9) <= upper <= exact * (1 + 1e-3), (upper, exact)


@pytest.mark.parametrize("q, sigma, steps, delta, exact, add", EXACT[1:])
def test_certified_interval_contains_exact(q, sigma, steps, delta, exact, add):
    """The lower end is a proven lower bound: it must not exceed the exact value (the soundness question at
    these deltas), and it stays within 1% of it."""
    lower, upper = _accountant(q, sigma, steps).epsilon_interval(delta)
    assert 0.99 * exact <= lower <= exact * (1 + 1e-9) <= upper * (1 + 2e-9), (lower, upper, exact)


@pytest.mark.parametrize("q, sigma, steps, delta, exact", EXACT_FEW_STEPS)
def test_few_steps_interval_contains_exact_and_upper_within_1e3(q, sigma, steps, delta, exact):
    lower, upper = _accountant(q, sigma, steps).epsilon_interval(delta)
    assert lower <= exact * (1 + 1e-9) and exact * (1 - 1e-9) <= upper <= exact * (1 + 1e-3), (lower, upper, exact)
    assert upper / lower - 1 <= 0.01


def test_reference_mgf_is_the_gaussian_one_at_q_1():
    """The reference's MGF quadrature (the pinned values' source) against the Gaussian mechanism's closed form
    M(s) = e^{s (1 + s) mu^2 / 2} at complex s, to 1e-12 of M(Re s) (the scale the inversion's integrand is
    measured against; the phase of M(c + it) cancels to that absolute accuracy, not relative to |M(c + it)|)."""
    import numpy as np

    from ._reference_mgf import log_mgf

    s = np.array([0.5 + 0.0j, 2.0 + 1.5j, 7.0 + 4.0j, 0.2 + 30.0j])
    for sigma in (0.55, 2.0):
        ours = np.exp(log_mgf(1.0, sigma, s, "remove"))
        exact = np.exp(s * (1 + s) / (2 * sigma**2))
        scale = np.exp(s.real * (1 + s.real) / (2 * sigma**2))
        assert np.all(np.abs(ours - exact) <= 1e-12 * scale), (ours, exact)


def test_lower_end_below_small_delta_is_read_by_tilting_alone():
    """Below SMALL_DELTA (float budgets not plannable at 3e5 steps) the plain optimistic grid, whose float error
    exceeds the target, is not composed at all; the tilted lower end still brackets the exact value
    (93.1229702727, pinned from the same reference)."""
    acct = _accountant(0.03, 2.0, 300_000)
    lower, upper = acct.epsilon_interval(1e-10)
    assert lower <= 93.1229702727 <= upper <= 93.1229702727 * (1 + 1e-3)
    assert upper / lower - 1 < 0.005
    plain_lower = [key for key in acct._grids if key is False or (isinstance(key, tuple) and key[0] is False)]
    assert plain_lower == []
