"""DP gradient descent of a small ReLU MLP classifier, many independent models trained at once.

A final-model audit trains hundreds of models per side; one model at a time through a per-sample-gradient
library costs seconds each. :class:`BatchedMLPTraining` keeps a models dimension in every tensor instead:
the per-example gradient of a dense layer is the outer product of its input and its output error, so its
squared norm is |delta|^2 (|a|^2 + 1) (weights and bias) and the sum of clipped per-example gradients is
one batched matrix product (a^T (c * delta)), never materialising a per-example gradient. Each step is
DP-SGD as Opacus runs it (Abadi et al. 2016): per-example clipping to ``max_grad_norm`` C, the clipped
sum plus N(0, sigma^2 C^2) per coordinate, divided by the expected batch size, times the learning rate;
full batch (``sampling_probability`` 1) or Poisson sampling (each record in each step with probability q).

Each model's randomness (Poisson masks, noise, random initial parameters) comes from its own seed only,
and models are trained in fixed chunks of :data:`CHUNK_MODELS`, so a run's result does not depend on how
many runs there are or where they execute.

Also here:

* the crafted-gradient canary (Nasr et al. 2023; Cebere et al. ICLR 2025, "the hidden state threat
  model"): at every step the canary contributes a gradient of norm C on one parameter coordinate whose data
  gradients are zeroed, and only the final model is read (its change on that coordinate): the upper
  reference of what a final-model audit can see (exactly the last-iterate heuristic's pair);
* :class:`BatchedMLPTrainingWithNonPrivateEpoch`, the bug twin: one ordinary (unclipped, noiseless) epoch
  of minibatch SGD after the private steps.

torch is imported only when models are trained.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import (
    check_nonnegative_int,
    check_positive,
    check_positive_int,
    check_sampling_probability,
)
from ..errors import InvalidArgument, InvalidArgumentType

__all__ = ["BatchedMLPTraining", "BatchedMLPTrainingWithNonPrivateEpoch", "CHUNK_MODELS", "MLPParameters", "Adam"]

#: Models trained together in one task (fixed, so results do not depend on the number of workers).
CHUNK_MODELS = 64
#: Most entries of the largest per-chunk activation tensor (models x records x width) allowed.
MAX_ACTIVATION_ENTRIES = 1 << 28


@dataclass(frozen=True)
class MLPParameters:
    """Parameters of ``models`` MLPs: ``weights[l]`` of shape (models, d_in, d_out), ``biases[l]`` (models, d_out),
    as float32 numpy arrays."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @property
    def models(self) -> int:
        return int(self.weights[0].shape[0])

    def take(self, index: int) -> MLPParameters:
        return MLPParameters(tuple(w[index:index + 1] for w in self.weights), tuple(b[index:index + 1] for b in self.biases))

    def repeat(self, models: int) -> MLPParameters:
        """One model's parameters copied ``models`` times (the same initial parameters in every run)."""
        if self.models != 1:
            raise InvalidArgument("initial", f"initial parameters of {self.models} models; expected one")
        return MLPParameters(tuple(np.repeat(w, models, axis=0) for w in self.weights),
                             tuple(np.repeat(b, models, axis=0) for b in self.biases))

    def flat(self) -> np.ndarray:
        """(models, parameters): every weight then every bias, layer by layer."""
        parts = []
        for w, b in zip(self.weights, self.biases):
            parts += [w.reshape(w.shape[0], -1), b]
        return np.concatenate(parts, axis=1)


def _softmax(logits: Any) -> Any:
    """Softmax over the last axis (torch's kernel is slow for a last axis of a few classes)."""
    e = (logits - logits.amax(dim=-1, keepdim=True)).exp_()
    return e.div_(e.sum(dim=-1, keepdim=True))


