"""The output's type and shape as part of the outcome (below sampling: it draws nothing).

A mechanism may return different dtypes on different inputs (an int on one, a float on the other): the
values alone may then be equal in distribution while the outputs are not. The sampler probes the dtypes on
both inputs (``sampling.probe_outcomes``); when they differ, the sampler appends one column holding :func:`dtype_code` of each batch,
so the dtype is searched and certified like any other atom. When they agree, every later block must
return the same dtype: a change is refused (MechanismError naming the block, the input and the types)
rather than coerced silently.

The output's shape is treated the same way: when the number of values per output differs between the
inputs, rows are padded with NaN and carry their width in one more column (:func:`shape_outcome`).

Object arrays are audited when a canonical encoding exists (every element a real number of one Python
type: converted to that numpy dtype) and refused otherwise, naming the types found.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from ..errors import MechanismError

__all__ = ["dtype_code", "dtype_name", "object_outputs", "check_dtype", "append_dtype_column", "output_width", "shape_outcome"]

_KIND_CODES = {"b": 1, "u": 2, "i": 3, "f": 4}


def dtype_code(dtype: Any) -> float:
    """A float code of a real dtype: 100 x kind (bool 1, unsigned 2, signed 3, float 4) + item size."""
    dtype = np.dtype(dtype)
    return float(100 * _KIND_CODES.get(dtype.kind, 9) + dtype.itemsize)


def dtype_name(code: float) -> str:
    """The dtype a :func:`dtype_code` stands for (for witness descriptions)."""
    kinds = {v: k for k, v in _KIND_CODES.items()}
    kind, size = divmod(int(code), 100)
    return str(np.dtype(f"{kinds.get(kind, 'V')}{size}")) if kind in kinds else f"dtype code {code:g}"


def _element_type(value: Any) -> type:
    return type(value)


def object_outputs(raw: np.ndarray, where: str) -> np.ndarray:
    """An object array as a numeric array when every element is a real number of one type; otherwise
    MechanismError naming ``where`` and the element types found."""
    flat = raw.ravel()
    types = sorted({_element_type(v).__name__ for v in flat[: 1 << 16]}) if flat.size else []
    if all(isinstance(v, numbers.Real) and not isinstance(v, np.ndarray) for v in flat):
        kinds = {type(v) for v in flat}
        if len(kinds) <= 1:
            return np.asarray(raw.tolist())
        raise MechanismError(f"{where}: the outputs mix element types ({', '.join(types)}) in one batch; return one "
                             "dtype per batch (the type of an output is part of the outcome)")
    raise MechanismError(f"{where}: outputs must be real numbers, got an object array with elements of type(s) "
                         f"{', '.join(types) or 'none'}")


def check_dtype(raw: np.ndarray, expected: tuple[str, ...], where: str) -> None:
    """Refuse a batch whose dtype is not the one probed (``expected`` holds exactly one dtype name)."""
    if len(expected) == 1 and str(raw.dtype) != expected[0]:
        raise MechanismError(f"{where}: the mechanism returned dtype {raw.dtype} but {expected[0]} on the probe blocks; "
                             "the dtype of an output is part of the outcome and must not change silently (return one "
                             "dtype, or make the type depend on the input so the audit carries it as a column)")


def append_dtype_column(out: np.ndarray, dtype: Any) -> np.ndarray:
    """Canonical rows with one more column holding the batch's :func:`dtype_code`."""
    return np.hstack([out, np.full((out.shape[0], 1), dtype_code(dtype))])


def output_width(raw: np.ndarray) -> int:
    """Values per output of a validated batch (1 for shape (size,))."""
    return 1 if raw.ndim == 1 else int(raw.shape[1])


def shape_outcome(out: np.ndarray, widths: tuple[int, ...], where: str) -> np.ndarray:
    """Canonical rows carrying the output's shape when it depends on the input (``widths``: the widths
    probed on d and d_prime, several when they differ): padded with NaN to the widest and followed by one
    column holding the batch's width, so the shape is searched and certified like any atom. A width not
    probed is refused (MechanismError naming ``where``)."""
    if len(widths) <= 1:
        return out
    if out.shape[1] not in widths:
        raise MechanismError(f"{where}: the mechanism returned {out.shape[1]} values per output; the probe blocks returned "
                             f"{' or '.join(map(str, widths))} (on d and d_prime)")
    padded = np.full((out.shape[0], max(widths) + 1), np.nan)
    padded[:, : out.shape[1]] = out
    padded[:, -1] = out.shape[1]
    return padded
