"""The accountant at the edges (issue 19): tiny delta against an independent mpmath reference, exact zeros,
no float warnings, sampled sub-trees and sampling with replacement against independent references, the
minimum of every sound bound, the certified interval, and calibration of any parameter (with its bad
inputs)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.special import ndtr
from scipy.stats import binom

from ._reference_pld import reference_epsilon
from ._reference_small_delta import reference_epsilons
from dpaudit.accountant import PLDAccountant, RDPAccountant, calibrate, epsilon_upper
from dpaudit.cli import main
from dpaudit.errors import InfeasibleBudgetError, InvalidArgument, InvalidArgumentType, UnsupportedEventError
from dpaudit.events import (
    Composed,
    Gaussian,
    Laplace,
    PoissonSampled,
    PureDP,
    SampledWithoutReplacement,
    SampledWithReplacement,
    SelfComposed,
)

SMALL = (1e-10, 1e-15, 1e-20, 1e-30)

# The independent references' brackets [lower, upper] on the exact epsilon, as computed by
# `_reference_small_delta.reference_epsilons` and `_reference_pld.reference_epsilon` (7 s of CPU;
# `python -m pytest -m slow` recomputes them in `test_stored_references_are_what_the_references_compute`).
SMALL_DELTA_REFERENCE = [(2.112789427755736, 2.1628881569711105), (3.639820251867409, 3.689921282782146),
                         (5.005500448473275, 5.055604603663094), (7.763412903547464, 7.813575329793942)]
GAUSS_LAPLACE_50_REFERENCE = (3.2039735569040992, 3.208974022610503)  # q 0.05, sigma 1, b 2, 50 steps, delta 1e-5
WOR_REFERENCE = {1: (6.2399530603226045, 6.240053067267811), 5: (8.461530535795768, 8.462032103838503)}


@pytest.mark.slow
def test_stored_references_are_what_the_references_compute():
    assert reference_epsilons(0.01, 1.0, 100, SMALL) == SMALL_DELTA_REFERENCE
    assert reference_epsilon(0.05, 1.0, 2.0, 50, 1e-5, step=2e-4) == GAUSS_LAPLACE_50_REFERENCE
    assert {s: reference_epsilon(0.05, 0.5, 1.0, s, 1e-5, step=2e-4) for s in (1, 5)} == WOR_REFERENCE


def dpsgd(q: float, sigma: float, steps: int) -> SelfComposed:
    return SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)


# --------------------------------------------------------------------------- tiny delta
def test_small_delta_100_steps_against_mpmath_reference():
    """Target: finite at delta in {1e-10, ..., 1e-30} (100 DP-SGD steps, q = 0.01, sigma = 1), never below
    the reference's lower bound on the exact value, within 1% of its upper bound."""
    refs = SMALL_DELTA_REFERENCE
    acct = PLDAccountant().compose(dpsgd(0.01, 1.0, 100))
    for delta, (ref_lower, ref_upper) in zip(SMALL, refs):
        assert ref_lower <= ref_upper <= 1.03 * ref_lower  # the reference brackets the exact value
        ours = acct.epsilon(delta)
        assert math.isfinite(ours)
        assert ref_lower <= ours <= 1.01 * ref_upper, (delta, ours, ref_lower, ref_upper)
        lower, upper = acct.epsilon_interval(delta)
        assert upper == ours and lower <= ref_upper and lower >= 0.99 * upper
    # the add direction's losses are <= -ln(1 - q) per step, so its delta vanishes above 100 * 0.01005
    assert -100 * math.log1p(-0.01) < min(r[0] for r in refs)


def test_small_delta_10k_steps_finite_monotone_and_certified():
    acct = PLDAccountant().compose(dpsgd(0.01, 1.0, 10_000))
    values = [acct.epsilon(delta) for delta in SMALL]
    assert all(math.isfinite(v) for v in values)
    assert values == sorted(values)
    rdp = RDPAccountant().compose(dpsgd(0.01, 1.0, 10_000))
    assert all(v <= rdp.epsilon(delta) for v, delta in zip(values, SMALL))
    lower, upper = acct.epsilon_interval(1e-30)
    assert upper == values[-1] and 0.99 * upper <= lower <= upper


def test_exact_zeros_are_zeros():
    for event in (Gaussian(1.0), dpsgd(0.01, 1.0, 100)):
        pld = PLDAccountant().compose(event)
        assert pld.epsilon(0.999999) == 0.0
        assert pld.epsilon(0.9) == 0.0
        assert pld.epsilon_interval(0.999999) == (0.0, 0.0)
        assert RDPAccountant().compose(event).epsilon(0.999999) == 0.0
        assert epsilon_upper(event, 0.999999).epsilon == 0.0
    assert PLDAccountant().compose(Laplace(1.0)).delta(1.0) == 0.0


