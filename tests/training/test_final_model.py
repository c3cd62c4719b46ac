"""Final-model audits: the batched trainer's gradients, the canaries, the audit's bounds and labels, the claim's
curve, the backends, the training ledger's integration point and bad input (tiny runs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dpaudit import accountant, training  # noqa: E402
from dpaudit.errors import InvalidArgument, InvalidArgumentType  # noqa: E402
from dpaudit.events import Gaussian, SelfComposed  # noqa: E402
from dpaudit.training.batched_mlp import BatchedMLPTraining, _relu_forward  # noqa: E402
from dpaudit.training.final_canaries import make_final_canary  # noqa: E402


def data(n: int = 60, d: int = 6, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 2.0, (classes, d))
    y = rng.integers(0, classes, n)
    return (centres[y] + rng.normal(0.0, 1.0, (n, d))).astype(np.float32), y


def trainer(sigma: float = 2.0, **kwargs) -> BatchedMLPTraining:
    return BatchedMLPTraining((6, 4, 3), steps=5, noise_multiplier=sigma, learning_rate=0.5, **kwargs)


# ------------------------------------------------------------------------------------------ the trainer
def test_clipped_sums_match_autograd_per_example():
    t = BatchedMLPTraining((5, 4, 3, 3), steps=1, noise_multiplier=1.0, max_grad_norm=0.7)
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(6, 5)).astype(np.float32), rng.integers(0, 3, 6)
    p = t.random_initial([1, 2])
    xt = torch.as_tensor(x)
    onehot = torch.nn.functional.one_hot(torch.as_tensor(y), 3).float()
    weights, biases = [torch.as_tensor(w) for w in p.weights], [torch.as_tensor(b) for b in p.biases]
    mask = torch.ones(2, 6)
    mask[1, 2] = 0
    for crafted in (None, (1, 2)):
        grads_w, grads_b = t._clipped_sums(torch, xt, (xt * xt).sum(1), onehot, weights, biases, mask, 0.7, crafted)
        for m in range(2):
            expect_w = [torch.zeros_like(w[m]) for w in weights]
            expect_b = [torch.zeros_like(b[m]) for b in biases]
            for i in range(6):
                params = [w[m].clone().requires_grad_() for w in weights] + [b[m].clone().requires_grad_() for b in biases]
                _, logits = _relu_forward(torch, xt[i:i + 1], [q[None] for q in params[:3]], [q[None] for q in params[3:]])
                loss = torch.nn.functional.cross_entropy(logits[0], torch.as_tensor(y[i:i + 1]))
                grads = [g.clone() for g in torch.autograd.grad(loss, params)]
                if crafted:
                    grads[0][crafted] = 0.0
                factor = min(1.0, 0.7 / float(torch.sqrt(sum((g ** 2).sum() for g in grads)))) * float(mask[m, i])
                for layer in range(3):
                    expect_w[layer] += factor * grads[layer]
                    expect_b[layer] += factor * grads[3 + layer]
            for layer in range(3):
                assert torch.allclose(grads_w[layer][m], expect_w[layer], atol=1e-5)
                assert torch.allclose(grads_b[layer][m], expect_b[layer], atol=1e-5)


def test_a_run_does_not_depend_on_the_models_beside_it():
    x, y = data()
    t = trainer(sampling_probability=0.5)
    together = t.train_many(x, y, np.ones((3, len(y))), [5, 6, 7], None).flat()
    alone = t.train_many(x, y, np.ones((1, len(y))), [6], None).flat()
    np.testing.assert_array_equal(together[1], alone[0])


def test_the_crafted_gradient_moves_its_coordinate_by_the_mechanism():
    """Full batch, the canary in: the coordinate moves by lr (T C + noise) / n, data gradients zeroed there."""
    x, y = data()
    t = trainer(sigma=1e-6)
    start = t.random_initial([3])
    final = t.train_many(x, y, np.ones((1, len(y))), [3], start, crafted_coordinate=7, crafted_present=np.array([True]))
    moved = final.flat()[0, 7] - start.flat()[0, 7]
    assert moved == pytest.approx(-0.5 * 5 * 1.0 / len(y), rel=1e-4)


# ------------------------------------------------------------------------------------------ canaries
def test_blank_and_clipbkd_canaries():
    x, _ = data()
    probabilities = np.array([0.5, 0.1, 0.4])
    blank = make_final_canary("blank", x, lambda inputs: probabilities[None])
    assert not blank.input.any() and blank.label == 1
    clip = make_final_canary("clipbkd", x, lambda inputs: probabilities[None])
    assert np.linalg.norm(clip.input) == pytest.approx(np.median(np.linalg.norm(x, axis=1)), rel=1e-5)
    centred = x - x.mean(axis=0)
    variance_along = np.var(centred @ (clip.input / np.linalg.norm(clip.input)))
    assert variance_along <= np.linalg.eigvalsh(np.cov(centred.T, bias=True)).min() * (1 + 1e-3)


# ------------------------------------------------------------------------------------------ the audit
def test_result_reports_both_numbers_labelled_and_the_heuristic():
    x, y = data()
    r = training.audit_final_model(trainer(), dataset=(x, y), runs=16, seed=0)
    assert r.threat_model.startswith("final model only")
    assert r.epsilon_claim == pytest.approx(accountant.gdp_epsilon(math.sqrt(5) / 2.0, 1e-5), rel=1e-6)
    assert r.epsilon_last_iterate == pytest.approx(r.epsilon_claim, rel=1e-6)  # full batch: the heuristic is the claim
    assert 0.0 <= r.epsilon_lower <= r.epsilon_ceiling and r.mu_lower >= 0
    d = r.to_dict()
    assert "Gaussian" in d["bounds"]["epsilon_gdp"] and "not a bound" in d["bounds"]["epsilon_last_iterate"]
    assert d["initialisation"]["kind"] == "pretrained" and d["canary"]["kind"] == "blank"
    assert len(r.scores_with) == len(r.scores_without) == 8
    assert "Gaussian" in r.summary() and "heuristic" in r.summary()


def test_reproducible_and_the_same_through_a_process_pool():
    x, y = data()
    t = trainer()
    a = training.audit_final_model(t, dataset=(x, y), runs=16, seed=4, check_seed=False)
    b = training.audit_final_model(t, dataset=(x, y), runs=16, seed=4, check_seed=False)
    assert a.scores_with == b.scores_with and a.epsilon_lower == b.epsilon_lower


def test_a_leaky_training_is_flagged_and_a_private_one_is_not():
    """sigma 0.05 over 5 steps separates the worlds completely: a claim of epsilon 0.5 is violated both by the
    bound and by the curve; the true claim is not."""
    x, y = data()
    leaky = trainer(sigma=0.05)
    flagged = training.audit_final_model(leaky, dataset=(x, y), runs=64, seed=1, claim=0.5)
    assert flagged.violated and flagged.epsilon_lower > 0.5
    honest = training.audit_final_model(leaky, dataset=(x, y), runs=64, seed=1)
    assert not honest.violated


def test_a_claim_for_more_noise_is_caught_by_the_curve():
    x, y = data()
    r = training.audit_final_model(trainer(sigma=0.05), dataset=(x, y), runs=64, seed=2,
                                   claim=SelfComposed(Gaussian(5.0), 5))
    assert r.curve_violated and r.violated and "Gaussian(noise_multiplier=5.0)" in r.claim


def test_random_initialisation_and_crafted_gradient():
    x, y = data()
    r = training.audit_final_model(trainer(sigma=0.05), dataset=(x, y), runs=32, seed=0, canary="crafted_gradient",
                                   initialisation="random")
    assert r.initialisation["kind"] == "random" and r.canary["kind"] == "crafted_gradient"
    assert min(r.scores_with) > max(r.scores_without) and r.epsilon_lower > 0  # mu = sqrt(5) / 0.05


def test_poisson_sampling_reports_the_last_iterate_heuristic():
    x, y = data()
    r = training.audit_final_model(trainer(sigma=1.0, sampling_probability=0.3), dataset=(x, y), runs=16, seed=0)
    expected = accountant.last_iterate_epsilon(noise_multiplier=1.0, sampling_probability=0.3, steps=5, delta=1e-5)
    assert r.epsilon_last_iterate == pytest.approx(expected) and r.epsilon_last_iterate < r.epsilon_claim


def test_the_ledger_needs_an_opacus_run():
    x, y = data()
    with pytest.raises(InvalidArgument) as caught:
        training.audit_final_model(trainer(), dataset=(x, y), runs=16, witness=True)
    assert caught.value.argument == "witness"


def opacus_train(dataset, seed, hooks):
    """Full-batch DP-GD through Opacus (noise multiplier 2, 5 steps)."""
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    model = hooks.initialise(make_model())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    loader = torch.utils.data.DataLoader(dataset, batch_size=len(dataset))
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=2.0, max_grad_norm=1.0, poisson_sampling=False)
    hooks.attach(model, optimizer, engine)
    for _ in range(5):
        for inputs, labels in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(inputs), labels).backward()
            optimizer.step()
    return model


@pytest.mark.filterwarnings("ignore")
def test_every_run_is_witnessed_by_the_ledger_and_the_claim_read_from_the_engine():
    pytest.importorskip("opacus")
    x, y = data()
    r = training.audit_final_model(opacus_train, dataset=(x, y), runs=8, seed=0, make_model=make_model, witness=True,
                                   check_seed=False)
    assert r.witness["checked_runs"] == 8 and r.witness["flagged_runs"] == [] and not r.flagged
    assert r.epsilon_claim == pytest.approx(accountant.gdp_epsilon(math.sqrt(5) / 2.0, 1e-5), rel=1e-3)
    assert r.epsilon_last_iterate == pytest.approx(r.epsilon_claim, rel=1e-3)


def test_runs_the_ledger_flags_are_reported(monkeypatch):
    """The ledger's verdict on each scored run reaches the result (a stand-in ledger flags one run)."""
    import dpaudit.training.ledger as ledger

    class Verdict:
        def __init__(self, flagged):
            self.flagged, self.failed = flagged, ("noise_level",) if flagged else ()

    class Hooks:
        def attach(self, *args):
            pass

    calls = []

    def fake_witness_run(train, *, dataset, seed, claim, false_alarm_rate):
        train(dataset, seed, Hooks())
        calls.append(false_alarm_rate)
        return Verdict(len(calls) == 2)

    monkeypatch.setattr(ledger, "witness_run", fake_witness_run)
    x, y = data()
    r = training.audit_final_model(plain_train, dataset=(x, y), runs=8, make_model=make_model, claim=1.0, witness=True,
                                   check_seed=False)
    assert r.witness["flagged_runs"] == [1] and r.witness["failed"] == {"1": ["noise_level"]} and r.flagged
    assert calls == [pytest.approx(0.05 / 2 / 8)] * 8  # half the error to the ledger, split over the runs
    assert r.audit["confidence_level"] == pytest.approx(1 - 0.05 / 2 / 2)  # the rest: bounds and curve
    assert any("ledger flagged 1 of 8 runs" in w for w in r.warnings)


