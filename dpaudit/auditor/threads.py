"""One thread for the numeric libraries while the witness search runs (BLAS, OpenMP).

The search fits small models on the selection batch: logistic regressions (matrix-vector products of ~10^4
rows by tens of columns, hundreds of times) and histogram gradient boosting. At these sizes a second BLAS or
OpenMP thread costs more in hand-offs than it computes, and on a machine shared with other jobs its spinning
threads wait for cores: the gate's logistic fits took 2.8 s with OpenBLAS's default two threads and 0.7 s with
one on the same two-core machine (12.8 s against 1.5 s under load). One thread also makes the search's floating
point independent of the thread count the machine picks. The mechanism's own sampling is not limited, except where
an audit runs worker processes (one per core; ``backends.ProcessBackend``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_numeric_thread", "limit_numeric_threads", "thread_pools"]

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


@contextmanager
def one_numeric_thread() -> Iterator[None]:
    """Inside this block, BLAS and OpenMP thread pools loaded in this process run one thread (threadpoolctl,
    a dependency of scikit-learn); a no-op where threadpoolctl cannot be imported."""
    pools = thread_pools()
    if pools is None:  # pragma: no cover
        yield
        return
    with pools.limit(limits=1):
        yield


def limit_numeric_threads() -> None:
    """One thread for the BLAS and OpenMP pools loaded in this process from now on (a worker process: one per core);
    a no-op where threadpoolctl cannot be imported."""
    pools = thread_pools()
    for library in getattr(pools, "lib_controllers", ()):  # kept for the life of the process: nothing restores it
        library.set_num_threads(1)  # (``pools.limit`` first reads every library's settings: ~5 ms in a fresh fork)
