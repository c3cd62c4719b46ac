"""One thread for the numeric libraries while the witness search runs (BLAS, OpenMP).

The search fits small models on the selection batch: logistic regressions (matrix-vector products of ~10^4
rows by tens of columns, hundreds of times) and histogram gradient boosting. At these sizes a second BLAS or
OpenMP thread costs more in hand-offs than it computes, and on a machine shared with other jobs its spinning
threads wait for cores: the gate's logistic fits took 2.8 s with OpenBLAS's default two threads and 0.7 s with
one on the same two-core machine (12.8 s against 1.5 s under load). One thread also makes the search's floating
point independent of the thread count the machine picks. The mechanism's own sampling is not limited, except in
this process while an audit's worker processes run (one process per core; ``backends.ProcessBackend``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_numeric_thread", "thread_pools"]

_controller: list[Any] = []  # [modules loaded, extension modules loaded, threadpoolctl's controller] when it was made


def _extension_modules() -> int:
    files = (getattr(module, "__dict__", {}).get("__file__") for module in list(sys.modules.values()))
    return sum(1 for name in files if isinstance(name, str) and name.endswith((".so", ".pyd")))


def thread_pools() -> Any:
    """threadpoolctl's controller of the thread pools loaded in this process, made again only when extension
    modules were imported since (a native library arrives with one): finding the libraries takes milliseconds,
    and the witness search enters :func:`one_numeric_thread` dozens of times per audit. A process that forks
    audits calls it first, so the children inherit it. None without threadpoolctl."""
    if _controller and _controller[0] == len(sys.modules):
        return _controller[2]
    extensions = _extension_modules()
    if not _controller or _controller[1] != extensions:
        try:
            from threadpoolctl import ThreadpoolController
        except ImportError:  # pragma: no cover - scikit-learn (a core dependency) installs it
            return None
        _controller[:] = [0, extensions, ThreadpoolController()]
    _controller[0] = len(sys.modules)
    return _controller[2]


_depth = [0]  # blocks of one_numeric_thread open now (in this process)


@contextmanager
def one_numeric_thread() -> Iterator[None]:
    """Inside this block, BLAS and OpenMP thread pools loaded in this process run one thread (threadpoolctl,
    a dependency of scikit-learn); a no-op where threadpoolctl cannot be imported. A block inside another changes
    nothing: after a fork, every call that sets OpenBLAS's thread count (even to the count it has) starts a new
    thread that spins for a while, so the counts are set only where the outermost block opens and closes."""
    pools = thread_pools() if _depth[0] == 0 else None
    _depth[0] += 1
    try:
        if pools is None:
            yield
        else:
            with pools.limit(limits=1):
                yield
    finally:
        _depth[0] -= 1