# ------------------------------------------------------------------------------------------ a train function
def make_model():
    return torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 3))


def plain_train(dataset, seed, hooks):
    """Full-batch noisy gradient descent in plain torch (a stand-in for a user's loop)."""
    torch.manual_seed(seed)
    model = hooks.initialise(make_model())
    x, y = dataset.tensors
    for _ in range(3):
        loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum")
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * (p.grad + torch.randn_like(p))
    return model


def train_ignoring_seed(dataset, seed, hooks):
    return plain_train(dataset, 0, hooks)


def train_without_initialise(dataset, seed, hooks):
    torch.manual_seed(seed)
    return make_model()


def test_a_train_function_is_audited():
    x, y = data()
    r = training.audit_final_model(plain_train, dataset=(x, y), runs=8, seed=0, make_model=make_model, claim=2.0)
    assert r.runs == 8 and r.epsilon_claim == 2.0 and r.epsilon_last_iterate is None
    assert r.curve is not None  # a claimed epsilon is tested on its (epsilon, delta) curve


def test_user_score_and_dataset_of_pairs():
    x, y = data()
    pairs = torch.utils.data.TensorDataset(torch.as_tensor(x), torch.as_tensor(y))
    r = training.audit_final_model(plain_train, dataset=pairs, runs=8, seed=0, make_model=make_model, claim=2.0,
                                   score=lambda model, inp, label: float(model(torch.as_tensor(inp[None]))[0, label].detach()),
                                   initialisation="random")
    assert r.initialisation["kind"] == "random" and len(r.scores_with) == 4


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("train, name", [(train_ignoring_seed, "ignores its seed"),
                                         (train_without_initialise, "hooks.initialise")])
