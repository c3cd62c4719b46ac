"""Canaries for audits that see only the final model, crafted from public data and the initial model.

* ``blank`` (Annamalai & De Cristofaro, NeurIPS 2024): an all-zero input with the label the initial model
  finds least likely: its gradient is large and unlike the data's, so it stays visible in the final model.
* ``clipbkd`` (Jagielski, Ullman & Oprea 2020): an input along the direction of least variance of the
  public inputs (the last right-singular vector of the centred public data), scaled to their median norm,
  with the label the initial model finds least likely.
* ``crafted_gradient`` (Nasr et al. 2023; Cebere et al. ICLR 2025, the hidden-state threat model): no input;
  a gradient of norm C on one parameter coordinate is inserted in every step that samples the canary, every
  record's gradient zeroed there, and only the final model's change on that coordinate is read. It is the
  upper reference of a final-model audit (the adversary crafts gradients), not a realistic record.

Each canary carries the threat model it audits; all are computed once per audit (the same in every run).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

import numpy as np

from .._validation import check_choice
from ..errors import InvalidArgument

__all__ = ["FinalCanary", "FINAL_CANARIES", "make_final_canary", "FINAL_MODEL_THREAT"]

FINAL_MODEL_THREAT = "final model only"

FINAL_CANARIES: dict[str, str] = {
    "blank": ("final model only: the adversary inserts one record (an all-zero input with the initial model's "
              "least likely label) and sees only the released model's loss on it"),
    "clipbkd": ("final model only: the adversary inserts one record (ClipBKD: the public data's direction of least "
                "variance at their typical norm, the initial model's least likely label) and sees only the "
                "released model's loss on it"),
    "crafted_gradient": ("final model only, crafted gradients (hidden state): the adversary inserts a gradient of "
                         "norm C on one coordinate in every step and reads the released model's parameter there "
                         "(the upper reference of what a final model can reveal)"),
}


@dataclass(frozen=True)
class FinalCanary:
    """The canary of a final-model audit: a record (``input``, ``label``) or a crafted gradient on flat
    parameter ``coordinate``; ``how`` says how it was made."""

    kind: str
    threat_model: str
    input: np.ndarray | None
    label: int | None
    coordinate: int | None
    how: str

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["input"] = None if self.input is None else {"shape": list(self.input.shape),
                                                         "norm": float(np.linalg.norm(self.input))}
        return data


def make_final_canary(kind: str, public_inputs: np.ndarray, predict_proba: Callable[[np.ndarray], np.ndarray],
                      *, coordinate: int | None = None) -> FinalCanary:
    """The canary ``kind`` (``FINAL_CANARIES``) from the public inputs and the initial model's class
    probabilities (``predict_proba(inputs) -> (records, classes)``); ``coordinate``: the crafted gradient's."""
    kind = check_choice(kind, "canary", tuple(FINAL_CANARIES))
    threat = FINAL_CANARIES[kind]
    if kind == "crafted_gradient":
        if coordinate is None:
            raise InvalidArgument("canary", "canary='crafted_gradient' needs a training stack that can plant gradients "
                                            "(dpaudit.training.BatchedMLPTraining); a train function cannot")
        return FinalCanary(kind, threat, None, None, int(coordinate), f"gradient of norm C on parameter {coordinate}")
    public = np.asarray(public_inputs, dtype=np.float64)
    shape = public.shape[1:]
    flat = public.reshape(public.shape[0], -1)
    if kind == "blank":
        x = np.zeros(shape)
        how = "all-zero input"
    else:
        centred = flat - flat.mean(axis=0)
        _, _, vt = np.linalg.svd(centred, full_matrices=False)
        direction = vt[-1] / np.linalg.norm(vt[-1])
        scale = float(np.median(np.linalg.norm(flat, axis=1)))
        x = (direction * scale).reshape(shape)
        how = f"direction of least variance of {flat.shape[0]} public inputs, norm {scale:.4g} (their median)"
    probabilities = np.asarray(predict_proba(x[None].astype(np.float32)), dtype=np.float64).reshape(-1)
    if probabilities.size < 2 or not np.isfinite(probabilities).all():
        raise InvalidArgument("canary", f"the initial model's outputs on the canary ({probabilities.size} values) are not "
                                        "the class probabilities of a classifier with >= 2 classes")
    label = int(np.argmin(probabilities))
    return FinalCanary(kind, threat, x.astype(np.float32), label, None,
                       f"{how}; label {label}, the initial model's least likely (p = {probabilities[label]:.3g})")
