"""Input checks shared by the score audits: finite 1-d score arrays and 0/1 inclusion masks (errors name
the argument and the first bad index; nothing is dropped)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidArgumentType

__all__ = ["check_scores", "check_included", "MIN_SCORES"]

#: The fewest scores an array may hold.
MIN_SCORES = 2


def check_scores(values: Any, name: str, minimum: int = MIN_SCORES) -> np.ndarray:
    """A 1-d float64 array of finite scores (at least ``minimum``); the error names ``name`` and the first
    bad index. Nothing is dropped."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of numbers, not {type(values).__name__}")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of numbers ({exc})") from exc
    if array.dtype == bool or array.dtype == object or not (np.issubdtype(array.dtype, np.integer)
                                                            or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain real numbers, got dtype {array.dtype}")
    if array.ndim != 1:
        raise InvalidArgument(name, f"{name} must be 1-d (one score per run or canary), got shape {array.shape}")
    if array.size < minimum:
        raise InvalidArgument(name, f"{name} has {array.size} scores; at least {minimum} are needed")
    array = array.astype(np.float64)
    bad = ~np.isfinite(array)
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument(name, f"{name}[{index}]={float(array[index])!r} must be finite (rows are never dropped)")
    return array


def check_included(values: Any, length: int, name: str = "included") -> np.ndarray:
    """A 0/1 (or boolean) mask of ``length`` entries; the error names the first bad index."""
    if isinstance(values, (str, bytes)) or values is None:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of 0/1, not {type(values).__name__}")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentType(name, f"{name} must be a 1-d array of 0/1 ({exc})") from exc
    if array.ndim != 1:
        raise InvalidArgument(name, f"{name} must be 1-d (one 0/1 per canary), got shape {array.shape}")
    if array.size != length:
        raise InvalidArgument(name, f"{name} has {array.size} entries but scores has {length}")
    if array.dtype == bool:
        return array.copy()
    if not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain 0/1, got dtype {array.dtype}")
    bad = ~((array == 0) | (array == 1))
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument(name, f"{name}[{index}]={array[index].item()!r} must be 0 or 1")
    return array == 1
