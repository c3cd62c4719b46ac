"""Ready-made mechanism instances with data and adjacent pairs, for demos and self-checks.

Every example's ``data`` satisfies the precondition of its mechanism's accuracy theorem for every beta
>= 1e-4 (where the theorem has one), and every pair in ``neighbours`` is adjacent under the relation
``neighbouring`` for which the mechanism claims ``.privacy``. The names include every name of the
contract (laplace, gaussian, exponential, report_noisy_max, above_threshold, sparse_vector, net,
factorization, binary_tree, randomized_response, poisson_subsampled) plus a few variants.

Example:
    >>> import numpy as np
    >>> example = {e.name: e for e in examples()}["laplace"]
    >>> example.mechanism(example.data, 2, np.random.default_rng(0)).shape
    (2,)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from .base import Mechanism
from .binary_tree import BinaryTreeMechanism
from .dpsgd import DPSGD, dirac_canary_data, logistic_canary_data
from .exponential import ExponentialMechanism
from .factorization import (
    FactorizationMechanism,
    hierarchical_strategy,
    identity_strategy,
    prefix_workload,
    rank_one_strategy,
)
from .gaussian import GaussianMechanism
from .laplace import BoundedSum, HistogramMechanism, LaplaceMechanism
from .net import NetMechanism
from .noisy_max import ReportNoisyMax
from .randomized_response import RandomizedResponse
from .sparse_vector import AboveThreshold, SparseVector
from .subsampling import PoissonSubsampled

__all__ = ["Example", "examples", "CONTRACT_NAMES"]

#: The example names the public contract requires.
CONTRACT_NAMES: tuple[str, ...] = (
    "laplace", "gaussian", "exponential", "report_noisy_max", "above_threshold", "sparse_vector", "net",
    "factorization", "binary_tree", "randomized_response", "poisson_subsampled",
)


@dataclass(frozen=True, eq=False)
class Example:
    """A mechanism with an input for accuracy checks and a list of adjacent input pairs."""

    name: str
    mechanism: Mechanism
    data: Any
    neighbours: list[tuple[Any, Any]] = field(default_factory=list)
    description: str = ""

    @property
    def neighbouring(self) -> str:
        """The relation the pairs are adjacent under (the mechanism's)."""
        return self.mechanism.neighbouring


def _a(values: Any) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def _plus(values: Any, index: int, amount: float = 1.0) -> np.ndarray:
    out = _a(values).copy()
    out[index] += amount
    return out


@lru_cache(maxsize=1)
def _build() -> tuple[Example, ...]:
    net_queries = [[1, 1, 0, 0], [1, 0, 1, 0], [1, 0, 0, 1]]
    net_data = _a([80, 50, 40, 30])
    counts8 = _a([3, 1, 4, 1, 5, 9, 2, 6])
    stream = _a([1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1])
    flipped = stream.copy()
    flipped[[0, 7]] = 1 - flipped[[0, 7]]
    records = np.full(10, 0.5)
    dirac_out, dirac_in, dirac = dirac_canary_data(100, 5, seed=0)
    logistic_out, logistic_in, outlier = logistic_canary_data(200, 5, seed=0)
    return (
        Example("laplace", LaplaceMechanism(1.0), _a([3.0]), [(_a([0.0]), _a([1.0])), (_a([3.0]), _a([4.0]))],
                "one sensitivity-1 query, Lap(1/epsilon)"),
        Example("laplace_k_queries", LaplaceMechanism(1.0, k=3), _a([10, 20, 30]),
                [(_a([10, 20, 30]), _a([11, 21, 31])), (_a([0, 0, 0]), _a([1, -1, 1]))],
                "three sensitivity-1 queries, Lap(3/epsilon) each (Theorem 3, pure form)"),
        Example("laplace_advanced", LaplaceMechanism(1.0, k=50, delta=1e-5), _a(np.arange(50)),
                [(_a(np.arange(50)), _a(np.arange(50) + 1))],
                "50 sensitivity-1 queries, (1, 1e-5)-DP by advanced composition (Theorem 3)"),
        Example("histogram", HistogramMechanism(1.0, 5), _a([1, 1, 1, 1, 1]),
                [(_a([1, 1, 1, 1, 1]), _a([2, 1, 1, 1, 1])), (_a([4, 0, 2, 7, 1]), _a([4, 0, 2, 6, 1]))],
                "histogram counts, add/remove one record"),
        Example("bounded_sum", BoundedSum(1.0, -1.0, 1.0), _a([0.5, -0.3, 0.9, 2.0]),
                [(_a([0.5, 0.5]), _a([0.5, 0.5, 5.0])), (_a([0.5, -0.3]), _a([0.5, -0.3, -1.0]))],
                "clipped sum of records, add/remove one record"),
        Example("gaussian", GaussianMechanism(1.0, 1e-5), _a([0.0]), [(_a([0.0]), _a([1.0]))],
                "one L2-sensitivity-1 query, analytic sigma for (1, 1e-5)"),
        Example("exponential", ExponentialMechanism(1.0, range_size=5), _a([10, 8, 6, 4, 2]),
                [(_a([3, 3, 3, 3, 3]), _a([2, 4, 4, 4, 4])), (_a([10, 8, 6, 4, 2]), _a([9, 9, 7, 5, 3]))],
                "scores of 5 candidates, utility sensitivity 1"),
        Example("report_noisy_max", ReportNoisyMax(1.0, 5), _a([5, 4, 3, 2, 1]),
                [(_a([1] * 5), _a([0, 2, 2, 2, 2])), (_a([5, 4, 3, 2, 1]), _a([4, 5, 4, 3, 2]))],
                "argmax of 5 answers + Lap(2/epsilon)"),
        Example("report_noisy_max_exponential", ReportNoisyMax(1.0, 5, noise="exponential"), _a([5, 4, 3, 2, 1]),
                [(_a([1] * 5), _a([0, 2, 2, 2, 2]))], "argmax of 5 answers + Exp(scale 2/epsilon)"),
        Example("above_threshold", AboveThreshold(1.0, threshold=100.0, k=10), _a([0] * 9 + [150]),
                [(_a([99] * 5 + [100] * 5), _a([100] * 5 + [99] * 5)), (_a([0] * 9 + [150]), _a([1] * 9 + [149]))],
                "AboveThreshold, T = 100, 10 queries; output 1/0/-1"),
        Example("sparse_vector", SparseVector(1.0, threshold=300.0, c=2, k=10), _a([0] * 8 + [600, 600]),
                [(_a([299] * 5 + [300] * 5), _a([300] * 5 + [299] * 5)),
                 (_a([0] * 8 + [600, 600]), _a([1] * 8 + [599, 599]))],
                "SparseVector, delta = 0, c = 2, T = 300, 10 queries; numeric / NaN / -inf"),
        Example("sparse_vector_approx", SparseVector(1.0, threshold=3000.0, c=2, k=10, delta=1e-6),
                _a([0] * 8 + [6000, 6000]), [(_a([2999] * 5 + [3000] * 5), _a([3000] * 5 + [2999] * 5))],
                "SparseVector, delta = 1e-6 (advanced-composition sigma), c = 2, T = 3000"),
        Example("net", NetMechanism(1.0, net_queries, alpha=0.3, n=200), net_data,
                [(net_data, _a([79, 51, 40, 30])), (net_data, _a([81, 50, 40, 30]))],
                "3 counting queries over a universe of 4; 560 synthetic databases of size 13"),
        Example("factorization", FactorizationMechanism(1.0, 1e-5, hierarchical_strategy(8)), counts8,
                [(counts8, _plus(counts8, 0)), (counts8, _plus(counts8, 7))],
                "prefix sums over 8 bins, hierarchical (binary tree) strategy, Gaussian noise"),
        Example("factorization_identity", FactorizationMechanism(1.0, 1e-5, identity_strategy(prefix_workload(8))),
                counts8, [(counts8, _plus(counts8, 0))], "prefix sums over 8 bins, identity strategy (R = I, M = F)"),
        Example("factorization_rank_one",
                FactorizationMechanism(1.0, 1e-5, rank_one_strategy([[1, 0, 1, 0, 1]] * 4)), _a([2, 3, 5, 7, 11]),
                [(_a([2, 3, 5, 7, 11]), _a([3, 3, 5, 7, 11]))], "the lecture's rank-one example: 4 equal queries"),
        Example("binary_tree", BinaryTreeMechanism(1.0, 16), stream,
                [(stream, flipped), (np.zeros(16), _plus(np.zeros(16), 0))],
                "continual counting of a 16-element bit stream"),
        Example("randomized_response", RandomizedResponse(1.0), np.array([1]),
                [(np.array([0]), np.array([1]))], "one bit, binary randomized response"),
        Example("randomized_response_k4", RandomizedResponse(1.0, 4), np.array([2]),
                [(np.array([0]), np.array([3]))], "one value in {0, 1, 2, 3}, 4-ary randomized response"),
        Example("poisson_subsampled", PoissonSubsampled(BoundedSum(1.0, 0.0, 1.0), 0.2), records,
                [(records, np.append(records, 1.0))], "sum of records in [0, 1] on a Poisson(0.2) subsample"),
        Example("dpsgd_full_batch", DPSGD(5.0, 1.0, 25, canary=dirac, observe="dirac_sum"), dirac_in,
                [(dirac_out, dirac_in)], "full-batch DP-SGD, linear model, 25 steps, sigma 5 (exactly 1-GDP); "
                "white-box Dirac canary, projections summed"),
        Example("dpsgd_poisson", DPSGD(1.0, 0.1, 20, canary=dirac, observe="dirac"), dirac_in,
                [(dirac_out, dirac_in)], "DP-SGD, Poisson q = 0.1, 20 steps, sigma 1, linear model; white-box "
                "Dirac canary, one projection per step"),
        Example("dpsgd_logistic_loss", DPSGD(1.0, 0.2, 20, canary=outlier, model="logistic", observe="loss",
                                             learning_rate=0.5), logistic_in, [(logistic_out, logistic_in)],
                "DP-SGD, Poisson q = 0.2, 20 steps, sigma 1, logistic regression; black-box: the canary's loss"),
    )


def examples() -> list[Example]:
    """The ready-made examples (a new list each call; the mechanisms are immutable and shared)."""
    return list(_build())
