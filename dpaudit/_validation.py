"""Argument checks shared by every public function.

Each check returns the value converted to its canonical Python type, or raises
:class:`~dpaudit.errors.InvalidArgument` (a ``ValueError``) / :class:`~dpaudit.errors.InvalidArgumentType`
(a ``TypeError``) whose message names the argument and the allowed range, e.g.
``epsilon=-1.0 must be >= 0``. NaN is always rejected, never propagated.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

from .errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "check_real",
    "check_epsilon",
    "check_delta",
    "check_probability",
    "check_sampling_probability",
    "check_positive_int",
    "check_nonnegative_int",
    "check_positive",
    "check_choice",
    "check_real_sequence",
    "check_flag",
]


def _is_real_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_real(value: Any, name: str) -> float:
    """Return ``value`` as a float; reject non-numbers (TypeError) and NaN (ValueError)."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if not _is_real_number(value):
        raise InvalidArgumentType(name, f"{name}={value!r} must be a real number, not {type(value).__name__}")
    result = float(value)
    if math.isnan(result):
        raise InvalidArgument(name, f"{name}=nan is not allowed")
    return result


def check_positive(value: Any, name: str, *, allow_inf: bool = False) -> float:
    """A real number > 0 (finite unless ``allow_inf``)."""
    result = check_real(value, name)
    if not result > 0:
        raise InvalidArgument(name, f"{name}={value!r} must be > 0")
    if math.isinf(result) and not allow_inf:
        raise InvalidArgument(name, f"{name}={value!r} must be finite")
    return result


def check_epsilon(value: Any, name: str = "epsilon", *, allow_inf: bool = False) -> float:
    """A privacy parameter epsilon: a real number >= 0, finite unless ``allow_inf``."""
    result = check_real(value, name)
    if result < 0:
        raise InvalidArgument(name, f"{name}={value!r} must be >= 0")
    if math.isinf(result) and not allow_inf:
        raise InvalidArgument(name, f"{name}={value!r} must be finite")
    return result


def check_delta(value: Any, name: str = "delta") -> float:
    """A privacy parameter delta: a real number with 0 <= delta < 1."""
    result = check_real(value, name)
    if not 0.0 <= result < 1.0:
        raise InvalidArgument(name, f"{name}={value!r} must satisfy 0 <= {name} < 1")
    return result


def check_probability(value: Any, name: str, *, low_open: bool = False, high_open: bool = False) -> float:
    """A probability in [0, 1], with either end optionally excluded."""
    result = check_real(value, name)
    low_ok = result > 0 if low_open else result >= 0
    high_ok = result < 1 if high_open else result <= 1
    if not (low_ok and high_ok):
        interval = ("(" if low_open else "[") + "0, 1" + (")" if high_open else "]")
        raise InvalidArgument(name, f"{name}={value!r} must lie in {interval}")
    return result


def check_sampling_probability(value: Any, name: str = "sampling_probability") -> float:
    """A sampling probability q in (0, 1]."""
    return check_probability(value, name, low_open=True)


def _check_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, numbers.Real)):
        raise InvalidArgumentType(name, f"{name}={value!r} must be an integer, not {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        return int(value)
    as_float = float(value)
    if not math.isfinite(as_float) or not as_float.is_integer():
        raise InvalidArgument(name, f"{name}={value!r} must be an integer")
    return int(as_float)


def check_positive_int(value: Any, name: str = "k") -> int:
    """A positive integer (integral floats such as 1e6 are accepted)."""
    result = _check_int(value, name)
    if result < 1:
        raise InvalidArgument(name, f"{name}={value!r} must be a positive integer (>= 1)")
    return result


def check_nonnegative_int(value: Any, name: str) -> int:
    """An integer >= 0."""
    result = _check_int(value, name)
    if result < 0:
        raise InvalidArgument(name, f"{name}={value!r} must be an integer >= 0")
    return result


def check_flag(value: Any, name: str) -> bool:
    """A boolean (True/False or a numpy bool)."""
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentType(name, f"{name}={value!r} must be True or False")
    return bool(value)


def check_choice(value: Any, name: str, choices: Sequence[str]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str):
        raise InvalidArgumentType(name, f"{name}={value!r} must be a string, one of {list(choices)}")
    if value not in choices:
        raise InvalidArgument(name, f"{name}={value!r} must be one of {list(choices)}")
    return value


def check_real_sequence(
    values: Any, name: str, *, minimum: float | None = None, below: float | None = None, finite: bool = True
) -> np.ndarray:
    """A scalar or a non-empty 1-d sequence of real numbers, returned as a float64 array.

    NaN is refused; so are entries < ``minimum``, entries >= ``below`` and (if ``finite``) infinities.
    """
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentType(name, f"{name}={values!r} must be a number or a sequence of numbers")
    try:
        array = np.asarray(values)
    except (TypeError, ValueError) as exc:  # ragged input
        raise InvalidArgumentType(name, f"{name} must be a number or a flat sequence of numbers") from exc
    if array.dtype == bool or not (np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)):
        raise InvalidArgumentType(name, f"{name} must contain real numbers, got dtype {array.dtype}")
    if array.ndim > 1:
        raise InvalidArgument(name, f"{name} must be a scalar or a 1-d sequence, got shape {array.shape}")
    array = np.atleast_1d(array).astype(np.float64)
    if array.size == 0:
        raise InvalidArgument(name, f"{name} must not be empty")
    if np.isnan(array).any():
        raise InvalidArgument(name, f"{name} contains nan")
    bad = np.zeros(array.shape, dtype=bool)
    rule = []
    if minimum is not None:
        bad |= array < minimum
        rule.append(f">= {minimum:g}")
    if below is not None:
        bad |= array >= below
        rule.append(f"< {below:g}")
    if finite:
        bad |= np.isinf(array)
        rule.append("finite")
    if bad.any():
        index = int(np.argmax(bad))
        raise InvalidArgument(name, f"{name}[{index}]={float(array[index])!r} must be {' and '.join(rule)}")
    return array
