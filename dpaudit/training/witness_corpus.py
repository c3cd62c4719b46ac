"""Training stacks for the witness: DP-SGD bug classes and unusual but correct stacks, as ordinary Opacus code.

Every case is a picklable ``train(dataset, seed, hooks) -> model`` (the protocol of
:mod:`dpaudit.training.protocol`) with the check of :func:`~dpaudit.training.witness_run` meant to flag it
(``check``; None for a correct stack) and the claim it is held to (``case.claim()``: None for the engine's).
Shared configuration: :func:`dataset` (200 records, 8 Gaussian features, two classes), an 8-16-2 MLP, Poisson
rate q = 0.1, 5 epochs (50 steps), noise multiplier 1, clipping norm C = 0.5 (every example's gradient is
above it at the start, so clipping is visible).

Bug classes (the parameter of the claim each breaks, and the check meant for it):

* ``accountant_per_epoch``: the accountant stepped once per epoch by hand (steps; ``noisy_steps``);
* ``resume_fresh_engine``: two epochs, a checkpoint, three more under a fresh PrivacyEngine whose epsilon is
  reported (steps; ``noisy_steps``);
* ``private_warm_up``: a non-private epoch on the private data before ``make_private`` (which data;
  ``reads_before_attach``);
* ``normalisation_statistics``: the inputs' mean and scale computed on the private data before
  ``make_private`` (``reads_before_attach``);
* ``private_fine_tune``: a non-private epoch of the last layer after DP training (``unexplained_updates``);
* ``second_loader``: an accuracy pass over the private data after every epoch (``reads_outside_noisy_steps``);
* ``per_layer_above_bound``: each parameter tensor clipped to C, so an example adds up to 2 C (C;
  ``clipping``);
* ``batch_level_clipping``: the batch's average gradient clipped instead of each example's (``clipping``);
* ``clipping_off``: per-example gradients summed without clipping (``clipping``);
* ``claim_for_double_noise``: the claimed epsilon computed for twice the noise multiplier used (sigma;
  ``noise_level``);
* ``noise_multiplier_mismatch``: noise from another calibration (sigma / 10) than the accountant's
  (``noise_level``);
* ``noise_not_scaled_by_clipping_norm``: noise sigma instead of sigma C with C = 10 (``noise_level``);
* ``same_noise_every_step``: the noise generator re-seeded before every step (``noise_independence``);
* ``augmented_copies``: each record put into the dataset four times as jittered views (q;
  ``inclusion_rate``);
* ``shuffled_batches``: shuffled fixed-size batches accounted as Poisson (``inclusion_rate``);
* ``gradient_accumulation``: 10 Poisson micro-batches per step accounted at the micro-batch rate
  (``inclusion_rate``).

Correct stacks (nothing may flag them beyond the false-alarm rate): ``plain``, ``batch_memory_manager``
(physical batches of 8, virtual steps), ``adam``, ``two_param_groups``, ``make_private_with_epsilon``,
``per_layer_clipping`` (four thresholds of C / 2), ``sum_reduction``, ``full_batch`` (q = 1, 20 steps),
``frozen_layers`` (the first layer frozen). ``ghost_clipping`` is refused by the witness (its per-example
gradients never exist).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

__all__ = ["WITNESS_CASES", "WitnessCase", "dataset", "make_model", "SAMPLE_RATE", "EPOCHS", "NOISE_MULTIPLIER",
           "MAX_GRAD_NORM", "RECORDS"]

RECORDS = 200
FEATURES = 8
SAMPLE_RATE = 0.1
EPOCHS = 5
NOISE_MULTIPLIER = 1.0
MAX_GRAD_NORM = 0.5
DELTA = 1e-5
_BATCH = round(SAMPLE_RATE * RECORDS)


def dataset(records: int = RECORDS, seed: int = 0) -> Any:
    """Two classes separated by a random hyperplane (``FEATURES`` Gaussian features)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(records, FEATURES, generator=generator)
    return torch.utils.data.TensorDataset(x, (x @ torch.randn(FEATURES, generator=generator) > 0).long())


def make_model() -> Any:
    """An 8-16-2 MLP (178 parameters in 4 tensors)."""
    import torch

    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))


