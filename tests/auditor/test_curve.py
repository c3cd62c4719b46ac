"""audit_curve: certified trade-off points against a claimed curve (validity, power, bounds, bad input)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy.stats import binom, norm

import dpaudit
from dpaudit.accountant import analytic_gaussian_sigma
from dpaudit.accountant.curves import gdp_tradeoff
from dpaudit.auditor.curve import SPREAD_SHARE, CurveAuditResult, audit_curve
from dpaudit.events import Gaussian
from dpaudit.guarantee import Guarantee
from dpaudit.mechanisms import GaussianMechanism, LaplaceMechanism, RandomizedResponse, SubsampledGaussianSums
from dpaudit.mechanisms.catalog import catalog_entry

from . import mechanisms_for_tests as m

SIGMA = analytic_gaussian_sigma(1.0, 1e-5)


def gaussian_with(sigma: float) -> GaussianMechanism:
    return GaussianMechanism.from_sigma(sigma, 1e-5)


def flags(mechanism, d, d_prime, seeds, samples, **kwargs) -> int:
    return sum(audit_curve(mechanism, d, d_prime, samples=samples, seed=s, workers=1, **kwargs).violated for s in seeds)


def allowance(seeds: int, level: float = 0.05, tail: float = 1e-3) -> int:
    """Largest flag count a valid 95% test reaches with probability > tail (binomial allowance)."""
    return int(binom.isf(tail, seeds, level))


# ------------------------------------------------------------------------------------- validity
@pytest.mark.parametrize("name,mechanism,pair", [
    ("gaussian", GaussianMechanism(1.0, 1e-5), ([0.0], [1.0])),
    ("laplace", LaplaceMechanism(1.0), ([0.0], [1.0])),
    ("randomized_response", RandomizedResponse(1.0), ([0], [1])),
])
def test_correct_mechanisms_are_not_flagged_beyond_the_confidence_level(name, mechanism, pair):
    seeds = 10
    assert flags(mechanism, *pair, range(seeds), 20_000) <= allowance(seeds)


def test_subsampled_composed_gaussian_is_not_flagged():
    mechanism = SubsampledGaussianSums(1.0, 0.1, 10)
    seeds = 8
    assert flags(mechanism, np.array([]), np.array([1.0]), range(seeds), 20_000) <= allowance(seeds)


def test_mu_lower_is_below_the_true_mu_and_tight():
    mechanism = GaussianMechanism(1.0, 1e-5)
    mu = 1.0 / mechanism.sigma
    result = audit_curve(mechanism, [0.0], [1.0], samples=200_000, seed=3, workers=1, sequential=False)
    assert result.claim_mu == pytest.approx(mu)
    assert 0.9 * mu < result.mu_lower <= mu
    assert result.epsilon_lower <= mechanism.privacy.epsilon
    # the Gaussian-assumption epsilon is labelled and is the GDP conversion of mu_lower
    assert result.epsilon_gaussian_assumption <= mechanism.privacy.epsilon
    assert "assuming a Gaussian trade-off curve" in result.summary()
    assert result.to_dict()["epsilon_gaussian_assumption_note"].startswith("assuming a Gaussian")


def test_bounds_on_a_discrete_mechanism():
    result = audit_curve(RandomizedResponse(1.0), [0], [1], samples=100_000, seed=0, workers=1, sequential=False)
    kink = 1 / (1 + math.e)  # the exact test: alpha = beta = 1/(1+e)
    exact_mu = -2 * norm.ppf(kink)
    assert 0.9 * exact_mu < result.mu_lower <= exact_mu
    assert 0.9 < result.epsilon_lower <= 1.0
    assert not result.violated


# ---------------------------------------------------------------------------------------- power
def test_half_sigma_is_flagged_against_the_declared_curve():
    claim = Gaussian(SIGMA)
    assert flags(gaussian_with(SIGMA * 0.5), [0.0], [1.0], range(4), 100_000, claim=claim) == 4


def test_catalog_gaussian_half_sigma_is_flagged_against_its_twin():
    entry, twin = catalog_entry("gaussian_half_sigma"), catalog_entry("gaussian")
    for epsilon in (0.5, 1.0):
        result = audit_curve(entry.mechanism(epsilon), *entry.pair, claim=twin.mechanism(epsilon).event,
                             samples=50_000, seed=1, workers=1)
        assert result.violated and result.worst.below_claim
        assert result.mu_lower > result.claim_mu


def test_guarantee_and_callable_claims():
    mechanism = gaussian_with(SIGMA * 0.5)
    assert not audit_curve(GaussianMechanism(1.0, 1e-5), [0.0], [1.0], claim=Guarantee(1.0, 1e-5), samples=50_000,
                           workers=1).violated
    bad = audit_curve(mechanism, [0.0], [1.0], claim=Guarantee(0.3, 1e-5), samples=50_000, workers=1)
    assert bad.violated and bad.claim_kind == "guarantee"
    # a callable G_mu is the same test as the float mu claim
    mu = 1 / SIGMA
    by_mu = audit_curve(mechanism, [0.0], [1.0], claim=mu, samples=50_000, workers=1)
    by_function = audit_curve(mechanism, [0.0], [1.0], claim=lambda a: gdp_tradeoff(mu, a), samples=50_000, workers=1)
    assert by_mu.violated and by_function.violated
    assert by_mu.mu_lower == pytest.approx(by_function.mu_lower, rel=0.05)


# ----------------------------------------------------------------------------- confidence, result
def test_confidence_is_split_over_every_certified_bound():
    result = audit_curve(GaussianMechanism(1.0, 1e-5), [0.0], [1.0], samples=20_000, confidence_level=0.9,
                         workers=1, deltas=(1e-3, 1e-7), sequential=False)
    shares = [p.error_share for p in result.points]
    assert sum(shares) == pytest.approx(0.1) and sum(shares) <= 0.1 + 1e-15
    spread = [p.error_share for p in result.points if p.role == "spread"]
    assert sum(spread) == pytest.approx(SPREAD_SHARE * 0.1)
    assert {p.direction for p in result.points} == {"d -> d_prime", "d_prime -> d"}
    for p in result.points:  # each point is a certified upper bound on both errors
        assert p.alpha_upper >= p.alpha_estimate and p.beta_upper >= p.beta_estimate
        assert p.below_claim == (p.beta_upper < p.claimed_beta)
    assert [d for d, _ in result.epsilon_lower_by_delta] == [1e-7, 1e-5, 1e-3]
    by_delta = dict(result.epsilon_lower_by_delta)
    assert by_delta[1e-7] >= by_delta[1e-5] >= by_delta[1e-3]  # a larger delta explains more
    data = result.to_dict()
    json.dumps(data, allow_nan=False)
    assert data["bound"] == "lower" and len(data["points"]) == len(result.points)
    assert isinstance(result, CurveAuditResult)
    with pytest.raises(AttributeError):
        result.violated = True  # frozen


def test_the_worst_point_can_be_recertified():
    mechanism = gaussian_with(SIGMA * 0.5)
    first = audit_curve(mechanism, [0.0], [1.0], claim=Gaussian(SIGMA), samples=50_000, seed=0, workers=1)
    assert first.violated
    again = audit_curve(mechanism, [0.0], [1.0], claim=Gaussian(SIGMA), samples=50_000, seed=7, workers=1,
                        witness=first.witness)
    assert again.selection_samples == 0 and len(again.points) == 1
    assert again.points[0].event == first.worst.event and again.points[0].direction == first.worst.direction
    assert again.violated
    # the witness survives JSON (as gate baselines store it)
    stored = json.loads(json.dumps(first.witness))
    assert audit_curve(mechanism, [0.0], [1.0], claim=Gaussian(SIGMA), samples=20_000, workers=1,
                       witness=stored).points[0].event == first.worst.event


def test_seed_reproducibility_and_deterministic_summary():
    a = audit_curve(m.laplace_unit, [0.0], [1.0], claim=Guarantee(1.0), samples=20_000, seed=5, workers=1)
    b = audit_curve(m.laplace_unit, [0.0], [1.0], claim=Guarantee(1.0), samples=20_000, seed=5, workers=1)
    assert a.points == b.points and a.mu_lower == b.mu_lower
    assert "not violated" in a.summary()


def test_plot(tmp_path):
    from dpaudit.reporting.plots import plot_curve_audit

    result = audit_curve(gaussian_with(SIGMA * 0.5), [0.0], [1.0], claim=Gaussian(SIGMA), samples=20_000, workers=1)
    path = plot_curve_audit(result, tmp_path / "curve.png", "half sigma")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_top_level_export():
    assert dpaudit.audit_curve is audit_curve


# ------------------------------------------------------------------------------------- bad input
def not_convex(alpha):
    alpha = np.asarray(alpha)
    return 0.5 * (1 - alpha * alpha)  # concave (and <= 1 - alpha, decreasing, f(0) <= 1)


@pytest.mark.parametrize("claim,error,match", [
    (lambda a: np.minimum(1 - np.asarray(a), 0.2 + 0.1 * np.asarray(a)), ValueError, "non-increasing"),
    (lambda a: 1.2 - np.asarray(a) * 1.2, ValueError, r"f\(0\)"),
    (lambda a: (1 - np.asarray(a)) ** 0.5 * (1 - np.asarray(a)) ** 0 * 0.99 + 0.0, ValueError, "1 - alpha"),
    (not_convex, ValueError, "convex"),
    (lambda a: np.full_like(np.asarray(a, float), np.nan), ValueError, "finite"),
    (0.0, ValueError, "claim"),
    (-1.0, ValueError, "claim"),
    (float("nan"), ValueError, "claim"),
    (float("inf"), ValueError, "claim"),
    ("gaussian", TypeError, "claim"),
    (True, TypeError, "claim"),
])
def test_invalid_claims_are_refused(claim, error, match):
    with pytest.raises(error, match=match):
        audit_curve(m.laplace_unit, [0.0], [1.0], claim=claim, samples=1_000, workers=1)


def test_an_event_without_a_pld_curve_is_refused_naming_claim():
    from dpaudit.events import SampledWithoutReplacement

    with pytest.raises(ValueError, match="claim"):  # defined for replace-one only; the mechanism is add/remove
        audit_curve(m.laplace_unit, [0.0], [1.0], claim=SampledWithoutReplacement(10, 5, Gaussian(1.0)), samples=1_000)


def test_a_mechanism_without_event_needs_a_claim():
    with pytest.raises(ValueError, match="claim"):
        audit_curve(m.laplace_unit, [0.0], [1.0], samples=1_000, workers=1)


def test_a_mechanism_whose_event_is_not_an_event_is_refused_naming_claim():
    def mechanism(data, size, rng):
        return data[0] + rng.laplace(0.0, 1.0, size)

    mechanism.event = "Laplace(1.0)"  # a string, not a parsed event
    with pytest.raises(TypeError, match=r"claim=None uses the mechanism's \.event"):
        audit_curve(mechanism, [0.0], [1.0], samples=1_000, workers=1)


def test_callable_claims_that_fail_or_are_valid_edge_cases():
    def broken(alpha):
        raise RuntimeError("no curve here")

    with pytest.raises(ValueError, match="claim.*could not be evaluated"):
        audit_curve(m.laplace_unit, [0.0], [1.0], claim=broken, samples=1_000, workers=1)
    # a scalar-only function is evaluated pointwise; the trivial curve 1 - alpha (perfect privacy) is valid
    result = audit_curve(m.laplace_unit, [0.0], [1.0], claim=lambda a: 1.0 - float(a), samples=20_000, workers=1)
    assert result.claim_kind == "callable" and result.violated  # Laplace(1) is far from perfectly private


@pytest.mark.parametrize("kwargs,match", [
    (dict(samples=10), "samples"), (dict(confidence_level=1.0), "confidence_level"), (dict(seed=-1), "seed"),
    (dict(deltas=[2.0]), "deltas"), (dict(delta=float("nan")), "delta"), (dict(direction="sideways"), "direction"),
    (dict(witness={"kind": "nope"}), "witness"), (dict(spread_points=-1), "spread_points"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        audit_curve(m.laplace_unit, [0.0], [1.0], claim=1.0, **{"samples": 1_000, "workers": 1, **kwargs})


def test_results_do_not_depend_on_the_number_of_workers():
    mechanism = gaussian_with(SIGMA)
    kwargs = dict(samples=140_000, seed=2, spread_points=1)  # large enough for the process backend
    one = audit_curve(mechanism, [0.0], [1.0], workers=1, **kwargs)
    two = audit_curve(mechanism, [0.0], [1.0], workers=2, **kwargs)
    assert one.points == two.points and one.mu_lower == two.mu_lower


def test_direction_restricts_the_tests():
    result = audit_curve(gaussian_with(SIGMA), [0.0], [1.0], samples=20_000, workers=1, direction="d_prime -> d",
                         sequential=False)
    assert {p.direction for p in result.points} == {"d_prime -> d"}
    assert sum(p.error_share for p in result.points) == pytest.approx(0.05)


def test_an_output_width_that_depends_on_the_input_is_an_outcome():
    # as in audit(): rows are padded and carry their width, so the shape itself separates the inputs
    result = audit_curve(m.width_depends_on_data, [0.0], [1.0, 2.0], claim=1.0, samples=2_000, workers=1)
    assert result.violated and result.mu_lower > 5
    again = audit_curve(m.width_depends_on_data, [0.0], [1.0, 2.0], claim=1.0, samples=2_000, seed=1, workers=1,
                        witness=result.witness)
    assert again.violated and again.points[0].event == result.worst.event


def test_a_sequential_curve_audit_spends_the_error_over_its_looks_and_stops_early():
    from dpaudit.auditor.looks import plan_looks

    fixed = audit_curve(gaussian_with(1.0), [0.0], [1.0], claim=0.5, samples=400_000, seed=2, workers=1, sequential=False)
    result = audit_curve(gaussian_with(1.0), [0.0], [1.0], claim=0.5, samples=400_000, seed=2, workers=1)
    assert fixed.violated and result.violated and result.stopped == "violation"
    assert result.samples_used < 400_000 and result.samples_used == result.selection_samples + result.certification_samples
    plan = plan_looks(400_000 - result.selection_samples)
    look = plan.looks.index(result.certification_samples)
    assert sum(p.error_share for p in result.points) == pytest.approx(0.05 * plan.shares[look])
    again = audit_curve(gaussian_with(1.0), [0.0], [1.0], claim=0.5, samples=400_000, seed=2, workers=2)
    assert again.to_dict() | {"seconds": 0} == result.to_dict() | {"seconds": 0}
