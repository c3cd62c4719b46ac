"""``scalar(fn)``: a one-output-per-call function as a batched mechanism."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from .._validation import check_positive_int
from ..errors import InvalidArgument, InvalidArgumentType

__all__ = ["scalar", "ScalarMechanism", "stack_outputs"]

CHUNK = 1024  # outputs drawn from one child generator: results do not depend on `processes`


def stack_outputs(outputs: list[Any], where: str) -> np.ndarray:
    """Stack per-call outputs (numbers or equal-length vectors) on axis 0; a clear error otherwise."""
    try:
        stacked = np.asarray(outputs)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{where} returned outputs of different shapes or types ({exc}); each call must return one "
                         "number or a vector of the same length") from exc
    if stacked.dtype == object or stacked.ndim > 2 or not (np.issubdtype(stacked.dtype, np.number) or stacked.dtype == bool):
        kinds = sorted({type(o).__name__ for o in outputs[:100]})
        raise ValueError(f"{where} must return numbers (or equal-length numeric vectors), got {', '.join(kinds)}")
    return stacked


def _chunk(fn: Callable, data: Any, seed: int, count: int) -> list[Any]:
    rng = np.random.default_rng(seed)
    return [fn(data, rng) for _ in range(count)]


class ScalarMechanism:
    """``fn(data, rng) -> one output`` as ``mechanism(data, size, rng)``.

    A batch of ``size`` outputs is split into chunks of 1,024 calls; chunk i draws from its own generator
    seeded by the i-th number the batch's ``rng`` yields, so the outputs are the same whether the chunks
    run here or over ``processes`` worker processes, and are independent across chunks and batches.
    """

    def __init__(self, fn: Callable[[Any, np.random.Generator], Any], processes: int = 1) -> None:
        self.fn = fn
        self.processes = processes
        self.__name__ = getattr(fn, "__name__", type(fn).__name__)
        self._pool: ProcessPoolExecutor | None = None

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        counts = [CHUNK] * (size // CHUNK) + ([size % CHUNK] if size % CHUNK else [])
        seeds = rng.integers(0, 2**63 - 1, size=len(counts), dtype=np.int64).tolist()
        if self.processes > 1 and len(counts) > 1:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(max_workers=self.processes)
            parts = list(self._pool.map(_chunk, [self.fn] * len(counts), [data] * len(counts), seeds, counts))
        else:
            parts = [_chunk(self.fn, data, seed, count) for seed, count in zip(seeds, counts)]
        outputs = [value for part in parts for value in part]
        return stack_outputs(outputs, f"fn {self.__name__!r}")

    def __getstate__(self) -> dict[str, Any]:  # a pool never travels to worker processes
        return {**self.__dict__, "_pool": None}

    def __del__(self) -> None:
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"scalar({self.__name__}, processes={self.processes})"


def scalar(fn: Callable[[Any, np.random.Generator], Any], *, processes: int = 1) -> ScalarMechanism:
    """Turn ``fn(data, rng) -> one output`` into a batched mechanism ``(data, size, rng) -> ndarray``.

    Args:
        fn: called once per output with the data and a ``numpy.random.Generator`` it must draw from
            (then audits are reproducible); returns a number or a fixed-length numeric vector.
        processes: spread the calls of one batch over this many worker processes (``fn`` must then be
            picklable: a module-level function). The outputs do not depend on it. When the auditor itself
            runs workers (``workers > 1``), keep this at 1.

    Returns:
        A :class:`ScalarMechanism` (picklable when ``fn`` is).

    Example:
        >>> import numpy as np
        >>> mechanism = scalar(lambda data, rng: data[0] + rng.laplace(0.0, 1.0))
        >>> mechanism([0.0], 3, np.random.default_rng(0)).shape
        (3,)
    """
    if not callable(fn) or isinstance(fn, type):
        raise InvalidArgumentType("fn", f"fn={fn!r} must be a function fn(data, rng) returning one output")
    try:
        inspect.signature(fn).bind(None, None)
    except TypeError as exc:
        raise InvalidArgumentType("fn", f"fn={fn!r} must accept two arguments (data, rng): {exc}") from exc
    except ValueError:  # builtins without a signature: accepted as they are
        pass
    processes = check_positive_int(processes, "processes")
    if processes > 1:
        try:
            pickle.dumps(fn)
        except Exception as exc:
            raise InvalidArgument("processes", f"processes={processes} needs a picklable fn (a module-level function, "
                                  f"not a lambda or closure): {exc}") from exc
    return ScalarMechanism(fn, processes)

