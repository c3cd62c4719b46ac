"""PLD accountant: pinned values, reference tightness (dp_accounting, exact curves) and read-out rules."""

from __future__ import annotations

import math

import pytest

from dpaudit.accountant import PLDAccountant, gaussian_delta, gaussian_epsilon, optimal
from dpaudit.events import Gaussian, Laplace, PoissonSampled, PureDP, SelfComposed


def dpsgd(q: float, sigma: float, steps: int) -> SelfComposed:
    return SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)


# ------------------------------------------------------------------ pinned values (no reference file needed)
@pytest.mark.parametrize(("q", "sigma", "steps", "dpa"), [
    (0.01, 1.0, 1000, 1.8282436455855091),  # dp_accounting 0.6.0 pessimistic PLD
    (0.1, 2.0, 100, 2.337402),
    (0.001, 0.8, 1000, 0.3035736718147074),
])
def test_dpsgd_pinned_against_dp_accounting(q, sigma, steps, dpa):
    lower, upper = PLDAccountant().compose(dpsgd(q, sigma, steps)).epsilon_interval(1e-5)
    assert upper == pytest.approx(dpa, rel=0.01)
    assert lower <= upper
    assert upper >= dpa * (1 - 2e-3)  # dp_accounting's value is itself within ~0.1% above the truth


def test_k_fold_gaussian_is_above_exact_and_tight():
    exact = gaussian_epsilon(1e-5, math.sqrt(10) / 1.0)  # 17.8566
    lower, upper = PLDAccountant().compose(SelfComposed(Gaussian(1.0), 10)).epsilon_interval(1e-5)
    assert lower <= exact <= upper <= exact * 1.005


def test_gaussian_composition_is_merged_exactly():
    acct = PLDAccountant().compose(Gaussian(1.0)).compose(Gaussian(2.0), count=4)
    exact = gaussian_epsilon(1e-6, math.sqrt(1 + 4 / 4))
    assert exact <= acct.epsilon(1e-6) <= exact * 1.005


def test_delta_brackets_exact_gaussian_curve():
    acct = PLDAccountant().compose(SelfComposed(Gaussian(2.0), 5))
    mu = math.sqrt(5) / 2
    for eps in (0.0, 0.5, 1.0, 3.0):
        lower, upper = acct.delta_interval(eps)
        exact = gaussian_delta(eps, mu)
        assert lower <= exact <= upper <= exact * 1.01 + 1e-12
        assert acct.delta(eps) == upper


@pytest.mark.parametrize(("eps0", "k", "delta"), [(0.1, 100, 1e-5), (1.0, 1000, 1e-5), (0.01, 1000, 1e-9), (0.5, 10, 1e-9)])
def test_k_fold_pure_dp_matches_exact_optimal_composition(eps0, k, delta):
    exact = optimal(eps0, k, delta).epsilon
    lower, upper = PLDAccountant().compose(SelfComposed(PureDP(eps0), k)).epsilon_interval(delta)
    assert lower <= exact * (1 + 1e-9)
    assert exact * (1 - 1e-12) <= upper <= exact * 1.01


def test_pure_dp_never_exceeds_basic_composition():
    acct = PLDAccountant().compose(SelfComposed(PureDP(1.0), 10))
    assert acct.epsilon(1e-12) <= 10.0 + 1e-12
    assert acct.epsilon(0.0) == pytest.approx(10.0)
    assert acct.delta(10.0) == 0.0


def test_laplace_is_bracketed_by_its_dp_accounting_interval():
    lower, upper = PLDAccountant().compose(SelfComposed(Laplace(10.0), 100)).epsilon_interval(1e-5)
    dpa_lower, dpa_upper = 4.220123728594413, 4.2203473472201205  # dp_accounting 0.6.0 optimistic / pessimistic
    assert lower <= dpa_upper and upper >= dpa_lower
    assert upper <= dpa_upper * 1.01


def test_epsilon_and_delta_are_consistent():
    acct = PLDAccountant().compose(dpsgd(0.02, 1.2, 300))
    eps = acct.epsilon(1e-6)
    assert acct.delta(eps) <= 1e-6 * (1 + 1e-9)
    assert acct.delta(eps * 0.98) > 1e-6


