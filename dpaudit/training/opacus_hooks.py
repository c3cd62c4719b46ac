"""Hooks into an Opacus training run: plant Dirac gradient canaries, observe every noisy update.

``OpacusHooks.attach(model, optimizer, privacy_engine)`` is called by the user's train function right
after ``make_private`` (or by :class:`~dpaudit.training.OpacusTraining`). For white-box canaries it

1. registers a forward pre-hook on the (``GradSampleModule``-wrapped) model that finds the canary rows of
   each training batch by exact equality of their inputs (canary inputs are random vectors that real data
   never repeats);
2. wraps the optimizer's ``clip_and_accumulate``: before Opacus clips, each canary row of ``grad_sample``
   is replaced by ``gradient_norm`` on the canary's own coordinate (zero elsewhere), and every other row is
   zeroed on the canaries' coordinates;
3. wraps the underlying torch optimizer's ``step``: the gradient it is handed (after clipping, noise and
   scaling: the noisy update) is read on every canary coordinate, multiplied back by the averaging factor
   the optimizer declares, and summed over steps; that sum is the canary's score. On the coordinates of
   the canaries outside the step's batch the update is pure noise: its sum of squares (in units of the
   declared sigma C) is recorded with the step's realised batch size, for
   :func:`~dpaudit.training.update_scale.check_update_scale`.

Without white-box canaries it only records the engine (for the claim). Torch and Opacus are imported
only here and in the training target, never at package import.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument, MechanismError
from .canaries import Canaries

__all__ = ["OpacusHooks"]


class OpacusHooks:
    """The hooks of one training run (see the module docstring)."""

    def __init__(self, canaries: Canaries) -> None:
        self.canaries = canaries
        self.privacy_engine: Any = None
        self.model: Any = None
        self.steps = 0
        self.canary_rows_seen = 0
        self._scores = np.zeros(len(canaries))
        self._pending: list[tuple[int, list[tuple[int, int]]]] = []
        self._attached = False
        self._step_rows = 0  # realised batch size of the step being built (all accumulated micro-batches)
        self._step_planted: list[np.ndarray] = []
        self._update_steps: list[tuple[int, int, float]] = []

    @property
    def attached(self) -> bool:
        """Whether the train function called :meth:`attach`."""
        return self._attached

    # ------------------------------------------------------------------ attaching
    def attach(self, model: Any, optimizer: Any, privacy_engine: Any = None) -> None:
        """Hook the make_private-d ``model`` and ``optimizer`` (and remember ``privacy_engine`` for the claim)."""
        if self._attached:
            raise InvalidArgument("hooks", "hooks.attach was called twice in one run")
        self._attached = True
        self.model, self.privacy_engine = model, privacy_engine
        if not self.canaries.preset.white_box:
            return
        from .opacus_training import require_dp_optimizer

        require_dp_optimizer(model, optimizer)
        import torch

        params = list(optimizer.params)
        sizes = np.array([p.numel() for p in params], dtype=np.int64)
        coords = self.canaries.coordinates(int(sizes.sum()))
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        owner = np.searchsorted(starts, coords, side="right") - 1
        self._params = params
        self._owner, self._offset = owner, coords - starts[owner]
        self._keep = []  # per parameter: 0 on the canaries' coordinates, 1 elsewhere (None: no canary coordinate)
        for i, p in enumerate(params):
            if np.any(owner == i):
                keep = torch.ones(p.numel(), dtype=p.dtype, device=p.device)
                keep[torch.as_tensor(coords[owner == i] - starts[i], dtype=torch.long)] = 0.0
                self._keep.append(keep)
            else:
                self._keep.append(None)
        self._by_param = [(torch.as_tensor(np.flatnonzero(owner == i), dtype=torch.long),
                           torch.as_tensor(coords[owner == i] - starts[i], dtype=torch.long)) for i in range(len(params))]
        self._norm = float(optimizer.max_grad_norm) * self.canaries.gradient_norm_factor
        flat = self.canaries.inputs.reshape(len(self.canaries), -1)
        self._keys = {flat[k].astype(self.canaries.inputs.dtype).tobytes(): k for k in range(len(self.canaries))}
        model.register_forward_pre_hook(self._find_canary_rows)
        clip = optimizer.clip_and_accumulate

        def clip_with_canaries() -> Any:
            self._plant(optimizer)
            return clip()

        optimizer.clip_and_accumulate = clip_with_canaries
        inner = optimizer.original_optimizer
        step = inner.step

        def observed_step(*args: Any, **kwargs: Any) -> Any:
            self._observe(optimizer)
            return step(*args, **kwargs)

        inner.step = observed_step

    # ------------------------------------------------------------------ planting
    def _find_canary_rows(self, module: Any, args: tuple) -> None:
        import torch

        if not args or not torch.is_grad_enabled() or not module.training or not hasattr(args[0], "reshape"):
            return
        x = args[0]
        rows = x.detach().reshape(x.shape[0], -1).cpu().numpy()
        keys = self._keys
        found = [(i, keys[key]) for i, key in enumerate(map(bytes, rows)) if key in keys]
        self._pending.append((int(x.shape[0]), found))

    def _plant(self, optimizer: Any) -> None:
        pending, self._pending = self._pending, []
        samples = [p.grad_sample for p in self._params]
        if any(s is None for s in samples):
            raise MechanismError("a parameter has no per-sample gradient (grad_sample) at clipping time: white-box "
                                 "canaries need Opacus' per-sample gradients (grad_sample_mode 'hooks' or 'functorch')")
        parts_of = [s if isinstance(s, list) else [s] for s in samples]
        total = sum(int(part.shape[0]) for part in parts_of[0])
        if total == 0:
            return
        # the last forwards whose batches add up to the per-sample gradients' rows (earlier ones had no backward)
        offset, rows = total, []
        for size, found in reversed(pending):
            if offset <= 0:
                break
            offset -= size
            rows.extend((offset + i, k) for i, k in found)
        if offset != 0:
            raise MechanismError(f"the model saw batches that do not match the {total} per-sample gradients Opacus "
                                 "computed; white-box canaries need one forward pass per backward pass")
        self.canary_rows_seen += len(rows)
        import torch

        row_of = np.array([row for row, _ in rows], dtype=np.int64)
        canary_of = np.array([k for _, k in rows], dtype=np.int64)
        self._step_rows += total
        self._step_planted.append(canary_of)
        owner_of = self._owner[canary_of]
        for index, parts in enumerate(parts_of):
            keep = self._keep[index]
            start = 0
            for part in parts:
                size = int(part.shape[0])
                flat = part.view(size, -1)
                if keep is not None:
                    flat.mul_(keep)
                local = (row_of >= start) & (row_of < start + size)
                if local.any():
                    flat[torch.from_numpy(row_of[local] - start)] = 0.0
                    planted = local & (owner_of == index)
                    if planted.any():
                        flat[torch.from_numpy(row_of[planted] - start),
                             torch.from_numpy(self._offset[canary_of[planted]])] = self._norm
                start += size

    # ------------------------------------------------------------------ observing
    def _observe(self, optimizer: Any) -> None:
        self.steps += 1
        scale = _declared_scale(optimizer)
        update = np.zeros(len(self.canaries))
        seen = np.zeros(len(self.canaries), dtype=bool)
        for index, (canaries, at) in enumerate(self._by_param):
            if canaries.numel() == 0:
                continue
            grad = self._params[index].grad
            if grad is None:
                continue
            update[canaries.numpy()] = scale * grad.detach().reshape(-1)[at].cpu().numpy().astype(np.float64)
            seen[canaries.numpy()] = True
        self._scores += update
        noise = float(optimizer.noise_multiplier) * float(optimizer.max_grad_norm)
        if self._step_planted and noise > 0:
            seen[np.concatenate(self._step_planted)] = False
            pure = update[seen] / noise
            self._update_steps.append((self._step_rows, int(pure.size), float(np.dot(pure, pure))))
        self._step_rows, self._step_planted = 0, []

    def update_steps(self) -> np.ndarray:
        """One row per observed step: (realised batch size, pure-noise coordinates, their sum of squares in
        units of the declared sigma C); the input of :func:`~dpaudit.training.update_scale.check_update_scale`.
        Empty (0 rows) without white-box canaries."""
        return np.array(self._update_steps, dtype=np.float64).reshape(-1, 3)

    def scores(self) -> np.ndarray:
        """The white-box score of every canary: the sum over steps of the noisy update on its coordinate,
        times the optimizer's declared averaging factor (expected batch size x accumulated micro-batches
        for ``loss_reduction="mean"``: public hyperparameters, so this is post-processing), in units of the
        crafted gradient's norm."""
        return self._scores / self._norm if self.canaries.preset.white_box and self._attached else self._scores.copy()


def _declared_scale(optimizer: Any) -> float:
    """The factor Opacus' ``scale_grad`` divides the noisy sum by (1 for ``loss_reduction="sum"``)."""
    if getattr(optimizer, "loss_reduction", "mean") != "mean":
        return 1.0
    return float(optimizer.expected_batch_size) * float(optimizer.accumulated_iterations)
