"""The ledger's recorder: the hooks of a witnessed Opacus run, filing every read, clip and update.

``WitnessHooks.attach(model, optimizer, privacy_engine)`` is called by the user's train function right after
``make_private`` (the protocol of :mod:`dpaudit.training.protocol`; the third argument may also be a bare
Opacus accountant). From then on it records, without changing the run:

* **reads** (the data ledger; reads in DataLoader worker processes are only counted, before and after
  attach, since which records they were and which step they fed never reach this process): the reads pending in the :class:`~.dataset.LedgerDataset` at attach are
  filed as read before attach; at each clip of a (micro-)batch of B per-example gradients the last B pending
  reads are that batch's records and any earlier ones fed nothing; the records of all micro-batches clipped
  since the previous noisy step are that step's batch (``BatchMemoryManager``'s virtual steps included);
* **clipping**: the clipped sum a clip adds to ``summed_grad`` is compared with each example's gradient
  clipped over all parameters together at the optimizer's ``max_grad_norm`` C (or per parameter at
  ``max_grad_norms``, Opacus' per-layer clipping); when neither matches, the optimizer's own clip is run on
  each example alone (a few batches per run, until one shows a violation), which shows each example's
  clipped norm and whether the clipped sum is the sum of those (it is not under batch-level clipping);
* **noise**: at each noisy step (the wrapped optimizer's inner ``step``, after noise and scaling) the update
  times the declared divisor minus the clipped sum (as the last clip left it) is the noise added, on every coordinate; its sum of
  squares per step and its running sum across steps are kept (memory O(parameters + steps));
* **updates**: every optimizer step of the process during the run (torch's global step hooks): noisy steps
  of the attached optimizer, steps of other DP optimizers (their parameters carry ``summed_grad``) and
  plain steps; the model's parameters after each noisy step, compared before the next one and with the
  model returned.

The per-step arithmetic runs on numpy views of the tensors (small arrays: numpy's per-call cost is a fraction
of torch's), per parameter (no copy of a batch's gradients), and on large arrays with ``np.einsum`` (numpy's own
loops), not numpy's BLAS, whose threads are not bound by torch's thread setting and would take the cores the
training runs on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...errors import InvalidArgument, InvalidArgumentType
from ..opacus_hooks import _declared_scale
from .dataset import LedgerDataset

__all__ = ["WitnessHooks", "ClippingRecord", "PROBED_BATCHES", "GHOST_CLIPPING"]

PROBED_BATCHES = 4  # most (micro-)batches per run whose clipping is probed example by example (until one shows a violation)
_TOLERANCE = 1e-4  # relative: a clipped sum equal to the reference up to float32 rounding

GHOST_CLIPPING = ("ghost clipping (grad_sample_mode='ghost') never forms the per-example gradients, only their "
                  "norms and the clipped sum, so no hook can see what each example contributed and the clipping "
                  "check cannot be witnessed; witness the same stack with grad_sample_mode='hooks' (the clipping "
                  "and the noise are the same mechanism)")


@dataclass
class ClippingRecord:
    """What the clip hook saw: examples, those above C before clipping, the largest clipped norm, how each
    (micro-)batch was witnessed, and the batches whose clipped sum is not a sum of per-example clips."""

    batches: int = 0
    examples: int = 0
    above_bound: int = 0
    max_clipped_norm: float = 0.0
    bound: float = 0.0  # the optimizer's max_grad_norm C (the one the noise is scaled by)
    witnessed: dict[str, int] = field(default_factory=lambda: {"flat": 0, "per_layer": 0, "probed": 0})
    unprobed: int = 0  # batches matching no reference once the probing budget was spent
    batch_dependent: int = 0
    batch_dependence: float = 0.0  # largest relative gap between the clipped sum and the sum of per-example clips

    def above_bound_after_clipping(self) -> bool:
        """Whether some example's clipped gradient was seen above C (beyond float32 rounding)."""
        return self.max_clipped_norm > self.bound * (1 + _TOLERANCE)

    def violated(self) -> bool:
        """Whether the clipping is shown wrong: an example above C after clipping, or batch-level clipping."""
        return self.above_bound_after_clipping() or self.batch_dependent > 0


