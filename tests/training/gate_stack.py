"""A tiny Opacus stack for the gate tests (self-contained: the tests copy it beside their gate file)."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset


def dataset():
    generator = torch.Generator().manual_seed(0)
    return TensorDataset(torch.randn(24, 4, generator=generator), torch.randint(0, 2, (24,), generator=generator))


def make_model():
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def make_optimizer(model):
    return torch.optim.SGD(model.parameters(), lr=0.1)


def full_batch(data):
    return DataLoader(data, batch_size=len(data))


def _train(data, seed, hooks, noise_multiplier):
    from opacus import PrivacyEngine

    torch.manual_seed(seed)
    model = make_model()
    engine = PrivacyEngine()
    model, optimizer, loader = engine.make_private(module=model, optimizer=make_optimizer(model), data_loader=full_batch(data),
                                                   noise_multiplier=noise_multiplier, max_grad_norm=1.0)
    hooks.attach(model, optimizer, engine)
    for _ in range(5):
        for x, y in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()
    return model


def train(data, seed, hooks):
    return _train(data, seed, hooks, 2.0)


def train_broken(data, seed, hooks):
    raise RuntimeError("the training crashed")


def train_leaky(data, seed, hooks):
    return _train(data, seed, hooks, 0.2)


def corpus_dataset():
    from dpaudit.training.corpus import synthetic_dataset

    return synthetic_dataset(300, 0)


def train_corpus_correct(data, seed, hooks):
    from dpaudit.training.corpus import CASES

    return CASES["correct"](data, seed, hooks)


def train_actual_batch_size(data, seed, hooks):
    """Poisson-sampled DP-SGD whose optimizer averages over the batch actually drawn (Opacus issue 819)."""
    from dpaudit.training.corpus import CASES

    return CASES["actual_batch_size"](data, seed, hooks)
