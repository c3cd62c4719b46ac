"""A tiny final-model stack for the gate tests (self-contained: the tests copy it beside their gate file)."""

from __future__ import annotations

import numpy as np

from dpaudit.training import BatchedMLPTraining


def dataset():
    rng = np.random.default_rng(0)
    centres = rng.normal(0.0, 2.0, (3, 6))
    y = rng.integers(0, 3, 60)
    return (centres[y] + rng.normal(0.0, 1.0, (60, 6))).astype(np.float32), y


train = BatchedMLPTraining((6, 4, 3), steps=5, noise_multiplier=2.0)
train_leaky = BatchedMLPTraining((6, 4, 3), steps=5, noise_multiplier=0.05)