def _relu_forward(torch: Any, x: Any, weights: list, biases: list) -> tuple[list, Any]:
    """Activations [x (shared or per model), hidden layers...] and the logits, per model."""
    activations = [x]
    a = x
    for layer, (w, b) in enumerate(zip(weights, biases)):
        z = torch.baddbmm(b[:, None, :], a.expand(w.shape[0], *a.shape) if a.ndim == 2 else a, w)
        if layer == len(weights) - 1:
            return activations, z
        a = torch.relu(z)
        activations.append(a)
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class BatchedMLPTraining:
    """DP-SGD (full-batch DP-GD when ``sampling_probability`` is 1) of a ReLU MLP with layer widths ``layers``
    (input, hidden..., classes), for many models at once (module docstring).

    Args:
        layers: widths, e.g. (64, 32, 10) for 8x8 digits and one hidden layer of 32.
        steps: T noisy steps.
        noise_multiplier: sigma (noise standard deviation in units of ``max_grad_norm``).
        max_grad_norm: C, the per-example clipping norm.
        learning_rate: step size (the noisy clipped sum is divided first by the expected batch size, q times the
            records given).
        sampling_probability: q; 1 = every record in every step (full batch, no sampling randomness).
    """

    layers: tuple[int, ...]
    steps: int
    noise_multiplier: float
    max_grad_norm: float = 1.0
    learning_rate: float = 0.5
    sampling_probability: float = 1.0

    def __post_init__(self) -> None:
        if isinstance(self.layers, (str, bytes)) or not hasattr(self.layers, "__len__"):
            raise InvalidArgumentType("layers", f"layers={self.layers!r} must be a sequence of widths")
        widths = tuple(check_positive_int(w, "layers") for w in self.layers)
        if len(widths) < 2:
            raise InvalidArgument("layers", f"layers={self.layers!r} needs at least an input and an output width")
        object.__setattr__(self, "layers", widths)
        check_positive_int(self.steps, "steps")
        check_positive(self.noise_multiplier, "noise_multiplier")
        check_positive(self.max_grad_norm, "max_grad_norm")
        check_positive(self.learning_rate, "learning_rate")
        check_sampling_probability(self.sampling_probability)

    # ----------------------------------------------------------------------------------- the claim
    @property
    def event(self) -> Any:
        """What the training claims: T Gaussian steps, Poisson-subsampled unless full batch."""
        from ..events import Gaussian, PoissonSampled, SelfComposed

        step = Gaussian(self.noise_multiplier)
        if self.sampling_probability < 1.0:
            step = PoissonSampled(self.sampling_probability, step)
        return SelfComposed(step, self.steps)

    @property
    def parameters(self) -> int:
        return sum(a * b + b for a, b in zip(self.layers[:-1], self.layers[1:]))

    # ----------------------------------------------------------------------------------- initial parameters
    def random_initial(self, seeds: list[int]) -> MLPParameters:
        """PyTorch's default initialisation of nn.Linear (uniform(+-1/sqrt(fan_in))), one model per seed."""
        weights, biases = [[] for _ in self.layers[1:]], [[] for _ in self.layers[1:]]
        for seed in seeds:
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(1,)))
            for layer, (d_in, d_out) in enumerate(zip(self.layers[:-1], self.layers[1:])):
                bound = 1.0 / math.sqrt(d_in)
                weights[layer].append(rng.uniform(-bound, bound, (d_in, d_out)).astype(np.float32))
                biases[layer].append(rng.uniform(-bound, bound, d_out).astype(np.float32))
        return MLPParameters(tuple(np.stack(w) for w in weights), tuple(np.stack(b) for b in biases))

    def pretrain(self, inputs: np.ndarray, labels: np.ndarray, *, epochs: int, seed: int, batch_size: int = 32,
                 learning_rate: float = 1e-2) -> MLPParameters:
        """One model trained non-privately (Adam, minibatches, cross-entropy) for ``epochs`` epochs on
        (``inputs``, ``labels``) from a random initialisation: the worst-case initial parameters of
        Annamalai & De Cristofaro (NeurIPS 2024) when the data is public."""
        import torch

        epochs = check_nonnegative_int(epochs, "pretrain_epochs")
        start = self.random_initial([seed])
        params = [torch.tensor(w[0], requires_grad=True) for w in start.weights] + \
                 [torch.tensor(b[0], requires_grad=True) for b in start.biases]
        count = len(start.weights)
        x = torch.as_tensor(self._inputs(inputs))
        y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
        adam = Adam(params, learning_rate)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
        with _one_thread(torch):
            for _ in range(epochs):
                order = torch.as_tensor(rng.permutation(len(y)))
                for begin in range(0, len(y), batch_size):
                    batch = order[begin:begin + batch_size]
                    a = x[batch]
                    for layer in range(count):
                        a = a @ params[layer] + params[count + layer]
                        if layer < count - 1:
                            a = torch.relu(a)
                    adam.step(torch.autograd.grad(torch.nn.functional.cross_entropy(a, y[batch]), params))
        return MLPParameters(tuple(p.detach().numpy()[None].copy() for p in params[:count]),
                             tuple(p.detach().numpy()[None].copy() for p in params[count:]))

    # ----------------------------------------------------------------------------------- read-outs
    def predict_proba(self, params: MLPParameters, inputs: np.ndarray) -> np.ndarray:
        """(models, records, classes) softmax outputs."""
        import torch

        with torch.no_grad(), _one_thread(torch):
            _, logits = _relu_forward(torch, torch.as_tensor(self._inputs(inputs)),
                                      [torch.as_tensor(w) for w in params.weights], [torch.as_tensor(b) for b in params.biases])
            return torch.softmax(logits, dim=-1).numpy().astype(np.float64)

    def losses(self, params: MLPParameters, inputs: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """(models, records) cross-entropy of each model on each record."""
        import torch

        with torch.no_grad(), _one_thread(torch):
            _, logits = _relu_forward(torch, torch.as_tensor(self._inputs(inputs)),
                                      [torch.as_tensor(w) for w in params.weights], [torch.as_tensor(b) for b in params.biases])
            logp = torch.log_softmax(logits.double(), dim=-1)
            y = torch.as_tensor(np.asarray(labels, dtype=np.int64))
            return (-logp[:, torch.arange(len(y)), y]).numpy()

    def _inputs(self, inputs: np.ndarray) -> np.ndarray:
        x = np.asarray(inputs, dtype=np.float32).reshape(len(inputs), -1)
        if x.shape[1] != self.layers[0]:
            raise InvalidArgument("dataset", f"inputs have {x.shape[1]} features, the model's input width is "
                                             f"{self.layers[0]} (layers={self.layers})")
        return x

    # ----------------------------------------------------------------------------------- training
    def train_many(self, inputs: np.ndarray, labels: np.ndarray, present: np.ndarray, seeds: list[int],
                   initial: MLPParameters | None, crafted_coordinate: int | None = None,
                   crafted_present: np.ndarray | None = None) -> MLPParameters:
        """Train ``len(seeds)`` models, model m on the records ``present[m]`` marks (a (models, records) 0/1
        array: the canary is a record present in some models only), from ``initial`` (one model's parameters,
        the same for every run) or a random initialisation from each seed (``initial`` None).

        ``crafted_coordinate``: a flat parameter coordinate (:meth:`MLPParameters.flat` order, in the first
        layer's weights) on which every record's gradient is zeroed; models with ``crafted_present`` True
        add a crafted gradient of norm C on it in every step that samples it (the gradient canary)."""
        import torch

        models = len(seeds)
        x = self._inputs(inputs)
        y = np.asarray(labels, dtype=np.int64)
        present = np.asarray(present, dtype=np.float32).reshape(models, len(y))
        widest = max(self.layers)
        if models * len(y) * widest > MAX_ACTIVATION_ENTRIES:
            raise InvalidArgument("runs", f"{models} models x {len(y)} records x width {widest} exceed the activation "
                                          f"limit {MAX_ACTIVATION_ENTRIES}: train fewer models per call")
        start = self.random_initial(seeds) if initial is None else initial.repeat(models)
        rngs = [np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(3,))) for seed in seeds]
        sizes = [(a, b) for a, b in zip(self.layers[:-1], self.layers[1:])]
        total = self.parameters
        q, sigma, clip = self.sampling_probability, self.noise_multiplier, self.max_grad_norm
        expected = max(q * float(len(y)), 1.0)  # the expected batch of the records given (the same in every model)
        crafted = None
        if crafted_coordinate is not None:
            first = sizes[0][0] * sizes[0][1]
            if not 0 <= crafted_coordinate < first:
                raise InvalidArgument("canary", f"crafted coordinate {crafted_coordinate} must index the first layer's "
                                                f"weights (0 to {first - 1})")
            crafted = divmod(int(crafted_coordinate), sizes[0][1])
            crafted_in = torch.as_tensor(np.asarray(crafted_present, dtype=np.float32).reshape(models))
        with torch.no_grad(), _one_thread(torch):
            xt = torch.as_tensor(x)
            x_sq = (xt * xt).sum(dim=1)
            onehot = torch.nn.functional.one_hot(torch.as_tensor(y), self.layers[-1]).float()
            weights = [torch.as_tensor(w.copy()) for w in start.weights]
            biases = [torch.as_tensor(b.copy()) for b in start.biases]
            present_t = torch.as_tensor(present)
            for _ in range(self.steps):
                if q < 1.0:
                    sampled = np.stack([rng.random(len(y)) < q for rng in rngs]).astype(np.float32)
                    mask = present_t * torch.as_tensor(sampled)
                    canary_step = (torch.as_tensor(np.array([rng.random() < q for rng in rngs], dtype=np.float32))
                                   if crafted is not None else None)
                else:
                    mask, canary_step = present_t, (torch.ones(models) if crafted is not None else None)
                noise = torch.as_tensor(np.stack([rng.standard_normal(total, dtype=np.float32) for rng in rngs]))
                grads_w, grads_b = self._clipped_sums(torch, xt, x_sq, onehot, weights, biases, mask, clip, crafted)
                if crafted is not None:
                    grads_w[0][:, crafted[0], crafted[1]] += clip * crafted_in * canary_step
                offset = 0
                for layer, (d_in, d_out) in enumerate(sizes):
                    n_w = d_in * d_out
                    noisy_w = grads_w[layer] + sigma * clip * noise[:, offset:offset + n_w].reshape(models, d_in, d_out)
                    offset += n_w
                    noisy_b = grads_b[layer] + sigma * clip * noise[:, offset:offset + d_out]
                    offset += d_out
                    weights[layer] -= self.learning_rate * noisy_w / expected
                    biases[layer] -= self.learning_rate * noisy_b / expected
            self._after_private(torch, xt, onehot, weights, biases, present_t, rngs)
            return MLPParameters(tuple(w.numpy().copy() for w in weights), tuple(b.numpy().copy() for b in biases))

    def _after_private(self, torch: Any, x: Any, onehot: Any, weights: list, biases: list, present: Any,
                       rngs: list) -> None:
        """Nothing: DP training ends with its last noisy step (the bug twin overrides this)."""

    @staticmethod
    def _clipped_sums(torch: Any, x: Any, x_sq: Any, onehot: Any, weights: list, biases: list, mask: Any, clip: float,
                      crafted: tuple[int, int] | None) -> tuple[list, list]:
        """Sum over records of the per-example gradients clipped to ``clip``, weighted by ``mask`` (models,
        records); the crafted coordinate's data gradients zeroed (also in the norms)."""
        activations, logits = _relu_forward(torch, x, weights, biases)
        errors = [_softmax(logits) - onehot[None]]
        for layer in range(len(weights) - 1, 0, -1):
            back = torch.bmm(errors[0], weights[layer].transpose(1, 2)) * (activations[layer] > 0)
            errors.insert(0, back)
        norm_sq = errors[0].pow(2).sum(dim=2) * (x_sq[None] + 1.0)
        for layer in range(1, len(weights)):
            norm_sq = norm_sq + errors[layer].pow(2).sum(dim=2) * (activations[layer].pow(2).sum(dim=2) + 1.0)
        if crafted is not None:
            i, j = crafted
            own = x[None, :, i] * errors[0][:, :, j]  # each record's gradient on the crafted coordinate
            norm_sq = norm_sq - own.pow(2)
        factor = mask * torch.clamp(clip / torch.sqrt(torch.clamp(norm_sq, min=1e-30)), max=1.0)
        grads_w, grads_b = [], []
        for layer in range(len(weights)):
            weighted = errors[layer] * factor[:, :, None]
            a = activations[layer]
            grads_w.append(torch.bmm((a.T.expand(weighted.shape[0], *a.T.shape) if a.ndim == 2 else a.transpose(1, 2)), weighted))
            grads_b.append(weighted.sum(dim=1))
        if crafted is not None:
            i, j = crafted
            grads_w[0][:, i, j] = 0.0
        return grads_w, grads_b


