"""The witnessed run: each bug class flagged by the check meant for it, correct stacks pass, bad input is
refused or stated, and the defects around it (BatchMemoryManager loaders, bare accountants, the hint)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("opacus")

import opacus  # noqa: E402,F401  (imported at collection, not in the first test)
import torch  # noqa: E402

from dpaudit import training  # noqa: E402
from dpaudit.errors import MechanismError  # noqa: E402
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed  # noqa: E402
from dpaudit.training.protocol import looks_like_a_shape_error  # noqa: E402
from dpaudit.training.witness_corpus import GHOST, WITNESS_CASES, dataset  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny runs: one torch thread (several threads on a loaded machine cost more than the run)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def witness(name, seed=1, **kwargs):
    case = WITNESS_CASES[name]
    return training.witness_run(case, dataset=dataset(seed=seed), seed=seed, **kwargs)


@pytest.mark.parametrize("name", ["plain", "batch_memory_manager", "per_layer_clipping"])
def test_correct_stacks_pass_every_check(name):
    result = witness(name)
    assert not result.flagged, result.summary()
    assert [c.name for c in result.checks] == ["reads_before_attach", "reads_outside_noisy_steps",
                                               "examples_outside_the_ledger", "inclusion_rate", "noisy_steps",
                                               "unexplained_updates", "clipping", "noise_level", "noise_independence"]
    assert result.noisy_steps == 50 and result.check("noisy_steps").expected == 50
    statistical = [c for c in result.checks if not c.deterministic]
    assert {c.name for c in statistical} == {"inclusion_rate", "noise_level", "noise_independence"}
    assert all(c.false_alarm_rate == pytest.approx(0.05 / 3) for c in statistical)
    assert result.check("clipping").statistic <= 0.5 * (1 + 1e-6)
    json.dumps(result.to_dict(), allow_nan=False)


@pytest.mark.parametrize("name", ["accountant_per_epoch", "resume_fresh_engine", "private_fine_tune", "batch_level_clipping",
                                  "per_layer_above_bound", "same_noise_every_step", "augmented_copies",
                                  "normalisation_statistics", "second_loader"])
def test_bug_classes_are_flagged_by_the_check_meant_for_them(name):
    result = witness(name)
    case = WITNESS_CASES[name]
    assert case.check in result.failed, result.summary()
    assert result.check(case.check).sentence


def decays_by_hand(data, seed, hooks, how="in place"):
    """Shrinks the weights by hand between noisy steps (a change no noisy step made): in place, through
    ``.data`` (which torch's version counter does not see) or by replacing the parameter's storage."""
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    model = torch.nn.Linear(8, 2)
    model, optimizer, loader = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=20), noise_multiplier=1.0, max_grad_norm=0.5)
    hooks.attach(model, optimizer)  # no engine: the claim is the number given
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        weight = model._module.weight
        if how == "in place":
            with torch.no_grad():
                weight.mul_(0.99)
        elif how == "through .data":
            weight.data.mul_(0.99)
        else:
            weight.data = weight.data * 0.99
    return model


@pytest.mark.parametrize("how", ["in place", "through .data", "new storage"])
def test_a_change_between_noisy_steps_is_unexplained(how):
    result = training.witness_run(lambda d, s, h: decays_by_hand(d, s, h, how), dataset=dataset(), seed=0, claim=1.0)
    assert "unexplained_updates" in result.failed
    assert "changed after noisy step 1 and before the next noisy step" in result.check("unexplained_updates").sentence
    assert any("no privacy engine" in w for w in result.warnings)  # no engine: steps, q and sigma not witnessed
    assert not result.check("noise_level").tested and result.check("clipping").tested


def test_deterministic_findings_spend_no_false_alarm_rate():
    result = witness("accountant_per_epoch")
    steps = result.check("noisy_steps")
    assert steps.deterministic and steps.p_value is None and steps.statistic == 50 and steps.expected == 5
    assert "the claim counts 5" in steps.sentence


def test_a_given_event_claim_is_the_one_witnessed():
    double = SelfComposed(PoissonSampled(0.1, Gaussian(2.0)), 50)  # twice the noise the run adds
    flagged = witness("plain", claim=double)
    assert flagged.failed == ("noise_level",) and "less noise" in flagged.check("noise_level").sentence
    assert any("below the engine's own figure" in w for w in flagged.warnings)
    assert not witness("plain", claim=SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 50)).flagged


def test_ghost_clipping_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="ghost clipping .* never forms the per-example gradients"):
        training.witness_run(GHOST, dataset=dataset(), seed=0)


def copies_into_tensors(data, seed, hooks):
    """Copies the data into tensors before attaching: the ledger cannot see the later reads."""
    x, y = data.tensors
    return WITNESS_CASES["plain"](torch.utils.data.TensorDataset(x.clone(), y.clone()), seed, hooks)


def never_attaches(data, seed, hooks):
    return torch.nn.Linear(8, 2)


def test_bad_input_is_refused_or_stated():
    copied = training.witness_run(copies_into_tensors, dataset=dataset(), seed=0)
    assert {"reads_before_attach", "examples_outside_the_ledger"} <= set(copied.failed)
    assert "dataset.tensors" in copied.check("reads_before_attach").sentence
    with pytest.raises(MechanismError, match="never called hooks.attach"):
        training.witness_run(never_attaches, dataset=dataset(), seed=0)
    with pytest.raises(TypeError, match="claim"):
        training.witness_run(WITNESS_CASES["plain"], dataset=dataset(), seed=0, claim="eps=1")

    class Stream(torch.utils.data.IterableDataset):
        def __iter__(self):
            return iter(dataset())

    with pytest.raises(TypeError, match="iterable-style"):
        training.witness_run(WITNESS_CASES["plain"], dataset=Stream(), seed=0)


def test_a_batch_memory_manager_loader_is_checked_by_its_logical_batches():
    from opacus import PrivacyEngine
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    torch.manual_seed(0)
    model = torch.nn.Linear(8, 2)
    data = dataset(records=500)
    model, optimizer, loader = PrivacyEngine().make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=50), noise_multiplier=1.0, max_grad_norm=1.0)
    with BatchMemoryManager(data_loader=loader, max_physical_batch_size=8, optimizer=optimizer) as physical:
        result = training.check_sampler(physical, sample_rate=0.1, seed=0)
        assert not result.violated and result.mean_batch_size > 30
        assert optimizer._step_skip_queue == []  # the check did not signal the user's optimizer


def bare_accountant(data, seed, hooks):
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(4, 2))
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1),
        data_loader=torch.utils.data.DataLoader(data, batch_size=len(data)), noise_multiplier=1.0, max_grad_norm=1.0)
    hooks.attach(model, optimizer, engine.accountant)  # the accountant alone
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


def test_a_bare_accountant_given_to_attach_is_the_claim():
    from . import tiny_stack

    result = training.audit_opacus(bare_accountant, dataset=tiny_stack.dataset(), runs=4, canary="mislabelled",
                                   check_seed=False)
    assert result.claim_source.startswith("engine history") and result.claim["history"] == [[1.0, 1.0, 1]]


def test_the_shape_hint_only_on_shape_errors():
    assert looks_like_a_shape_error(RuntimeError("mat1 and mat2 shapes cannot be multiplied (4x4 and 6x8)"))
    assert not looks_like_a_shape_error(ValueError("Poisson sampling is not compatible with grad accumulation"))
    assert not looks_like_a_shape_error(KeyError("shape"))


def trains_with_workers(data, seed, hooks, statistics_first=False):
    """The plain stack, its loader reading in a DataLoader worker process; optionally a statistics pass over the
    private data in a worker before make_private."""
    from opacus import PrivacyEngine

    from dpaudit.training.witness_corpus import _fit, make_model

    if statistics_first:
        for _ in torch.utils.data.DataLoader(data, batch_size=100, num_workers=1):
            pass
    torch.manual_seed(seed)
    model = make_model()
    engine = PrivacyEngine(accountant="prv")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.2),
        data_loader=torch.utils.data.DataLoader(data, batch_size=20, num_workers=1), noise_multiplier=1.0,
        max_grad_norm=0.5)
    hooks.attach(model, optimizer, engine)
    return _fit(model, optimizer, loader, epochs=1)


def test_reads_in_loader_worker_processes_are_a_stated_limit_not_a_pass_or_a_finding():
    result = training.witness_run(trains_with_workers, dataset=dataset(), seed=0)
    unseen = ("reads_outside_noisy_steps", "examples_outside_the_ledger", "inclusion_rate")
    assert not result.flagged, result.summary()
    for name in unseen:  # the ledger never saw which records the steps used: said, neither passed nor flagged
        check = result.check(name)
        assert not check.tested and "DataLoader worker processes (num_workers > 0)" in check.sentence
    assert result.check("clipping").tested and result.check("noise_level").tested
    assert any("could not see" in w and "num_workers=0" in w for w in result.warnings)
    assert "not tested" in result.summary() and "could not see" in result.summary()

    early = training.witness_run(lambda d, s, h: trains_with_workers(d, s, h, statistics_first=True), dataset=dataset(),
                                 seed=0)
    assert early.failed == ("reads_before_attach",)  # counted in the worker, so a read before attach all the same
    assert "200 of them in DataLoader worker processes" in early.check("reads_before_attach").sentence