@pytest.mark.parametrize("q, sigma, steps", [(0.3, 0.5, 20), (0.9, 0.3, 5), (0.01, 0.2, 50)])
def test_no_float_warnings_for_large_losses(q, sigma, steps):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        acct = PLDAccountant().compose(dpsgd(q, sigma, steps))
        assert math.isfinite(acct.epsilon(1e-5))
        acct.epsilon_interval(1e-12)


# --------------------------------------------------------------------------- sampled sub-trees
def test_subsampled_gaussian_laplace_within_0_1_percent_of_fine_grid():
    """Target: PoissonSampled(q, Composed([Gaussian, Laplace])) within 0.1% of an independent fine-grid PLD."""
    ref_lower, ref_upper = GAUSS_LAPLACE_50_REFERENCE
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.05, Composed(Gaussian(1.0), Laplace(2.0))), 50))
    lower, upper = acct.epsilon_interval(1e-5)
    assert ref_lower <= upper <= 1.001 * ref_upper, (upper, ref_lower, ref_upper)
    assert lower <= ref_upper


def test_without_replacement_sub_tree_against_fine_grid():
    """WOR under replace-one: one step's curve is the Poisson "remove" curve of the replace-one base pair
    (sensitivity 2C: sigma/2 and b/2 at sensitivity C) for eps >= 0 (Dong, Roth & Su 2022, Thm 4.2), its
    mirror image below; composed, the mirror part adds delta, so the remove-only composition is a lower
    bound there."""
    tree = SampledWithoutReplacement(1000, 50, Composed(Gaussian(1.0), Laplace(2.0)))
    for steps, tight in ((1, True), (5, False)):
        ref_lower, ref_upper = WOR_REFERENCE[steps]
        ours = PLDAccountant("replace_one").compose(SelfComposed(tree, steps)).epsilon(1e-5)
        assert ref_lower <= ours, (steps, ours, ref_lower)
        if tight:
            assert ours <= 1.001 * ref_upper, (ours, ref_upper)


def _gaussian_delta(eps: float, mu: float) -> float:
    """Exact delta(eps) of N(mu, 1) vs N(0, 1) (Balle & Wang 2018)."""
    if mu == 0:
        return 0.0
    return float(ndtr(mu / 2 - eps / mu) - math.exp(eps) * ndtr(-mu / 2 - eps / mu))


@pytest.mark.parametrize("source, sample, sigma", [(100, 10, 1.0), (50, 20, 2.0)])
def test_with_replacement_against_binomial_mixture(source, sample, sigma):
    """m draws with replacement from n, replace-one: delta(eps) <= sum_k Bin(k; m, 1/n) delta_G(eps; 2k/sigma)
    (the record drawn k times moves the sum by 2kC); solved independently by root finding."""
    ks = np.arange(sample + 1)
    weights = binom.pmf(ks, sample, 1.0 / source)

    def mixture(eps: float) -> float:
        return sum(w * _gaussian_delta(eps, 2 * k / sigma) for k, w in zip(ks, weights) if w > 1e-30)

    target = 1e-5
    reference = brentq(lambda e: mixture(e) - target, 1e-6, 200.0, xtol=1e-12)
    ours = PLDAccountant("replace_one").compose(SampledWithReplacement(source, sample, Gaussian(sigma))).epsilon(target)
    assert reference <= ours <= 1.001 * reference
    with pytest.raises(UnsupportedEventError, match="replace_one"):
        PLDAccountant().compose(SampledWithReplacement(source, sample, Gaussian(sigma)))


