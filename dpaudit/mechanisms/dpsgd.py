"""DP-SGD for linear and logistic models, vectorised over independent training runs, and its buggy twins.

``DPSGD(noise_multiplier, sampling_probability, steps, clip, ...)`` trains ``size`` models at once
(``mechanism(data, size, rng)``), each from theta_0 = 0 with T steps of (Abadi et al. 2016)

    B_t ~ Poisson(q) subsample of the records,  g_t = sum_{i in B_t} clip_C(grad l(theta_t; x_i, y_i)) + N(0, sigma^2 C^2 I),
    theta_{t+1} = theta_t - learning_rate * g_t,

clip_C(g) = g min(1, C / ||g||). Under add/remove-one neighbours this is exactly the privacy event
``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)`` (Mironov, Talwar & Zhang 2019); ``.privacy`` is
the PLD accountant's epsilon at ``delta`` (an upper bound). With q = 1 (full batch) it is exactly
mu-GDP with mu = sqrt(T)/sigma (Dong, Roth & Su 2022, Cor. 3.3), given as ``.mu``.

Data: a 2-d array, one record per row: the d features, then the label (linear: a real y, loss
(theta.x - y)^2 / 2; logistic: y in {0, 1}, loss log(1 + exp(-(2y - 1) theta.x))). Generalised linear
models have per-example gradients r_i x_i (r_i a scalar), so clipped sums are one matrix product:
memory O(size * n) per step, never O(size * n * d).

Observations (``observe``), all about the auditor's ``canary`` record (known to the auditor whether or
not it is in the data):

* ``"parameters"``: the final theta, shape (size, d);
* ``"loss"``: the canary's loss at the final theta, shape (size,) (a membership score is -loss);
* ``"dirac"``: the white-box view of Nasr et al. 2023 ("Dirac canary" / gradient canary): each step's
  noisy sum g_t projected on the canary's gradient direction at theta_t, shape (size, T);
* ``"dirac_sum"``: the sum over steps of those projections, shape (size,).

With a canary orthogonal to every other record whose gradient norm always exceeds C (e.g. x = a e_d,
a huge |y|: :func:`dirac_canary_data`), the per-step projection is exactly C 1[canary in B_t] +
N(0, sigma^2 C^2): the white-box audit is then as strong as the accountant's worst case.

Buggy twins (each claims the correct twin's ``.event``/``.privacy``; attribute ``bug``):
:class:`DPSGDWithoutClipping`, :class:`DPSGDClippingAfterAveraging`, :class:`DPSGDNoiseNotScaledByClip`,
:class:`DPSGDShuffledBatches` (fixed-size batches of a per-epoch shuffle, accounted as Poisson; Chua et
al. 2024, "How Private are DP-SGD Implementations?").

Example:
    >>> import numpy as np
    >>> data, with_canary, canary = dirac_canary_data(n=20, d=3, seed=0)
    >>> m = DPSGD(2.0, 1.0, 4, canary=canary, observe="dirac_sum")
    >>> m.mu
    1.0
    >>> m(with_canary, 5, np.random.default_rng(0)).shape
    (5,)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._validation import check_choice, check_delta, check_positive, check_positive_int, check_sampling_probability
from ..errors import InvalidArgument
from ..events import Gaussian, PoissonSampled, SelfComposed
from ..guarantee import Guarantee
from .base import Mechanism, _as_numeric_array, _check_finite

__all__ = [
    "DPSGD",
    "DPSGDWithoutClipping",
    "DPSGDClippingAfterAveraging",
    "DPSGDNoiseNotScaledByClip",
    "DPSGDShuffledBatches",
    "BUGGY_TWINS",
    "OBSERVATIONS",
    "MODELS",
    "dirac_canary_data",
    "logistic_canary_data",
    "shuffle_canary_data",
    "lr_score_poisson",
    "lr_score_shuffled",
]

OBSERVATIONS: tuple[str, ...] = ("parameters", "loss", "dirac", "dirac_sum")
MODELS: tuple[str, ...] = ("linear", "logistic")


def _as_records(data: Any, width: int | None, name: str = "data") -> np.ndarray:
    array = _as_numeric_array(data, name)
    if array.ndim != 2:
        raise InvalidArgument(name, f"{name} must be a 2-d array (one record per row: features then label), "
                                    f"got shape {array.shape}")
    if array.shape[1] < 2:
        raise InvalidArgument(name, f"{name} needs at least one feature and a label per row, got {array.shape[1]} columns")
    if width is not None and array.shape[1] != width:
        raise InvalidArgument(name, f"{name} has {array.shape[1]} columns but the canary has {width}")
    array = array.astype(np.float64)
    _check_finite(array, name)
    return array


class DPSGD(Mechanism):
    """DP-SGD (Poisson sampling, per-example clipping, Gaussian noise sigma C) on a linear or logistic model.

    Args:
        noise_multiplier: sigma (noise standard deviation in units of the clipping norm C).
        sampling_probability: q, the Poisson sampling rate (1 = full batch).
        steps: T.
        clip: C, the per-example L2 clipping norm.
        learning_rate: step size applied to the noisy gradient sum.
        model: "linear" (squared loss) or "logistic" (labels 0/1).
        observe: "parameters", "loss", "dirac" or "dirac_sum" (see the module docstring).
        canary: the auditor's canary record (features then label); needed by every observation but
            "parameters".
        delta: the delta at which ``.privacy`` states epsilon.
    """

    name = "dpsgd"
    neighbouring = "add_remove"
    bug: str | None = None

    def __init__(self, noise_multiplier: float, sampling_probability: float, steps: int, clip: float = 1.0, *,
                 learning_rate: float = 0.1, model: str = "linear", observe: str = "parameters",
                 canary: Any = None, delta: float = 1e-5) -> None:
        from ..accountant import PLDAccountant

        self.noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
        self.sampling_probability = check_sampling_probability(sampling_probability)
        self.steps = check_positive_int(steps, "steps")
        if self.steps > 10_000:
            raise InvalidArgument("steps", f"steps={steps} must be <= 10000")
        self.clip = check_positive(clip, "clip")
        self.learning_rate = check_positive(learning_rate, "learning_rate")
        self.model = check_choice(model, "model", MODELS)
        self.observe = check_choice(observe, "observe", OBSERVATIONS)
        self.delta = check_delta(delta, "delta")
        if canary is None:
            if self.observe != "parameters":
                raise InvalidArgument("canary", f"observe={self.observe!r} needs the auditor's canary record (canary=...)")
            self.canary = None
        else:
            row = _as_records(np.asarray(canary, dtype=np.float64).reshape(1, -1) if np.ndim(canary) == 1 else canary,
                              None, "canary")
            if row.shape[0] != 1:
                raise InvalidArgument("canary", f"canary must be one record (features then label), got shape {row.shape}")
            if not np.any(row[0, :-1]):
                raise InvalidArgument("canary", "canary features must not all be 0 (its gradient would be 0)")
            self._check_label(row[0, -1], "canary")
            self.canary = row[0]
        self.event = SelfComposed(PoissonSampled(self.sampling_probability, Gaussian(self.noise_multiplier)), self.steps)
        self.privacy = Guarantee(PLDAccountant().compose(self.event).epsilon(self.delta), self.delta)

    # -------------------------------------------------------------------------------------------- helpers
    @property
    def mu(self) -> float | None:
        """sqrt(T)/sigma when q = 1 (full batch: exactly mu-GDP), else None."""
        return math.sqrt(self.steps) / self.noise_multiplier if self.sampling_probability == 1.0 else None

    def _check_label(self, label: float, name: str) -> None:
        if self.model == "logistic" and label not in (0.0, 1.0):
            raise InvalidArgument(name, f"{name} label {label!r} must be 0 or 1 for model='logistic'")

    def prepare(self, data: Any) -> np.ndarray:
        width = None if self.canary is None else self.canary.size
        records = _as_records(data, width)
        if self.model == "logistic":
            bad = ~np.isin(records[:, -1], (0.0, 1.0))
            if bad.any():
                row = int(np.argmax(bad))
                raise InvalidArgument("data", f"data[{row}, -1]={records[row, -1]!r}: labels must be 0 or 1 for "
                                              "model='logistic'")
        return records

    def _elements_per_run(self, prepared: np.ndarray) -> int:
        return 4 * max(1, prepared.shape[0]) + 2 * prepared.shape[1] + (self.steps if self.observe == "dirac" else 0)

    def _residuals(self, theta: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """r with grad l(theta; x, y) = r x, for every run (rows of theta) and record (columns)."""
        z = theta @ x.T
        if self.model == "linear":
            return z - y
        sign = 2.0 * y - 1.0
        return -sign / (1.0 + np.exp(np.clip(sign * z, -700, 700)))

    def _loss(self, theta: np.ndarray, x: np.ndarray, y: float) -> np.ndarray:
        z = theta @ x
        if self.model == "linear":
            return 0.5 * (z - y) ** 2
        return np.logaddexp(0.0, -(2.0 * y - 1.0) * z)

    def _clip_coefficients(self, r: np.ndarray, norms: np.ndarray) -> np.ndarray:
        """Per-example clipped gradient = coefficient * x_i."""
        size = np.abs(r) * norms
        return r * np.minimum(1.0, self.clip / np.maximum(size, 1e-300))

    def _batches(self, n: int, size: int, rng: np.random.Generator) -> Any:
        """Yield each step's (size, n) boolean batch mask (None = every record, q = 1)."""
        q = self.sampling_probability
        for _ in range(self.steps):
            yield None if q == 1.0 else rng.random((size, n)) < q

    def _noisy_sum(self, coefficients: np.ndarray, mask: np.ndarray | None, x: np.ndarray, noise: np.ndarray) -> np.ndarray:
        weights = coefficients if mask is None else coefficients * mask
        return weights @ x + noise

    def _noise_scale(self) -> float:
        return self.noise_multiplier * self.clip

    # -------------------------------------------------------------------------------------------- training
    def _sample(self, prepared: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        x, y = prepared[:, :-1], prepared[:, -1]
        n, d = x.shape
        norms = np.linalg.norm(x, axis=1)
        theta = np.zeros((size, d))
        canary_x = None if self.canary is None else self.canary[:-1]
        canary_y = None if self.canary is None else float(self.canary[-1])
        projections = np.zeros((size, self.steps)) if self.observe in ("dirac", "dirac_sum") else None
        for t, mask in enumerate(self._batches(n, size, rng)):
            r = self._residuals(theta, x, y) if n else np.zeros((size, 0))
            coefficients = self._clip_coefficients(r, norms) if n else r
            noise = rng.normal(0.0, self._noise_scale(), (size, d))
            g = self._noisy_sum(coefficients, mask, x, noise) if n else noise
            if projections is not None:
                direction = np.sign(self._residuals(theta, canary_x[None, :], np.array([canary_y]))[:, 0])
                direction[direction == 0] = 1.0
                projections[:, t] = direction * (g @ canary_x) / np.linalg.norm(canary_x)
            theta = theta - self.learning_rate * g
        if self.observe == "parameters":
            return theta
        if self.observe == "loss":
            return self._loss(theta, canary_x, canary_y)
        return projections if self.observe == "dirac" else projections.sum(axis=1)

    def _parameters(self) -> dict[str, Any]:
        return {"noise_multiplier": self.noise_multiplier, "sampling_probability": self.sampling_probability,
                "steps": self.steps, "clip": self.clip, "learning_rate": self.learning_rate, "model": self.model,
                "observe": self.observe}


class DPSGDWithoutClipping(DPSGD):
    """Bug: per-example gradients are never clipped (sensitivity unbounded); noise still sigma C."""

    name = "dpsgd_without_clipping"
    bug = "per-example gradients are not clipped"
    true_epsilon = math.inf

    def _clip_coefficients(self, r: np.ndarray, norms: np.ndarray) -> np.ndarray:
        return r


class DPSGDClippingAfterAveraging(DPSGD):
    """Bug: the batch gradient is averaged (over the expected batch size q n), the average clipped to C and
    scaled back, then N(0, sigma^2 C^2) added: one record can move the sum by up to 2 q n C, not C."""

    name = "dpsgd_clipping_after_averaging"
    bug = "the averaged batch gradient is clipped instead of each example's gradient"
    true_epsilon = None

    def _clip_coefficients(self, r: np.ndarray, norms: np.ndarray) -> np.ndarray:
        return r

    def _noisy_sum(self, coefficients: np.ndarray, mask: np.ndarray | None, x: np.ndarray, noise: np.ndarray) -> np.ndarray:
        batch = max(1.0, self.sampling_probability * x.shape[0])
        weights = coefficients if mask is None else coefficients * mask
        mean = (weights @ x) / batch
        norm = np.linalg.norm(mean, axis=1, keepdims=True)
        return batch * mean * np.minimum(1.0, self.clip / np.maximum(norm, 1e-300)) + noise


class DPSGDNoiseNotScaledByClip(DPSGD):
    """Bug: the noise is N(0, sigma^2) instead of N(0, sigma^2 C^2): the true noise multiplier is sigma / C,
    so the true event is SelfComposed(PoissonSampled(q, Gaussian(sigma / C)), T) (``true_event``)."""

    name = "dpsgd_noise_not_scaled_by_clip"
    bug = "the noise standard deviation is sigma, not sigma times the clipping norm"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from ..accountant import PLDAccountant

        self.true_event = SelfComposed(PoissonSampled(self.sampling_probability,
                                                      Gaussian(self.noise_multiplier / self.clip)), self.steps)
        self.true_epsilon = PLDAccountant().compose(self.true_event).epsilon(self.delta) if self.clip > 1 else None

    def _noise_scale(self) -> float:
        return self.noise_multiplier


class DPSGDShuffledBatches(DPSGD):
    """Bug (of accounting): batches are consecutive blocks of size b = max(1, round(q n)) of a fresh random
    permutation each epoch (n // b batches per epoch, the rest dropped), but the Poisson event is declared.
    Every record is then used exactly once per epoch; Chua et al. 2024 show this can have a much larger
    epsilon than Poisson sampling at small sigma."""

    name = "dpsgd_shuffled_batches"
    bug = "fixed-size batches of a shuffle, accounted as Poisson sampling"
    true_epsilon = None

    def _batches(self, n: int, size: int, rng: np.random.Generator) -> Any:
        b = max(1, int(round(self.sampling_probability * n)))
        per_epoch = max(1, n // b)
        batch_of = None
        for t in range(self.steps):
            if t % per_epoch == 0:
                ranks = np.argsort(np.argsort(rng.random((size, n)), axis=1), axis=1)
                batch_of = ranks // b
            yield batch_of == (t % per_epoch)


BUGGY_TWINS: tuple[type[DPSGD], ...] = (DPSGDWithoutClipping, DPSGDClippingAfterAveraging, DPSGDNoiseNotScaledByClip,
                                        DPSGDShuffledBatches)


# ------------------------------------------------------------------------------------------------ data
def dirac_canary_data(n: int = 100, d: int = 5, seed: int = 0, *, canary_label: float = -1e3
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A linear-regression dataset and the adjacent one with a Dirac canary: returns (without, with, canary).

    Records: features N(0, 1) on the first d - 1 coordinates and 0 on the last, label = <w, x> + noise;
    the canary is x = e_d (orthogonal to every record), y = ``canary_label`` (a huge residual, so its
    gradient always has norm > C and the same direction: clipped, it is exactly C e_d).
    """
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    if d < 2:
        raise InvalidArgument("d", f"d={d} must be >= 2 (d - 1 data coordinates and the canary's)")
    rng = np.random.default_rng(seed)
    x = np.zeros((n, d))
    x[:, : d - 1] = rng.normal(size=(n, d - 1))
    w = rng.normal(size=d - 1)
    y = x[:, : d - 1] @ w + 0.1 * rng.normal(size=n)
    data = np.column_stack([x, y])
    canary = np.zeros(d + 1)
    canary[d - 1], canary[d] = 1.0, canary_label
    return data, np.vstack([data, canary]), canary


def shuffle_canary_data(n: int = 100, d: int = 2, *, label: float = 1e3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The adjacent pair of Chua et al. 2024 for shuffled batches, in Dirac form: returns (without, with, canary).

    Every record is x = e_d with label +``label`` (clipped gradient exactly -C e_d), the canary x = e_d
    with label -``label`` (+C e_d). With fixed-size batches the canary's batch sum differs by 2C from
    every other batch in exactly one step per epoch (it displaces a -C record), with no sampling noise to
    hide it; Poisson sampling would hide it in Binomial batch sizes.
    """
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    data = np.zeros((n, d + 1))
    data[:, d - 1], data[:, d] = 1.0, label
    canary = np.zeros(d + 1)
    canary[d - 1], canary[d] = 1.0, -label
    return data, np.vstack([data, canary]), canary


def logistic_canary_data(n: int = 200, d: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A logistic-regression dataset and the adjacent one with a mislabelled outlier canary:
    returns (without, with, canary). The canary lies far along the last coordinate (which the other
    records barely use) with label 1, so training on it changes its loss as much as possible."""
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    x[:, -1] *= 0.01
    w = rng.normal(size=d)
    w[-1] = 0.0
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-x @ w))).astype(np.float64)
    data = np.column_stack([x, y])
    canary = np.zeros(d + 1)
    canary[d - 1], canary[d] = 3.0, 1.0
    return data, np.vstack([data, canary]), canary


# ------------------------------------------------------------------------------------------------ scores
def lr_score_poisson(projections: np.ndarray, noise_multiplier: float, sampling_probability: float,
                     clip: float = 1.0) -> np.ndarray:
    """Log-likelihood ratio of the per-step Dirac projections (size, T) for "canary in" (each step
    C 1[sampled] + N(0, (sigma C)^2), sampled w.p. q) against "out" (N(0, (sigma C)^2)): the most
    powerful score (Neyman-Pearson) for the correct Poisson DP-SGD's white-box view."""
    z = np.asarray(projections, dtype=np.float64) / clip
    s = noise_multiplier
    q = sampling_probability
    shift = z / s**2 - 0.5 / s**2  # log density ratio of one sampled step
    if q == 1.0:
        return shift.sum(axis=-1)
    return np.logaddexp(math.log1p(-q), math.log(q) + shift).sum(axis=-1)


def lr_score_shuffled(projections: np.ndarray, noise_multiplier: float, steps_per_epoch: int,
                      clip: float = 1.0) -> np.ndarray:
    """Log-likelihood ratio of the per-step Dirac projections for "canary in exactly one uniformly random
    step of each epoch" (the shuffled-batch view) against "out"; epochs of ``steps_per_epoch`` steps."""
    z = np.asarray(projections, dtype=np.float64) / clip
    s = noise_multiplier
    shift = z / s**2 - 0.5 / s**2
    size, steps = shift.shape
    total = np.zeros(size)
    for start in range(0, steps, steps_per_epoch):
        block = shift[:, start:start + steps_per_epoch]
        top = block.max(axis=1, keepdims=True)
        total += top[:, 0] + np.log(np.exp(block - top).sum(axis=1)) - math.log(block.shape[1])
    return total
