"""A sequential audit's pilot witness search: on the first rows of the selection batch, the whole batch only when needed.

A sequential audit (``audit(..., sequential=True)`` with its default schedule) draws the selection batch a
fixed-budget audit draws, and runs the witness search first on its first PILOT_SHARE rows (the *pilot*, with a
generator of its own). The selection stops there, for futility, when the pilot is decisive (:func:`pilot_futile`):

* **futility**: its best event is predicted to certify a positive bound below PILOT_FUTILITY_SHARE of the claimed
  epsilon at the full certification budget (``witness_search/prediction.py``), by PILOT_ERROR_Z standard errors
  of the event's estimate: the pilot resolves the outputs' signal, and it is far from a violation.

Otherwise (a prediction near or above the claim, or nothing predicted above 0, as at tiny epsilon where the
selection noise hides the signal) the search runs on the whole batch exactly as in a fixed-budget audit (same
rows, same generator, with the streamed tail summaries of (epsilon, delta) audits): the same events are chosen.
The pilot saves search time (the fits of the costly families grow with the rows), not samples: the whole batch
was drawn and counts as used. A pilot predicted above the claim does not stop the selection: on a few thousand
rows an extreme tail seen a handful of times can be predicted above the claim of a correct mechanism.

Validity. The search sees selection rows only, whether it stops at the pilot or not, and the certification draws fresh
samples (``PHASE_CERTIFY`` blocks) for the events chosen, at the confidence split the fixed budget would use:
stopping the selection early changes which events are certified, never the error of their bounds. It can cost
power: a leak the pilot does not resolve while the pilot finds another signal far below the claim (a rare output
below about 1 / pilot rows beside a loose main signal) is certified from the pilot's events.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from .witness_search.candidate import Candidate

__all__ = ["pilot_rows", "pilot_futile", "PILOT_SHARE", "MIN_PILOT", "PILOT_FUTILITY_SHARE", "PILOT_ERROR_Z"]

#: Share of the selection rows the pilot search sees.
PILOT_SHARE = 1.0 / 8.0
#: Smallest pilot (rows per input): below it the selection is one look.
MIN_PILOT = 2_000
#: The pilot stops the selection for futility when its best event is predicted to certify a positive bound below this
#: share of the claim.
PILOT_FUTILITY_SHARE = 0.5
#: ... by this many standard errors of its ln(p / q) estimate.
PILOT_ERROR_Z = 2.0


def pilot_rows(n_select: int, *, pilot: bool) -> int | None:
    """Rows per input of the pilot search of a selection batch of ``n_select`` rows: PILOT_SHARE of them when
    ``pilot`` and that holds at least MIN_PILOT rows, else None (one search on the whole batch)."""
    rows = math.ceil(n_select * PILOT_SHARE)
    return rows if pilot and MIN_PILOT <= rows < n_select else None


def pilot_futile(candidates: Sequence[Candidate], epsilon: float) -> bool:
    """Whether the selection stops at the pilot (futility), else it searches the whole batch; ``candidates`` best
    first (``selector.search_witnesses`` on the pilot rows). The prediction must stay below the share of the claim
    by PILOT_ERROR_Z of its standard error (``Candidate.error``, when known): at tiny epsilon the pilot's estimate
    of ln(p / q) is all noise (discrete Laplace at epsilon 0.01: an interval predicted at 0.3 of the claim from
    12,500 rows, with a standard error above the claim itself)."""
    if not candidates:
        return False
    top = candidates[0]
    return 0.0 < top.predicted and top.predicted + PILOT_ERROR_Z * top.error < PILOT_FUTILITY_SHARE * epsilon
