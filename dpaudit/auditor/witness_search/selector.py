"""The selector: runs the witness families on one selection batch, ranks their candidates, chooses what to certify.

Selection that does not fool itself. Every family ranks its events by the bound they are predicted to
certify (``prediction.py``); families that build events on the first half of the batch (atom orders,
product events, learned scores and their thresholds) predict them on the held-out half, one more standard
error conservative (HELD_OUT_Z) than the whole-batch predictions of the magnitude family, so they replace
its choice only on evidence. :func:`search_witnesses` runs the families of ``registry.FAMILIES`` in order
and returns every finite candidate, best first; costly families (vector products, learned scores) are
skipped when the families before them already found an event predicted at SETTLED_SHARE of what the
budget could certify.

:func:`select_for_certification` chooses the events certified, and so splits the confidence: the best
candidates (an interval that beats the best half-line by less than WIDE_MARGIN of its standard error gives
way to it, :func:`prefer_wide`), the fitted companions of a best learned score, the best half-line beside a
best atom set, and every exact-atom candidate the mechanism's support oracle proves impossible under the
other input (epsilon = inf), and the best value class (NaN, inf, -0) seen under one input only. A pooled pair
(the best half-line of each direction certified as one event, ``regions.region_candidates``) is certified only
when it is ranked above every single event. Every event returned enters the Bonferroni split (``audit.py``).
"""

from __future__ import annotations

import math

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..witness import PatternSet
from . import registry
from .batch import SelectionBatch, WitnessFamily
from .candidate import Candidate, is_atom_family, is_half_line, is_interval, is_pooled, is_score_half_line, rank_key
from .prediction import held_out_predicted

__all__ = ["search_witnesses", "search_batch", "rank_key", "select_for_certification", "prefer_wide", "restrict_to_impossible",
           "SETTLED_SHARE", "WIDE_MARGIN", "EXTRA_PROOFS", "EXTRA_SHARE", "MAX_COMPANIONS", "COMPANION_SHARE"]


EXTRA_PROOFS = 3  # exact-atom candidates certified beside the best when the support oracle proves them
EXTRA_SHARE = 0.5
MAX_COMPANIONS = 2  # fitted companions certified when the best candidate has one (regions.held_out_regions)
COMPANION_SHARE = 0.8  # ... of the candidates predicted at least this share of the best
SETTLED_SHARE = 0.9  # a candidate predicted at this share of the budget's ceiling ends the search of costly families
WIDE_MARGIN = 0.5  # an interval must beat the best half-line by this many of its standard errors (prefer_wide)


def search_batch(batch: SelectionBatch, families: Sequence[WitnessFamily] | None = None) -> list[Candidate]:
    """Every finite candidate event of ``families`` (default: ``registry.FAMILIES``, read at each call) on
    ``batch``, best first (ties keep the families' order)."""
    families = registry.FAMILIES if families is None else families
    ceiling = float(held_out_predicted(batch.held_out.n_select, 0, batch.held_out.n_select, batch.n_certify,
                                       batch.z_certify, batch.delta, batch.held_out.n_select, 0, batch.n_select)[()])
    candidates: list[Candidate] = []
    settled = None
    for family in families:
        if family.costly:
            if settled is None:  # decided once, on the families before the first costly one
                settled = any(c.predicted >= SETTLED_SHARE * ceiling for c in candidates)
            if settled:
                continue
        candidates += family.candidates(batch)
    candidates = [c for c in candidates if c.predicted > -np.inf]
    return sorted(candidates, key=rank_key, reverse=True)


def search_witnesses(a: np.ndarray, b: np.ndarray, *, n_certify: int, z_certify: float, delta: float,
                     rng: np.random.Generator, streamed: tuple[Any, Any] | None = None,
                     families: Sequence[WitnessFamily] | None = None) -> list[Candidate]:
    """All candidate events for selection outputs ``a`` (under d) and ``b`` (under d_prime), best first
    (:func:`search_batch` on a :class:`~dpaudit.auditor.witness_search.batch.SelectionBatch` of them)."""
    return search_batch(SelectionBatch(a, b, n_certify, z_certify, delta, rng, streamed), families)


