"""Poisson subsampling: run a mechanism on a random subset that keeps each record independently with
probability q (amplification by sampling; "the secrecy of the sample" lecture, Lemma 3).

Privacy: :func:`dpaudit.accountant.amplify` of the inner guarantee, epsilon' = ln(1 + q(e^eps - 1)),
delta' = q delta (Balle, Barthe & Gaboardi 2018; tight for randomized response), under add/remove-one
neighbours, which the inner mechanism must also use. Event: ``PoissonSampled(q, inner.event)``.

Data: the records (an array with one record per entry of axis 0), in the form the inner mechanism
takes. Output: the inner mechanism's outputs (their per-run shape must not depend on the subsample).

Each run draws its own subsample. Inner mechanisms with a ``_sample_subsets(prepared, masks, rng)``
method (e.g. :class:`~dpaudit.mechanisms.laplace.BoundedSum`) handle all subsamples in one vectorised
call; otherwise runs are grouped by identical subsample and the inner mechanism is called once per
distinct subsample (fast for small datasets).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_sampling_probability
from ..accountant import amplify
from ..errors import InvalidArgument, InvalidArgumentType, MechanismError
from ..events import PoissonSampled
from .base import Mechanism, _as_numeric_array

__all__ = ["PoissonSubsampled", "SubsampledGaussianSums"]


class PoissonSubsampled(Mechanism):
    """``mechanism`` run on a Poisson subsample with rate ``sampling_probability``.

    Example:
        >>> import numpy as np
        >>> from dpaudit.mechanisms import BoundedSum
        >>> wrapped = PoissonSubsampled(BoundedSum(1.0, 0.0, 1.0), 0.1)
        >>> round(wrapped.privacy.epsilon, 4)
        0.1586
        >>> wrapped(np.ones(10), 3, np.random.default_rng(0)).shape
        (3,)
    """

    name = "poisson_subsampled"
    neighbouring = "add_remove"

    def __init__(self, mechanism: Mechanism, sampling_probability: float) -> None:
        if not isinstance(mechanism, Mechanism):
            raise InvalidArgumentType("mechanism", f"mechanism={mechanism!r} must be a dpaudit Mechanism "
                                                   "(it needs a declared .privacy)")
        if mechanism.neighbouring != "add_remove":
            raise InvalidArgument("mechanism", f"mechanism {type(mechanism).__name__} claims its privacy under "
                                               f"{mechanism.neighbouring!r}; Poisson amplification needs add/remove-one")
        self.mechanism = mechanism
        self.sampling_probability = check_sampling_probability(sampling_probability)
        inner = mechanism.privacy
        self.privacy = amplify(inner.epsilon, inner.delta, self.sampling_probability)
        self.event = None if mechanism.event is None else PoissonSampled(self.sampling_probability, mechanism.event)

    def prepare(self, data: Any) -> np.ndarray:
        records = _as_numeric_array(data, "data")
        if records.ndim == 0:
            raise InvalidArgument("data", "data must be an array of records (one per entry of axis 0), got a scalar")
        self.mechanism.prepare(records)  # the whole dataset must be valid input of the inner mechanism
        return records

    def _elements_per_run(self, prepared: np.ndarray) -> int:
        return max(1, prepared.shape[0])

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        masks = rng.random((size, prepared.shape[0])) < self.sampling_probability
        fast = getattr(self.mechanism, "_sample_subsets", None)
        if fast is not None:
            return fast(self.mechanism.prepare(prepared), masks, rng)
        packed = np.packbits(masks, axis=1)
        distinct, inverse = np.unique(packed, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        out: np.ndarray | None = None
        for group in range(distinct.shape[0]):
            runs = np.flatnonzero(inverse == group)
            subset = prepared[masks[runs[0]]]
            result = np.asarray(self.mechanism(subset, runs.size, rng))
            if out is None:
                out = np.empty((size,) + result.shape[1:], dtype=result.dtype)
            if result.shape[1:] != out.shape[1:]:
                raise MechanismError(f"{type(self.mechanism).__name__} returned outputs of shape {result.shape[1:]} "
                                     f"and {out.shape[1:]} on different subsamples; subsampling needs a fixed shape")
            out[runs] = result
        assert out is not None
        return out

    def _parameters(self) -> dict[str, Any]:
        return {"mechanism": self.mechanism, "sampling_probability": self.sampling_probability}


class SubsampledGaussianSums(Mechanism):
    """``steps`` noisy sums over independent Poisson subsamples (the core of DP-SGD, one coordinate):
    step t outputs sum_{i in S_t} clip(x_i, -C, C) + N(0, (sigma C)^2), S_t keeping each record with
    probability q; all ``steps`` answers are released (output shape (size, steps), or (size,) for one step).

    Privacy (add/remove-one): ``event`` = SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps), and
    ``privacy`` = (its PLD epsilon at ``delta``, delta) (an upper bound).

    Example:
        >>> import numpy as np
        >>> m = SubsampledGaussianSums(1.0, 0.1, 10)
        >>> m.event
        SelfComposed(event=PoissonSampled(sampling_probability=0.1, event=Gaussian(noise_multiplier=1.0)), count=10)
        >>> m([1.0], 4, np.random.default_rng(0)).shape
        (4, 10)
    """

    name = "subsampled_gaussian_sums"
    neighbouring = "add_remove"

    def __init__(self, noise_multiplier: float, sampling_probability: float, steps: int, clip: float = 1.0,
                 delta: float = 1e-5) -> None:
        from .._validation import check_delta, check_positive, check_positive_int
        from ..accountant import PLDAccountant
        from ..events import Gaussian, SelfComposed
        from ..guarantee import Guarantee

        self.noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        self.sampling_probability = check_sampling_probability(sampling_probability)
        self.steps = check_positive_int(steps, "steps")
        self.clip = check_positive(clip, "clip")
        delta = check_delta(delta, "delta")
        self.event = SelfComposed(PoissonSampled(self.sampling_probability, Gaussian(self.noise_multiplier)), self.steps)
        self.privacy = Guarantee(PLDAccountant().compose(self.event).epsilon(delta), delta)

    def prepare(self, data: Any) -> np.ndarray:
        from .base import as_records

        return np.clip(as_records(data), -self.clip, self.clip)

    def _elements_per_run(self, prepared: np.ndarray) -> int:
        return self.steps * max(1, prepared.shape[0])

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        out = rng.normal(0.0, self.noise_multiplier * self.clip, (size, self.steps))
        if prepared.shape[0]:
            kept = rng.random((size, self.steps, prepared.shape[0])) < self.sampling_probability
            out += kept @ prepared
        return out[:, 0] if self.steps == 1 else out

    def _parameters(self) -> dict[str, Any]:
        return {"noise_multiplier": self.noise_multiplier, "sampling_probability": self.sampling_probability,
                "steps": self.steps, "clip": self.clip}