@dataclass(frozen=True)
class BatchedMLPTrainingWithNonPrivateEpoch(BatchedMLPTraining):
    """The bug twin: after the private steps, one epoch of ordinary minibatch SGD (no clipping, no noise,
    batches of ``finetune_batch_size``) on the same records. The claim (``event``) still says DP-SGD."""

    finetune_batch_size: int = 8
    finetune_learning_rate: float = 0.5

    def _after_private(self, torch: Any, x: Any, onehot: Any, weights: list, biases: list, present: Any,
                       rngs: list) -> None:
        models, records = present.shape
        orders = np.stack([rng.permutation(records) for rng in rngs])
        for begin in range(0, records, self.finetune_batch_size):
            batch = torch.zeros(models, records)
            rows = torch.as_tensor(orders[:, begin:begin + self.finetune_batch_size])
            batch.scatter_(1, rows, 1.0)
            mask = batch * present
            count = torch.clamp(mask.sum(dim=1), min=1.0)
            activations, logits = _relu_forward(torch, x, weights, biases)
            errors = [_softmax(logits) - onehot[None]]
            for layer in range(len(weights) - 1, 0, -1):
                errors.insert(0, torch.bmm(errors[0], weights[layer].transpose(1, 2)) * (activations[layer] > 0))
            for layer in range(len(weights)):
                weighted = errors[layer] * (mask / count[:, None])[:, :, None]
                a = activations[layer]
                grad_w = torch.bmm((a.T.expand(weighted.shape[0], *a.T.shape) if a.ndim == 2 else a.transpose(1, 2)), weighted)
                weights[layer] -= self.finetune_learning_rate * grad_w
                biases[layer] -= self.finetune_learning_rate * weighted.sum(dim=1)


