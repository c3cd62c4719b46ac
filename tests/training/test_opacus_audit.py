"""Opacus end to end: canaries planted in real runs, scores certified, the claim read from the engine."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

from dpaudit import training  # noqa: E402
from dpaudit.errors import DependencyError, MechanismError  # noqa: E402
from dpaudit.training.canaries import make_canaries  # noqa: E402
from dpaudit.training.corpus import check_case  # noqa: E402
from dpaudit.training.protocol import TrainingTarget  # noqa: E402

from . import tiny_stack  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


def tiny(**kwargs):
    base = dict(dataset=tiny_stack.dataset(), make_model=tiny_stack.make_model, make_optimizer=tiny_stack.make_optimizer,
                make_data_loader=tiny_stack.full_batch, max_grad_norm=1.0, epochs=5)
    return base | kwargs


def test_dirac_canaries_are_planted_and_observed_in_every_step():
    data = tiny_stack.dataset()
    x, y = data.tensors
    canaries = make_canaries("dirac_gradient", 20, x.numpy(), y.numpy(), 2, seed=1)
    train = training.OpacusTraining(tiny_stack.make_model, tiny_stack.make_optimizer, tiny_stack.full_batch,
                                    noise_multiplier=1e-3, max_grad_norm=1.0, epochs=5)
    included = np.arange(20) % 2 == 0
    outcome = TrainingTarget(train, data, canaries).run(included, seed=3)
    assert outcome.steps == 5 and outcome.canary_rows_seen == 5 * included.sum()
    # each included canary adds its gradient (norm C) in each of the 5 steps
    expected = 5.0
    assert np.allclose(outcome.scores[included], expected, rtol=0.02)
    assert np.all(np.abs(outcome.scores[~included]) < 0.02 * expected)
    assert outcome.accountant.history == [(1e-3, 1.0, 5)]


def test_one_run_white_box_audit_certifies_and_compares_with_the_engine():
    r = training.audit_opacus(**tiny(noise_multiplier=0.3), canaries=40, seed=0)
    assert r.mode == "one_run" and r.preset == "dirac_gradient" and "white-box" in r.threat_model
    assert 0 < r.epsilon_lower <= r.epsilon_upper and not r.violated
    assert r.epsilon_opacus == pytest.approx(r.epsilon_upper, rel=0.01)
    assert "Poisson" in r.sampling
    json.dumps(r.to_dict(), allow_nan=False)


def test_a_claim_below_the_truth_is_violated():
    r = training.audit_opacus(**tiny(noise_multiplier=0.3), canaries=40, claim=0.1, seed=0)
    assert r.violated and r.claim_source == "given epsilon" and r.epsilon_lower > 0.1


def test_many_runs_through_the_process_pool_equal_serial_runs():
    serial = training.audit_opacus(**tiny(noise_multiplier=1.0), runs=6, seed=2, check_seed=False)
    pooled = training.audit_opacus(**tiny(noise_multiplier=1.0), runs=6, seed=2, workers=2, check_seed=False)
    assert serial.mode == "many_runs" and serial.runs == 6
    assert serial.audit["auroc"] == pooled.audit["auroc"] and serial.epsilon_lower == pooled.epsilon_lower


def test_black_box_presets_score_the_final_model():
    for preset in ("mislabelled", "out_of_distribution"):
        r = training.audit_opacus(**tiny(noise_multiplier=1.0), canary=preset, runs=4, seed=0, check_seed=False)
        assert r.preset == preset and "black-box" in r.threat_model and r.epsilon_lower >= 0


def test_corpus_clipping_off_is_caught_and_the_correct_stack_is_not():
    assert check_case("clipping_off", seed=0, canaries=300, records=300).flagged
    correct = check_case("correct", seed=0, canaries=300, records=300)
    assert not correct.flagged and correct.white_box.epsilon_lower < correct.white_box.epsilon_upper


def test_a_shuffled_loader_is_caught_by_the_sampler_check():
    verdict = check_case("shuffled_batches", seed=0, canaries=50, records=300)
    assert verdict.flagged and verdict.sampler.violated


def test_a_train_function_that_ignores_its_seed_is_refused():
    with pytest.raises(ValueError, match="ignores its seed"):
        training.audit_opacus(tiny_stack.train_ignoring_seed, dataset=tiny_stack.dataset(), runs=4)


def test_canaries_that_do_not_fit_the_model_fail_clearly():
    with pytest.raises(MechanismError, match="the model and the data fit"):  # the witnessed run, first, says so
        training.audit_opacus(**tiny(noise_multiplier=1.0, make_model=tiny_stack.wide_model), runs=4)
    with pytest.raises(MechanismError, match="canaries fit"):
        training.audit_opacus(**tiny(noise_multiplier=1.0, make_model=tiny_stack.wide_model), runs=4, witness=False)


@pytest.mark.parametrize("kwargs, name", [({"runs": 4, "canaries": 4}, "runs"), ({}, "runs"), ({"runs": 2}, "runs"),
                                          ({"runs": 4, "canary": "nope"}, "canary"),
                                          ({"runs": 4, "gradient_norm_factor": 0}, "gradient_norm_factor")])
def test_bad_arguments_name_themselves(kwargs, name):
    with pytest.raises(ValueError, match=name):
        training.audit_opacus(**tiny(noise_multiplier=1.0), **kwargs)


def test_missing_factories_are_named():
    with pytest.raises(ValueError, match="make_optimizer"):
        training.audit_opacus(dataset=tiny_stack.dataset(), make_model=tiny_stack.make_model, runs=4)


def test_missing_opacus_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "opacus", None)
    with pytest.raises(DependencyError, match=r"dpaudit\[opacus\]"):
        training.audit_opacus(**tiny(noise_multiplier=1.0), runs=4)


def test_a_model_opacus_cannot_make_private_is_named():
    with pytest.raises(ValueError, match="ModuleValidator.fix"):
        training.audit_opacus(**tiny(noise_multiplier=1.0, make_model=tiny_stack.batch_norm_model), runs=4)


def test_records_are_read_from_the_loader_or_its_sampler():
    torch = pytest.importorskip("torch")
    from dpaudit.training.sampler import _records_of

    loader = torch.utils.data.DataLoader(tiny_stack.dataset(), batch_size=4)
    assert _records_of(loader) == 24 and _records_of(loader.batch_sampler) == 24


def test_a_train_function_that_never_attaches_the_hooks_is_refused():
    with pytest.raises(MechanismError, match="hooks.attach"):
        training.audit_opacus(tiny_stack.train_without_hooks, dataset=tiny_stack.dataset(), runs=4, check_seed=False)
