"""The lectures' mechanisms, vectorised; each declares its privacy guarantee and accuracy theorem.

A mechanism is a batched callable ``mechanism(data, size, rng) -> ndarray`` returning ``size``
independent outputs stacked on axis 0, with ``.privacy`` (a Guarantee), ``.event`` (a privacy event for
the accountants) and, where a theorem gives one, ``.accuracy(beta)``, ``.error(data, outputs)`` and
``.accuracy_precondition(data, alpha)``. See :mod:`dpaudit.mechanisms.base` for the protocol,
:mod:`~dpaudit.mechanisms.theorems` for the accuracy formulas, :func:`examples` for ready instances and
:mod:`~dpaudit.mechanisms.catalog` for the auditor benchmark. Known-bad mechanisms live apart, in
:mod:`dpaudit.mechanisms.buggy`.

Example:
    >>> import numpy as np
    >>> from dpaudit.mechanisms import ReportNoisyMax
    >>> ReportNoisyMax(1.0, k=3)([0.0, 100.0, 0.0], 5, np.random.default_rng(1)).tolist()
    [1, 1, 1, 1, 1]
"""

from . import theorems
from .base import AccurateMechanism, Mechanism
from .binary_tree import BinaryTreeMechanism
from .catalog import CATALOG, CATALOG_EPSILONS, CatalogEntry, catalog_entry
from .examples import CONTRACT_NAMES, Example, examples
from .dpsgd import (
    DPSGD,
    DPSGDClippingAfterAveraging,
    DPSGDNoiseNotScaledByClip,
    DPSGDShuffledBatches,
    DPSGDWithoutClipping,
)
from .exponential import ExponentialMechanism
from .factorization import (
    FactorizationMechanism,
    Strategy,
    hierarchical_strategy,
    histogram_strategy,
    identity_strategy,
    norm_1_to_2,
    prefix_workload,
    rank_one_strategy,
)
from .gaussian import GaussianMechanism
from .laplace import BoundedSum, HistogramMechanism, LaplaceMechanism
from .net import NetMechanism
from .noisy_max import ReportNoisyMax
from .randomized_response import RandomizedResponse
from .sparse_vector import (
    AT_BOTTOM,
    AT_NOT_REACHED,
    AT_TOP,
    SV_BOTTOM,
    SV_NOT_REACHED,
    AboveThreshold,
    SparseVector,
)
from .subsampling import PoissonSubsampled, SubsampledGaussianSums

__all__ = [
    "Mechanism",
    "AccurateMechanism",
    "LaplaceMechanism",
    "HistogramMechanism",
    "BoundedSum",
    "GaussianMechanism",
    "ExponentialMechanism",
    "ReportNoisyMax",
    "AboveThreshold",
    "SparseVector",
    "AT_TOP",
    "AT_BOTTOM",
    "AT_NOT_REACHED",
    "SV_BOTTOM",
    "SV_NOT_REACHED",
    "NetMechanism",
    "FactorizationMechanism",
    "Strategy",
    "identity_strategy",
    "histogram_strategy",
    "rank_one_strategy",
    "hierarchical_strategy",
    "prefix_workload",
    "norm_1_to_2",
    "BinaryTreeMechanism",
    "RandomizedResponse",
    "PoissonSubsampled",
    "SubsampledGaussianSums",
    "DPSGD",
    "DPSGDWithoutClipping",
    "DPSGDClippingAfterAveraging",
    "DPSGDNoiseNotScaledByClip",
    "DPSGDShuffledBatches",
    "Example",
    "examples",
    "CONTRACT_NAMES",
    "CatalogEntry",
    "CATALOG",
    "CATALOG_EPSILONS",
    "catalog_entry",
    "theorems",
]