def prefer_wide(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates (best first) with the best half-line (or pooled pair of half-lines, ranked above its parts
    when predicted better) moved first when the best candidate is an interval
    predicted less than WIDE_MARGIN standard errors (its ``error``) above it. An interval is the best of
    ~5,000 chosen and predicted on the same rows, so its prediction is biased up; within noise, the
    half-line is the wider event, certified with more hits. Discrete Laplace at epsilon 0.05 (12 seeds):
    intervals holding 5-40% of the mass beat the best half-line by 0.07-0.36 of their standard error and
    certify down to ~0.035 against the half-line's 0.046; a real interval leak (diffprivlib's mean under
    add/remove at 6*10^4 samples) wins by 0.6-1.9 standard errors in 7 of 10 seeds."""
    if not candidates or not is_interval(candidates[0].witness):
        return list(candidates)
    top = candidates[0]
    for index, candidate in enumerate(candidates):
        if is_score_half_line(candidate.witness) or is_pooled(candidate.witness):  # a pooled pair of half-lines
            if max(candidate.predicted, candidate.outlook) >= top.predicted - WIDE_MARGIN * top.error:
                return [candidate] + candidates[:index] + candidates[index + 1:]
            break
    return list(candidates)


def select_for_certification(candidates, count: int, provable=None, selection=None) -> list[Candidate]:
    """The events to certify: the ``count`` best distinct candidates (in the order of :func:`prefer_wide`); when
    the best carries a fitted companion
    (``regions.held_out_regions``), the companions of the candidates predicted at least COMPANION_SHARE
    of it (up to MAX_COMPANIONS); when the best is an atom set (whose
    prediction rests on few or zero counts and may be optimistic), also the best half-line and the best
    other event (interval, learned score, product) predicted at least EXTRA_SHARE of it; and up to
    EXTRA_PROOFS exact-atom events ``provable(candidate)`` returns (the part of an atom candidate the
    mechanism's support oracle proves impossible under the denominator input, or None); the best one-sided value
    class (``Candidate.one_sided``: NaN, inf or -0 seen under one input only) when none is chosen; when the best
    is a median half-line predicted to certify nothing (``regions.region_candidates``), also its other direction
    (the selection noise may hide the sign of the leak: discrete Laplace at epsilon 0.01 with 10^5 selection rows
    chose the wrong one in 1 of 10 seeds). A pooled pair (``regions.region_candidates``: the best half-line of
    each direction, certified together) is certified only when it is the best candidate, and then stands for both
    directions (with its mirror, the other sign, when the selection left the sign open: ``regions.SIGN_Z``).
    ``selection``
    (the selection outputs a, b) drops an extra event equal to a chosen one on those outputs. Every event
    returned enters the confidence split."""
    chosen: list[Candidate] = []
    seen: set = set()
    marks: list[tuple[bool, bytes, bytes]] = []

    def mark(candidate: Candidate):
        if selection is None:
            return None
        parts = candidate.witness.parts if is_pooled(candidate.witness) else (candidate.witness,)
        return (candidate.forward,) + tuple(np.packbits(part.indicator(side)).tobytes() for part in parts for side in selection)

    def add(candidate: Candidate, extra: bool = False) -> bool:
        key = (candidate.witness.describe(), candidate.forward)
        if key in seen:
            return False
        signature = mark(candidate) if extra else None
        if signature is not None and signature in marks:
            return False
        seen.add(key)
        chosen.append(candidate)
        if selection is not None:
            marks.append(signature if signature is not None else mark(candidate))
        return True

    for candidate in prefer_wide(candidates):
        if len(chosen) == count:
            break
        if chosen and is_pooled(candidate.witness):  # a pooled pair only when it is predicted above every single event
            continue
        add(candidate)
    if chosen and chosen[0].predicted <= 0 and math.isfinite(chosen[0].outlook):  # the median half-line: both directions
        top = chosen[0]
        if not is_pooled(top.witness):
            add(Candidate(top.witness, not top.forward, top.predicted, outlook=top.outlook), extra=True)
        elif top.companion is not None:  # a pooled pair whose sign the selection left open: its mirror
            add(Candidate(top.companion, True, top.predicted, outlook=top.outlook), extra=True)
    if chosen and chosen[0].companion is not None and not is_pooled(chosen[0].witness):  # fitted half-lines beside the
        # best (regions.held_out_regions)
        top, extra = chosen[0].predicted, 0
        for candidate in candidates:
            if extra == MAX_COMPANIONS or candidate.predicted < COMPANION_SHARE * top:
                break
            if candidate.companion is None or is_pooled(candidate.witness):  # a pooled pair's companion: its mirror
                continue
            if add(Candidate(candidate.companion, candidate.forward, candidate.predicted), extra=True):
                extra += 1
    if chosen and is_atom_family(chosen[0].witness):
        top = chosen[0].predicted
        for wanted in (is_half_line, lambda w: not is_atom_family(w) and not is_half_line(w) and not is_pooled(w)):
            if any(wanted(c.witness) for c in chosen):
                continue
            for candidate in candidates:
                if wanted(candidate.witness):
                    if candidate.predicted > 0 and (wanted is is_half_line or candidate.predicted >= EXTRA_SHARE * top):
                        add(candidate, extra=True)
                    break
    if not any(c.one_sided for c in chosen):  # a one-sided value class (NaN, inf, -0): certified beside the choice
        for candidate in candidates:
            if candidate.one_sided:
                add(candidate, extra=True)
                break
    if provable is not None:
        extra = 0
        for candidate in candidates:
            if extra == EXTRA_PROOFS:
                break
            if not isinstance(candidate.witness, PatternSet):
                continue
            restricted = provable(candidate)
            if restricted is not None and add(restricted, extra=True):
                extra += 1
    return chosen


def restrict_to_impossible(candidate: Candidate, support, data) -> Candidate | None:
    """The part of an exact-atom candidate that ``support(data, outputs)`` (the mechanism's exact support
    oracle) says can never occur on ``data`` (the denominator input); None when there is none or no oracle.
    Such an event, certified to have positive probability under the other input, proves epsilon = inf."""
    witness = candidate.witness
    rows = witness.exact_outputs() if isinstance(witness, PatternSet) else None
    if not callable(support) or rows is None or rows.shape[0] == 0:
        return None
    possible = np.asarray(support(data, rows[:, 0] if rows.shape[1] == 1 else rows), dtype=bool).reshape(-1)
    if possible.shape != (rows.shape[0],) or possible.all():
        return None
    return Candidate(PatternSet(witness.atoms, witness.patterns[~possible]), candidate.forward, candidate.predicted)