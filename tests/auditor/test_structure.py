"""Issue 18: structural witnesses (float structure, NaN/inf, dtype), product events, learned scores, and a
selection that does not fool itself. Small budgets, workers=1."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpaudit
from dpaudit.auditor.witness_search.atom_sets import ZERO_MIN, find_atoms
from dpaudit.auditor.witness_search.candidate import Candidate, is_half_line
from dpaudit.auditor.witness_search.family_atoms import detect_grid, structural_features
from dpaudit.auditor.witness_search.prediction import held_out_predicted
from dpaudit.auditor.witness_search.selector import search_witnesses as structured_search
from dpaudit.auditor.witness_search.selector import select_for_certification
from dpaudit.auditor.witness import (
    SPECIAL_CODES,
    Column,
    ColumnAtoms,
    Derived,
    DerivedPatternSet,
    EncodedLinear,
    Intersection,
    PatternSet,
    ScoreRegion,
    SignVote,
    atom_log_ratios,
    witness_from_dict,
)
from dpaudit.errors import MechanismError
from dpaudit.mechanisms import buggy
from dpaudit.mechanisms.laplace import LaplaceMechanism


# ------------------------------------------------------------------------------------------- features
def test_special_classes_keep_sign_of_zero_nan_and_infinities():
    y = np.array([[1.5], [0.0], [-0.0], [np.nan], [np.inf], [-np.inf]])
    codes = Derived("special", 0, 1).score(y)
    assert codes.tolist() == [SPECIAL_CODES[k] for k in ("finite", "+0", "-0", "nan", "+inf", "-inf")]


def test_grid_detection_finds_lattices_and_rejects_continuous_values():
    rng = np.random.default_rng(0)
    lattice = 1 / 3 + 2.0**-6 * np.round(rng.laplace(0, 1, 20_000) * 64)
    assert detect_grid(lattice) == pytest.approx(2.0**-6, rel=1e-6)
    assert detect_grid(rng.laplace(0, 1, 20_000)) is None
    assert detect_grid(np.array([1.0, 1.0, 2.0])) is None  # fewer than 3 distinct values


@settings(max_examples=50, deadline=None)
@given(st.floats(-50, 50, allow_nan=False), st.integers(-1000, 1000), st.sampled_from([2.0**-6, 0.25, 0.1]))
def test_residue_is_invariant_under_grid_steps(value, steps, grid):
    feature = Derived("residue", 0, 1, grid=grid)
    base, moved = feature.score(np.array([[value]])), feature.score(np.array([[value + steps * grid]]))
    gap = abs(base[0] - moved[0])
    assert min(gap, 1 - gap) <= 2.0**-15  # equal up to one rounding step (wrapping at 1)


def test_structural_features_cover_grids_bits_and_specials():
    rng = np.random.default_rng(1)
    a = np.column_stack([2.0**-6 * np.round(rng.laplace(0, 1, 5000) * 64), rng.normal(size=5000)])
    a[0, 1] = np.nan
    kinds = {(f.kind, f.index) for f in structural_features(a, a)}
    assert ("residue", 0) in kinds and ("special", 1) in kinds and ("mantissa", 1) in kinds and ("exponent", 1) in kinds
    assert ("mantissa", 0) not in kinds  # a lattice column is searched through its residues


# ------------------------------------------------------------------------------------ witness round trip
def _outputs(rng):
    y = rng.laplace(0, 1, (4000, 3))
    y[::97, 1] = np.nan
    y[::101, 2] = np.inf
    y[::89, 0] = 2.0
    return y


def test_new_witnesses_round_trip_through_to_dict():
    rng = np.random.default_rng(2)
    y = _outputs(rng)
    atoms = find_atoms(y)
    ratios = atom_log_ratios(atoms, atoms.codes(y[:2000]), atoms.codes(y[2000:]))
    encoded = EncodedLinear(atoms, ratios, rng.normal(size=9), np.zeros(9), np.ones(9))
    feature = Derived("mantissa", 0, 3, bits=8)
    feature_atoms = find_atoms(feature.score(y)[:, None])
    events = [
        DerivedPatternSet(feature, feature_atoms, np.array([[0], [1]], dtype=np.int32)),
        DerivedPatternSet(Derived("special", 1, 3), ColumnAtoms((np.array([0.0, SPECIAL_CODES["nan"]]),), (False,)),
                          np.array([[1]], dtype=np.int32)),
        Intersection((ScoreRegion(Column(0, 3), -np.inf, 0.5), ScoreRegion(Column(1, 3), 0.0, np.inf))),
        ScoreRegion(encoded, 0.1, np.inf),
        ScoreRegion(SignVote(np.zeros(3), np.array([1.0, -1.0, 1.0])), 1.0, np.inf),
        ScoreRegion(Derived("residue", 2, 3, grid=0.25), 0.0, 0.5),
    ]
    for event in events:
        back = witness_from_dict(event.to_dict())
        assert np.array_equal(back.indicator(y), event.indicator(y)), event.describe()
        assert back.describe() == event.describe()
    assert events[1].indicator(y).sum() == np.isnan(y[:, 1]).sum()


def test_encoded_atoms_use_memory_independent_of_the_number_of_atoms():
    rng = np.random.default_rng(3)
    few, many = rng.integers(0, 10, (2000, 2)).astype(float), rng.integers(0, 1000, (2000, 2)).astype(float)
    for y in (few, many):
        y = np.vstack([y, y])  # every value at least twice: all atoms
        atoms = find_atoms(np.vstack([y, y]))
        ratios = atom_log_ratios(atoms, atoms.codes(y), atoms.codes(y))
        assert EncodedLinear.features(atoms, ratios, y).shape == (y.shape[0], 6)


def test_tree_ensemble_matches_scikit_learn_and_is_skipped_without_it(monkeypatch):
    pytest.importorskip("sklearn")
    from sklearn.ensemble import HistGradientBoostingClassifier

    from dpaudit.auditor.witness_search import family_learned as search_products

    fitted = []

    class Spy(HistGradientBoostingClassifier):
        def fit(self, x, y):
            fitted.append(self)
            return super().fit(x, y)

    monkeypatch.setattr("sklearn.ensemble.HistGradientBoostingClassifier", Spy)
    rng = np.random.default_rng(4)
    a, b = rng.normal(0, 1, (3000, 3)), rng.normal(0.5, 1, (3000, 3))
    a[:7, 1] = np.nan
    ensemble = search_products.fit_tree_ensemble(a, b, np.random.default_rng(5))
    x = np.concatenate([a, b])
    assert np.allclose(ensemble.score(x), fitted[0].decision_function(x), atol=1e-12)
    assert np.array_equal(witness_from_dict(ScoreRegion(ensemble, 0.0, np.inf).to_dict()).indicator(x), ensemble.score(x) >= 0)
    monkeypatch.setitem(__import__("sys").modules, "sklearn.ensemble", None)  # scikit-learn absent
    assert search_products.fit_tree_ensemble(a, b, np.random.default_rng(5)) is None
    assert search_products.boosted_candidates((a, b), (a, b), None, np.random.default_rng(5)) == []


# ------------------------------------------------------------------------------------------ selection
def test_zero_count_events_are_ranked_by_what_certification_could_prove():
    args = dict(n_select=50_000, n_certify=900_000, z_certify=2.24, delta=0.0)
    plain = held_out_predicted(np.array([20.0]), np.array([0.0]), **args)
    one_sided = held_out_predicted(np.array([20.0]), np.array([0.0]), build_p=np.array([20.0]), build_q=np.array([0.0]),
                                   n_total=100_000, **args)
    assert one_sided[0] > plain[0] + 2  # q_hi = -ln(alpha) / n_certify instead of ~4 / n_select
    chance = held_out_predicted(np.array([3.0]), np.array([0.0]), build_p=np.array([ZERO_MIN - 4.0]), build_q=np.array([0.0]),
                                n_total=100_000, **args)
    seen_in_build = held_out_predicted(np.array([20.0]), np.array([0.0]), build_p=np.array([20.0]), build_q=np.array([1.0]),
                                       n_total=100_000, **args)
    assert chance[0] == held_out_predicted(np.array([3.0]), np.array([0.0]), **args)[0]  # too few hits: no bonus
    assert seen_in_build[0] == plain[0]


def test_tail_atoms_do_not_beat_the_half_line_on_wide_discrete_outputs():
    rng = np.random.default_rng(6)

    def discrete_laplace(shift, size):
        p = 1 - math.exp(-0.05)
        return (shift + rng.geometric(p, size) - rng.geometric(p, size)).astype(float)[:, None]

    a, b = discrete_laplace(0, 100_000), discrete_laplace(1, 100_000)
    best = structured_search(a, b, n_certify=900_000, z_certify=2.0, delta=0.0, rng=rng)[0]
    assert not isinstance(best.witness, PatternSet) and best.predicted < 0.05  # an honest prediction: true epsilon 0.05


def test_best_half_line_is_certified_beside_an_atom_set():
    atoms = ColumnAtoms((np.array([0.0, 1.0]),), (False,))
    atom_event = Candidate(PatternSet(atoms, np.array([[0]], dtype=np.int32)), True, 3.0)
    half_line = Candidate(ScoreRegion(Column(0, 1), -np.inf, 0.5), True, 1.0)
    interval = Candidate(ScoreRegion(Column(0, 1), 0.1, 0.5), False, 1.0)
    chosen = select_for_certification([atom_event, interval, half_line], 1)
    assert [c.witness for c in chosen] == [atom_event.witness, half_line.witness]
    assert is_half_line(chosen[1].witness)
    only = select_for_certification([half_line, atom_event], 1)
    assert len(only) == 1  # a half-line on top needs no companion


# --------------------------------------------------------------------------------------------- audits
def test_snapped_noise_off_the_grid_is_infinite():
    mechanism = buggy.LaplaceSnappedNoiseOffGrid(1.0)
    result = dpaudit.audit(mechanism, [0.0], [1 / 3], epsilon=1.0, samples=100_000, seed=1, workers=1)
    assert result.epsilon_lower == math.inf and result.support_proof and result.violated
    assert "consistent with" not in result.summary() or result.count_q == 0


def test_fine_snapping_is_caught_through_the_low_mantissa_bits():
    mechanism = buggy.LaplaceSnappedNoiseOffGrid(1.0, granularity=2.0**-20)
    del_support = type("NoOracle", (), {"__call__": lambda self, d, n, r: mechanism(d, n, r)})()  # no support oracle
    result = dpaudit.audit(del_support, [0.0], [1 / 3], epsilon=1.0, samples=200_000, seed=2, workers=1)
    assert result.epsilon_lower >= 5 and result.count_q == 0 and "consistent with epsilon = inf" in result.summary()


def test_rare_nan_branch_isolated_and_proven_infinite():
    mechanism = buggy.LaplaceRareNaNBranch(1.0, nan_probability=1e-3)
    result = dpaudit.audit(mechanism, [0.0], [1.0], epsilon=1.0, samples=300_000, seed=3, workers=1)
    assert result.epsilon_lower == math.inf and "nan" in result.event
    blind = type("NoOracle", (), {"__call__": lambda self, d, n, r: mechanism(d, n, r)})()
    bounded = dpaudit.audit(blind, [0.0], [1.0], epsilon=1.0, samples=300_000, seed=3, workers=1)
    assert bounded.violated and bounded.count_q == 0 and math.isfinite(bounded.epsilon_lower)


def test_dtype_leak_is_an_outcome():
    result = dpaudit.audit(buggy.LaplaceDtypeLeak(1.0), [0.0], [1.0], epsilon=1.0, samples=100_000, seed=4, workers=1)
    assert result.epsilon_lower >= 5 and result.count_q == 0


def test_replace_one_histogram_needs_a_product_event():
    mechanism = buggy.HistogramReplaceOne(1.0, 3)
    result = dpaudit.audit(mechanism, [5.0, 5.0, 5.0], [6.0, 4.0, 5.0], epsilon=1.0, samples=200_000, seed=5, workers=1)
    assert result.violated and result.epsilon_lower <= 2.0  # no single coordinate can exceed 1


def test_correct_mechanisms_still_pass():
    for seed in range(3):
        result = dpaudit.audit(LaplaceMechanism(1.0), [0.0], [1.0], epsilon=1.0, samples=50_000, seed=seed, workers=1)
        assert not result.violated
        vector = dpaudit.audit(LaplaceMechanism(1.0, k=4), np.zeros(4), np.ones(4), epsilon=1.0, samples=50_000, seed=seed,
                               workers=1)
        assert not vector.violated and vector.certified_events >= 1


# ------------------------------------------------------------------------------------------ bad input
def _object_floats(data, size, rng):
    return np.array([float(v) for v in data[0] + rng.laplace(0, 1, size)], dtype=object)


def _mixed_objects(data, size, rng):
    out = np.array([float(v) for v in rng.laplace(0, 1, size)], dtype=object)
    out[0] = 1  # an int among floats
    return out


def _ragged(data, size, rng):
    return [[1.0], [1.0, 2.0]] * (size // 2) + [[1.0]] * (size % 2)


def _dtype_by_block(data, size, rng):
    out = data[0] + rng.laplace(0, 1, size)
    return out if size < 1000 else out.astype(np.float32)  # probe blocks float64, audit blocks float32


def test_object_arrays_of_numbers_are_audited():
    result = dpaudit.audit(_object_floats, [0.0], [1.0], epsilon=1.0, samples=20_000, seed=6, workers=1)
    assert 0.5 < result.epsilon_lower <= 1.0


@pytest.mark.parametrize("mechanism, words", [(_mixed_objects, ["float", "int"]), (_ragged, ["list"]),
                                              (_dtype_by_block, ["float32", "float64", "block"])])
def test_bad_outputs_are_refused_naming_block_input_and_types(mechanism, words):
    with pytest.raises(MechanismError) as error:
        dpaudit.audit(mechanism, [0.0], [1.0], samples=20_000, seed=7, workers=1)
    message = str(error.value)
    assert "mechanism on d" in message and all(w in message for w in words), message


# ------------------------------------------------------------------------------- tails for (eps, delta)
from dpaudit.auditor.witness_search import family_tails as search_tails  # noqa: E402
from dpaudit.auditor.outcomes import shape_outcome  # noqa: E402
from dpaudit.mechanisms import GaussianMechanism  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 5), st.integers(2, 40))
def test_tail_counts_are_exact_inside_the_cut(seed, blocks, keep):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(-30, 30, (int(rng.integers(1, 80)), 2)).astype(float) for _ in range(blocks)]
    tails = search_tails.merge([search_tails.summarise(p, keep) for p in parts])
    everything = np.concatenate(parts)
    assert tails.rows == everything.shape[0]
    for j in range(2):
        for t in np.unique(everything[:, j]):
            if t < tails.low_cut[j]:
                assert np.sum(tails.low[j] <= t) == np.sum(everything[:, j] <= t)
            if t > tails.high_cut[j]:
                assert np.sum(tails.high[j] >= t) == np.sum(everything[:, j] >= t)


def test_tail_half_lines_reach_the_far_tail_for_delta_claims():
    rng = np.random.default_rng(8)
    sigma = GaussianMechanism(1.0, 1e-5).sigma
    a, b = rng.normal(1.0, sigma, (400_000, 1)), rng.normal(0.0, sigma, (400_000, 1))
    tails_a = search_tails.merge([search_tails.summarise(x) for x in np.array_split(a, 7)])
    tails_b = search_tails.merge([search_tails.summarise(x) for x in np.array_split(b, 7)])
    found = search_tails.tail_candidates(tails_a, tails_b, 1, n_certify=9_000_000, z_certify=2.24, delta=1e-5)
    best = max(found, key=lambda c: c.predicted)
    event = best.witness  # y >= t under d against d_prime, or its mirror y <= -t the other way; p ~ 1e-3 .. 1e-4
    assert (best.forward and event.low > 10.0 and np.isinf(event.high)) or (not best.forward and event.high < -9.0 and np.isinf(event.low))
    assert 0.8 < best.predicted < 0.95  # the exact optimum at 9e6 certification samples is 0.89
    assert search_tails.stream_size(10**7, 0.1, 200_000, 1e-5) == 800_000
    assert search_tails.stream_size(10**7, 0.1, 200_000, 0.0) == 0  # pure claims keep the batch only


def test_delta_audits_stream_the_whole_selection_budget():
    gaussian = GaussianMechanism(1.0, 1e-5)
    result = dpaudit.audit(gaussian, [0.0], [1.0], epsilon=1.0, delta=1e-5, samples=1_000_000, seed=9, workers=1,
                           selection_fraction=0.3, sequential=False)
    assert result.selection_samples == 300_000 and "streamed" in result.method
    assert 0.6 < result.epsilon_lower <= 1.0 and not result.violated
    bad = dpaudit.audit(buggy.GaussianHalfSigma(1.0, 1e-5), [0.0], [1.0], epsilon=1.0, delta=1e-5, samples=1_000_000,
                        seed=9, workers=1, selection_fraction=0.3)
    assert bad.violated  # true delta at epsilon 1 is 1.7e-3


def test_discrete_laplace_twice_the_claim_is_caught():
    def discrete_laplace(noise_epsilon):
        def mechanism(data, size, rng):
            p = 1.0 - math.exp(-noise_epsilon)
            return data[0] + rng.geometric(p, size) - rng.geometric(p, size)
        return mechanism

    fair = dpaudit.audit(discrete_laplace(0.05), [0], [1], epsilon=0.05, samples=1_000_000, seed=10, workers=1,
                         sequential=False)
    twice = dpaudit.audit(discrete_laplace(0.1), [0], [1], epsilon=0.05, samples=1_000_000, seed=10, workers=1)
    assert 0.8 * 0.05 <= fair.epsilon_lower <= 0.05 and twice.violated


# ------------------------------------------------------------------------------- shapes, proofs, notes
def _clipped_around_truth(data, size, rng):
    return np.clip(data[0] + rng.laplace(0.0, 1.0, size), data[0] - 2.0, data[0] + 2.0)


class _ClippedWithOracle:
    def __call__(self, data, size, rng):
        return _clipped_around_truth(data, size, rng)

    def support(self, data, outputs):
        y = np.asarray(outputs, dtype=float)
        return (y >= data[0] - 2.0) & (y <= data[0] + 2.0)


def test_clipped_laplace_atoms_are_proven_or_consistent_with_infinity():
    proven = dpaudit.audit(_ClippedWithOracle(), [0.0], [1.0], epsilon=1.0, samples=100_000, seed=11, workers=1)
    assert proven.epsilon_lower == math.inf and proven.support_proof
    blind = dpaudit.audit(_clipped_around_truth, [0.0], [1.0], epsilon=1.0, samples=100_000, seed=11, workers=1)
    assert blind.violated and blind.count_q == 0 and "consistent with epsilon = inf" in blind.summary()


def test_shape_outcomes_pad_and_refuse_unprobed_widths():
    out = shape_outcome(np.ones((3, 1)), (1, 2), "here")
    assert out.shape == (3, 3) and np.isnan(out[:, 1]).all() and (out[:, 2] == 1).all()
    assert shape_outcome(np.ones((3, 2)), (2,), "here").shape == (3, 2)  # one width: unchanged
    with pytest.raises(MechanismError, match="here.*3 values per output"):
        shape_outcome(np.ones((3, 3)), (1, 2), "here")


def test_missing_scikit_learn_is_noted_in_the_result(monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "sklearn.ensemble", None)
    result = dpaudit.audit(buggy.HistogramReplaceOne(1.0, 3), [5.0, 5.0, 5.0], [6.0, 4.0, 5.0], epsilon=1.0,
                           samples=50_000, seed=12, workers=1)
    assert any("scikit-learn is not installed" in w for w in result.warnings)
    scalar = dpaudit.audit(LaplaceMechanism(1.0), [0.0], [1.0], samples=20_000, seed=12, workers=1)
    assert not any("scikit-learn" in w for w in scalar.warnings)  # nothing was skipped for a scalar output
