"""What a final-model audit trains: a user's train function, or many small MLPs at once.

Both stacks give the audit the same four things: the initial parameters (worst case: pre-trained on the
public data, the same in every run; average case: each run's own random initialisation), the initial model's
class probabilities (to craft the canary), one chunk of runs trained and scored, and what the runs claim.

* :class:`TorchFinalModel`: the user's ``train(dataset, seed, hooks) -> model`` (any PyTorch / Opacus loop)
  that calls ``hooks.initialise(model)`` before training (it loads the audit's initial parameters, or keeps
  the run's own random ones) and, with Opacus, ``hooks.attach(model, optimizer, privacy_engine)`` after
  ``make_private`` (the claim is then read from the engine). ``make_model()`` builds the architecture for
  the pre-training. One run per task.
* :class:`BatchedFinalModel`: :class:`~dpaudit.training.batched_mlp.BatchedMLPTraining`, CHUNK_MODELS runs per
  task in one batched computation.

The score is higher when the canary is more likely in: minus its loss on the final model (or the user's
``score(model, canary_input, canary_label) -> float``), or, for the crafted-gradient canary, how far the
final model moved against the crafted gradient on its coordinate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DPAuditError, InvalidArgument, InvalidArgumentType, MechanismError
from .batched_mlp import CHUNK_MODELS, Adam, BatchedMLPTraining, MLPParameters
from .final_canaries import FinalCanary

__all__ = ["FinalModelHooks", "TorchFinalModel", "BatchedFinalModel", "event_parameters"]


def event_parameters(event: Any) -> tuple[float, float, int] | None:
    """(sigma, q, T) of a DP-SGD claim (T self-composed Gaussian steps, Poisson-sampled or not; an engine history
    of one entry), None for anything else (the last-iterate heuristic is then not reported)."""
    from ..events import Composed, Gaussian, PoissonSampled, SelfComposed

    if isinstance(event, Composed) and len(event.events) == 1:
        event = event.events[0]
    if not isinstance(event, SelfComposed):
        return None
    step = event.event
    q = 1.0
    if isinstance(step, PoissonSampled):
        q, step = float(step.sampling_probability), step.event
    if not isinstance(step, Gaussian):
        return None
    return float(step.noise_multiplier), q, int(event.count)


# ---------------------------------------------------------------------------------------------- torch
class FinalModelHooks:
    """What a train function calls: ``initialise(model)`` before training, ``attach(model, optimizer,
    privacy_engine)`` after Opacus' make_private (optional; the claim is then read from the engine)."""

    def __init__(self, initial_state: dict | None) -> None:
        self.initial_state = initial_state
        self.initialised = False
        self.privacy_engine: Any = None

    def initialise(self, model: Any) -> Any:
        """Load the audit's initial parameters into ``model`` (worst case), or keep its own (average case)."""
        if self.initial_state is not None:
            try:
                model.load_state_dict(self.initial_state)
            except (RuntimeError, KeyError) as exc:
                raise InvalidArgument("make_model", f"the train function's model does not take the initial parameters "
                                                    f"of make_model(): {exc}") from exc
        self.initialised = True
        return model

    def attach(self, model: Any, optimizer: Any, privacy_engine: Any = None) -> None:
        self.privacy_engine = privacy_engine


class _InitialisingHooks(FinalModelHooks):
    """The training ledger's hooks with the audit's ``initialise``: attach and the rest go to the ledger."""

    def __init__(self, ledger_hooks: Any, initial_state: dict | None) -> None:
        super().__init__(initial_state)
        self.ledger_hooks = ledger_hooks

    def attach(self, model: Any, optimizer: Any, privacy_engine: Any = None) -> None:
        self.privacy_engine = privacy_engine
        self.ledger_hooks.attach(model, optimizer, privacy_engine)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["ledger_hooks"], name)


def _tensor_dataset(inputs: np.ndarray, labels: np.ndarray) -> Any:
    import torch

    return torch.utils.data.TensorDataset(torch.as_tensor(inputs), torch.as_tensor(labels))


