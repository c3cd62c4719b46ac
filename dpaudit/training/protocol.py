"""The framework-neutral protocol of a training audit, and the runs drawn through dpaudit's backends.

A training stack is audited through two user functions:

* ``train(dataset, seed, hooks) -> model``: train on ``dataset`` (the user's data with the run's canaries
  added), all randomness from ``seed`` (the same seed must give the same run), calling
  ``hooks.attach(model, optimizer, privacy_engine)`` once the optimizer is ready;
* ``score(model, canaries, hooks) -> scores``: one number per canary, higher meaning "more evidence it
  was in" (default for torch models: minus the loss of the final model on each canary; white-box presets
  read the hooks' observations instead).

:class:`TrainingTarget` bundles them with the base dataset and the canaries; ``target.run(included, seed)``
trains one run with the canaries whose ``included`` entry is True. :func:`draw_runs` maps runs over the
auditor's backends (this process, a process pool, or a Dask cluster): one run per task, each run's seed
spawned from the audit's seed (``SeedSequence.spawn``), so results do not depend on where runs execute.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import DPAuditError, InvalidArgument, MechanismError
from .canaries import Canaries, as_numpy

__all__ = ["TrainingTarget", "RunOutcome", "draw_runs", "run_one", "run_seed", "many_run_masks", "run_seeds", "torch_dataset_with_canaries", "loss_scores"]


@dataclass(frozen=True)
class RunOutcome:
    """One training run: the canaries' scores, the engine's accountant (None if the run had none) and, with
    white-box hooks, the per-step noise observations of the update-scale check (None without)."""

    scores: np.ndarray
    accountant: Any
    canary_rows_seen: int
    steps: int
    update_steps: np.ndarray | None = None


def torch_dataset_with_canaries(dataset: Any, inputs: np.ndarray, labels: np.ndarray) -> Any:
    """``dataset`` followed by the given canary records (a torch ``ConcatDataset``)."""
    import torch

    if len(inputs) == 0:
        return dataset
    x0, y0 = dataset[0]
    x = torch.as_tensor(inputs, dtype=getattr(x0, "dtype", torch.float32))
    y = torch.as_tensor(labels, dtype=getattr(y0, "dtype", torch.long))
    return torch.utils.data.ConcatDataset([dataset, torch.utils.data.TensorDataset(x, y)])


def loss_scores(model: Any, canaries: Canaries, hooks: Any) -> np.ndarray:
    """Minus the final model's per-canary cross-entropy loss (black-box score of torch classifiers)."""
    import torch

    model.eval()
    with torch.no_grad():
        x = torch.as_tensor(canaries.inputs)
        outputs = model(x)
        y = torch.as_tensor(canaries.labels, dtype=torch.long)
        if outputs.ndim != 2 or int(y.max()) >= outputs.shape[1]:
            raise MechanismError(f"the model's outputs (shape {tuple(outputs.shape)}) do not fit the canaries' labels "
                                 f"(up to {int(y.max())}): give num_classes matching the model's output width")
        losses = torch.nn.functional.cross_entropy(outputs, y, reduction="none")
    return -as_numpy(losses).astype(np.float64)


@dataclass(frozen=True)
class TrainingTarget:
    """What a training audit drives (see the module docstring). ``add_canaries(dataset, inputs, labels)``
    and ``score`` default to the torch versions; ``make_hooks(canaries)`` to Opacus' hooks."""

    train: Callable[[Any, int, Any], Any]
    dataset: Any
    canaries: Canaries
    score: Callable[[Any, Canaries, Any], np.ndarray] | None = None
    add_canaries: Callable[[Any, np.ndarray, np.ndarray], Any] = torch_dataset_with_canaries
    make_hooks: Callable[[Canaries], Any] | None = None

    def hooks(self) -> Any:
        if self.make_hooks is not None:
            return self.make_hooks(self.canaries)
        from .opacus_hooks import OpacusHooks

        return OpacusHooks(self.canaries)

    def run(self, included: np.ndarray, seed: int) -> RunOutcome:
        """Train once with the canaries ``included`` marks, from ``seed``; return their scores."""
        mask = np.asarray(included, dtype=bool)
        dataset = self.add_canaries(self.dataset, self.canaries.inputs[mask], self.canaries.labels[mask])
        hooks = self.hooks()
        model = self.train(dataset, int(seed), hooks)
        if self.canaries.preset.white_box:
            if not getattr(hooks, "attached", True):
                raise MechanismError("the train function never called hooks.attach(model, optimizer, privacy_engine): "
                                     "white-box canaries cannot be planted")
            scores = hooks.scores()
        else:
            scores = (self.score or loss_scores)(model, self.canaries, hooks)
        scores = np.asarray(scores, dtype=np.float64).reshape(-1)
        if scores.size != len(self.canaries):
            raise MechanismError(f"score returned {scores.size} values for {len(self.canaries)} canaries")
        engine = getattr(hooks, "privacy_engine", None)
        accountant = engine if hasattr(engine, "history") else getattr(engine, "accountant", None)  # a bare accountant
        observed = getattr(hooks, "update_steps", None)
        return RunOutcome(scores, accountant, int(getattr(hooks, "canary_rows_seen", 0)),
                          int(getattr(hooks, "steps", 0)), observed() if callable(observed) else None)


def run_seed(seed: int, index: int) -> int:
    """Run ``index``'s 32-bit seed: child ``index`` of ``SeedSequence(seed, spawn_key=(37,)).spawn(...)``, so it
    does not depend on the number of runs."""
    return int(np.random.SeedSequence(seed, spawn_key=(37, index)).generate_state(1)[0])


