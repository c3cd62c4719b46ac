"""The PLD accountant's per-configuration grid planning and its float-error control: squarings that keep their
error bound (plain, peak split off, extended precision) against exact integer convolutions; the planned upper
bound against an independent fine-grid reference; long compositions keep a small error floor."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ._reference_pld import reference_epsilon
from dpaudit.accountant import PLDAccountant
from dpaudit.accountant.pld_core.grid import (GridPLD, _compose_split, _convolve, _split_peak, compose_split_error,
                                              convolution_error, squaring_error)
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

_SCALE = 2**20  # dyadic masses k / 2^20: every product and every sum of the convolution is exact in int64


def _dyadic_peaked(seed: int, size: int, peak_at: int, peak_width: int, tail_share: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    weights = rng.random(size) * tail_share / size
    lo = min(peak_at, size - peak_width)
    weights[lo:lo + peak_width] += rng.random(peak_width) / peak_width
    return np.floor(weights / weights.sum() * (_SCALE - size)).astype(np.int64)


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), size=st.integers(100, 3000), peak_at=st.integers(0, 3000),
       peak_width=st.integers(5, 300), tail_share=st.sampled_from([1e-6, 1e-3, 0.05, 0.5, 5.0]),
       path=st.sampled_from(["plain", "split", "precise"]))
def test_squaring_stays_within_its_error_bound(seed, size, peak_at, peak_width, tail_share, path):
    """Every squaring path (float64 FFT; the peak split off and summed in extended precision; extended-precision
    FFTs) returns masses within its stated l1 error bound of the exact convolution (dyadic masses, exact in
    int64), and only removes mass below its noise level on the declared (pessimistic) side."""
    counts = _dyadic_peaked(seed, size, peak_at, min(peak_width, size), tail_share)
    pmf = counts / _SCALE
    exact = np.convolve(counts, counts) / float(_SCALE) ** 2
    pld = GridPLD(0.01, -5, pmf, 0.0, 0.0, True)
    if path == "plain":
        budget = math.inf
    elif path == "split":
        if _split_peak(pmf) is None:
            return  # the peak holds too little mass to split: the squaring runs in extended precision instead
        budget = convolution_error(pmf) * 0.999
    else:
        budget = 0.0
    square = pld.square(tail_mass=0.0, error_budget=budget)
    assert square.step == pld.step and square.pessimistic
    full = np.zeros(exact.size)
    start = square.offset - 2 * pld.offset
    full[start:start + square.pmf.size] = square.pmf
    moved_up = square.inf_mass  # cells cut from the top go to +inf; those cut from the bottom are raised
    assert np.abs(full - exact).sum() <= square.error + moved_up + 2 * float(exact[:start].sum()) + 1e-300
    if path != "plain":
        assert square.error <= budget or path == "precise"
    assert square.error <= convolution_error(pmf) * 1.0001 + 1e-300 or path == "plain"


@settings(max_examples=25, deadline=None, derandomize=True)
@given(seed=st.integers(0, 2**31), sizes=st.tuples(st.integers(100, 3000), st.integers(100, 3000)),
       peaks=st.tuples(st.integers(0, 3000), st.integers(0, 3000)), peak_width=st.integers(5, 300),
       tail_share=st.sampled_from([1e-6, 1e-3, 0.05]))
def test_composition_with_both_peaks_split_off_stays_within_its_error_bound(seed, sizes, peaks, peak_width, tail_share):
    """The product of two different peaked vectors with both peaks split off (the tilted read-out's compositions
    that need a small float error) is within its stated l1 error bound of the exact convolution (dyadic masses,
    exact in int64), and that bound is far below the plain float64 FFT's where the mass sits in the peaks."""
    a = _dyadic_peaked(seed, sizes[0], peaks[0], min(peak_width, sizes[0]), tail_share)
    b = _dyadic_peaked(seed + 1, sizes[1], peaks[1], min(peak_width, sizes[1]), tail_share)
    split_a, split_b = _split_peak(a / _SCALE), _split_peak(b / _SCALE)
    if split_a is None or split_b is None:
        assert compose_split_error(a / _SCALE, b / _SCALE) == math.inf
        return
    out, error, level = _compose_split(a / _SCALE, b / _SCALE, split_a, split_b)
    exact = np.convolve(a, b) / float(_SCALE) ** 2
    assert out.size == exact.size and level >= 0.0
    assert np.abs(out - exact).sum() <= error
    assert error == compose_split_error(a / _SCALE, b / _SCALE)
    if tail_share <= 1e-3:  # the rest's norms are small: the split bound is below the plain float64 FFT's
        assert error < _convolve(a / _SCALE, b / _SCALE)[1]


def test_squaring_error_predicts_the_charged_bound():
    """squaring_error (computed from the norms, no convolution) equals the float error a squaring charges on the
    plain and split paths and is a lower bound on the extended-precision path's (which adds the cells' floor)."""
    counts = _dyadic_peaked(7, 2000, 900, 40, 1e-3)
    pld = GridPLD(0.01, 0, counts / _SCALE, 0.0, 0.0, True)
    plain = convolution_error(pld.pmf)
    for budget in (math.inf, 0.999 * plain, 0.0):
        charged = pld.square(tail_mass=0.0, error_budget=budget).error
        predicted = squaring_error(pld.pmf, budget)
        assert predicted <= charged <= predicted * (1 + 1e-9) + 4000 * 1e-250


def test_long_composition_keeps_a_small_float_error_floor():
    """10^6 DP-SGD steps: the FFT error charged to delta stays far below the target delta (before extended
    precision and the peak split it was 1e-6 at 10^6 steps, a tenth of delta = 1e-5)."""
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.001, Gaussian(1.0)), 10**6))
    value = acct.epsilon(1e-5)
    remove = acct._upper("remove")[0]
    assert remove.error + remove.inf_mass < 1e-8
    assert math.isfinite(value) and value <= acct.rdp(np.array([2.0]))[0] * 10**6  # a sanity bracket


@settings(max_examples=6, deadline=None, derandomize=True)
@given(q=st.floats(0.01, 0.2), sigma=st.floats(1.0, 2.0), steps=st.integers(5, 40))
def test_planned_upper_bound_is_sound_and_tight_against_an_independent_reference(q, sigma, steps):
    """The automatic grid's epsilon is never below an independent fine-grid lower bound on the exact value and
    within 0.1% of its upper bound (remove direction, which decides DP-SGD at delta = 1e-5)."""
    ref_lower, ref_upper = reference_epsilon(q, sigma, None, steps, 1e-5, step=2e-4)
    ours = PLDAccountant().compose(SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)).epsilon(1e-5)
    assert ref_lower <= ours <= ref_upper * (1 + 1e-3), (ours, ref_lower, ref_upper)


@pytest.mark.parametrize(("q", "sigma", "steps"), [(0.001, 0.6, 100_000), (0.1, 1.0, 1000)])
def test_planned_leaf_grid_follows_the_target_excess(q, sigma, steps):
    """The planned upper grid is finer for a tighter target (the plan scales the leaf step as sqrt of it)."""
    import dpaudit.accountant.pld as pld_module

    event = SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)
    default = PLDAccountant().compose(event).leaf_step()
    original = pld_module.TARGET_EXCESS
    try:
        pld_module.TARGET_EXCESS = original / 16
        finer = PLDAccountant().compose(event).leaf_step()
    finally:
        pld_module.TARGET_EXCESS = original
    assert finer < default / 2