@dataclass(frozen=True)
class TorchFinalModel:
    """A user's train function as a final-model stack (module docstring)."""

    train: Callable[[Any, int, Any], Any]
    make_model: Callable[[], Any] | None = None
    score: Callable[[Any, np.ndarray, int], float] | None = None
    runs_per_task: int = 1
    event: Any = None  # the claim the ledger holds each run to (None: the run's engine)
    witness_rate: float | None = None  # each run witnessed by the training ledger at this false-alarm rate

    def pretrain(self, inputs: np.ndarray, labels: np.ndarray, *, epochs: int, seed: int) -> dict:
        """make_model() trained non-privately (Adam, batches of 32) on the public data: its state dict."""
        import torch

        if self.make_model is None:
            raise InvalidArgument("make_model", "worst-case initialisation pre-trains make_model() on the public data: "
                                                "give make_model (or initialisation='random')")
        torch.manual_seed(seed)
        model = self.make_model()
        params = [p for p in model.parameters() if p.requires_grad]
        adam = Adam(params, 1e-2)
        x, y = torch.as_tensor(inputs), torch.as_tensor(labels)
        generator = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(epochs):
            order = torch.randperm(len(y), generator=generator)
            for begin in range(0, len(y), 32):
                batch = order[begin:begin + 32]
                adam.step(torch.autograd.grad(torch.nn.functional.cross_entropy(model(x[batch]), y[batch]), params))
        return {k: v.detach().clone() for k, v in model.state_dict().items()}

    def initial_proba(self, initial: Any, inputs: np.ndarray, seed: int) -> np.ndarray:
        import torch

        if self.make_model is None:
            raise InvalidArgument("make_model", "the canary's label is the initial model's least likely one: give "
                                                "make_model (or a canary=(input, label) of your own)")
        torch.manual_seed(seed)
        model = self.make_model()
        if initial is not None:
            model.load_state_dict(initial)
        model.eval()
        with torch.no_grad():
            try:
                out = model(torch.as_tensor(inputs))
            except Exception as exc:  # noqa: BLE001 - the user's model rejected the input: say which argument
                raise InvalidArgument("canary", f"the model does not accept the canary input (shape "
                                                f"{tuple(inputs.shape[1:])}): {type(exc).__name__}: {exc}") from exc
            return torch.softmax(out, dim=-1).numpy()

    def crafted_coordinate(self, seed: int) -> None:
        return None

    def train_and_score(self, inputs: np.ndarray, labels: np.ndarray, canary: FinalCanary, included: np.ndarray,
                        seeds: list[int], initial: Any) -> tuple[np.ndarray, list, list]:
        """Each run trained (the canary appended when ``included``) and scored; also each run's engine and, with
        ``witness_rate``, the training ledger's verdict on that very run (:func:`~dpaudit.training.witness_run`)."""
        import torch

        scores, engines, verdicts = [], [], []
        for flag, seed in zip(included, seeds):
            x, y = inputs, labels
            if flag:
                x = np.concatenate([inputs, canary.input[None].astype(inputs.dtype)])
                y = np.concatenate([labels, np.array([canary.label], dtype=labels.dtype)])
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                if self.witness_rate is None:
                    hooks = FinalModelHooks(initial)
                    model = self.train(_tensor_dataset(x, y), int(seed), hooks)
                    verdicts.append(None)
                else:
                    model, hooks, verdict = self._witnessed(_tensor_dataset(x, y), int(seed), initial)
                    verdicts.append(verdict)
                if not hooks.initialised:
                    raise InvalidArgument("train", "the train function never called hooks.initialise(model): the "
                                                   "audit cannot set the initial parameters")
                scores.append(self._score(model, canary))
            except DPAuditError:
                raise
            except Exception as exc:  # noqa: BLE001 - the user's code failed: name the run
                raise MechanismError(f"training run with seed {seed} failed: {type(exc).__name__}: {exc}") from exc
            finally:
                torch.set_num_threads(threads)
            engine = getattr(hooks, "privacy_engine", None)
            engines.append(engine if hasattr(engine, "history") else getattr(engine, "accountant", None))
        return np.array(scores, dtype=np.float64), engines, verdicts

    def _witnessed(self, dataset: Any, seed: int, initial: Any) -> tuple[Any, Any, dict]:
        """One run trained under the training ledger: the model, the hooks the train function saw, the verdict."""
        from .ledger import witness_run

        seen: dict[str, Any] = {}

        def train(data: Any, run_seed: int, ledger_hooks: Any) -> Any:
            seen["hooks"] = _InitialisingHooks(ledger_hooks, initial)
            seen["model"] = self.train(data, run_seed, seen["hooks"])
            return seen["model"]

        verdict = witness_run(train, dataset=dataset, seed=seed, claim=self.event, false_alarm_rate=self.witness_rate)
        return seen["model"], seen["hooks"], {"flagged": verdict.flagged, "failed": list(verdict.failed)}

    def _score(self, model: Any, canary: FinalCanary) -> float:
        import torch

        if self.score is not None:
            return self.score(model, canary.input, canary.label)
        model.eval()
        with torch.no_grad():
            out = model(torch.as_tensor(canary.input[None]))
            if out.ndim != 2 or canary.label >= out.shape[1]:
                raise InvalidArgument("canary", f"the canary's label {canary.label} does not fit the model's outputs "
                                                f"(shape {tuple(out.shape)})")
            return -float(torch.nn.functional.cross_entropy(out, torch.as_tensor([canary.label])))


