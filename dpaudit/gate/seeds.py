"""Seeds of gate entries: one per entry, derived from the gate's seed and the entry's name."""

from __future__ import annotations

import zlib

import numpy as np

__all__ = ["entry_seed"]


def entry_seed(seed: int, name: str) -> int:
    """A seed per entry derived from the gate seed and the entry's name (stable under reordering)."""
    return int(np.random.SeedSequence(seed, spawn_key=(7, zlib.crc32(name.encode()))).generate_state(1)[0])