def _loader(data: Any, batch: int = _BATCH, shuffle: bool = False) -> Any:
    import torch

    return torch.utils.data.DataLoader(data, batch_size=batch, shuffle=shuffle)


def _fit(model: Any, optimizer: Any, loader: Any, epochs: int = EPOCHS, *, loss_sum: bool = False,
         accumulate: int = 1, after_epoch: Any = None) -> Any:
    import torch

    model.train()
    seen = 0
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y, reduction="sum" if loss_sum else "mean")
            loss.backward()
            seen += 1
            if seen % accumulate == 0:
                optimizer.step()
                optimizer.zero_grad()
        if after_epoch is not None:
            after_epoch(epoch)
    return model


def _private(data: Any, seed: int, *, model: Any = None, optimizer: Any = None, loader: Any = None,
             **options: Any) -> tuple[Any, Any, Any, Any]:
    import torch
    from opacus import PrivacyEngine

    if model is None:
        torch.manual_seed(seed)
        model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.2) if optimizer is None else optimizer
    engine = PrivacyEngine(accountant="prv")
    settings = {"noise_multiplier": NOISE_MULTIPLIER, "max_grad_norm": MAX_GRAD_NORM} | options
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer,
                                                   data_loader=_loader(data) if loader is None else loader, **settings)
    return model, optimizer, loader, engine


def _by_hand(data: Any, seed: int, optimizer_class: Any, *, max_grad_norm: float = MAX_GRAD_NORM,
             step_hook: bool = True) -> tuple[Any, Any, Any, Any]:
    """The stack make_private builds, written out by hand (how custom DP optimizers are plugged in)."""
    import torch
    from opacus import GradSampleModule, PrivacyEngine
    from opacus.data_loader import DPDataLoader

    torch.manual_seed(seed)
    engine = PrivacyEngine(accountant="prv")
    model = GradSampleModule(make_model())
    optimizer = optimizer_class(torch.optim.SGD(model.parameters(), lr=0.2), noise_multiplier=NOISE_MULTIPLIER,
                                max_grad_norm=max_grad_norm, expected_batch_size=_BATCH)
    if step_hook:
        optimizer.attach_step_hook(engine.accountant.get_optimizer_hook_fn(sample_rate=SAMPLE_RATE))
    return model, optimizer, DPDataLoader.from_data_loader(_loader(data)), engine


def _optimizers() -> dict[str, Any]:
    import torch
    from opacus.optimizers import DPOptimizer

    class PerLayerClipAtC(DPOptimizer):
        """Clips each parameter tensor of each example to max_grad_norm (thresholds adding up to 2 C)."""

        def clip_and_accumulate(self) -> None:
            for p in self.params:
                g = self._get_flat_grad_sample(p)
                norms = g.reshape(len(g), -1).norm(dim=1)
                grad = torch.einsum("i,i...", (self.max_grad_norm / (norms + 1e-6)).clamp(max=1.0), g)
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

    class BatchAverageClip(DPOptimizer):
        """Clips the batch's average gradient to max_grad_norm and sums with that one factor."""

        def clip_and_accumulate(self) -> None:
            samples = [self._get_flat_grad_sample(p) for p in self.params]
            size = max(1, len(samples[0]))
            mean = torch.cat([g.sum(0).reshape(-1) for g in samples]) / size
            factor = min(1.0, self.max_grad_norm / (float(mean.norm()) + 1e-6))
            for p, g in zip(self.params, samples):
                grad = factor * g.sum(0)
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

    class NoClip(DPOptimizer):
        """Sums per-sample gradients without the clip factor."""

        def clip_and_accumulate(self) -> None:
            for p in self.params:
                grad = self._get_flat_grad_sample(p).sum(dim=0)
                p.summed_grad = grad if p.summed_grad is None else p.summed_grad + grad

    class OtherCalibration(DPOptimizer):
        """Adds noise with sigma / 10 while the accountant is told sigma."""

        def add_noise(self) -> None:
            told = self.noise_multiplier
            self.noise_multiplier = told / 10
            try:
                super().add_noise()
            finally:
                self.noise_multiplier = told

    class NoiseWithoutClippingNorm(DPOptimizer):
        """Noise of standard deviation sigma, not sigma * max_grad_norm."""

        def add_noise(self) -> None:
            for p in self.params:
                p.grad = (p.summed_grad + torch.normal(0.0, self.noise_multiplier, p.summed_grad.shape)).view_as(p)

    class ReproducibleNoise(DPOptimizer):
        """Re-seeds its noise generator before every step ("reproducible" noise: the same every step)."""

        def add_noise(self) -> None:
            self.generator = torch.Generator().manual_seed(1234)
            super().add_noise()

    return {"per_layer_at_c": PerLayerClipAtC, "batch_average": BatchAverageClip, "no_clip": NoClip,
            "other_calibration": OtherCalibration, "noise_without_norm": NoiseWithoutClippingNorm,
            "reproducible_noise": ReproducibleNoise, "dp": DPOptimizer}