# --------------------------------------------------------------------------- RDP under replace-one
@pytest.mark.parametrize("q, sigma", [(0.01, 1.0), (0.3, 0.7), (0.5, 2.0)])
def test_rdp_poisson_replace_one_above_the_renyi_integral(q, sigma):
    """The replace-one Poisson-subsampled Gaussian pair ((1-q)N(0) + qN(mu), (1-q)N(0) + qN(-mu)): the RDP
    accountant's curve is at least its Renyi divergence by quadrature, and its epsilon at least the PLD's."""
    mu = 1.0 / sigma
    orders = np.array([2.0, 3.0, 8.0, 32.0])
    ours = RDPAccountant("replace_one").compose(PoissonSampled(q, Gaussian(sigma))).rdp(orders)
    xs = np.linspace(-60.0, 60.0, 120_001)

    def log_mix(shift):
        return np.logaddexp(math.log1p(-q) - xs * xs / 2, math.log(q) - (xs - shift) ** 2 / 2) - 0.5 * math.log(2 * math.pi)

    for alpha, value in zip(orders, ours):
        log_integrand = alpha * log_mix(mu) + (1 - alpha) * log_mix(-mu)
        top = log_integrand.max()
        exact = (top + math.log(np.exp(log_integrand - top).sum() * (xs[1] - xs[0]))) / (alpha - 1)
        assert value >= exact * (1 - 1e-9)
    event = dpsgd(q, sigma, 10)
    assert RDPAccountant("replace_one").compose(event).epsilon(1e-5) >= PLDAccountant("replace_one").compose(event).epsilon_interval(1e-5)[0]


# --------------------------------------------------------------------------- best of every sound bound
def test_epsilon_upper_is_the_minimum_and_names_the_winner():
    event = dpsgd(0.01, 1.0, 100)
    best = epsilon_upper(event, 1e-20)
    assert best.epsilon == min(best.candidates.values())
    assert best.candidates[best.method] == best.epsilon and best.method in ("pld", "pld_tilted")
    assert best.epsilon <= RDPAccountant().compose(event).epsilon(1e-20)
    assert epsilon_upper(SelfComposed(Gaussian(2.0), 10), 1e-5).method == "gdp"
    assert epsilon_upper(SelfComposed(Laplace(10.0), 3), 1e-9).epsilon <= 0.3 + 1e-12


def test_budget_dpsgd_prints_the_tightest_bound(capsys):
    code = main(["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "100",
                 "--target-delta", "1e-20", "--json"])
    import json

    payload = json.loads(capsys.readouterr().out)
    assert code == 0
    values = [r["epsilon_upper"] for r in payload["results"] if r["epsilon_upper"] is not None]
    assert payload["best"]["epsilon_upper"] == min(values) and payload["best"]["method"] == "pld"


# --------------------------------------------------------------------------- certified interval
@pytest.mark.parametrize("q, sigma, steps", [(0.001, 0.8, 10_000), (0.1, 1.0, 1000), (0.01, 2.0, 10_000)])
def test_interval_lower_end_within_one_percent(q, sigma, steps):
    acct = PLDAccountant().compose(dpsgd(q, sigma, steps))
    lower, upper = acct.epsilon_interval(1e-5)
    assert 0.99 * upper <= lower <= upper
    lower_grid, upper_grid = acct.interval_grids()
    assert 0 < lower_grid <= acct.step(False) and upper_grid == acct.step(True)
    assert acct.to_dict(1e-5)["discretisation_interval_lower"] == lower_grid


# --------------------------------------------------------------------------- calibration
def _fails(make, value, target_epsilon, target_delta, neighbouring="add_remove"):
    return PLDAccountant(neighbouring).compose(make(value)).epsilon(target_delta) > target_epsilon


def test_calibrate_sigma_of_dpsgd():
    make = lambda s: dpsgd(0.01, s, 1000)  # noqa: E731
    res = calibrate(make, 3.0, 1e-5, bounds=(0.3, 10.0), direction="smallest")
    assert PLDAccountant().compose(make(res.value)).epsilon(1e-5) <= 3.0
    assert _fails(make, res.value * (1 - 1e-3), 3.0, 1e-5)


def test_calibrate_sampling_rate_of_dpsgd():
    make = lambda q: dpsgd(q, 1.0, 1000)  # noqa: E731
    res = calibrate(make, 2.0, 1e-5, bounds=(1e-4, 0.5), direction="largest")
    assert PLDAccountant().compose(make(res.value)).epsilon(1e-5) <= 2.0
    assert _fails(make, res.value * (1 + 1e-3), 2.0, 1e-5)


def test_calibrate_steps_of_dpsgd():
    make = lambda t: dpsgd(0.01, 1.0, t)  # noqa: E731
    res = calibrate(make, 1.5, 1e-5, bounds=(1, 100_000), direction="largest", integer=True)
    assert isinstance(res.value, int)
    assert PLDAccountant().compose(make(res.value)).epsilon(1e-5) <= 1.5
    assert _fails(make, res.value + max(1, math.ceil(1e-3 * res.value)), 1.5, 1e-5)
    assert _fails(make, res.value + 1, 1.5, 1e-5)