class Adam:
    """Adam (Kingma & Ba 2015) on a list of tensors, by hand: torch.optim's first use imports torch._dynamo, which
    takes seconds (the pre-training of a small model takes less)."""

    def __init__(self, params: list, learning_rate: float, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> None:
        import torch

        self.params, self.learning_rate, self.betas, self.eps, self.t = params, learning_rate, betas, eps, 0
        self.moments = [(torch.zeros_like(p), torch.zeros_like(p)) for p in params]

    def step(self, grads: Any) -> None:
        import torch

        self.t += 1
        b1, b2 = self.betas
        with torch.no_grad():
            for p, g, (m, v) in zip(self.params, grads, self.moments):
                m.mul_(b1).add_(g, alpha=1 - b1)
                v.mul_(b2).addcmul_(g, g, value=1 - b2)
                p -= self.learning_rate * (m / (1 - b1**self.t)) / ((v / (1 - b2**self.t)).sqrt() + self.eps)


class _one_thread:
    """torch on one thread inside the block (runs are small; parallel tasks must not oversubscribe)."""

    def __init__(self, torch: Any) -> None:
        self.torch = torch

    def __enter__(self) -> None:
        self.threads = self.torch.get_num_threads()
        self.torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        self.torch.set_num_threads(self.threads)
