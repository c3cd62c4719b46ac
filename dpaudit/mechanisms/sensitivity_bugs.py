"""Known-bad mechanisms with sensitivity and control-flow bugs, modelled on the bug classes record/replay finds.

Cebere, Erb, Desfontaines, Bellet & Fitzsimons (PETS 2026) report these classes in real DP libraries: a
missing clamp, a mean divided by the wrong count, a sensitivity derived for add/remove used under
replace-one, noise scaled by a data-dependent quantity, a data-dependent number of noise draws. Each class
here claims the guarantee of its correct form (``.privacy``) and has ``bug`` (one line) and
``true_epsilon`` (exact where known, None otherwise). Several are hard for a black-box audit at small
epsilon: the extra sensitivity only shows on pairs with an outlying record, and the ratio it creates is
small, but the replay measures it exactly.

Example:
    >>> import numpy as np
    >>> mean = MeanDividedByWrongCount(0.5, upper=1.0)
    >>> mean([1.0, 1.0], 1, np.random.default_rng(0)).shape
    (1,)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_positive, check_positive_int
from ..guarantee import Guarantee
from . import _noise
from .base import Mechanism, as_records

__all__ = ["MeanMissingClamp", "MeanDividedByWrongCount", "SumReplaceOneWithAddRemoveSensitivity",
           "NoiseScaledByDataRange", "NoiseDrawsPerRecord", "ClippedMean", "SENSITIVITY_BUGS"]


class ClippedMean(Mechanism):
    """The correct twin: mean of records clipped to [0, upper] over a public count n, plus Lap(upper / (n
    epsilon)) (replace-one neighbours: one record moves the clipped sum by at most upper). Output (size,)."""

    name = "clipped_mean"
    neighbouring = "replace_one"

    def __init__(self, epsilon: float, upper: float = 1.0) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.upper = check_positive(upper, "upper")
        self.privacy = Guarantee(self.epsilon, 0.0)
        self.true_epsilon: float | None = self.epsilon

    def prepare(self, data: Any) -> np.ndarray:
        return as_records(data)

    def _clip(self, records: np.ndarray) -> np.ndarray:
        return np.clip(records, 0.0, self.upper)

    def _divisor(self, records: np.ndarray) -> float:
        return float(max(1, records.shape[0]))

    def _scale(self, records: np.ndarray) -> float:
        return self.upper / (self._divisor(records) * self.epsilon)

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        value = float(self._clip(prepared).sum()) / self._divisor(prepared)
        return value + _noise.laplace(rng, self._scale(prepared), size)

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "upper": self.upper}


class MeanMissingClamp(ClippedMean):
    """Mean of records that are never clamped to [0, upper]: one outlying record moves the mean without
    bound. Claims epsilon; true infinite."""

    bug = "records not clamped before the mean"
    twin = ClippedMean

    def __init__(self, epsilon: float, upper: float = 1.0) -> None:
        super().__init__(epsilon, upper)
        self.true_epsilon = math.inf

    def _clip(self, records: np.ndarray) -> np.ndarray:
        return records


class MeanDividedByWrongCount(ClippedMean):
    """Clipped mean whose noise is calibrated for a divisor of n but whose sum is divided by n / 2 (the count of
    a half, e.g. one of two partitions): the released value moves twice as far as the noise allows. Claims
    epsilon; true 2 epsilon."""

    bug = "the sum divided by a smaller count than the noise was calibrated for"
    twin = ClippedMean

    def __init__(self, epsilon: float, upper: float = 1.0) -> None:
        super().__init__(epsilon, upper)
        self.true_epsilon = 2.0 * self.epsilon

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        value = float(self._clip(prepared).sum()) / max(1.0, self._divisor(prepared) / 2.0)
        return value + _noise.laplace(rng, self._scale(prepared), size)


class SumReplaceOneWithAddRemoveSensitivity(Mechanism):
    """Sum of records clipped to [-bound, bound] plus Lap(bound / epsilon), claimed under replace-one
    neighbours: replacing a record moves the sum by up to 2 bound (add/remove: bound). Claims epsilon; true
    2 epsilon."""

    name = "sum_replace_one"
    neighbouring = "replace_one"
    bug = "add/remove sensitivity used under replace-one neighbours"

    def __init__(self, epsilon: float, bound: float = 1.0) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.bound = check_positive(bound, "bound")
        self.privacy = Guarantee(self.epsilon, 0.0)
        self.true_epsilon = 2.0 * self.epsilon

    def prepare(self, data: Any) -> np.ndarray:
        return as_records(data)

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        value = float(np.clip(prepared, -self.bound, self.bound).sum())
        return value + rng.laplace(0.0, self.bound / self.epsilon, size)

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "bound": self.bound}


class NoiseScaledByDataRange(ClippedMean):
    """Clipped mean with Laplace noise scaled by the data's observed range (max - min) instead of the public
    bound: the noise scale itself depends on the data and vanishes on constant data. Claims epsilon; true
    infinite (a constant dataset releases its mean with no noise... up to the floor of 1e-9 kept here)."""

    bug = "noise scaled by a data-dependent quantity (the observed range)"
    twin = ClippedMean

    def __init__(self, epsilon: float, upper: float = 1.0) -> None:
        super().__init__(epsilon, upper)
        self.true_epsilon = math.inf

    def _scale(self, records: np.ndarray) -> float:
        clipped = self._clip(records)
        spread = float(clipped.max() - clipped.min()) if clipped.size else 0.0
        return max(spread, 1e-9) / (self._divisor(records) * self.epsilon)


class NoiseDrawsPerRecord(Mechanism):
    """A clipped count released as the sum of one Lap(k / epsilon) draw per record, k = ``records_bound``
    (a per-record noise share): the number of draws, and so the noise's variance, depends on the data.
    Claims epsilon; true epsilon unknown (the extra draw on the larger dataset is visible in the spread).
    Output (size,)."""

    name = "noise_draws_per_record"
    bug = "data-dependent number of noise draws"

    def __init__(self, epsilon: float, records_bound: int = 10) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.records_bound = check_positive_int(records_bound, "records_bound")
        self.privacy = Guarantee(self.epsilon, 0.0)
        self.true_epsilon = None

    def prepare(self, data: Any) -> np.ndarray:
        return as_records(data)

    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        count = float(np.clip(prepared, 0.0, 1.0).sum())
        share = self.records_bound / self.epsilon / max(1, prepared.shape[0])
        draws = rng.laplace(0.0, share, (size, max(1, prepared.shape[0])))
        return count + draws.sum(axis=1)

    def _parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "records_bound": self.records_bound}


#: The known-bad classes of this module (each built as ``cls(epsilon)``).
SENSITIVITY_BUGS: tuple[type, ...] = (MeanMissingClamp, MeanDividedByWrongCount, SumReplaceOneWithAddRemoveSensitivity,
                                      NoiseScaledByDataRange, NoiseDrawsPerRecord)
