"""The selection batch every witness family reads, and the protocol a witness family implements.

A :class:`SelectionBatch` holds the selection outputs under d (``a``) and under d_prime (``b``), their split
into a build half (where events are chosen) and a held-out half (where families that choose on the build
half predict), what is known of the certification to come (its sample size, the z of its one-sided bounds,
delta), the search's random generator, and the tail summaries the audit streamed beside the batch (or
None). Shared derived pieces (the atoms of the whole batch and of the build half, the two predictions) are
computed once, on first use, and read by every family that needs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

import numpy as np

from ..witness import ColumnAtoms
from .atom_sets import find_atoms
from .candidate import Candidate
from .prediction import HeldOutPrediction, WholeBatchPrediction

__all__ = ["SelectionBatch", "WitnessFamily"]


@dataclass(frozen=True, eq=False)
class SelectionBatch:
    """Selection outputs ``a`` (under d) and ``b`` (under d_prime), rows by outputs, and what ranks events on them."""

    a: np.ndarray
    b: np.ndarray
    n_certify: int
    z_certify: float
    delta: float
    rng: np.random.Generator
    streamed: tuple[Any, Any] | None = None  # per input, the tail summaries of the streamed blocks (family_tails.Tails)

    @property
    def width(self) -> int:
        """Values per output row."""
        return int(self.a.shape[1])

    @property
    def n_select(self) -> int:
        """Rows per input of the whole batch (the smaller side)."""
        return min(self.a.shape[0], self.b.shape[0])

    @cached_property
    def build(self) -> tuple[np.ndarray, np.ndarray]:
        """The first half of each input's rows: where families that predict held out choose their events."""
        return self.a[: self.a.shape[0] // 2], self.b[: self.b.shape[0] // 2]

    @cached_property
    def held(self) -> tuple[np.ndarray, np.ndarray]:
        """The second half of each input's rows: where those events are predicted."""
        return self.a[self.a.shape[0] // 2:], self.b[self.b.shape[0] // 2:]

    @cached_property
    def held_out(self) -> HeldOutPrediction:
        """Prediction from held-out counts (``prediction.held_out_predicted``)."""
        return HeldOutPrediction(min(self.held[0].shape[0], self.held[1].shape[0]), self.n_certify, self.z_certify,
                                 self.delta, self.n_select)

    @cached_property
    def whole_batch(self) -> WholeBatchPrediction:
        """Prediction from the counts of the whole batch the events are chosen on."""
        return WholeBatchPrediction(self.n_select, self.n_certify, self.z_certify, self.delta)

    @cached_property
    def atoms(self) -> ColumnAtoms:
        """The atoms of the whole batch."""
        return find_atoms(np.concatenate([self.a, self.b]))

    @cached_property
    def build_atoms(self) -> ColumnAtoms:
        """The atoms of the build half."""
        return find_atoms(np.concatenate(self.build))


class WitnessFamily(Protocol):
    """One family of witness events: a selection batch in, candidate events with predicted bounds out.

    A family knows nothing of the others; the selector (``selector.py``) runs the families listed in
    ``registry.FAMILIES`` in order, ranks all their candidates and chooses what to certify. ``costly``
    families are skipped when a candidate of the families listed before the first costly one is already
    predicted near the budget's ceiling (nothing could beat it).
    """

    name: str
    costly: bool

    def candidates(self, batch: SelectionBatch) -> list[Candidate]: ...
