"""Opacus training from factories: the standard DP-SGD loop, as a train function of the protocol.

``OpacusTraining(make_model, make_optimizer, make_data_loader, noise_multiplier=..., max_grad_norm=...,
epochs=...)`` is a picklable ``train(dataset, seed, hooks) -> model``: it seeds torch from ``seed``, builds
the model, optimizer and loader from the factories (module-level functions, so runs can go to worker
processes or a Dask cluster), calls ``PrivacyEngine.make_private`` and trains for ``epochs`` epochs with
``loss`` (cross-entropy by default), the hooks attached right after ``make_private``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._validation import check_choice, check_positive, check_positive_int
from ..errors import InvalidArgument, InvalidArgumentType
from ._torch import require_opacus

__all__ = ["OpacusTraining", "require_dp_optimizer", "cross_entropy"]


def cross_entropy(outputs: Any, labels: Any) -> Any:
    """Mean cross-entropy (the default training loss)."""
    import torch

    return torch.nn.functional.cross_entropy(outputs, labels)


def require_dp_optimizer(model: Any, optimizer: Any) -> None:
    """Raise a clear error unless ``model``/``optimizer`` are what ``make_private`` returns."""
    opacus = require_opacus()
    if not isinstance(optimizer, opacus.optimizers.DPOptimizer):
        raise InvalidArgumentType("optimizer", f"white-box canaries need the DPOptimizer make_private returns, got "
                                               f"{type(optimizer).__name__}: call hooks.attach(model, optimizer, "
                                               "privacy_engine) with make_private's outputs")
    if not isinstance(model, opacus.GradSampleModule):
        raise InvalidArgumentType("model", f"white-box canaries need the GradSampleModule make_private returns, got "
                                           f"{type(model).__name__} (ghost clipping has no per-sample gradients: use "
                                           "grad_sample_mode='hooks')")


@dataclass(frozen=True)
class OpacusTraining:
    """A DP-SGD training run with Opacus, built from factories (see the module docstring).

    Args:
        make_model: ``() -> torch.nn.Module``.
        make_optimizer: ``(model) -> torch.optim.Optimizer``.
        make_data_loader: ``(dataset) -> DataLoader`` over the dataset it is given (canaries included).
        noise_multiplier: sigma, relative to ``max_grad_norm``.
        max_grad_norm: the per-sample clipping norm C.
        epochs: passes over the loader.
        loss: ``(outputs, labels) -> scalar`` (default: mean cross-entropy).
        poisson_sampling: passed to ``make_private`` (True: Opacus' Poisson loader).
        accountant: the engine's accountant ("prv", "rdp" or "gdp").
    """

    make_model: Callable[[], Any]
    make_optimizer: Callable[[Any], Any]
    make_data_loader: Callable[[Any], Any]
    noise_multiplier: float
    max_grad_norm: float
    epochs: int = 1
    loss: Callable[[Any, Any], Any] = cross_entropy
    poisson_sampling: bool = True
    accountant: str = "prv"

    def __post_init__(self) -> None:
        for name in ("make_model", "make_optimizer", "make_data_loader", "loss"):
            if not callable(getattr(self, name)):
                raise InvalidArgumentType(name, f"{name}={getattr(self, name)!r} must be callable")
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        object.__setattr__(self, "max_grad_norm", check_positive(self.max_grad_norm, "max_grad_norm"))
        object.__setattr__(self, "epochs", check_positive_int(self.epochs, "epochs"))
        object.__setattr__(self, "accountant", check_choice(self.accountant, "accountant", ("prv", "rdp", "gdp")))

    def __call__(self, dataset: Any, seed: int, hooks: Any) -> Any:
        opacus = require_opacus()
        import torch

        torch.manual_seed(seed)
        model = self.make_model()
        optimizer = self.make_optimizer(model)
        loader = self.make_data_loader(dataset)
        engine = opacus.PrivacyEngine(accountant=self.accountant)
        try:
            model, optimizer, loader = engine.make_private(
                module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=self.noise_multiplier,
                max_grad_norm=self.max_grad_norm, poisson_sampling=self.poisson_sampling)
        except (ValueError, NotImplementedError, TypeError) as exc:
            raise InvalidArgument("make_model", f"Opacus cannot make this model private ({type(exc).__name__}: {exc}); "
                                                "fix it with opacus.validators.ModuleValidator.fix(model)") from exc
        hooks.attach(model, optimizer, engine)
        model.train()
        for _ in range(self.epochs):
            for inputs, labels in loader:
                optimizer.zero_grad()
                self.loss(model(inputs), labels).backward()
                optimizer.step()
        return model
