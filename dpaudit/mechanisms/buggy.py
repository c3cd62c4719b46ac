"""Known-bad mechanisms, each named after its bug: the auditor must catch every one of them.

Over 500 lines on purpose: a flat catalog of small, independent classes that the benchmarks and tests read
as one list (``dpaudit.mechanisms.catalog``); each class is a few lines and imports nothing of the others.

Each class claims the guarantee of its correct twin (``.privacy``) but violates it. Class attributes:
``bug`` (what is wrong, one line) and ``twin`` (the correct mechanism); instance attributes
``true_epsilon`` (the exact epsilon at the claimed delta where known: a float, ``math.inf``, or None if
unknown) and, for the Gaussian ones, ``true_delta`` (the exact delta at the claimed epsilon).

They cover every buggy entry of the auditor benchmark catalog (``shared/refs/CATALOG.md``) and more from
the literature: Lyu, Su & Li, "Understanding the Sparse Vector Technique for Differential Privacy"
(VLDB 2017) for the sparse-vector variants; Balle & Wang 2018 for the classic Gaussian calibration
outside its range. They are deliberately not exported by :mod:`dpaudit.mechanisms`.

Example:
    >>> import numpy as np
    >>> from dpaudit.mechanisms.buggy import HistogramWrongScale
    >>> bad = HistogramWrongScale(0.5, bins=5)
    >>> bad.scale, bad.true_epsilon, bad.privacy.epsilon
    (0.5, 2.0, 0.5)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_positive, check_positive_int, check_real, check_sampling_probability
from ..accountant import gaussian_delta, gaussian_epsilon
from ..errors import InvalidArgument
from ..events import Gaussian
from ..guarantee import Guarantee
from . import _noise
from .base import Mechanism, as_real_vector
from .binary_tree import BinaryTreeMechanism
from .exponential import ExponentialMechanism
from .factorization import FactorizationMechanism, Strategy
from .gaussian import GaussianMechanism
from .laplace import BoundedSum, HistogramMechanism, LaplaceMechanism
from .noisy_max import ReportNoisyMax
from .randomized_response import RandomizedResponse
from .sparse_vector import AboveThreshold, run_sparse_vector
from .subsampling import PoissonSubsampled

__all__ = [
    "KNOWN_BAD",
    "LaplaceHalfScale",
    "HistogramWrongScale",
    "BoundedSumMissingClip",
    "BoundedSumNoiseIgnoresClipBound",
    "GaussianHalfSigma",
    "GaussianClassicBeyondEpsilonOne",
    "NoisyMaxReturnsValue",
    "NoisyMaxHalfScale",
    "ExponentialMechanismMissingHalf",
    "AboveThresholdWithoutThresholdNoise",
    "SparseVectorReturnsNoisyValue",
    "SparseVectorWithoutQueryNoise",
    "SparseVectorQueryNoiseIgnoresCutoff",
    "SparseVectorWithoutCutoff",
    "RandomizedResponseBinaryFormula",
    "SubsampledClaimsLinearAmplification",
    "BinaryTreeNoiseNotScaledByDepth",
    "FactorizationNoiseIgnoresMeasurementNorm",
    "SVT_VALUE_BOTTOM",
    "SVT_VALUE_NOT_REACHED",
]

#: Encodings of :class:`SparseVectorReturnsNoisyValue` (a ⊤ is its noisy value).
SVT_VALUE_BOTTOM: float = -1000.0
SVT_VALUE_NOT_REACHED: float = -2000.0


def _classic_sigma(epsilon: float, delta: float) -> float:
    return math.sqrt(2.0 * math.log(1.25 / delta)) / epsilon


# ------------------------------------------------------------------------------------------- Laplace
class LaplaceHalfScale(LaplaceMechanism):
    """Laplace noise of half the required scale, Lap(k Delta / (2 epsilon)). Claims epsilon; true 2 epsilon."""

    bug = "noise scale halved"
    twin = LaplaceMechanism

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, k: int = 1) -> None:
        super().__init__(epsilon, sensitivity, k=k)
        self.scale /= 2.0
        self.true_epsilon = 2.0 * self.epsilon


class HistogramWrongScale(HistogramMechanism):
    """Histogram with noise Lap(epsilon) instead of Lap(1/epsilon) (catalog: histogram_wrong_scale).
    Claims epsilon; true 1/epsilon (a violation whenever epsilon < 1)."""

    bug = "noise scale epsilon instead of 1/epsilon"
    twin = HistogramMechanism

    def __init__(self, epsilon: float, bins: int) -> None:
        super().__init__(epsilon, bins)
        self.scale = self.epsilon
        self.true_epsilon = 1.0 / self.epsilon


class BoundedSumMissingClip(BoundedSum):
    """sum(x) + Lap(C/epsilon) without clipping the records (catalog: bounded_sum_missing_clip). Claims
    epsilon; true infinite (one record can move the sum arbitrarily; the catalog pair
    [.5, .5] -> [.5, .5, 5] has epsilon 5 epsilon)."""

    bug = "records not clipped"
    twin = BoundedSum

    def __init__(self, epsilon: float, lower: float = -1.0, upper: float = 1.0) -> None:
        super().__init__(epsilon, lower, upper)
        self.true_epsilon = math.inf

    def _clipped_sum(self, records: np.ndarray) -> float:
        return float(records.sum())

    def _sample_subsets(self, prepared: np.ndarray, masks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = _noise.laplace(rng, self.scale, masks.shape[0])
        out += masks @ prepared
        return out


class BoundedSumNoiseIgnoresClipBound(BoundedSum):
    """Clips to [lower, upper] but adds Lap(1/epsilon) as if one record contributed at most 1. Claims
    epsilon; true C epsilon with C = max(|lower|, |upper|)."""

    bug = "noise calibrated to sensitivity 1 instead of the clip bound"
    twin = BoundedSum

    def __init__(self, epsilon: float, lower: float = -5.0, upper: float = 5.0) -> None:
        super().__init__(epsilon, lower, upper)
        self.scale = 1.0 / self.epsilon
        self.true_epsilon = self.contribution * self.epsilon


# ------------------------------------------------------------------------------------------ Gaussian
class _ClassicGaussianTwin(GaussianMechanism):
    """A Gaussian mechanism with sigma = factor * sqrt(2 ln(1.25/delta)) Delta / epsilon, whatever the claim;
    ``true_delta`` / ``true_epsilon`` are exact (Balle & Wang)."""

    twin = GaussianMechanism
    factor: float = 1.0

    def __init__(self, epsilon: float, delta: float = 1e-5, sensitivity: float = 1.0) -> None:
        super().__init__(epsilon, delta, sensitivity, calibration="classic")
        self.true_delta = gaussian_delta(self.epsilon, self.sensitivity / self.sigma)
        self.true_epsilon = gaussian_epsilon(self.delta, self.sensitivity / self.sigma)

    def _calibrate(self, epsilon: float, delta: float, sensitivity: float) -> float:
        return _classic_sigma(epsilon, delta) * sensitivity * self.factor


class GaussianHalfSigma(_ClassicGaussianTwin):
    """The classic Gaussian mechanism with sigma/2, sigma = sqrt(2 ln(1.25/delta)) / epsilon (catalog:
    gaussian_half_sigma). Claims (epsilon, delta); at epsilon = 1, delta = 1e-5 the true delta is 1.7e-3."""

    bug = "sigma halved"
    factor = 0.5


class GaussianClassicBeyondEpsilonOne(_ClassicGaussianTwin):
    """The classic calibration sigma = sqrt(2 ln(1.25/delta)) Delta / epsilon used for epsilon >= 1, outside
    its proof. Claims (epsilon, delta); fails for large epsilon: at epsilon = 10, delta = 1e-5 the true delta
    is 2.3e-5, at epsilon = 20 it is 1.5e-3 (exact values in ``true_delta``)."""

    bug = "classic sigma outside epsilon < 1"


# --------------------------------------------------------------------------------------- noisy max
class NoisyMaxReturnsValue(Mechanism):
    """Report noisy max that returns the noisy maximum value instead of its index, max_i (q_i + Lap(2/epsilon))
    (catalog: noisy_max_laplace_value). Claims epsilon; true k epsilon / 2 (the k noisy answers are
    each epsilon/2-DP and the value reveals them through their maximum; pair [0]*5 -> [1]*5 reaches 5
    epsilon / 2 in the tail max <= t, t -> -inf). Output: float64 (size,)."""

    name = "noisy_max_laplace_value"
    bug = "returns the noisy value, not the index"
    twin = ReportNoisyMax

    def __init__(self, epsilon: float, k: int, sensitivity: float = 1.0) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.k = check_positive_int(k, "k")
        self.sensitivity = check_positive(sensitivity, "sensitivity")
        self.scale = 2.0 * self.sensitivity / self.epsilon
        self.privacy = Guarantee(self.epsilon, 0.0)
        self.event = None
        self.true_epsilon = self.k * self.epsilon / 2.0

    def prepare(self, data: Any) -> np.ndarray:
        return as_real_vector(data, self.k)

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        noisy = _noise.laplace(rng, self.scale, (size, self.k))
        noisy += prepared
        return noisy.max(axis=1)

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "k": self.k}


class NoisyMaxHalfScale(ReportNoisyMax):
    """Report noisy max with Lap(Delta/epsilon) noise on queries that are not monotone (the lecture's
    Algorithm 8 used without its simplifying assumptions). Claims epsilon; true at most 2 epsilon, and
    more than epsilon: the pair [1]*5 -> [0,2,2,2,2] has exact epsilon 1.98 at epsilon = 1
    (:func:`dpaudit.mechanisms.exact.report_noisy_max_pmf`). ``true_epsilon`` is None (not known exactly)."""

    bug = "monotone-query noise scale used for general queries"
    twin = ReportNoisyMax

    def __init__(self, epsilon: float, k: int, sensitivity: float = 1.0) -> None:
        super().__init__(epsilon, k, sensitivity=sensitivity)
        self.scale = self.sensitivity / self.epsilon
        self.true_epsilon = None


class ExponentialMechanismMissingHalf(ExponentialMechanism):
    """Exponential mechanism with weights exp(epsilon u / Delta_u), missing the factor 1/2. Claims epsilon;
    true 2 epsilon (approached on scores [1, 0, ..., 0] -> [0, 1, ..., 1] as |R| grows)."""

    bug = "weights exp(epsilon u / Delta_u) instead of exp(epsilon u / (2 Delta_u))"
    twin = ExponentialMechanism

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, range_size: int) -> None:
        super().__init__(epsilon, sensitivity, range_size=range_size)
        self.true_epsilon = 2.0 * self.epsilon

    def log_weights(self, scores: np.ndarray) -> np.ndarray:
        return scores * (self.epsilon / self.sensitivity)


# ------------------------------------------------------------------------------------- sparse vector
class AboveThresholdWithoutThresholdNoise(AboveThreshold):
    """AboveThreshold comparing against the exact threshold T (no Lap(2/epsilon) on it). Each ⊥ then leaks
    through its own Lap(4/epsilon) comparison: claims epsilon, true k epsilon / 4 (sup, attained in the
    tails: the all-⊥ output multiplies k likelihood ratios of e^{epsilon/4} each)."""

    bug = "threshold not perturbed"
    twin = AboveThreshold

    def __init__(self, epsilon: float, threshold: float, k: int) -> None:
        super().__init__(epsilon, threshold, k)
        self.threshold_scale = 0.0
        self.true_epsilon = self.k * self.epsilon / 4.0

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        out = run_sparse_vector(prepared, size, rng, threshold=self.threshold, threshold_scale=0.0,
                                query_scale=self.query_scale, cutoff=1)
        return out[:, 0] if self.k == 1 else out


class _BadSparseVector(Mechanism):
    """Common code of the sparse-vector variants of Lyu, Su & Li (2017)."""

    name = "sparse_vector_variant"
    twin = AboveThreshold
    output = "indicator"
    bottom: float = 0
    not_reached: float = -1
    dtype: Any = np.int8
    threshold_scale: float
    query_scale: float
    cutoff: int | None

    def _init_common(self, epsilon: float, threshold: float, k: int) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        value = check_real(threshold, "threshold")
        if not math.isfinite(value):
            raise InvalidArgument("threshold", f"threshold={threshold!r} must be finite")
        self.threshold = value
        self.k = check_positive_int(k, "k")
        self.privacy = Guarantee(self.epsilon, 0.0)
        self.event = None

    def prepare(self, data: Any) -> np.ndarray:
        return as_real_vector(data, self.k)

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        out = run_sparse_vector(prepared, size, rng, threshold=self.threshold, threshold_scale=self.threshold_scale,
                                query_scale=self.query_scale, cutoff=self.cutoff, output=self.output,
                                bottom=self.bottom, not_reached=self.not_reached, dtype=self.dtype)
        return out[:, 0] if self.k == 1 else out

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "threshold": self.threshold, "k": self.k}


class SparseVectorReturnsNoisyValue(_BadSparseVector):
    """Sparse vector that outputs the compared noisy value q_i + nu_i for a ⊤ (Lyu et al. Algorithm 3;
    catalog: svt_returns_noisy_value): rho = Lap(2/epsilon) once, nu_i = Lap(2c/epsilon), stop after c ⊤.

    Output float64 (size, k): the noisy value for ⊤, -1000 for ⊥ (:data:`SVT_VALUE_BOTTOM`), -2000 for not
    reached (:data:`SVT_VALUE_NOT_REACHED`; the catalog does not fix it, and -1 could be a value).
    Claims epsilon; true m epsilon / (2c) for m = k queries per the catalog (infinite over unbounded
    streams, Lyu et al.); the catalog pair [1]*10 -> [2]*5+[0]*5 reaches 3 epsilon (sup)."""

    name = "svt_returns_noisy_value"
    bug = "⊤ releases the noisy query value used in the comparison"
    output = "noisy_query"
    bottom = SVT_VALUE_BOTTOM
    not_reached = SVT_VALUE_NOT_REACHED
    dtype = np.float64

    def __init__(self, epsilon: float, threshold: float = 1.0, c: int = 1, k: int = 10) -> None:
        self._init_common(epsilon, threshold, k)
        self.cutoff = check_positive_int(c, "c")
        self.threshold_scale = 2.0 / self.epsilon
        self.query_scale = 2.0 * self.cutoff / self.epsilon
        self.true_epsilon = self.k * self.epsilon / (2.0 * self.cutoff)

    def _parameters(self) -> dict[str, Any]:
        return {**super()._parameters(), "c": self.cutoff}


class SparseVectorWithoutQueryNoise(_BadSparseVector):
    """Sparse vector with no noise on the queries and no cutoff (Lyu et al. Algorithm 5, Stoddard et al.
    2014; catalog: svt_without_query_noise): rho = Lap(2/epsilon), answers all k queries, output 1/0.
    Claims epsilon; true infinite: with equal answers the pattern ⊤⊤⊤⊤⊤⊥⊥⊥⊥⊥ is impossible, while
    [2]*5+[0]*5 produces it."""

    name = "svt_without_query_noise"
    bug = "no noise on the query answers (and no cutoff)"

    def __init__(self, epsilon: float, threshold: float = 1.0, k: int = 10) -> None:
        self._init_common(epsilon, threshold, k)
        self.cutoff = None
        self.threshold_scale = 2.0 / self.epsilon
        self.query_scale = 0.0
        self.true_epsilon = math.inf

    def support(self, data: Any, outputs: Any) -> np.ndarray:
        """Exactly which outputs can occur on ``data``: answer i is [q_i >= T + rho] with one continuous
        rho of full support, so a 0/1 pattern occurs iff every ⊤ query exceeds every ⊥ query
        (max over ⊥ of q_i < min over ⊤ of q_i); any other value never occurs."""
        queries = self.prepare(data)
        rows = np.asarray(outputs, dtype=np.float64).reshape(-1, self.k)
        binary = np.all((rows == 0.0) | (rows == 1.0), axis=1)
        top = rows == 1.0
        lowest_top = np.where(top, queries[None, :], np.inf).min(axis=1)
        highest_bottom = np.where(~top, queries[None, :], -np.inf).max(axis=1)
        return binary & (highest_bottom < lowest_top)


class SparseVectorQueryNoiseIgnoresCutoff(_BadSparseVector):
    """Lee & Clifton (2014) sparse vector (Lyu et al. Algorithm 4): epsilon_1 = epsilon/4, rho =
    Lap(1/epsilon_1), nu_i = Lap(1/epsilon_2) with epsilon_2 = 3 epsilon / 4 -- the query noise does not grow
    with the cutoff c. Output 1/0/-1 like AboveThreshold. Claims epsilon; true (1 + 6c) epsilon / 4."""

    name = "svt_query_noise_ignores_cutoff"
    bug = "query noise not scaled with the cutoff c"

    def __init__(self, epsilon: float, threshold: float = 1.0, c: int = 1, k: int = 10) -> None:
        self._init_common(epsilon, threshold, k)
        self.cutoff = check_positive_int(c, "c")
        self.threshold_scale = 4.0 / self.epsilon
        self.query_scale = 4.0 / (3.0 * self.epsilon)
        self.true_epsilon = (1.0 + 6.0 * self.cutoff) * self.epsilon / 4.0

    def _parameters(self) -> dict[str, Any]:
        return {**super()._parameters(), "c": self.cutoff}


class SparseVectorWithoutCutoff(_BadSparseVector):
    """Chen et al. (2015) sparse vector (Lyu et al. Algorithm 6): rho = Lap(2/epsilon), nu_i = Lap(2/epsilon)
    and no cutoff, so every ⊤ costs privacy. Output 1/0 for all k queries. Claims epsilon; infinite over
    unbounded streams (Lyu et al.); for k queries the loss grows with the number of ⊤ answers
    (``true_epsilon`` None: not known exactly)."""

    name = "svt_without_cutoff"
    bug = "no cutoff on the number of ⊤ answers"

    def __init__(self, epsilon: float, threshold: float = 1.0, k: int = 10) -> None:
        self._init_common(epsilon, threshold, k)
        self.cutoff = None
        self.threshold_scale = 2.0 / self.epsilon
        self.query_scale = 2.0 / self.epsilon
        self.true_epsilon = None


# ----------------------------------------------------------------------------------- other families
class RandomizedResponseBinaryFormula(RandomizedResponse):
    """K-ary randomized response keeping the true value with the binary probability e^eps / (1 + e^eps).
    Claims epsilon; true epsilon + ln(K - 1) (correct only for K = 2)."""

    bug = "binary keep probability used for K > 2 values"
    twin = RandomizedResponse

    def __init__(self, epsilon: float, num_buckets: int = 4) -> None:
        super().__init__(epsilon, num_buckets)
        self.true_epsilon = self.epsilon + math.log(self.num_buckets - 1)

    def _keep_probability(self) -> float:
        return 1.0 / (1.0 + math.exp(-self.epsilon))


class SubsampledClaimsLinearAmplification(PoissonSubsampled):
    """Poisson subsampling that claims q epsilon instead of ln(1 + q(e^epsilon - 1)). The sampling is
    correct; the claim is too small (e^{q eps} < 1 + q(e^eps - 1) by convexity). For an inner mechanism
    that is exactly epsilon-DP on some pair (e.g. a Laplace sum, or randomized response), the true
    epsilon is the amplified one, ``true_epsilon``."""

    bug = "claims q*epsilon for a Poisson subsample"
    twin = PoissonSubsampled

    def __init__(self, mechanism: Mechanism, sampling_probability: float) -> None:
        super().__init__(mechanism, sampling_probability)
        self.true_epsilon = self.privacy.epsilon
        q = check_sampling_probability(sampling_probability)
        self.privacy = Guarantee(q * mechanism.privacy.epsilon, q * mechanism.privacy.delta)


class BinaryTreeNoiseNotScaledByDepth(BinaryTreeMechanism):
    """Binary tree mechanism with Lap(1/epsilon) per node, forgetting that one element is in L nodes.
    Claims epsilon; true L epsilon (L = log2(T') + 1 levels)."""

    bug = "node noise not scaled by the tree depth"
    twin = BinaryTreeMechanism

    def __init__(self, epsilon: float, length: int) -> None:
        super().__init__(epsilon, length)
        self.true_epsilon = self.levels * self.epsilon

    def _node_scale(self) -> float:
        return 1.0 / self.epsilon


class FactorizationNoiseIgnoresMeasurementNorm(FactorizationMechanism):
    """Factorization mechanism whose noise is calibrated to L2 sensitivity 1 instead of ||M||_{1->2}.
    Claims (epsilon, delta); ``true_epsilon`` is the exact epsilon at delta (larger whenever ||M||_{1->2}
    > 1, e.g. sqrt(L) for the hierarchical strategy)."""

    bug = "noise ignores the measurement matrix's sensitivity"
    twin = FactorizationMechanism

    def __init__(self, epsilon: float, delta: float, strategy: Strategy) -> None:
        super().__init__(epsilon, delta, strategy)
        true_sensitivity = self.sensitivity
        self.sigma = self.sigma / true_sensitivity
        self.event = Gaussian(noise_multiplier=self.sigma)
        self.true_epsilon = gaussian_epsilon(self.delta, true_sensitivity / self.sigma)


#: Every known-bad mechanism class of this module.
KNOWN_BAD: tuple[type, ...] = (
    LaplaceHalfScale,
    HistogramWrongScale,
    BoundedSumMissingClip,
    BoundedSumNoiseIgnoresClipBound,
    GaussianHalfSigma,
    GaussianClassicBeyondEpsilonOne,
    NoisyMaxReturnsValue,
    NoisyMaxHalfScale,
    ExponentialMechanismMissingHalf,
    AboveThresholdWithoutThresholdNoise,
    SparseVectorReturnsNoisyValue,
    SparseVectorWithoutQueryNoise,
    SparseVectorQueryNoiseIgnoresCutoff,
    SparseVectorWithoutCutoff,
    RandomizedResponseBinaryFormula,
    SubsampledClaimsLinearAmplification,
    BinaryTreeNoiseNotScaledByDepth,
    FactorizationNoiseIgnoresMeasurementNorm,
)


# -------------------------------------------------------------------- structural leaks
class LaplaceSnappedNoiseOffGrid(LaplaceMechanism):
    """Laplace noise snapped to the grid ``granularity`` Z and added to a value that is not on the grid,
    y = f(x) + g round(Lap(b) / g). Every output keeps the residue f(x) mod g, so two inputs whose answers
    differ by a non-multiple of g have disjoint supports: true epsilon inf (Mironov 2012's snapping
    mechanism snaps the *sum* to the grid; snapping only the noise is the bug)."""

    bug = "noise snapped to a grid, the value added off the grid"
    twin = LaplaceMechanism

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, granularity: float = 2.0**-6) -> None:
        super().__init__(epsilon, sensitivity)
        self.granularity = check_positive(granularity, "granularity")
        self.true_epsilon = math.inf

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        noise = _noise.laplace(rng, self.scale, size)
        return prepared[0] + self.granularity * np.round(noise / self.granularity)

    def support(self, data: Any, outputs: Any) -> np.ndarray:
        """An output is possible iff it is f(x) plus a multiple of the grid (up to float rounding)."""
        steps = (np.asarray(outputs, dtype=np.float64) - self.prepare(data)[0]) / self.granularity
        return np.abs(steps - np.round(steps)) <= 1e-6 * np.maximum(1.0, np.abs(steps))


class LaplaceRareNaNBranch(LaplaceMechanism):
    """The Laplace mechanism with a rare retry branch that returns NaN, taken with probability
    ``nan_probability`` only when the true answer is positive. NaN is an output the other input never
    produces: true epsilon inf."""

    bug = "a rare data-dependent branch returns NaN"
    twin = LaplaceMechanism

    def __init__(self, epsilon: float, sensitivity: float = 1.0, *, nan_probability: float = 1e-2) -> None:
        super().__init__(epsilon, sensitivity)
        self.nan_probability = check_sampling_probability(nan_probability)
        self.true_epsilon = math.inf

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        out = _noise.laplace(rng, self.scale, size) + prepared[0]
        if prepared[0] > 0:
            out[rng.random(size) < self.nan_probability] = np.nan
        return out

    def support(self, data: Any, outputs: Any) -> np.ndarray:
        """Every real output is possible; NaN only when the true answer is positive."""
        outputs = np.asarray(outputs, dtype=np.float64)
        return np.where(np.isnan(outputs), bool(self.prepare(data)[0] > 0), np.isfinite(outputs))


class LaplaceDtypeLeak(LaplaceMechanism):
    """Rounded Laplace answers returned as int64 when the true answer is positive and as float64
    otherwise. The values have the same law up to the shift, but the dtype tells the inputs apart: true
    epsilon inf (the type of an output is part of the output)."""

    bug = "the output dtype depends on the input"
    twin = LaplaceMechanism

    def __init__(self, epsilon: float, sensitivity: float = 1.0) -> None:
        super().__init__(epsilon, sensitivity)
        self.true_epsilon = math.inf

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        out = np.round(_noise.laplace(rng, self.scale, size) + prepared[0])
        return out.astype(np.int64) if prepared[0] > 0 else out


class HistogramReplaceOne(HistogramMechanism):
    """A histogram with Lap(1/epsilon) per bin claiming epsilon under *replace-one* neighbours: replacing a
    record moves one count down and another up, L1 sensitivity 2, so the true epsilon is 2 epsilon (the
    noise is calibrated for add/remove)."""

    bug = "noise calibrated to add/remove sensitivity 1 under replace-one neighbours"
    twin = HistogramMechanism
    neighbouring = "replace_one"

    def __init__(self, epsilon: float, bins: int) -> None:
        super().__init__(epsilon, bins)
        self.true_epsilon = 2.0 * self.epsilon


KNOWN_BAD = KNOWN_BAD + (LaplaceSnappedNoiseOffGrid, LaplaceRareNaNBranch, LaplaceDtypeLeak, HistogramReplaceOne)
__all__ += ["LaplaceSnappedNoiseOffGrid", "LaplaceRareNaNBranch", "LaplaceDtypeLeak", "HistogramReplaceOne"]
