"""Every public argument is validated, with errors naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpaudit.errors import InvalidArgument, InvalidArgumentType
from dpaudit.mechanisms import (
    AboveThreshold,
    BinaryTreeMechanism,
    BoundedSum,
    ExponentialMechanism,
    FactorizationMechanism,
    GaussianMechanism,
    HistogramMechanism,
    LaplaceMechanism,
    NetMechanism,
    RandomizedResponse,
    ReportNoisyMax,
    SparseVector,
    examples,
    identity_strategy,
)
from dpaudit.mechanisms import theorems

from .helpers import rng

CONSTRUCTORS = [
    (LaplaceMechanism, dict(epsilon=0.0), ValueError, "epsilon"),
    (LaplaceMechanism, dict(epsilon=math.nan), ValueError, "epsilon"),
    (LaplaceMechanism, dict(epsilon="1"), TypeError, "epsilon"),
    (LaplaceMechanism, dict(epsilon=1.0, sensitivity=-1.0), ValueError, "sensitivity"),
    (LaplaceMechanism, dict(epsilon=1.0, k=0), ValueError, "k"),
    (LaplaceMechanism, dict(epsilon=1.0, delta=1.0), ValueError, "delta"),
    (HistogramMechanism, dict(epsilon=1.0, bins=0), ValueError, "bins"),
    (BoundedSum, dict(epsilon=1.0, lower=1.0, upper=1.0), ValueError, "upper"),
    (BoundedSum, dict(epsilon=1.0, lower=-math.inf), ValueError, "lower"),
    (GaussianMechanism, dict(epsilon=1.0, delta=-0.1), ValueError, "delta"),
    (GaussianMechanism, dict(epsilon=-1.0, delta=1e-5), ValueError, "epsilon"),
    (ExponentialMechanism, dict(epsilon=1.0, range_size=0), ValueError, "range_size"),
    (ExponentialMechanism, dict(epsilon=1.0, range_size=3, method="rejection"), ValueError, "method"),
    (ExponentialMechanism, dict(epsilon=1.0, range_size=3, utility=3), TypeError, "utility"),
    (ReportNoisyMax, dict(epsilon=1.0, k=3, noise="gumbel"), ValueError, "noise"),
    (AboveThreshold, dict(epsilon=1.0, threshold=math.inf, k=3), ValueError, "threshold"),
    (AboveThreshold, dict(epsilon=1.0, threshold=0.0, k=0), ValueError, "k"),
    (SparseVector, dict(epsilon=1.0, threshold=0.0, c=0, k=3), ValueError, "c"),
    (SparseVector, dict(epsilon=1.0, threshold=0.0, c=1, k=3, delta=2.0), ValueError, "delta"),
    (SparseVector, dict(epsilon=float("inf"), threshold=0.0, c=2, k=3, delta=0.1), ValueError, "epsilon"),
    (NetMechanism, dict(epsilon=1.0, queries=[[1, 0]], alpha=0.0, n=10), ValueError, "alpha"),
    (NetMechanism, dict(epsilon=1.0, queries=[[1, 0]], alpha=0.5, n=0), ValueError, "n"),
    (FactorizationMechanism, dict(epsilon=1.0, delta=1e-5, strategy=np.eye(2)), TypeError, "strategy"),
    (FactorizationMechanism, dict(epsilon=1.0, delta=0.0, strategy=identity_strategy(np.eye(2))), ValueError, "delta"),
    (FactorizationMechanism, dict(epsilon=1.0, delta=1e-5, strategy=identity_strategy(np.eye(2)),
                                  neighbouring="swap"), ValueError, "neighbouring"),
    (BinaryTreeMechanism, dict(epsilon=1.0, length=0), ValueError, "length"),
    (RandomizedResponse, dict(epsilon=1.0, num_buckets=2.5), ValueError, "num_buckets"),
]


@pytest.mark.parametrize("cls,kwargs,error,argument", CONSTRUCTORS)
def test_constructor_arguments(cls, kwargs, error, argument):
    with pytest.raises(error, match=argument) as info:
        cls(**kwargs)
    assert getattr(info.value, "argument", argument) == argument


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.name)
def test_size_and_rng(example):
    mechanism, data = example.mechanism, example.data
    for size in (0, -3):
        with pytest.raises(InvalidArgument, match="size"):
            mechanism(data, size, rng())
    for size in (1.5, "10", None, True):
        with pytest.raises((InvalidArgument, InvalidArgumentType), match="size"):
            mechanism(data, size, rng())
    for generator in (None, 0, np.random.RandomState(0)):
        with pytest.raises(InvalidArgumentType, match="rng"):
            mechanism(data, 3, generator)
    assert mechanism(data, 1e1, rng()).shape[0] == 10  # an integral float is a valid size


@pytest.mark.parametrize("example", examples(), ids=lambda e: e.name)
def test_data_of_the_wrong_shape_or_type_says_so(example):
    mechanism, data = example.mechanism, np.asarray(example.data)
    with pytest.raises(InvalidArgument, match="data"):
        mechanism(np.stack([data, data, data], axis=-1), 2, rng())  # one dimension too many
    with pytest.raises(InvalidArgumentType, match="data"):
        mechanism(["a"] * max(1, data.size), 2, rng())
    with pytest.raises(InvalidArgumentType, match="data"):
        mechanism("data", 2, rng())
    if np.issubdtype(data.dtype, np.floating) and data.size:
        bad = data.astype(float).copy()
        bad.flat[0] = np.nan
        with pytest.raises(InvalidArgument, match="data"):
            mechanism(bad, 2, rng())


def test_wrong_length_is_named():
    with pytest.raises(InvalidArgument, match="data has 4 query answers but the mechanism was built for 5"):
        ReportNoisyMax(1.0, 5)([1, 2, 3, 4], 1, rng())
    with pytest.raises(InvalidArgument, match="shape"):
        LaplaceMechanism(1.0, k=2)([[1, 2]], 1, rng())


def test_error_checks_outputs():
    mechanism = LaplaceMechanism(1.0, k=2)
    with pytest.raises(InvalidArgument, match="outputs"):
        mechanism.error([0.0, 0.0], np.zeros(5))
    with pytest.raises(InvalidArgument, match="beta"):
        mechanism.accuracy(0.0)
    with pytest.raises(InvalidArgument, match="beta"):
        mechanism.accuracy(1.0)


@pytest.mark.parametrize("function,args,argument", [
    (theorems.laplace_max_error, (0, 1.0, 0.1), "k"),
    (theorems.laplace_max_error, (3, 0.0, 0.1), "epsilon"),
    (theorems.laplace_max_error, (3, 1.0, 1.5), "beta"),
    (theorems.exponential_mechanism_error, (3, 1.0, 0.1, 1.0, 4), "optimal_count"),
    (theorems.sparse_vector_alpha, (3, 0, 1.0, 0.1), "c"),
    (theorems.net_sample_size, (3, -0.1), "alpha"),
    (theorems.binary_tree_error, (0, 1.0, 0.1), "length"),
    (theorems.gaussian_max_error, (1, 0.0, 0.1), "sigma"),
    (theorems.report_noisy_max_error, (3, 1.0, 0.1, 1.0, "normal"), "noise"),
])
def test_theorem_arguments(function, args, argument):
    with pytest.raises(ValueError, match=argument):
        function(*args)


def test_large_batches_are_chunked_transparently(monkeypatch):
    import dpaudit.mechanisms.base as base

    monkeypatch.setattr(base, "CHUNK_ELEMENTS", 64)
    out = SparseVector(1.0, 0.0, c=2, k=10)(np.zeros(10), 1000, rng(110))
    assert out.shape == (1000, 10) and np.isnan(out).any()
    scalar = LaplaceMechanism(1.0)([0.0], 1000, rng(111))
    assert scalar.shape == (1000,) and np.unique(scalar).size == 1000  # every chunk draws fresh noise
    index = ReportNoisyMax(1.0, 3)([0, 0, 0], 999, rng(112))
    assert index.shape == (999,) and set(np.unique(index)) == {0, 1, 2}