def run_seeds(seed: int, runs: int) -> list[int]:
    """The first ``runs`` run seeds (:func:`run_seed`)."""
    return [run_seed(seed, index) for index in range(runs)]


_CHUNK_RUNS = 250  # most runs a process-pool task trains (chunks are a quarter of a worker's share, at most this)


@dataclass(frozen=True)
class _RunTask:
    """Run ``index`` of an audit (picklable and small: the run's mask and seed are derived from its index,
    so each task ships only the target)."""

    target: TrainingTarget
    seed: int
    mask: np.ndarray | None  # one run: the canaries' inclusion; None: many runs, canary in the even runs

    def __call__(self, index: int) -> RunOutcome:
        mask = self.mask if self.mask is not None else np.array([index % 2 == 0])
        return run_one(self.target, mask, run_seed(self.seed, index), index)


def run_one(target: TrainingTarget, mask: np.ndarray, seed: int, index: int) -> RunOutcome:
    """``target.run(mask, seed)`` on one torch thread; a failure of the user's code becomes a MechanismError
    naming the run, its seed and the likely cause."""
    try:
        import torch
    except ImportError:
        torch = None
    threads = torch.get_num_threads() if torch is not None else 0
    if torch is not None:
        torch.set_num_threads(1)  # runs are small: one thread each, so parallel runs do not oversubscribe
    try:
        return target.run(mask, seed)
    except DPAuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's training code failed: say which run and why
        hint = (" (do the model, the data and the canaries fit? canaries are shaped like dataset[0])"
                if looks_like_a_shape_error(exc) else "")
        raise MechanismError(f"training run {index} (seed {seed}) failed: {type(exc).__name__}: {exc}{hint}") from exc
    finally:
        if torch is not None:
            torch.set_num_threads(threads)


_SHAPE_WORDS = ("shape", "size mismatch", "must match the size", "mat1", "mat2", "dimension", "dtype", "expected scalar type",
                "out of bounds", "index out of range", "target", "channels")


def looks_like_a_shape_error(exc: BaseException) -> bool:
    """Whether a training error reads like data that does not fit the model (shapes, dtypes, label ranges):
    only those get the hint about the canaries, which are shaped like ``dataset[0]``."""
    if not isinstance(exc, (RuntimeError, ValueError, IndexError, TypeError)):
        return False
    text = str(exc).lower()
    return any(word in text for word in _SHAPE_WORDS)


@dataclass(frozen=True)
class _RunChunk:
    """Runs ``starts[k]`` to ``starts[k + 1] - 1`` of a task in one worker call (one pickled target and one
    round trip per chunk, not per run: a small run costs less than shipping it)."""

    task: _RunTask
    starts: tuple[int, ...]

    def __call__(self, chunk: int) -> list[RunOutcome]:
        return [self.task(index) for index in range(self.starts[chunk], self.starts[chunk + 1])]


def many_run_masks(runs: int) -> list[np.ndarray]:
    """The canary's inclusion in each run of a many-run audit: in the even runs, out of the odd ones."""
    return [np.array([index % 2 == 0]) for index in range(runs)]


def _require_one_thread_per_worker(client: Any) -> None:
    """Refuse Dask workers with several threads: a training run seeds torch's process-wide generator
    (``torch.manual_seed``), so runs sharing a process concurrently would not be reproducible from their seeds."""
    workers = client.scheduler_info().get("workers", {})
    crowded = {address: info.get("nthreads", 1) for address, info in workers.items() if info.get("nthreads", 1) > 1}
    if crowded:
        address, threads = next(iter(crowded.items()))
        raise InvalidArgument("scheduler", f"Dask worker {address} runs {threads} threads: training runs seed torch's "
                                           "process-wide generator, so concurrent runs in one process are not "
                                           "reproducible; start workers with one thread each (dask worker --nthreads 1, "
                                           "LocalCluster(threads_per_worker=1))")


def draw_runs(target: TrainingTarget, seed: int, runs: int, mask: np.ndarray | None = None, workers: int = 1,
              scheduler: Any = None, first: int = 0) -> list[RunOutcome]:
    """Runs ``first`` to ``first + runs - 1`` of ``target`` in order (many runs: ``mask`` None; one run: ``mask``
    the canaries' inclusion), on this process (workers=1), a process pool (workers > 1) or the Dask scheduler
    given (or $DPAUDIT_SCHEDULER). A run depends only on its index and the seed, so runs can be drawn in
    batches (``first``) and pooled."""
    from ..auditor import DaskBackend, ProcessBackend, SerialBackend, resolve_scheduler

    task = _RunTask(target, int(seed), None if mask is None else np.asarray(mask, dtype=bool))
    address = resolve_scheduler(scheduler)
    if address is not None:
        with DaskBackend(address, blocks_per_task=1) as backend:  # one run per task
            _require_one_thread_per_worker(backend.client)
            return backend.map(task, list(range(first, first + runs)))
    if workers > 1 and runs > 1:
        size = max(1, min(_CHUNK_RUNS, -(-runs // (4 * workers))))
        starts = tuple(range(first, first + runs, size)) + (first + runs,)
        with ProcessBackend(workers) as backend:
            chunks = backend.map(_RunChunk(task, starts), list(range(len(starts) - 1)))
        return [outcome for chunk in chunks for outcome in chunk]
    with SerialBackend() as backend:
        return backend.map(task, list(range(first, first + runs)))