def test_bad_train_functions_are_refused(train, name):
    x, y = data()
    with pytest.raises(InvalidArgument, match=name) as caught:
        training.audit_final_model(train, dataset=(x, y), runs=8, make_model=make_model, claim=1.0)
    assert caught.value.argument == "train"


def _nan_score(model, inp, label):
    return float("nan")


def test_bad_input_names_the_argument():
    x, y = data()
    t = trainer()
    cases = [
        (dict(canary=(np.zeros(5), 0)), "canary"),  # the wrong shape
        (dict(canary=(np.zeros(6), 7)), "canary"),  # a label the model does not have
        (dict(canary="nope"), "canary"),
        (dict(public=(x[:10], y[:10])), "public"),  # the public split overlaps the private data
        (dict(runs=6), "runs"),
        (dict(initialisation="zeros"), "initialisation"),
        (dict(public_fraction=1.0), "public_fraction"),
        (dict(claim=-1.0), "claim"),
    ]
    for kwargs, name in cases:
        args = {"dataset": (x, y), "runs": 16, **kwargs}
        with pytest.raises((InvalidArgument, InvalidArgumentType)) as caught:
            training.audit_final_model(t, **args)
        assert caught.value.argument == name, (kwargs, caught.value)
    with pytest.raises(InvalidArgument, match="canary"):
        training.audit_final_model(plain_train, dataset=(x, y), runs=8, make_model=make_model, canary="crafted_gradient")
    with pytest.raises(InvalidArgument) as caught:
        training.audit_final_model(plain_train, dataset=(x, y), runs=8, make_model=make_model, claim=1.0,
                                   score=_nan_score, check_seed=False)
    assert caught.value.argument == "score"

