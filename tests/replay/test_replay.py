"""Record/replay: attribution of shifts, divergence, uninstrumentable mechanisms, no false findings."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit.mechanisms as mechanisms
from dpaudit.cli import main
from dpaudit.events import Gaussian, Laplace
from dpaudit.mechanisms import buggy, catalog_entry, examples, sensitivity_bugs
from dpaudit.replay import (RecordingGenerator, Recorder, UninstrumentableMechanism, generated_pairs, replay,
                            replay_pairs)


sys.path.insert(0, str(Path(__file__).parents[1]))  # makes replay.test_replay importable for the CLI


def laplace_sum(data, size, rng):
    return np.sum(data) + rng.laplace(0.0, 1.0, size)


def global_state_sum(data, size, rng):
    return np.sum(data) + np.random.laplace(0.0, 1.0, size)


def python_random(data, size, rng):
    return np.sum(data) + np.array([random.random() for _ in range(size)])


def clamped_after_noise(data, size, rng):
    return np.clip(np.sum(data) + rng.laplace(0.0, 1.0, size), -1.0, 1.0)


def branch_on_data(data, size, rng):
    out = np.sum(data) + rng.laplace(0.0, 1.0, size)
    if np.sum(data) > 0:
        out += rng.laplace(0.0, 1.0, size)
    return out


def deterministic(data, size, rng):
    return np.full(size, float(np.sum(data)))


def test_recording_generator_keeps_the_stream_and_logs_draws():
    rng = RecordingGenerator(Recorder(7))
    values = rng.normal(1.0, 2.0, 3), rng.integers(0, 5, 2), rng.random()
    reference = np.random.default_rng(7)
    expected = reference.normal(1.0, 2.0, 3), reference.integers(0, 5, 2), reference.random()
    assert all(np.array_equal(a, b) for a, b in zip(values, expected))
    assert [d.method for d in rng.recorder.draws] == ["normal", "integers", "random"]
    assert rng.recorder.draws[0].family == "gaussian" and rng.recorder.draws[1].family is None
    assert isinstance(rng, np.random.Generator)


def test_laplace_shift_is_exact_and_compared_with_the_claim():
    ok = replay(laplace_sum, [0.5, 0.5], [0.5, 0.5, 1.0], epsilon=1.0)
    assert not ok.violated and ok.max_shift == pytest.approx(1.0) and ok.epsilon_lower == pytest.approx(1.0, rel=1e-6)
    bad = replay(laplace_sum, [0.5, 0.5], [0.5, 0.5, 5.0], epsilon=1.0)
    assert bad.violated and not bad.control_flow_diverges and bad.epsilon_lower == pytest.approx(5.0, rel=1e-6)
    assert bad.worst.draws[0].output_shift == pytest.approx(5.0) and bad.to_dict()["violated"] is True
    json.dumps(bad.to_dict())


def test_global_numpy_state_is_instrumented():
    assert replay(global_state_sum, [0.0], [3.0], epsilon=1.0).violated
    assert not replay(global_state_sum, [0.0], [1.0], epsilon=1.0).violated


def test_uninstrumentable_randomness_is_refused():
    with pytest.raises(UninstrumentableMechanism, match="cannot be instrumented"):
        replay(python_random, [0.0], [1.0], epsilon=1.0)


def test_non_affine_output_is_undecided_not_a_finding():
    result = replay(clamped_after_noise, [0.0], [50.0], epsilon=1.0)
    assert not result.violated and result.verdict == "undecided"


def test_data_dependent_draws_diverge_without_a_violation():
    result = replay(branch_on_data, [0.0], [1.0], epsilon=1.0)
    assert result.control_flow_diverges and not result.violated and "only on d'" in result.worst.divergence


def test_deterministic_release_is_infinite():
    result = replay(deterministic, [0.0], [1.0], epsilon=1.0)
    assert result.violated and math.isinf(result.epsilon_lower)


def test_gaussian_and_event_claims():
    gaussian = catalog_entry("gaussian")
    assert not replay(gaussian.mechanism(1.0), *gaussian.pair, epsilon=1.0, delta=1e-5).violated
    assert replay(buggy.GaussianHalfSigma(1.0, 1e-5), [0.0], [1.0]).violated

    def sigma_two(data, size, rng):
        return np.sum(data) + rng.normal(0.0, 2.0, size)

    assert not replay(sigma_two, [0.0], [1.0], event=Gaussian(2.0)).violated
    assert replay(sigma_two, [0.0], [1.0], event=Gaussian(4.0)).violated
    assert replay(laplace_sum, [0.0], [1.0], event=Laplace(0.5)).violated is False
    assert replay(laplace_sum, [0.0], [2.0], event=Laplace(1.0)).violated


@pytest.mark.parametrize("mechanism, pairs", [
    (buggy.LaplaceHalfScale(0.5), [([0.0], [1.0])]),
    (buggy.BoundedSumMissingClip(0.5), [([0.5, 0.5], [0.5, 0.5, 5.0])]),
    (buggy.BoundedSumNoiseIgnoresClipBound(0.5), [([0.0], [0.0, 5.0])]),
    (buggy.HistogramReplaceOne(1.0, 5), [([1, 1, 1, 1, 1], [2, 0, 1, 1, 1])]),
    (buggy.BinaryTreeNoiseNotScaledByDepth(1.0, 8), [(np.zeros(8), np.r_[1.0, np.zeros(7)])]),
    (sensitivity_bugs.MeanMissingClamp(0.5), [([0.5, 0.5], [0.5, 9.0])]),
    (sensitivity_bugs.MeanDividedByWrongCount(0.5), [([0.0, 0.0], [0.0, 1.0])]),
    (sensitivity_bugs.SumReplaceOneWithAddRemoveSensitivity(0.5), [([1.0, 0.0], [-1.0, 0.0])]),
])
def test_sensitivity_bugs_are_violations(mechanism, pairs):
    result = replay_pairs(mechanism, pairs)
    assert result.violated, result.summary()


def test_data_dependent_noise_bugs_diverge():
    assert replay_pairs(sensitivity_bugs.NoiseDrawsPerRecord(0.5), [([1.0], [1.0, 1.0])]).control_flow_diverges
    assert replay_pairs(sensitivity_bugs.NoiseScaledByDataRange(0.5), [([0.0, 1.0], [0.5, 1.0])]).control_flow_diverges


def test_no_false_finding_on_the_examples():
    for example in examples():
        if example.name.startswith("dpsgd"):
            continue  # slow to probe (hundreds of noise elements); covered by the benchmark
        result = replay_pairs(example.mechanism, example.neighbours)
        assert not result.violated, (example.name, result.summary())


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False, width=32), max_size=6), st.floats(-5, 5, allow_nan=False, width=32))
def test_no_false_finding_on_generated_datasets(records, extra):
    mechanism = mechanisms.BoundedSum(0.5, -1.0, 1.0)
    assert not replay(mechanism, records, records + [extra]).violated
    twin = sensitivity_bugs.ClippedMean(0.5, upper=1.0)
    if records:
        assert not replay(twin, records, [extra] + records[1:]).violated


def test_generated_pairs_are_adjacent():
    for d, d_prime in generated_pairs("statdp", 10, length=4):
        assert len(d) == len(d_prime) == 4 and max(abs(a - b) for a, b in zip(d, d_prime)) <= 1.0
    assert all(len(b) == len(a) + 1 for a, b in generated_pairs("datasets", 10))


def test_bad_arguments():
    with pytest.raises(ValueError, match="claim is missing"):
        replay(laplace_sum, [0.0], [1.0])
    with pytest.raises(ValueError, match="epsilon"):
        replay(laplace_sum, [0.0], [1.0], epsilon=-1.0)
    with pytest.raises(ValueError, match="not both"):
        replay(laplace_sum, [0.0], [1.0], epsilon=1.0, event=Laplace(1.0))
    with pytest.raises(ValueError, match="seeds"):
        replay(laplace_sum, [0.0], [1.0], epsilon=1.0, seeds=1)
    with pytest.raises(TypeError, match="mechanism"):
        replay(3, [0.0], [1.0], epsilon=1.0)


def test_cli_exit_codes(capsys):
    base = ["replay", "replay.test_replay:laplace_sum"]
    assert main(base + ["--d", "[0.5]", "--d-prime", "[0.5, 5.0]", "--epsilon", "1"]) == 1
    capsys.readouterr()
    assert main(base + ["--d", "[0.5]", "--d-prime", "[0.5, 0.9]", "--epsilon", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["violated"] is False
    assert main(base + ["--d", "[0.5]", "--epsilon", "1"]) == 2
    assert main(["replay", "replay.test_replay:python_random", "--d", "[0]", "--d-prime", "[1]",
                 "--epsilon", "1"]) == 3
    assert main(base + ["--datasets", "4", "--count", "10", "--epsilon", "1"]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err


def test_contract_call_form():
    import dpaudit
    import dpaudit.replay as package

    result = dpaudit.replay(laplace_sum, [0.5], [0.5, 5.0], epsilon=1.0, seed=0)
    assert result.violated and not result.control_flow_diverges and result.max_shift == pytest.approx(5.0)
    assert package is dpaudit.replay and set(result.to_dict()) >= {"violated", "control_flow_diverges", "max_shift"}


def test_subsampling_at_frozen_randomness_is_not_a_finding():
    # a Poisson(0.9) subsample claims the amplified epsilon ln(1 + 0.9 (e - 1)) < 1: at any frozen subsample
    # the included record costs 1, which says nothing about the mixture
    def subsampled(data, size, rng):
        kept = rng.random((size, len(data))) < 0.9
        return (kept * np.clip(data, 0.0, 1.0)).sum(axis=1) + rng.laplace(0.0, 1.0, size)

    amplified = math.log1p(0.9 * (math.e - 1.0))
    for seed in range(5):
        result = replay(subsampled, [1.0], [0.0], epsilon=amplified, seed=seed)
        assert not result.violated and result.verdict == "undecided", result.summary()


def test_diffprivlib_through_its_adapter_continuous_and_integer_noise():
    mechanisms_module = pytest.importorskip("diffprivlib.mechanisms")
    from dpaudit.adapters import diffprivlib

    laplace = diffprivlib(mechanisms_module.Laplace(epsilon=1.0, sensitivity=1.0))
    assert not replay(laplace, [0.0], [1.0]).violated and replay(laplace, [0.0], [3.0]).violated
    geometric = diffprivlib(mechanisms_module.Geometric(epsilon=0.5, sensitivity=1))
    result = replay(geometric, [0], [1])
    assert not result.violated and result.epsilon_lower == pytest.approx(0.5, rel=1e-6)
    assert replay(geometric, [0], [3]).epsilon_lower == pytest.approx(1.5, rel=1e-6)

    def off_grid(data, size, rng):  # integer noise plus half the data: d and d' never share an output
        return geometric([0], size, rng) + 0.5 * np.sum(data)

    off_grid.privacy = geometric.privacy
    assert math.isinf(replay(off_grid, [1.0], [2.0]).epsilon_lower)
    discrete_gaussian = diffprivlib(mechanisms_module.GaussianDiscrete(epsilon=1.0, delta=1e-5, sensitivity=1))
    assert not replay(discrete_gaussian, [0], [1]).violated and replay(discrete_gaussian, [0], [2]).violated


def test_a_selection_that_never_flips_at_small_noise_is_not_a_finding():
    # argmax with little noise: d always picks 0, d' always picks 1 under the same draws, yet the mechanism
    # is 100-DP (report noisy max); the probes at large magnitudes show the output is not affine in the noise
    def noisy_argmax(data, size, rng):
        return np.argmax(np.asarray(data, float) + rng.laplace(0.0, 0.02, (size, 2)), axis=1)

    result = replay(noisy_argmax, [1.0, 0.5], [0.0, 1.5], epsilon=100.0)
    assert not result.violated and result.verdict == "undecided"


def _seeded_inside(data, size, rng):
    return np.sum(data) + np.random.default_rng(12345).laplace(0.0, 1.0, size)


def _global_seed_reset(data, size, rng):
    np.random.seed(0)
    return np.sum(data) + np.random.laplace(0.0, 1.0, size)


def _noise_times_zero(data, size, rng):
    return np.sum(data) + 0 * rng.laplace(0.0, 1.0, size)


def _noise_discarded(data, size, rng):
    rng.laplace(0.0, 1.0, size)
    return np.sum(data) + np.zeros(size)


@pytest.mark.parametrize("mechanism", [_seeded_inside, _global_seed_reset, _noise_times_zero, _noise_discarded])
def test_noise_the_handed_generator_does_not_drive_is_a_finding(mechanism):
    """Noise seeded inside the mechanism, or drawn and never reaching the outputs: the outputs are fixed per input,
    so epsilon = inf where they differ (never 'decided, exact' at the noise's scale)."""
    result = replay(mechanism, [1, 0, 1], [1, 0], epsilon=1.0)
    pair = result.pairs[0]
    assert result.violated and pair.status == "decided" and pair.epsilon_lower == math.inf and pair.bound != "exact"
    same = replay(mechanism, [1, 0, 1], [0, 1, 1], epsilon=1.0).pairs[0]  # outputs equal: no finding, no decision
    assert not same.violated and same.status == "undecided"


def test_noise_seeded_inside_beside_handed_randomness_is_refused_with_the_reason():
    def mixed(data, size, rng):
        return np.sum(data) + np.random.default_rng(7).laplace(0.0, 1.0, size) + rng.laplace(0.0, 1.0, size)

    pair = replay(mixed, [1, 0, 1], [1, 0], epsilon=1.0).pairs[0]
    assert pair.status == "undecided" and "seeded inside the mechanism" in pair.reason and not pair.violated


def test_laplace_and_gaussian_on_one_output_are_bracketed_by_the_law_of_their_sum():
    def summed(sensitivity):
        def mechanism(data, size, rng):
            return sensitivity * np.sum(data) + rng.laplace(0.0, 1.0, size) + rng.normal(0.0, 1.0, size)
        return mechanism

    bug = replay(summed(3.0), [1, 0, 1], [1, 0], epsilon=1.0).pairs[0]
    assert bug.violated and bug.status == "decided" and 2.99 < bug.epsilon_lower <= 3.0 <= bug.epsilon_upper < 3.01
    fine = replay(summed(1.0), [1, 0, 1], [1, 0], epsilon=1.0).pairs[0]
    assert not fine.violated and fine.status == "decided" and 0.99 < fine.epsilon_lower <= 1.0 <= fine.epsilon_upper
    gaussian_heavy = replay(summed(1.0), [1, 0, 1], [1, 0], epsilon=1.0, delta=1e-5).pairs[0]
    assert not gaussian_heavy.violated and gaussian_heavy.epsilon_lower <= gaussian_heavy.epsilon_upper


def test_a_bracket_from_zero_to_infinity_is_undecided():
    def two_laplaces(data, size, rng):  # two Laplace noises summed on one output: no closed form read here
        return np.sum(data) + rng.laplace(0.0, 1.0, size) + rng.laplace(0.0, 2.0, size)

    pair = replay(two_laplaces, [1, 0, 1], [1, 0], epsilon=1.0).pairs[0]
    assert pair.status == "undecided" and not pair.violated


@settings(max_examples=40, deadline=None)
@given(st.floats(0.05, 20.0), st.floats(0.05, 20.0), st.floats(0.01, 30.0), st.sampled_from([0.0, 1e-9, 1e-6, 1e-3, 0.1]))
def test_the_law_of_a_laplace_gaussian_sum_stays_below_either_noise_alone(b, sigma, shift, delta):
    """The sum's half-line bound is a lower bound: never above the epsilon of either noise carrying the shift alone
    (the sum is a post-processing of each), and close to the Laplace one when the Gaussian is negligible."""
    from dpaudit.replay.privacy import laplace_gaussian_lower, shift_privacy

    lower = laplace_gaussian_lower(b, sigma, shift, delta)
    laplace_alone = shift_privacy(np.array([shift / b]), 0.0, delta).upper
    gaussian_alone = shift_privacy(np.zeros(0), shift / sigma, delta).upper
    assert 0.0 <= lower <= min(laplace_alone, gaussian_alone) + 1e-9
    if delta == 0.0:
        tiny = laplace_gaussian_lower(b, 1e-6 * b, shift, 0.0)
        assert tiny == pytest.approx(shift / b, rel=1e-4)
