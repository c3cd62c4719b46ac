"""A tiny Opacus training for the tests (module-level factories, so runs pickle to worker processes)."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset


def dataset(records: int = 24, features: int = 4, seed: int = 0) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    return TensorDataset(torch.randn(records, features, generator=generator),
                         torch.randint(0, 2, (records,), generator=generator))


def make_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def wide_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def full_batch(data: TensorDataset) -> DataLoader:
    return DataLoader(data, batch_size=len(data))


def train_ignoring_seed(data, seed, hooks):
    from opacus import PrivacyEngine

    torch.manual_seed(0)
    model = make_model()
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(module=model, optimizer=make_optimizer(model),
                                                   data_loader=full_batch(data), noise_multiplier=1.0, max_grad_norm=1.0)
    hooks.attach(model, optimizer, engine)
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


def batch_norm_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))


def train_without_hooks(data, seed, hooks):
    torch.manual_seed(seed)
    return make_model()
