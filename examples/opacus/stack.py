"""A small Opacus training stack for the examples: synthetic data, a 2-layer MLP, SGD, Poisson sampling.

Factories live at module level so that audits can send runs to worker processes or a Dask cluster.
"""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 16


def dataset(records: int = 500, seed: int = 0) -> TensorDataset:
    """Two classes separated by a random hyperplane."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(records, FEATURES, generator=generator)
    return TensorDataset(x, (x @ torch.randn(FEATURES, generator=generator) > 0).long())


def make_model() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(FEATURES, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))


def make_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    return torch.optim.SGD(model.parameters(), lr=0.1)


def make_data_loader(data: TensorDataset) -> DataLoader:
    """10 batches per epoch: make_private turns it into Poisson sampling at q = 1/10."""
    return DataLoader(data, batch_size=-(-len(data) // 10))


def train(data, seed, hooks):
    """The same training written by hand (the protocol: train(dataset, seed, hooks) -> model)."""
    from opacus import PrivacyEngine

    torch.manual_seed(seed)                      # every source of randomness from the seed
    model = make_model()
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=make_optimizer(model), data_loader=make_data_loader(data),
        noise_multiplier=1.0, max_grad_norm=1.0)
    hooks.attach(model, optimizer, engine)       # right after make_private
    for _ in range(5):                           # 5 epochs = 50 steps
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model
