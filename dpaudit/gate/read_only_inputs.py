"""Mechanisms get their inputs read-only: each call receives a fresh copy (a NumPy array copy marked
read-only, or a deep copy of anything else), and a call that changed it fails with a MechanismError naming
the entry.

A mechanism that changes its input in place (``data.append(...)``, ``data[0] += 1``, ``data.sort()``)
would otherwise feed every later call a different input: the two output distributions an audit compares
are then not those of d and d_prime, and the difference shows up as a privacy violation that is not one
(or as irreproducible randomness). With the guard, the change is reported as an error of the entry and
never as a finding. The copy costs one pass over the input per call (the auditor calls a mechanism once per
block of samples, not once per sample).
"""

from __future__ import annotations

import copy
import math
import pickle
from typing import Any

import numpy as np

from ..errors import MechanismError

__all__ = ["ReadOnlyInputs", "read_only_inputs", "same_value"]


def same_value(a: Any, b: Any) -> bool:
    """Whether two inputs hold the same value (structure, types, numbers; NaN equals NaN)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.dtype.kind in "fc":
            return bool(np.array_equal(a, b, equal_nan=True))
        if a.dtype.kind == "O":
            return all(same_value(x, y) for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
        return bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    try:
        equal = a == b
        if isinstance(equal, (bool, np.bool_)):
            return bool(equal)
    except Exception:  # noqa: BLE001 - an object whose comparison fails: compared by its pickled form
        pass
    try:
        return pickle.dumps(a) == pickle.dumps(b)
    except Exception:  # noqa: BLE001 - neither comparable nor picklable: assumed unchanged
        return True


def _fresh(data: Any) -> Any:
    if isinstance(data, np.ndarray) and data.dtype.kind != "O":
        fresh = data.copy()
        fresh.flags.writeable = False  # an in-place change raises at once
        return fresh
    return copy.deepcopy(data)


class ReadOnlyInputs:
    """``mechanism`` called on a fresh copy of its input each time, the copy checked after the call;
    attributes (``.event``, ``.privacy``, ``.accuracy``, ``.error``, ...) are the mechanism's own."""

    def __init__(self, mechanism: Any, label: str) -> None:
        self.mechanism, self.label = mechanism, label

    def __call__(self, data: Any, *arguments: Any, **options: Any) -> Any:
        given = _fresh(data)
        outputs = self.mechanism(given, *arguments, **options)
        if not same_value(given, data):
            raise MechanismError(f"{self.label}: the mechanism changed its input in place (an audit compares the outputs "
                                 "on fixed inputs d and d_prime, so its results would not mean anything); copy the input "
                                 "before changing it")
        return outputs

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or "mechanism" not in self.__dict__:
            raise AttributeError(name)
        return getattr(self.mechanism, name)

    def __repr__(self) -> str:
        return f"ReadOnlyInputs({self.mechanism!r})"


def read_only_inputs(mechanism: Any, label: str) -> Any:
    """``mechanism`` wrapped in :class:`ReadOnlyInputs` (once: a wrapped mechanism is returned as it is)."""
    if isinstance(mechanism, ReadOnlyInputs) or not callable(mechanism):
        return mechanism
    return ReadOnlyInputs(mechanism, label)
