"""Canary presets: what is planted in a training run, and the threat model each one audits.

* ``dirac_gradient`` (white-box, Nasr et al. 2023, "Tight Auditing of Differentially Private Machine
  Learning"): the canary is a record whose per-sample gradient is replaced, after Opacus computes it and
  before clipping and noise, by a crafted gradient of norm ``gradient_norm`` (default the clipping norm C)
  on one parameter coordinate of its own; the other records' per-sample gradients are zeroed on the
  canaries' coordinates (DP-SGD's guarantee holds for any per-sample gradients, so this is still the
  mechanism the claim covers). Every noisy update the optimizer applies is observed; the score is the sum
  over steps of the update's component on the canary's coordinate. This is the tight audit: the score is
  the subsampled Gaussian mechanism itself.
* ``mislabelled`` (black-box): the canary is a copy of a training input with a wrong label; the score is
  minus the final model's loss on it.
* ``out_of_distribution`` (black-box): the canary is an input far from the data (Gaussian noise at four
  times the data's per-feature spread) with a random label; the score is minus the final model's loss.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_choice, check_nonnegative_int, check_positive_int
from ..errors import InvalidArgument

__all__ = ["CanaryPreset", "PRESETS", "Canaries", "make_canaries", "canary_seed_sequence", "as_numpy"]


@dataclass(frozen=True)
class CanaryPreset:
    """A canary kind: its name, whether it needs the training stack's internals, and its threat model."""

    name: str
    white_box: bool
    threat_model: str


PRESETS: dict[str, CanaryPreset] = {
    "dirac_gradient": CanaryPreset(
        "dirac_gradient", True,
        "white-box: the adversary crafts the canary's per-sample gradient (norm C on one coordinate, planted "
        "before clipping and noise) and observes every noisy update (Nasr et al. 2023)"),
    "mislabelled": CanaryPreset(
        "mislabelled", False,
        "black-box: the adversary inserts a training input with a wrong label and sees only the final model's "
        "loss on it"),
    "out_of_distribution": CanaryPreset(
        "out_of_distribution", False,
        "black-box: the adversary inserts an out-of-distribution input (noise at 4x the data's spread) with a "
        "random label and sees only the final model's loss on it"),
}


@dataclass(frozen=True)
class Canaries:
    """m canary records (``inputs[k]``, ``labels[k]``) of one preset; white-box canaries take their
    coordinates from ``seed`` when the model's parameter count is known (the same in every run)."""

    preset: CanaryPreset
    inputs: np.ndarray
    labels: np.ndarray
    seed: int
    gradient_norm_factor: float = 1.0

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def coordinates(self, parameters: int) -> np.ndarray:
        """Distinct flat parameter coordinates, one per canary (white-box presets)."""
        if parameters < len(self):
            raise InvalidArgument("canaries", f"{len(self)} Dirac canaries need {len(self)} distinct parameter "
                                              f"coordinates but the model has {parameters} trainable parameters: "
                                              "use fewer canaries or a larger model")
        rng = np.random.default_rng(canary_seed_sequence(self.seed, 2))
        return np.sort(rng.choice(parameters, size=len(self), replace=False))


def canary_seed_sequence(seed: int, purpose: int) -> np.random.SeedSequence:
    """The seed sequence of one canary-side purpose (0 inputs, 1 inclusion, 2 coordinates)."""
    return np.random.SeedSequence(seed, spawn_key=(31, purpose))


def make_canaries(preset: str, count: int, base_inputs: np.ndarray, base_labels: np.ndarray, num_classes: int,
                  seed: int, gradient_norm_factor: float = 1.0) -> Canaries:
    """``count`` canaries of ``preset`` shaped like the base data (``base_inputs``: a sample of training
    inputs, float; ``base_labels``: their integer labels; ``num_classes``: the model's output width)."""
    name = check_choice(preset, "canary", tuple(PRESETS))
    count = check_positive_int(count, "canaries")
    seed = check_nonnegative_int(seed, "seed")
    base_inputs = np.asarray(base_inputs)
    base_labels = np.asarray(base_labels)
    if base_inputs.ndim < 1 or base_inputs.shape[0] == 0:
        raise InvalidArgument("dataset", "the dataset is empty: canaries are shaped like its inputs")
    rng = np.random.default_rng(canary_seed_sequence(seed, 0))
    shape = base_inputs.shape[1:]
    dtype = base_inputs.dtype if np.issubdtype(base_inputs.dtype, np.floating) else np.float32
    if name == "mislabelled":
        if num_classes < 2:
            raise InvalidArgument("canary", f"mislabelled canaries need a classifier with >= 2 outputs, the model has "
                                            f"{num_classes}")
        picks = rng.integers(0, base_inputs.shape[0], size=count)
        inputs = base_inputs[picks].astype(dtype)
        labels = (base_labels[picks].astype(np.int64) + 1 + rng.integers(0, num_classes - 1, size=count)) % num_classes
    else:
        spread = base_inputs.reshape(base_inputs.shape[0], -1).astype(np.float64)
        mean, std = spread.mean(axis=0), spread.std(axis=0) + 1e-3
        scale = 4.0 if name == "out_of_distribution" else 1.0
        inputs = (mean + scale * std * rng.standard_normal((count, mean.size))).reshape((count, *shape)).astype(dtype)
        labels = rng.integers(0, max(num_classes, 1), size=count)
    labels = labels.astype(base_labels.dtype if np.issubdtype(base_labels.dtype, np.integer) else np.int64)
    return Canaries(PRESETS[name], inputs, labels, seed, float(gradient_norm_factor))


def as_numpy(value: Any) -> np.ndarray:
    """A numpy copy of a tensor or array-like."""
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)
