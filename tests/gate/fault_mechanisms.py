"""Misbehaving mechanisms and neighbour lists for the gate's fault-injection tests."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import numpy as np


def laplace(data, size, rng):
    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)


def raises(data, size, rng):
    raise RuntimeError("the mechanism failed on purpose")


def exits(data, size, rng):
    os._exit(7)  # a native crash or a library calling exit: no exception to catch


def hangs(data, size, rng):
    record = os.environ.get("DPAUDIT_TEST_PID_DIR")
    if record:  # tells a test that the entry is running, and in which process
        Path(record, f"{os.getpid()}").write_text("hanging")
    time.sleep(3600)


def global_numpy_laplace(data, size, rng):
    """Ignores ``rng`` and draws from the global numpy state, as many third-party libraries do."""
    return np.asarray(data, float)[0] + np.random.laplace(0.0, 1.0, size)


def global_python_bits(data, size, rng):
    """Ignores ``rng`` and draws from the ``random`` module."""
    return np.array([random.random() for _ in range(size)]) + np.asarray(data, float)[0]


def all_nan(data, size, rng):
    return np.full(size, np.nan)


def ragged(data, size, rng):
    return [[0.0]] * (size - 1) + [[0.0, 1.0]]


def pairs_raise():
    raise KeyError("neighbours could not be built")


PAIRS = [([0.0], [1.0])]


def hangs_in_workers(data, size, rng):
    """Answers the small probe blocks, hangs on full sampling blocks (which run in worker processes)."""
    if size > 1000:
        record = os.environ.get("DPAUDIT_TEST_PID_DIR")
        if record:
            Path(record, f"{os.getpid()}").write_text("hanging")
        time.sleep(3600)
    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)


def calls_sys_exit(data, size, rng):
    raise SystemExit(0)


def segfault(data, size, rng):
    import ctypes

    ctypes.string_at(0)


def raises_keyboard_interrupt(data, size, rng):
    raise KeyboardInterrupt


def varying_width(data, size, rng):
    """Outputs whose width changes from call to call (1 or 2 columns)."""
    return rng.normal(size=(size, 1 + int(rng.integers(0, 2))))


def absolute_error(data, outputs):
    return np.abs(np.asarray(outputs, float) - np.asarray(data, float)[0])


def laplace_pairs_of_outputs(data, size, rng):
    """Two Laplace outputs per run (output width 2)."""
    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, (size, 2))


def chatters_forever(data, size, rng):
    """Prints without pause and never returns."""
    while True:
        print("still here")


def hoards_memory(data, size, rng):
    """Allocates (and touches) about 1.5 GiB before answering: past a 512 MiB memory limit."""
    hoard = np.ones(200_000_000)
    return np.sum(data) + rng.laplace(0.0, 1.0, size) + 0.0 * hoard[0]