def test_both_directions_are_reported():
    # add/remove Poisson sampling: the remove direction dominates for q = 0.01 (dp_accounting 1.8282 vs 0.4366 add)
    acct = PLDAccountant().compose(dpsgd(0.01, 0.8, 100))
    remove, add = acct._plds(True)
    assert remove.epsilon(1e-5) > add.epsilon(1e-5)
    assert acct.epsilon(1e-5) == pytest.approx(max(remove.epsilon(1e-5), add.epsilon(1e-5)), rel=1e-12)


def test_fixed_discretisation_interval_is_honoured_and_still_an_upper_bound():
    acct = PLDAccountant(discretisation_interval=1e-3).compose(SelfComposed(Gaussian(1.0), 10))
    assert acct.step() == 0.0  # unsampled Gaussians only: the exact GDP curve, no grid
    exact = gaussian_epsilon(1e-5, math.sqrt(10))
    assert exact <= acct.epsilon(1e-5) <= exact * (1 + 1e-9)
    sampled = PLDAccountant(discretisation_interval=1e-3).compose(SelfComposed(PoissonSampled(0.5, Gaussian(1.0)), 10))
    assert sampled.step() == 1e-3
    assert sampled.epsilon(1e-5) >= PLDAccountant().compose(SelfComposed(PoissonSampled(0.5, Gaussian(1.0)), 10)).epsilon_interval(1e-5)[0]


def test_empty_accountant_and_infinite_cases():
    acct = PLDAccountant()
    assert acct.epsilon(1e-5) == 0.0 and acct.delta(0.0) == 0.0
    assert PLDAccountant().compose(Gaussian(1.0)).epsilon(0.0) == math.inf


def test_numerical_error_is_tracked_and_small():
    acct = PLDAccountant().compose(dpsgd(0.01, 1.0, 10_000))
    remove, _ = acct._plds(True)
    assert 0 < remove.error < 1e-7  # documented: ~1e-8 after 10^4 steps
    eps = acct.epsilon(1e-5)
    assert eps == pytest.approx(6.187744975808358, rel=0.01)


def test_million_steps_is_fast_and_close_to_a_fine_grid():
    import time

    start = time.perf_counter()
    eps = PLDAccountant().compose(dpsgd(0.01, 1.0, 10**6)).epsilon(1e-5)
    assert time.perf_counter() - start < 5.0  # generous: shared CI machines
    assert eps == pytest.approx(139.32, rel=0.01)  # 139.32 with a 1e-3 grid


@pytest.mark.parametrize("bad", [-1.0, 1.0, float("nan")])
def test_invalid_target_delta(bad):
    with pytest.raises(ValueError, match="target_delta"):
        PLDAccountant().compose(Gaussian(1.0)).epsilon(bad)


def test_invalid_arguments_name_themselves():
    with pytest.raises(ValueError, match="target_epsilon"):
        PLDAccountant().delta(-1.0)
    with pytest.raises(ValueError, match="discretisation_interval"):
        PLDAccountant(discretisation_interval=0.0)
    with pytest.raises(ValueError, match="neighbouring"):
        PLDAccountant(neighbouring="swap")
    with pytest.raises(ValueError, match="count"):
        PLDAccountant().compose(Gaussian(1.0), count=0)
    with pytest.raises(TypeError, match="event"):
        PLDAccountant().compose("gaussian")


# ------------------------------------------------------------------ reference.json
def test_all_27_dpsgd_rows_within_1_percent_and_above_proven_lower_bound(reference):
    rows = reference["subsampled_gaussian"]
    assert len(rows) == 27
    for row in rows:
        acct = PLDAccountant().compose(dpsgd(row["q"], row["sigma"], row["steps"]))
        upper = acct.epsilon(row["delta"])
        assert upper == pytest.approx(row["dpa_pld_upper"], rel=0.01), row
        assert upper >= row["dpa_pld_optimistic_lower"], row


def test_gaussian_rows_above_exact_within_half_percent(reference):
    for row in reference["gaussian_composition"]:
        upper = PLDAccountant().compose(SelfComposed(Gaussian(row["sigma"]), row["k"])).epsilon(row["delta"])
        assert row["exact_analytic"] * (1 - 1e-12) <= upper <= row["exact_analytic"] * 1.005, row


def test_pure_dp_rows_above_exact_within_1_percent(reference):
    for row in reference["pure_dp_composition"]:
        upper = PLDAccountant().compose(SelfComposed(PureDP(row["eps0"]), row["k"])).epsilon(row["delta"])
        assert row["optimal_exact"] * (1 - 1e-12) <= upper <= row["optimal_exact"] * 1.01, row