# ---------------------------------------------------------------------------------------------- batched
@dataclass(frozen=True)
class BatchedFinalModel:
    """:class:`BatchedMLPTraining` as a final-model stack: CHUNK_MODELS runs per task, one batched computation."""

    trainer: BatchedMLPTraining
    runs_per_task: int = CHUNK_MODELS

    @property
    def event(self) -> Any:
        return self.trainer.event

    def pretrain(self, inputs: np.ndarray, labels: np.ndarray, *, epochs: int, seed: int) -> MLPParameters:
        return self.trainer.pretrain(inputs, labels, epochs=epochs, seed=seed)

    def initial_proba(self, initial: MLPParameters | None, inputs: np.ndarray, seed: int) -> np.ndarray:
        params = initial if initial is not None else self.trainer.random_initial([seed])
        return self.trainer.predict_proba(params, inputs)[0]

    def crafted_coordinate(self, seed: int) -> int:
        widths = self.trainer.layers
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(41,)))
        return int(rng.integers(0, widths[0] * widths[1]))

    def train_and_score(self, inputs: np.ndarray, labels: np.ndarray, canary: FinalCanary, included: np.ndarray,
                        seeds: list[int], initial: MLPParameters | None) -> tuple[np.ndarray, list, list]:
        included = np.asarray(included, dtype=bool)
        models = len(seeds)
        if canary.coordinate is not None:
            present = np.ones((models, len(labels)))
            final = self.trainer.train_many(inputs, labels, present, seeds, initial, canary.coordinate, included)
            start = self.trainer.random_initial(seeds) if initial is None else initial.repeat(models)
            moved = final.flat()[:, canary.coordinate] - start.flat()[:, canary.coordinate]
            return -moved.astype(np.float64), [None] * models, [None] * models
        if canary.input is None or canary.label is None:
            raise InvalidArgument("canary", "a record canary needs an input and a label")
        x = np.concatenate([np.asarray(inputs, dtype=np.float32).reshape(len(labels), -1),
                            canary.input.reshape(1, -1).astype(np.float32)])
        y = np.concatenate([labels, [canary.label]]).astype(np.int64)
        present = np.ones((models, len(y)))
        present[:, -1] = included
        final = self.trainer.train_many(x, y, present, seeds, initial)
        losses = self.trainer.losses(final, canary.input[None], np.array([canary.label]))[:, 0]
        return -losses, [None] * models, [None] * models


def as_stack(train: Any, make_model: Any, score: Any, witness_rate: float | None = None, claim: Any = None) -> Any:
    """The stack for ``train``: a BatchedMLPTraining, a ready stack, or a train function (its runs witnessed by
    the training ledger at ``witness_rate`` when given, held to ``claim`` if it is an event)."""
    if isinstance(train, BatchedMLPTraining):
        if witness_rate is not None:
            raise InvalidArgument("witness", "the training ledger witnesses Opacus runs (hooks.attach after make_private); "
                                             "BatchedMLPTraining has none: witness=False")
        if score is not None:
            raise InvalidArgument("score", "score= needs a train function returning a model; BatchedMLPTraining scores "
                                           "the canary's loss (or the crafted coordinate) itself")
        return BatchedFinalModel(train)
    if isinstance(train, (BatchedFinalModel, TorchFinalModel)):
        return train
    if not callable(train):
        raise InvalidArgumentType("train", f"train={train!r} must be a train(dataset, seed, hooks) -> model function "
                                           "or a BatchedMLPTraining")
    if score is not None and not callable(score):
        raise InvalidArgumentType("score", f"score={score!r} must be callable: score(model, canary_input, canary_label)")
    from ..events import PrivacyEvent

    return TorchFinalModel(train, make_model, score, event=claim if isinstance(claim, PrivacyEvent) else None,
                           witness_rate=witness_rate)