def test_calibrate_sigma_of_a_composed_tree():
    make = lambda s: SelfComposed(PoissonSampled(0.02, Composed(Gaussian(s), Laplace(2 * s))), 50)  # noqa: E731
    res = calibrate(make, 2.0, 1e-6, bounds=(0.2, 20.0), direction="smallest")
    assert PLDAccountant().compose(make(res.value)).epsilon(1e-6) <= 2.0
    assert _fails(make, res.value * (1 - 1e-3), 2.0, 1e-6)


def test_calibrate_bad_inputs():
    make = lambda s: dpsgd(0.01, s, 100)  # noqa: E731
    with pytest.raises(InfeasibleBudgetError, match="no parameter value"):
        calibrate(make, 0.01, 1e-5, bounds=(0.5, 2.0))  # unreachable in the bounds

    def broken(s):
        raise RuntimeError("boom")

    with pytest.raises(InvalidArgument, match="make_event") as info:
        calibrate(broken, 1.0, 1e-5, bounds=(0.5, 2.0))
    assert "boom" in str(info.value)
    with pytest.raises(InvalidArgumentType, match="make_event"):
        calibrate(lambda s: 3.0, 1.0, 1e-5, bounds=(0.5, 2.0))
    with pytest.raises(InvalidArgument, match="direction"):  # not monotone: noisiest in the middle
        calibrate(lambda s: Gaussian(1.0 + 2.0 * min(s, 4.0 - s)), 1.5, 1e-5, bounds=(0.5, 3.5))
    with pytest.raises(InvalidArgument, match="direction"):  # monotone the other way
        calibrate(make, 1.0, 1e-5, bounds=(0.5, 5.0), direction="largest")
    with pytest.raises(InvalidArgument, match="target_delta"):
        calibrate(make, 1.0, 0.0, bounds=(0.5, 5.0))
    laplace = calibrate(lambda b: SelfComposed(Laplace(b), 10), 1.0, 0.0, bounds=(1.0, 100.0))
    assert 10.0 <= laplace.value <= 10.0 * 1.001  # pure DP at delta = 0: 10 / b <= 1
    for bounds in ((2.0, 1.0), (0.5, math.inf)):
        with pytest.raises(InvalidArgument, match="bounds"):
            calibrate(make, 1.0, 1e-5, bounds=bounds)
    with pytest.raises(InvalidArgument, match="direction"):
        calibrate(make, 1.0, 1e-5, bounds=(0.5, 2.0), direction="up")


def test_budget_calibrate_command(capsys):
    base = ["budget", "calibrate", "--event", "SelfComposed(PoissonSampled(0.01, Gaussian({x})), 1000)",
            "--target-delta", "1e-5", "--bounds", "0.3", "10"]
    assert main([*base, "--target-epsilon", "3", "--json"]) == 0
    import json

    payload = json.loads(capsys.readouterr().out)
    assert payload["epsilon_upper"] <= 3.0 and 0.8 < payload["value"] < 0.83
    code = main([*base, "--target-epsilon", "0.01"])
    out, err = capsys.readouterr()
    assert code == 2 and "no parameter value" in err and len(err.strip().splitlines()) == 1
    assert main(["budget", "calibrate", "--event", "Gaussian(1.0)", "--target-epsilon", "1", "--target-delta", "1e-5",
                 "--bounds", "0.3", "10"]) == 2
    assert "{x}" in capsys.readouterr().err


@pytest.mark.parametrize("relation, tree", [
    ("add_remove", PoissonSampled(0.01, Composed(Gaussian(1.0), Laplace(2.0)))),
    ("replace_one", SampledWithoutReplacement(1000, 10, Composed(Gaussian(1.0), Laplace(2.0)))),
    ("add_remove", PoissonSampled(0.5, Composed(PureDP(0.5), PureDP(0.3)))),
])
def test_rdp_of_sampled_sub_trees_is_sound(relation, tree):
    """RDP of a sampled sub-tree: the sampling theorem applied to the composed sub-tree's curve (never the
    zero curve): at least the PLD upper bound on these trees, which is above its certified lower bound."""
    event = SelfComposed(tree, 100)
    rdp = RDPAccountant(relation).compose(event).epsilon(1e-5)
    lower, upper = PLDAccountant(relation).compose(event).epsilon_interval(1e-5)
    assert rdp >= upper >= lower > 0.1
    with pytest.raises(UnsupportedEventError, match="with replacement"):
        RDPAccountant("replace_one").compose(SampledWithReplacement(100, 10, Gaussian(1.0)))
    with pytest.raises(UnsupportedEventError, match="replace-one"):
        RDPAccountant("replace_one").compose(PoissonSampled(0.1, Composed(Gaussian(1.0), Laplace(1.0))))