class _Jittered:
    """Each record four times, as jittered views (an augmentation written as a dataset)."""

    def __init__(self, data: Any, copies: int = 4) -> None:
        self.data, self.copies = data, copies

    def __len__(self) -> int:
        return self.copies * len(self.data)

    def __getitem__(self, index: int) -> Any:
        import torch

        x, y = self.data[index % len(self.data)]
        return x + 0.05 * torch.randn_like(x), y


class _Normalised:
    """The records with the inputs standardised by given statistics."""

    def __init__(self, data: Any, mean: Any, scale: Any) -> None:
        self.data, self.mean, self.scale = data, mean, scale

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index: int) -> Any:
        x, y = self.data[index]
        return (x - self.mean) / self.scale, y


@lru_cache(maxsize=None)
def _double_noise_claim() -> float:
    """The epsilon of the case's run computed for twice its noise multiplier (dpaudit's PLD accountant)."""
    from ..accountant.calibration import dpsgd_epsilon

    return float(dpsgd_epsilon(2 * NOISE_MULTIPLIER, DELTA, SAMPLE_RATE, EPOCHS * round(1 / SAMPLE_RATE)))


@dataclass(frozen=True)
class WitnessCase:
    """One training stack (see the module docstring): ``check`` is the witness check meant to flag it."""

    name: str
    check: str | None
    description: str

    def claim(self) -> float | None:
        """The claim the case reports (None: the engine's)."""
        return _double_noise_claim() if self.name == "claim_for_double_noise" else None

    def __call__(self, data: Any, seed: int, hooks: Any) -> Any:
        return getattr(self, "_" + self.name)(data, seed, hooks)

    # ------------------------------------------------------------------ correct stacks
    def _plain(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _private(data, seed)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _batch_memory_manager(self, data: Any, seed: int, hooks: Any) -> Any:
        from opacus.utils.batch_memory_manager import BatchMemoryManager

        model, optimizer, loader, engine = _private(data, seed)
        hooks.attach(model, optimizer, engine)
        with BatchMemoryManager(data_loader=loader, max_physical_batch_size=8, optimizer=optimizer) as physical:
            return _fit(model, optimizer, physical)

    def _adam(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        torch.manual_seed(seed)
        model = make_model()
        model, optimizer, loader, engine = _private(data, seed, model=model,
                                                    optimizer=torch.optim.Adam(model.parameters(), lr=0.01))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _two_param_groups(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        torch.manual_seed(seed)
        model = make_model()
        groups = [{"params": model[0].parameters(), "lr": 0.1}, {"params": model[2].parameters(), "lr": 0.3}]
        model, optimizer, loader, engine = _private(data, seed, model=model, optimizer=torch.optim.SGD(groups))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _make_private_with_epsilon(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch
        from opacus import PrivacyEngine

        torch.manual_seed(seed)
        model = make_model()
        engine = PrivacyEngine(accountant="prv")
        model, optimizer, loader = engine.make_private_with_epsilon(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.2), data_loader=_loader(data),
            target_epsilon=3.0, target_delta=DELTA, epochs=EPOCHS, max_grad_norm=MAX_GRAD_NORM)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _per_layer_clipping(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _private(data, seed, clipping="per_layer", max_grad_norm=[MAX_GRAD_NORM / 2] * 4)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _sum_reduction(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        torch.manual_seed(seed)
        model = make_model()
        model, optimizer, loader, engine = _private(data, seed, model=model, loss_reduction="sum",
                                                    optimizer=torch.optim.SGD(model.parameters(), lr=0.01))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader, loss_sum=True)

    def _full_batch(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _private(data, seed, loader=_loader(data, batch=len(data)))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader, epochs=20)

    def _frozen_layers(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        torch.manual_seed(seed)
        model = make_model()
        for p in model[0].parameters():
            p.requires_grad_(False)
        trainable = [p for p in model.parameters() if p.requires_grad]
        model, optimizer, loader, engine = _private(data, seed, model=model, optimizer=torch.optim.SGD(trainable, lr=0.2))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _ghost_clipping(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch
        from opacus import PrivacyEngine

        torch.manual_seed(seed)
        model = make_model()
        engine = PrivacyEngine(accountant="prv")
        criterion = torch.nn.CrossEntropyLoss()
        model, optimizer, criterion, loader = engine.make_private(
            module=model, optimizer=torch.optim.SGD(model.parameters(), lr=0.2), data_loader=_loader(data),
            criterion=criterion, noise_multiplier=NOISE_MULTIPLIER, max_grad_norm=MAX_GRAD_NORM, grad_sample_mode="ghost")
        hooks.attach(model, optimizer, engine)
        for _ in range(EPOCHS):
            for x, y in loader:
                optimizer.zero_grad()
                criterion(model(x), y).backward()
                optimizer.step()
        return model

    # ------------------------------------------------------------------ bug classes
    def _accountant_per_epoch(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _by_hand(data, seed, _optimizers()["dp"], step_hook=False)
        hooks.attach(model, optimizer, engine)

        def account(epoch: int) -> None:
            engine.accountant.step(noise_multiplier=NOISE_MULTIPLIER, sample_rate=SAMPLE_RATE)

        return _fit(model, optimizer, loader, after_epoch=account)

    def _resume_fresh_engine(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        model, optimizer, loader, _ = _private(data, seed)
        _fit(model, optimizer, loader, epochs=2)
        checkpoint = {k: v.clone() for k, v in model._module.state_dict().items()}
        torch.manual_seed(seed + 1)
        resumed = make_model()
        resumed.load_state_dict(checkpoint)
        model, optimizer, loader, engine = _private(data, seed, model=resumed)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader, epochs=EPOCHS - 2)

    def _private_warm_up(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        torch.manual_seed(seed)
        model = make_model()
        warm = torch.optim.SGD(model.parameters(), lr=0.2)
        _fit(model, warm, _loader(data, shuffle=True), epochs=1)
        model, optimizer, loader, engine = _private(data, seed, model=model)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _normalisation_statistics(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        inputs = torch.stack([data[i][0] for i in range(len(data))])
        normalised = _Normalised(data, inputs.mean(0), inputs.std(0) + 1e-6)
        model, optimizer, loader, engine = _private(normalised, seed, loader=_loader(normalised))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _private_fine_tune(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        model, optimizer, loader, engine = _private(data, seed)
        hooks.attach(model, optimizer, engine)
        _fit(model, optimizer, loader)
        model.disable_hooks()  # Opacus' per-sample gradients are not needed for the plain fine-tuning
        head = model._module[2]
        tune = torch.optim.SGD(head.parameters(), lr=0.1)
        for x, y in _loader(data, shuffle=True):
            tune.zero_grad()
            torch.nn.functional.cross_entropy(model._module(x), y).backward()
            tune.step()
        return model

    def _second_loader(self, data: Any, seed: int, hooks: Any) -> Any:
        import torch

        model, optimizer, loader, engine = _private(data, seed)
        hooks.attach(model, optimizer, engine)
        accuracy = []

        def evaluate(epoch: int) -> None:
            with torch.no_grad():
                right = sum(int((model(x).argmax(1) == y).sum()) for x, y in _loader(data, batch=100))
            accuracy.append(right / len(data))

        return _fit(model, optimizer, loader, after_epoch=evaluate)

    def _dp_optimizer(self, data: Any, seed: int, hooks: Any, kind: str, max_grad_norm: float = MAX_GRAD_NORM) -> Any:
        model, optimizer, loader, engine = _by_hand(data, seed, _optimizers()[kind], max_grad_norm=max_grad_norm)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _per_layer_above_bound(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "per_layer_at_c")

    def _batch_level_clipping(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "batch_average")

    def _clipping_off(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "no_clip")

    def _claim_for_double_noise(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._plain(data, seed, hooks)

    def _noise_multiplier_mismatch(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "other_calibration")

    def _noise_not_scaled_by_clipping_norm(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "noise_without_norm", max_grad_norm=10.0)

    def _same_noise_every_step(self, data: Any, seed: int, hooks: Any) -> Any:
        return self._dp_optimizer(data, seed, hooks, "reproducible_noise")

    def _augmented_copies(self, data: Any, seed: int, hooks: Any) -> Any:
        views = _Jittered(data)
        model, optimizer, loader, engine = _private(views, seed, loader=_loader(views, batch=4 * _BATCH))
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _shuffled_batches(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _private(data, seed, loader=_loader(data, shuffle=True), poisson_sampling=False)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader)

    def _gradient_accumulation(self, data: Any, seed: int, hooks: Any) -> Any:
        model, optimizer, loader, engine = _by_hand(data, seed, _optimizers()["dp"], step_hook=False)

        def account(optim: Any) -> None:
            engine.accountant.step(noise_multiplier=optim.noise_multiplier, sample_rate=SAMPLE_RATE)

        optimizer.attach_step_hook(account)
        hooks.attach(model, optimizer, engine)
        return _fit(model, optimizer, loader, epochs=EPOCHS * 10, accumulate=10)


WITNESS_CASES: dict[str, WitnessCase] = {case.name: case for case in (
    WitnessCase("plain", None, "make_private with Poisson sampling"),
    WitnessCase("batch_memory_manager", None, "BatchMemoryManager, physical batches of 8 (virtual steps)"),
    WitnessCase("adam", None, "Adam under make_private"),
    WitnessCase("two_param_groups", None, "SGD with two parameter groups"),
    WitnessCase("make_private_with_epsilon", None, "make_private_with_epsilon (target epsilon 3)"),
    WitnessCase("per_layer_clipping", None, "per-layer clipping, four thresholds of C / 2 (together C)"),
    WitnessCase("sum_reduction", None, "loss and optimizer with sum reduction"),
    WitnessCase("full_batch", None, "full-batch DP-GD (q = 1, 20 steps)"),
    WitnessCase("frozen_layers", None, "first layer frozen"),
    WitnessCase("accountant_per_epoch", "noisy_steps", "accountant stepped once per epoch"),
    WitnessCase("resume_fresh_engine", "noisy_steps", "resumed from a checkpoint under a fresh PrivacyEngine"),
    WitnessCase("private_warm_up", "reads_before_attach", "non-private warm-up epoch on the private data"),
    WitnessCase("normalisation_statistics", "reads_before_attach", "normalisation statistics from the private data"),
    WitnessCase("private_fine_tune", "unexplained_updates", "non-private fine-tuning of the last layer after DP"),
    WitnessCase("second_loader", "reads_outside_noisy_steps", "an accuracy pass over the private data every epoch"),
    WitnessCase("per_layer_above_bound", "clipping", "each parameter tensor clipped to C (2 C per example)"),
    WitnessCase("batch_level_clipping", "clipping", "the batch's average gradient clipped, not each example's"),
    WitnessCase("clipping_off", "clipping", "per-example gradients summed without clipping"),
    WitnessCase("claim_for_double_noise", "noise_level", "claimed epsilon computed for twice the noise multiplier"),
    WitnessCase("noise_multiplier_mismatch", "noise_level", "noise with sigma / 10, the accountant told sigma"),
    WitnessCase("noise_not_scaled_by_clipping_norm", "noise_level", "noise sigma instead of sigma C (C = 10)"),
    WitnessCase("same_noise_every_step", "noise_independence", "noise generator re-seeded before every step"),
    WitnessCase("augmented_copies", "inclusion_rate", "each record four times in the dataset as jittered views"),
    WitnessCase("shuffled_batches", "inclusion_rate", "shuffled fixed-size batches accounted as Poisson"),
    WitnessCase("gradient_accumulation", "inclusion_rate", "10 micro-batches per step accounted at rate q"),
)}

GHOST = WitnessCase("ghost_clipping", None, "ghost clipping (refused: no per-example gradients)")