class WitnessHooks:
    """The hooks of one witnessed run (see the module docstring)."""

    def __init__(self, dataset: LedgerDataset) -> None:
        self.dataset = dataset
        self.attached = False
        self.privacy_engine: Any = None
        self.accountant: Any = None
        self.model: Any = None
        self.optimizer: Any = None
        self.reads_before_attach: list[int] = []
        self.bulk_before_attach: list[str] = []
        self.bulk_after_attach: list[str] = []
        self.stray_between = 0  # reads after attach that were not in the batch of the clip that followed
        self.stray_after = 0  # reads after the last clip (or clipped but never released by a noisy step)
        self.unledgered_examples = 0  # per-example gradients with no read behind them
        self.worker_reads_before_attach = 0  # reads in DataLoader worker processes (records unseen) before attach
        self.worker_reads_after_attach = 0  # ... and after it: then no read can be placed in a step
        self.step_batches: list[np.ndarray] = []
        self.step_noise: list[tuple[int, float, float, float]] = []  # (coordinates, |u|^2 / C^2, sigma_opt, C)
        self.clipping = ClippingRecord()
        self.other_dp_steps_before = 0
        self.other_dp_steps_after = 0
        self.plain_steps_before = 0
        self.plain_steps_after = 0
        self.unexplained: list[str] = []
        self.unwitnessed_noise = 0  # noisy steps whose noise could not be read (no summed_grad or grad)
        self._current: list[int] = []
        self._clipped: np.ndarray | None = None  # the clipped sum as the last clip left it
        self._noise_sum: Any = None  # running sum over steps of the noise in units of the optimizer's sigma C
        self._noise_squares = 0.0
        self._noise_steps = 0
        self._probes_left = PROBED_BATCHES
        self._snapshot: Any = None
        self._views: list[np.ndarray] = []  # numpy views of the parameters, valid while their storage stays put
        self._view_places: Any = None
        self._params: list[Any] = []
        self._inner: Any = None
        self._handles: list[Any] = []

    # ------------------------------------------------------------------ the process-wide step hooks
    def start(self) -> None:
        """Install torch's global optimizer step hook for the run (remove it with :meth:`stop`)."""
        from torch.optim.optimizer import register_optimizer_step_pre_hook

        self._handles.append(register_optimizer_step_pre_hook(self._any_step))

    def stop(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def _any_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if optimizer is self._inner:
            return
        params = [p for group in optimizer.param_groups for p in group["params"]]
        noisy = any(getattr(p, "summed_grad", None) is not None for p in params)
        if not self.attached:
            if noisy:
                self.other_dp_steps_before += 1
            else:
                self.plain_steps_before += 1
        elif noisy and not any(any(p is q for q in self._params) for p in params):
            self.other_dp_steps_after += 1
        else:
            self.plain_steps_after += 1

    # ------------------------------------------------------------------ attaching
    def attach(self, model: Any, optimizer: Any, privacy_engine: Any = None) -> None:
        """Witness the make_private-d ``model`` and ``optimizer``; ``privacy_engine`` (a PrivacyEngine or a bare
        Opacus accountant) gives the claim when none is given."""
        if self.attached:
            raise InvalidArgument("hooks", "hooks.attach was called twice in one run")
        import opacus

        if "FastGradientClipping" in type(optimizer).__name__ or "FastGradientClipping" in type(model).__name__:
            raise InvalidArgument("train", f"the run uses {GHOST_CLIPPING}")
        if not isinstance(optimizer, opacus.optimizers.DPOptimizer):
            raise InvalidArgumentType("optimizer", f"the witness needs the DPOptimizer make_private returns, got "
                                                   f"{type(optimizer).__name__}: call hooks.attach(model, optimizer, "
                                                   "privacy_engine) with make_private's outputs")
        if not isinstance(model, opacus.GradSampleModule):
            raise InvalidArgumentType("model", f"the witness needs the GradSampleModule make_private returns, got "
                                               f"{type(model).__name__}")
        self.attached = True
        self.model, self.optimizer, self.privacy_engine = model, optimizer, privacy_engine
        self.accountant = privacy_engine if hasattr(privacy_engine, "history") else getattr(privacy_engine, "accountant", None)
        self.reads_before_attach = self.dataset.take()
        self.bulk_before_attach = list(self.dataset.bulk)
        self.worker_reads_before_attach = self.dataset.worker_reads()
        self._params = list(model.parameters())
        self._snapshot = self._flat_parameters()
        clip = optimizer.clip_and_accumulate

        def witnessed_clip() -> Any:
            return self._clip(optimizer, clip)

        optimizer.clip_and_accumulate = witnessed_clip
        inner = optimizer.original_optimizer
        self._inner = inner
        step = inner.step

        def noisy_step(*args: Any, **kwargs: Any) -> Any:
            self._before_noisy_step(optimizer)
            out = step(*args, **kwargs)
            self._snapshot = self._flat_parameters()
            return out

        inner.step = noisy_step

    def _flat_parameters(self) -> np.ndarray:
        """Every parameter of the attached model, flattened into one copy."""
        if not self._params:
            return np.zeros(0)
        where = [(p.data_ptr(), p.shape) for p in self._params]
        if where != self._view_places:  # first call, or a parameter's storage was replaced (p.data = ...)
            views = [_host(p).reshape(-1) for p in self._params]
            shared = all(np.shares_memory(v, _host(p)) for v, p in zip(views, self._params))
            self._views, self._view_places = views, (where if shared else None)  # copies (another device): no reuse
        else:
            views = self._views  # numpy views of the parameters' storage: they see every in-place change
        return np.concatenate(views)

    def _changed(self) -> list[int]:
        """The parameters that differ from the snapshot (one comparison when none does)."""
        now = self._flat_parameters()
        if np.array_equal(now, self._snapshot):
            return []
        cuts = np.cumsum([p.numel() for p in self._params])[:-1]
        return [k for k, (a, b) in enumerate(zip(np.split(now, cuts), np.split(self._snapshot, cuts)))
                if not np.array_equal(a, b)]

    # ------------------------------------------------------------------ reads and clipping
    def _file_reads(self, rows: int) -> None:
        reads = self.dataset.take()
        if len(reads) >= rows:
            self.stray_between += len(reads) - rows
            self._current.extend(reads[len(reads) - rows:])
        else:
            self._current.extend(reads)
            self.unledgered_examples += rows - len(reads)

    def _clip(self, optimizer: Any, clip: Any) -> Any:
        params = optimizer.params
        samples = [optimizer._get_flat_grad_sample(p) for p in params]
        rows = int(samples[0].shape[0]) if samples else 0
        self._file_reads(rows)
        if rows == 0:
            self._clipped = None
            return clip()
        before = _flat_summed(params) if any(p.summed_grad is not None for p in params) else None
        out = clip()
        record = self.clipping
        bound = float(optimizer.max_grad_norm)
        record.bound = max(record.bound, bound)
        record.batches += 1
        record.examples += rows
        # per parameter: examples x its coordinates (views, no copy: a concatenated matrix would cost a fresh
        # allocation of the whole batch's gradients every step)
        grads = [_host(g).reshape(rows, -1) for g in samples]
        row_squares = [_row_squares(g) for g in grads]  # per parameter: each example's squared norm
        norms = np.sqrt(sum(row_squares))  # each example's gradient norm over all parameters together
        self._clipped = _flat_summed(params)  # the clipped sum so far (of every micro-batch since the last noisy step)
        target = self._clipped if before is None else self._clipped - before  # what this clip added
        thresholds = getattr(optimizer, "max_grad_norms", None)
        if thresholds is not None and len(thresholds) == len(samples):  # Opacus' per-layer clipping
            layer_norms = np.sqrt(np.stack(row_squares, axis=1))  # examples x parameters
            limits = np.array([float(t) for t in thresholds], dtype=layer_norms.dtype)
            per_layer = np.minimum(limits / (layer_norms + 1e-6), 1.0)
            reference = np.concatenate([_weighted_sum(per_layer[:, k], g) for k, g in enumerate(grads)])
            gap, size = _gap(target, reference)
            if gap <= _TOLERANCE * max(size, bound):
                record.above_bound += int(np.count_nonzero(norms > bound))
                record.witnessed["per_layer"] += 1
                largest = float(np.sqrt(np.square(per_layer * layer_norms).sum(axis=1)).max())
                record.max_clipped_norm = max(record.max_clipped_norm, largest)
                return out
        factors = np.minimum(bound / (norms + 1e-6), 1.0)
        # the sum of each example's gradient clipped to C over all parameters together
        reference = np.concatenate([_weighted_sum(factors, g) for g in grads])
        gap, size = _gap(target, reference)
        largest = float((factors * norms).max())
        record.above_bound += int(np.count_nonzero(norms > bound))
        if gap <= _TOLERANCE * max(size, bound):
            record.witnessed["flat"] += 1
            record.max_clipped_norm = max(record.max_clipped_norm, largest)
            return out
        if self._probes_left <= 0 or record.violated():  # a violation shown is the finding: more probes cannot undo it
            record.unprobed += 1
            return out
        self._probes_left -= 1
        record.witnessed["probed"] += 1
        clipped = self._probe(optimizer, clip, samples)
        record.max_clipped_norm = max(record.max_clipped_norm, float(np.sqrt(np.square(clipped).sum(axis=1)).max()))
        gap = math.sqrt(_squares(clipped.sum(axis=0) - target)) / max(math.sqrt(_squares(target)), bound)
        record.batch_dependence = max(record.batch_dependence, gap)
        if gap > _TOLERANCE:
            record.batch_dependent += 1
        return out

    def _probe(self, optimizer: Any, clip: Any, samples: list[Any]) -> Any:
        """Each example's clipped gradient (rows: examples, columns: all coordinates), from the optimizer's own
        clip run on that example alone; every parameter's state is restored afterwards."""
        params = optimizer.params
        saved = [(p.grad_sample, p.summed_grad) for p in params]
        rows = int(samples[0].shape[0])
        out = []
        try:
            for i in range(rows):
                for p, g in zip(params, samples):
                    p.grad_sample = g[i:i + 1].clone()
                    p.summed_grad = None
                clip()
                out.append(_flat_summed(params))
        finally:
            for p, (grad_sample, summed) in zip(params, saved):
                p.grad_sample, p.summed_grad = grad_sample, summed
        return np.stack(out)

    # ------------------------------------------------------------------ noisy steps
    def _before_noisy_step(self, optimizer: Any) -> None:
        index = len(self.step_batches)
        changed = self._changed()
        if changed:
            where = "after attach" if index == 0 else f"after noisy step {index}"
            self.unexplained.append(f"{len(changed)} parameter tensor(s) changed {where} and before the next noisy step")
        self.step_batches.append(np.array(self._current, dtype=np.int64))
        self._current = []
        bound = float(optimizer.max_grad_norm)
        sigma = float(optimizer.noise_multiplier)
        every = optimizer.params
        params = [p for p in every if p.grad is not None and getattr(p, "summed_grad", None) is not None]
        if not params or len(params) != len(every) or bound <= 0:
            self.unwitnessed_noise += 1
            return
        divisor = _declared_scale(optimizer)
        grads = np.concatenate([_host(p.grad).reshape(-1) for p in params])
        clipped = self._clipped if self._clipped is not None and self._clipped.size == grads.size else _flat_summed(params)
        self._clipped = None
        noise = (divisor * grads - clipped).astype(np.float64)
        squares = _dot(noise, noise)
        self.step_noise.append((int(noise.size), squares / bound ** 2, sigma, bound))
        if sigma > 0:
            scale = sigma * bound
            if self._noise_sum is None:
                self._noise_sum = noise / scale
            else:
                self._noise_sum += noise / scale
            self._noise_squares += squares / scale ** 2
            self._noise_steps += 1

    def independence_statistics(self) -> tuple[int, int, float, float]:
        """(steps, coordinates, |sum_t z_t|^2, sum_t |z_t|^2), z_t the noise in units of the optimizer's sigma C."""
        if self._noise_sum is None:
            return 0, 0, 0.0, 0.0
        total = _dot(self._noise_sum, self._noise_sum)
        return self._noise_steps, int(self._noise_sum.size), total, self._noise_squares

    # ------------------------------------------------------------------ the end of the run
    def finish(self, model: Any) -> None:
        """File the reads left after the last noisy step and compare the model returned with the last noisy
        step's parameters."""
        left = self.dataset.take()
        self.stray_after += len(left) + len(self._current)
        self.worker_reads_after_attach = self.dataset.worker_reads() - self.worker_reads_before_attach
        self._current = []
        self.bulk_after_attach = self.dataset.bulk[len(self.bulk_before_attach):]
        if model is None:
            self.unexplained.append("the train function returned no model, so the model released cannot be compared "
                                    "with the last noisy step")
            return
        returned = list(model.parameters()) if hasattr(model, "parameters") else []
        ids = {id(p): k for k, p in enumerate(self._params)}
        cuts = np.cumsum([p.numel() for p in self._params])[:-1]
        snapshot = [s.reshape(tuple(p.shape)) for s, p in zip(np.split(self._snapshot, cuts), self._params)]
        if returned and all(id(p) in ids for p in returned):
            pairs = [(p, snapshot[ids[id(p)]]) for p in returned]
        elif len(returned) == len(self._params) and all(tuple(p.shape) == s.shape for p, s in zip(returned, snapshot)):
            pairs = list(zip(returned, snapshot))
        else:
            self.unexplained.append(f"the model returned ({type(model).__name__}) does not hold the attached model's "
                                    "parameters, so what it learnt cannot be traced to the noisy steps")
            return
        changed = sum(not np.array_equal(_host(p), s) for p, s in pairs)
        if changed:
            where = "after attach" if not self.step_batches else f"after the last noisy step ({len(self.step_batches)})"
            self.unexplained.append(f"{changed} parameter tensor(s) of the model returned changed {where}")


def _host(tensor: Any) -> np.ndarray:
    """A tensor's values as a numpy array (a view of a CPU tensor; a copy from another device or of a half-precision
    dtype): the ledger's per-step arithmetic on small arrays costs a fraction of torch's per-operation dispatch."""
    try:
        return tensor.detach().numpy()
    except (TypeError, RuntimeError):  # on another device, or a dtype numpy does not have
        import torch

        tensor = tensor.detach().cpu()
        return (tensor.float() if tensor.dtype in (torch.float16, torch.bfloat16) else tensor).numpy()


_SMALL = 8192  # elements: below this numpy's BLAS runs one thread and temporaries are cheap


def _row_squares(g: np.ndarray) -> np.ndarray:
    """Each row's sum of squares (np.einsum for a large matrix: no temporary, no BLAS threads)."""
    return (g * g).sum(axis=1) if g.size < _SMALL else np.einsum("ij,ij->i", g, g)


def _weighted_sum(weights: np.ndarray, g: np.ndarray) -> np.ndarray:
    """sum_i weights_i g_i over the rows (np.einsum for a large matrix: no BLAS threads)."""
    return weights @ g if g.size < _SMALL else np.einsum("i,ij->j", weights, g)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b) if a.size < _SMALL else float(np.einsum("i,i->", a, b))


def _gap(target: np.ndarray, reference: np.ndarray) -> tuple[float, float]:
    """|target - reference| and |reference| (sums of squares in float64)."""
    return math.sqrt(_squares(target - reference)), math.sqrt(_squares(reference))


def _squares(vector: np.ndarray) -> float:
    """sum_i x_i^2 in float64."""
    return float(np.square(vector, dtype=np.float64).sum())


def _flat_summed(params: list[Any]) -> np.ndarray:
    """The clipped sums ``summed_grad`` of ``params``, flattened into one vector (zeros where a parameter holds none)."""
    return np.concatenate([np.zeros(p.numel(), dtype=np.float32) if p.summed_grad is None else _host(p.summed_grad).reshape(-1)
                           for p in params])
