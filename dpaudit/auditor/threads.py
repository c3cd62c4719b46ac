"""One thread for the numeric libraries while the witness search runs (BLAS, OpenMP).

The search fits small models on the selection batch: logistic regressions (matrix-vector products of ~10^4
rows by tens of columns, hundreds of times) and histogram gradient boosting. At these sizes a second BLAS or
OpenMP thread costs more in hand-offs than it computes, and on a machine shared with other jobs its spinning
threads wait for cores: the gate's logistic fits took 2.8 s with OpenBLAS's default two threads and 0.7 s with
one on the same two-core machine (12.8 s against 1.5 s under load). One thread also makes the search's floating
point independent of the thread count the machine picks. The mechanism's own sampling is not limited.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["one_numeric_thread"]


@contextmanager
def one_numeric_thread() -> Iterator[None]:
    """Inside this block, BLAS and OpenMP thread pools loaded in this process run one thread (threadpoolctl,
    a dependency of scikit-learn); a no-op where threadpoolctl cannot be imported."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn (a core dependency) installs it
        yield
        return
    with threadpool_limits(limits=1):
        yield
