"""``audit``: a certified lower bound on a black-box mechanism's epsilon for one adjacent pair.

Procedure (one call):
1. draw a *selection* batch on both inputs (and, for delta > 0, stream the rest of the selection budget as
   tail summaries) and search witness events (``witness_search``: the families of its registry hand
   candidates to one selector);
2. draw a fresh *certification* batch, streamed block by block (memory stays bounded at any sample
   count), and count how often each chosen event occurs under each input;
3. turn the counts into Clopper-Pearson bounds, with the error probability split over both sides of
   every certified event (``certify.py``), and report the best bound, the witness, the counts and the
   ceiling this budget could reach.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import norm

from .._validation import check_choice, check_flag, check_delta, check_epsilon, check_nonnegative_int, check_positive_int, check_probability
from ..errors import InvalidArgument, InvalidArgumentType, MechanismError
from .certify import certification_ceiling, side_alpha
from .looks import FINAL_SHARE, plan_looks
from .sequential import Tally, certify_in_looks
from .result import AuditDetails, AuditResult
from .selection_looks import pilot_futile, pilot_rows
from .threads import one_numeric_thread
from .backends import BothInputs, Progress, map_both
from .sampling import (
    PHASE_CERTIFY,
    PHASE_SELECT,
    SIDE_D,
    SIDE_D_PRIME,
    block_label,
    block_sizes,
    choose_backend,
    draw_block,
    probe_outcomes,
    probe_randomness,
)
from .outcomes import shape_outcome
from .witness import PatternSet, PooledPair, Witness, witness_from_dict
from .witness_search.candidate import Candidate
from .witness_search.family_learned import BOOSTING_MISSING, boosting_available
from .witness_search.family_tails import TailTask, stream_size
from .witness_search.selector import restrict_to_impossible, search_witnesses, select_for_certification

__all__ = ["audit", "selection_size"]

MIN_SAMPLES = 200
MAX_SELECTION = 200_000
DETAIL_ROWS = 20_000  # selection rows kept for report plots


def selection_size(samples: int, fraction: float) -> int:
    """Selection batch size: ``fraction`` of the samples, at least 100, at most 200,000."""
    return int(min(MAX_SELECTION, max(100, round(samples * fraction)), samples // 2))


@dataclass(frozen=True)
class _DrawTask:
    """Draw one selection block (picklable for worker processes)."""

    mechanism: Callable
    data: Any
    sizes: tuple[int, ...]
    seed: int
    side: int
    dtypes: tuple[str, ...] = ()  # probed output dtypes (outcomes.py): checked, or carried as a column
    widths: tuple[int, ...] = ()  # probed output widths (outcomes.py): several are carried as a column

    def __call__(self, block: int) -> np.ndarray:
        return shape_outcome(draw_block(self.mechanism, self.data, self.sizes[block], self.seed, self.side, PHASE_SELECT,
                                        block, self.dtypes), self.widths, block_label(self.side, PHASE_SELECT, block, self.seed))


@dataclass(frozen=True)
class _CertificationDraw:
    """Draw one certification block, shaped (picklable for worker processes; drawn ahead of the witness search)."""

    mechanism: Callable
    data: Any
    sizes: tuple[int, ...]
    seed: int
    side: int
    dtypes: tuple[str, ...] = ()
    widths: tuple[int, ...] = ()

    def __call__(self, block: int) -> np.ndarray:
        return shape_outcome(draw_block(self.mechanism, self.data, self.sizes[block], self.seed, self.side, PHASE_CERTIFY,
                                        block, self.dtypes), self.widths, block_label(self.side, PHASE_CERTIFY, block, self.seed))


@dataclass(frozen=True)
class _CountTask:
    """Draw one certification block and count each witness (picklable for worker processes); ``finish`` counts a
    block drawn ahead."""

    draw: _CertificationDraw
    witnesses: tuple[Witness, ...]
    width: int | None

    def __call__(self, block: int) -> np.ndarray:
        return self.finish(self.draw(block), block)

    def finish(self, outputs: np.ndarray, block: int) -> np.ndarray:
        where = block_label(self.draw.side, PHASE_CERTIFY, block, self.draw.seed)
        if self.width is not None and outputs.shape[1] != self.width:
            raise MechanismError(f"{where}: the mechanism returned {outputs.shape[1]} values per output, earlier {self.width}")
        try:
            return np.array([int(w.indicator(outputs).sum()) for w in self.witnesses], dtype=np.int64)
        except (IndexError, ValueError) as exc:
            raise MechanismError(f"{where}: the outputs (shape {outputs.shape}) do not fit the witness event: {exc}") from exc


def check_run(samples: Any, confidence_level: Any, seed: Any, selection_fraction: Any,
              workers: Any) -> tuple[int, float, int, float, int | None]:
    """The run parameters shared by ``audit`` and ``audit_curve``, validated (each error names its argument)."""
    samples = check_positive_int(samples, "samples")
    if samples < MIN_SAMPLES:
        raise InvalidArgument("samples", f"samples={samples} must be >= {MIN_SAMPLES}")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    selection_fraction = check_probability(selection_fraction, "selection_fraction", low_open=True, high_open=True)
    if workers is not None:
        workers = check_positive_int(workers, "workers")
    return samples, confidence_level, seed, selection_fraction, workers


def check_futility(stop_for_futility: Any, sequential: bool) -> bool:
    """``stop_for_futility`` validated against ``sequential`` (a fixed-budget audit has one look: nothing to stop)."""
    stop_for_futility = check_flag(stop_for_futility, "stop_for_futility")
    if stop_for_futility and not sequential:
        raise InvalidArgument("stop_for_futility", "stop_for_futility=True stops a sequential audit early when its budget "
                                                   "cannot certify a violation; it contradicts sequential=False (one look "
                                                   "over the whole budget): drop one of them")
    return stop_for_futility


def probe_run(mechanism: Callable, d: Any, d_prime: Any, seed: int, samples: int, workers: int | None,
              scheduler: Any) -> tuple[Any, list[str], int | None, Any]:
    """Probe the mechanism's randomness before sampling (``probe_randomness``): its warnings, and the workers and
    scheduler to use — a mechanism reading an unseeded source runs in one process, so its samples stay independent."""
    probe = probe_randomness(mechanism, d, d_prime, seed, size=max(16, min(256, samples // 100)))
    if probe.unseeded:
        workers, scheduler = 1, False
    return probe, list(probe.warnings), workers, scheduler


def _check_mechanism(mechanism: Any) -> Callable:
    if not callable(mechanism):
        raise InvalidArgumentType("mechanism", f"mechanism={mechanism!r} must be callable as mechanism(data, size, rng)")
    return mechanism


def _impossible_under(mechanism: Any, data: Any, witness: Witness) -> bool:
    """True when the mechanism's exact support oracle (``mechanism.support(data, outputs)``) says no output of
    the witness event can occur on ``data``. Then P[M(data) in S] = 0 exactly and, with P[M(other) in S]
    certified above delta, epsilon = inf. Needs an event that is a finite set of exact atoms."""
    support = getattr(mechanism, "support", None)
    rows = witness.exact_outputs() if isinstance(witness, PatternSet) else None
    if not callable(support) or rows is None:
        return False
    outputs = rows[:, 0] if rows.shape[1] == 1 else rows
    try:
        possible = np.asarray(support(data, outputs), dtype=bool)
    except Exception as exc:
        raise MechanismError(f"mechanism.support(data, outputs) raised {type(exc).__name__}: {exc}") from exc
    if possible.shape != (rows.shape[0],):
        raise MechanismError(f"mechanism.support must return {rows.shape[0]} booleans, got shape {possible.shape}")
    return not possible.any()


def _support_restricted(mechanism: Any, data: Any, candidate: Candidate) -> Candidate | None:
    """The part of an exact-atom candidate the mechanism's support oracle rules out on ``data`` (or None)."""
    support = getattr(mechanism, "support", None)
    if not callable(support):
        return None
    try:
        return restrict_to_impossible(candidate, support, data)
    except Exception as exc:
        raise MechanismError(f"mechanism.support(data, outputs) raised {type(exc).__name__}: {exc}") from exc


def degenerate_warning(a: np.ndarray, b: np.ndarray) -> str | None:
    """A warning when the selection outputs cannot separate the inputs by construction: every output the
    same value (all NaN included) on both inputs."""
    pooled = np.concatenate([a, b])
    if pooled.shape[0] == 0:
        return None
    first = pooled[0]
    same = np.all((pooled == first) | (np.isnan(pooled) & np.isnan(first)), axis=1)
    if not same.all():
        return None
    value = "NaN" if np.all(np.isnan(first)) else np.array2string(first if first.size > 1 else first[0], precision=6)
    return (f"every output was the same value ({value}) on both inputs: the outputs carry no information to audit, "
            "so a pass says nothing about privacy")


def _select(candidates: Sequence[Candidate], count: int) -> list[Candidate]:
    chosen, seen = [], set()
    for candidate in candidates:
        key = (candidate.witness.describe(), candidate.forward)
        if key not in seen:
            seen.add(key)
            chosen.append(candidate)
        if len(chosen) == count:
            break
    return chosen


DIRECTIONS = ("d -> d_prime", "d_prime -> d")
POOLED = "both, pooled"  # the direction of a pooled pair (witness.PooledPair): both directions certified as one


def _check_witness(witness: Witness | dict | None, direction: str | None) -> Witness | None:
    if witness is None:
        return None
    if isinstance(witness, dict):
        try:
            witness = witness_from_dict(witness)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument("witness", f"witness is not a valid event description ({exc})") from exc
    elif not isinstance(witness, Witness):
        raise InvalidArgumentType("witness", f"witness={witness!r} must be a Witness or its to_dict() form")
    if isinstance(witness, PooledPair):
        if direction not in (None, POOLED):
            raise InvalidArgument("direction", f"direction={direction!r}: a pooled pair holds both directions; pass "
                                               f"None or {POOLED!r}")
    elif direction is not None:
        check_choice(direction, "direction", DIRECTIONS)
    return witness


def _tallies(chosen: Sequence[Candidate]) -> tuple[tuple[Witness, ...], list[Tally]]:
    """The witnesses to count (a pooled pair's two parts each) and how each chosen event reads them."""
    witnesses: list[Witness] = []
    events: list[Tally] = []
    for candidate in chosen:
        column = len(witnesses)
        if isinstance(candidate.witness, PooledPair):
            witnesses += candidate.witness.parts
            events.append(Tally(forward=column, backward=column + 1))
        else:
            witnesses.append(candidate.witness)
            events.append(Tally(forward=column) if candidate.forward else Tally(backward=column))
    return tuple(witnesses), events


def _direction(candidate: Candidate) -> str:
    if isinstance(candidate.witness, PooledPair):
        return POOLED
    return DIRECTIONS[0] if candidate.forward else DIRECTIONS[1]


@dataclass(frozen=True)
class _Sampler:
    """Both inputs' sample streams for one audit, drawn through the backend."""

    backend: Any
    mechanism: Callable
    d: Any
    d_prime: Any
    seed: int
    dtypes: tuple[str, ...] = ()
    widths: tuple[int, ...] = ()

    def selection(self, sizes: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
        blocks = range(len(sizes))
        on_d, on_dp = map_both(self.backend, _DrawTask(self.mechanism, self.d, sizes, self.seed, SIDE_D, self.dtypes, self.widths),
                               _DrawTask(self.mechanism, self.d_prime, sizes, self.seed, SIDE_D_PRIME, self.dtypes, self.widths),
                               blocks)
        a, b = np.concatenate(on_d), np.concatenate(on_dp)
        if a.shape[1] != b.shape[1]:
            raise MechanismError(f"the mechanism returns {a.shape[1]} values per output on d but {b.shape[1]} on d_prime")
        return a, b

    def _certification_draws(self, sizes: tuple[int, ...]) -> tuple[_CertificationDraw, _CertificationDraw]:
        return tuple(_CertificationDraw(self.mechanism, data, sizes, self.seed, side, self.dtypes, self.widths)  # type: ignore[return-value]
                     for data, side in ((self.d, SIDE_D), (self.d_prime, SIDE_D_PRIME)))

    def certification_ahead(self, sizes: tuple[int, ...]) -> None:
        """Let a process backend start drawing the certification blocks (in order, both inputs) while this process
        draws the selection and searches the witness: its workers keep them and count them once the witness is known
        (``certification``). The same blocks as drawn later, so the same counts; other backends draw nothing ahead."""
        ahead = getattr(self.backend, "draw_ahead", None)
        if ahead is not None:  # values per row as probed: the widest output, its width column, its dtype column
            width = max(self.widths, default=1) + (len(self.widths) > 1) + (len(self.dtypes) > 1)
            ahead(CERTIFICATION, BothInputs(*self._certification_draws(sizes)), range(2 * len(sizes)),
                  item_bytes=max(sizes, default=0) * 8 * width)

    def certification(self, sizes: tuple[int, ...], witnesses: tuple[Witness, ...], width: int | None,
                      blocks: range | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per-block counts (blocks x witnesses) of each witness under d and under d_prime, on fresh samples
        (``blocks``: the certification blocks to draw, default all of ``sizes``); only the counts cross a process
        boundary."""
        blocks = range(len(sizes)) if blocks is None else blocks
        on_d, on_dp = self._certification_draws(sizes)
        under_d, under_dp = map_both(self.backend, _CountTask(on_d, witnesses, width), _CountTask(on_dp, witnesses, width),
                                     blocks, ahead=CERTIFICATION)
        return np.array(under_d).reshape(len(blocks), -1), np.array(under_dp).reshape(len(blocks), -1)

    def tails(self, sizes: tuple[int, ...]) -> tuple[list, list]:
        """Tail summaries (``family_tails.summarise``) of the streamed selection blocks, per input."""
        return map_both(self.backend, TailTask(self.mechanism, self.d, sizes, self.seed, SIDE_D, self.dtypes, self.widths),
                        TailTask(self.mechanism, self.d_prime, sizes, self.seed, SIDE_D_PRIME, self.dtypes, self.widths),
                        range(len(sizes)))


CERTIFICATION = "certification"  # the key of the certification blocks drawn ahead (backends.Finish)
TAIL_SEARCH = True  # stream the rest of the selection budget as tails for delta > 0 (witness_search/family_tails.py)


def audit(
    mechanism: Callable,
    d: Any,
    d_prime: Any,
    epsilon: float = 1.0,
    delta: float = 0.0,
    samples: int = 1_000_000,
    confidence_level: float = 0.95,
    seed: int = 0,
    *,
    selection_fraction: float = 0.1,
    certified_events: int = 1,
    witness: Witness | dict | None = None,
    direction: str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
    keep_details: bool = False,
    scheduler: Any = None,
    sequential: bool = True,
    looks: Sequence[int] | None = None,
    stop_for_futility: bool = False,
) -> AuditResult:
    """Certify a lower bound on ``mechanism``'s epsilon from ``samples`` runs on each of d and d_prime.

    Args:
        mechanism: ``mechanism(data, size, rng) -> ndarray`` of ``size`` outputs stacked on axis 0.
        d, d_prime: an adjacent pair of inputs (both directions are examined).
        epsilon, delta: the claimed guarantee; ``violated`` is ``epsilon_lower > epsilon``.
        samples: runs per input (selection + certification): the maximum budget; a sequential audit
            stops earlier on a certified violation (``samples_used``), else uses it all.
        confidence_level: probability with which ``epsilon_lower`` is a true lower bound.
        seed: makes the audit reproducible (independent of ``workers`` and memory chunking).
        selection_fraction: share of the samples used to choose the witness event.
        certified_events: how many of the best events are certified (the confidence is split).
        witness: certify this event (a witness or its ``to_dict()``) instead of searching one; all
            samples are then certification samples. ``direction`` picks "d -> d_prime" or
            "d_prime -> d" (default: both, with the confidence split); a pooled pair (``witness.PooledPair``)
            holds both directions in one event (direction None or "both, pooled").
        workers: processes that draw the samples, this one included (default: all cores; 1 = this process alone).
            Worker processes start only where the audit is large enough to pay for them and a core is free of
            other work (on a busy machine a second process only adds its costs); the numbers never depend on it.
        scheduler: run the blocks on a Dask cluster: its address ("tcp://host:8786") or a
            ``dask.distributed.Client`` (default: $DPAUDIT_SCHEDULER if set). Same numbers as locally.
        progress: show a progress bar on stderr (default: only on a terminal for long audits).
        keep_details: attach selection samples, the witness and per-block counts (for reports).
        sequential: certify in looks (``looks.py``: the error spent over the looks, every look's bound valid
            at once) and stop early on a certified violation; False: the whole budget, one look.
        looks: samples per input (selection included) at which a sequential audit looks, increasing; the
            budget ``samples`` is always the last look (default: the certification budget halved down to
            2048, at most 12 looks).
        stop_for_futility: a sequential audit also stops when its budget cannot certify a violation (and the
            witness search stops at a pilot far below the claim): fewer samples for a pass, but the bound
            reported is then that of a smaller sample. For verdict-only use (the gate, the pytest plugin); a
            given ``witness`` is never stopped for futility. Needs ``sequential=True``.

    Returns:
        AuditResult with ``epsilon_lower`` (holds with probability >= confidence_level), the witness
        ``event``, the counts, the ceiling and the seed.

    Example:
        >>> def laplace(data, size, rng):
        ...     return data[0] + rng.laplace(0.0, 1.0, size)
        >>> result = audit(laplace, [0.0], [1.0], epsilon=1.0, samples=100_000, seed=1, workers=1, sequential=False)
        >>> 0.9 < result.epsilon_lower <= 1.0, result.violated
        (True, False)
        >>> def half_scale(data, size, rng):  # truly 2-DP: stops at the first look
        ...     return data[0] + rng.laplace(0.0, 0.5, size)
        >>> twice = audit(half_scale, [0.0], [1.0], epsilon=1.0, samples=1_000_000, seed=1, workers=1)
        >>> twice.violated, twice.stopped, twice.samples_used < 200_000
        (True, 'violation', True)
    """
    mechanism = _check_mechanism(mechanism)
    epsilon = check_epsilon(epsilon, "epsilon")
    delta = check_delta(delta, "delta")
    samples, confidence_level, seed, selection_fraction, workers = check_run(samples, confidence_level, seed,
                                                                             selection_fraction, workers)
    certified_events = check_positive_int(certified_events, "certified_events")
    witness = _check_witness(witness, direction)
    sequential = check_flag(sequential, "sequential")
    futility = check_futility(stop_for_futility, sequential) and witness is None  # a user's witness: its whole budget

    started = time.perf_counter()
    probe, warnings, workers, scheduler = probe_run(mechanism, d, d_prime, seed, samples, workers, scheduler)
    n_select = 0 if witness is not None else selection_size(samples, selection_fraction)
    n_stream = stream_size(samples, selection_fraction, n_select, delta) if witness is None and TAIL_SEARCH else 0
    n_certify = samples - n_select - n_stream
    plan = plan_looks(n_certify, sequential=sequential, looks=looks, samples=samples, offset=n_select + n_stream)
    select_sizes, certify_sizes = tuple(block_sizes(n_select)), plan.sizes
    pilot = pilot_rows(n_select, pilot=futility and looks is None)  # a pilot search first (selection_looks.py)
    stream_sizes = tuple(block_sizes(n_stream))
    bar = Progress(2 * (len(select_sizes) + len(certify_sizes) + len(stream_sizes)), enabled=progress)
    backend = choose_backend(workers, 2 * samples, mechanism, (d, d_prime), bar, scheduler=scheduler)
    draw = _Sampler(backend, mechanism, d, d_prime, seed, *probe_outcomes(mechanism, d, d_prime, seed))

    pilot_stop = False  # whether the witness search stopped at its pilot (futility)
    with backend:
        if witness is not None:
            if isinstance(witness, PooledPair):  # both directions in one event
                directions = [True]
            else:
                directions = [direction == DIRECTIONS[0]] if direction is not None else [True, False]
            chosen = candidates = [Candidate(witness, forward, math.nan) for forward in directions]
            width = None
            a, b = draw.selection(tuple(block_sizes(min(DETAIL_ROWS, samples)))) if keep_details else (None, None)
        else:
            if not stream_sizes:  # no map of tails before the search: the workers may start with the selection
                draw.certification_ahead(certify_sizes)
            a, b = draw.selection(select_sizes)  # the search sees these samples only
            z = float(norm.isf(side_alpha(confidence_level, certified_events)))
            candidates = None
            if pilot is not None:  # its own generator: the whole batch's search below is the fixed-budget one
                with one_numeric_thread():  # small fits: a second BLAS/OpenMP thread slows them (threads.py)
                    candidates = search_witnesses(a[:pilot], b[:pilot], n_certify=n_certify, z_certify=z, delta=delta,
                                                  rng=np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2, 1))))
                pilot_stop = pilot_futile(candidates, epsilon)
                if not pilot_stop:
                    candidates = None
            if candidates is None:
                search_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
                streamed = draw.tails(stream_sizes) if stream_sizes else None  # (epsilon, delta): the tail family's input
                if stream_sizes:
                    draw.certification_ahead(certify_sizes)  # workers draw while this process searches
                with one_numeric_thread():
                    candidates = search_witnesses(a, b, n_certify=n_certify, z_certify=z, delta=delta, rng=search_rng,
                                                  streamed=streamed)
            else:
                n_stream = 0  # the tails are streamed for the whole batch's search only
            width = a.shape[1]
            degenerate = degenerate_warning(a, b)
            if degenerate:
                warnings.append(degenerate)
            if width > 1 and not boosting_available():  # optional extra 'learn': say what was not searched
                warnings.append(BOOSTING_MISSING)
            chosen = select_for_certification(candidates, certified_events,
                                              lambda c: _support_restricted(mechanism, d_prime if c.forward else d, c),
                                              selection=(a, b))
        alpha = side_alpha(confidence_level, max(1, len(chosen)))
        ceiling = certification_ceiling(n_certify, delta, alpha * plan.shares[-1],
                                        pooled=any(isinstance(c.witness, PooledPair) for c in chosen))
        method = (f"selection {n_select}" + (f" (+ {n_stream} streamed for tail half-lines)" if n_stream else "")
                  + (f" (the search stopped for futility at its pilot of {pilot} rows)" if pilot_stop else "")
                  + f" + certification {n_certify} per input; "
                  f"Clopper-Pearson, Bonferroni over {max(1, len(chosen))} certified event-direction(s)"
                  + (f"; sequential: {len(plan.looks)} looks, error spent {FINAL_SHARE:g} at the last" if len(plan.looks) > 1 else ""))
        if not chosen:
            return AuditResult(0.0, epsilon, delta, False, "none (the outputs did not separate the inputs)", "-", 0, 0,
                               samples, n_select + n_stream, n_certify, 0.0, 1.0, ceiling, confidence_level, seed, 1,
                               False, method, time.perf_counter() - started, warnings=tuple(warnings),
                               samples_used=n_select + n_stream, looks=0, stopped="futility" if futility else "budget")

        def proof(index: int, count_q: int, p_low: float) -> bool:  # epsilon = inf by the exact support oracle
            candidate = chosen[index]
            return count_q == 0 and p_low > delta and _impossible_under(mechanism, d_prime if candidate.forward else d,
                                                                         candidate.witness)

        witnesses, events = _tallies(chosen)
        outcome = certify_in_looks(plan, lambda blocks: draw.certification(certify_sizes, witnesses, width, blocks),
                                   events, delta, alpha, epsilon, proof, settled=pilot_stop, futility=futility)

    best = outcome.best
    bound, p_low, q_high, count_p, count_q, index, proven = (best.bound, best.p_lower, best.q_upper, best.count_p,
                                                             best.count_q, best.index, best.proven)
    candidate = chosen[index]
    details = None
    trials = events[index].trials(best.n)  # behind count_p and count_q: n per input, 2 n for a pooled pair
    if keep_details:
        drawn = plan.ends[best.look]  # the blocks behind the reported bound
        per_block = [events[index].counts(row_d, row_dp) for row_d, row_dp in zip(outcome.per_block_d[:drawn],
                                                                                   outcome.per_block_dp[:drawn])]
        details = AuditDetails(
            witness=candidate.witness,
            sample_d=None if a is None else a[:DETAIL_ROWS],
            sample_d_prime=None if b is None else b[:DETAIL_ROWS],
            block_sizes=np.asarray(certify_sizes[:drawn]) * (trials // best.n),
            block_counts_p=np.array([p for p, _ in per_block], dtype=np.int64),
            block_counts_q=np.array([q for _, q in per_block], dtype=np.int64),
            alpha=best.alpha,
        )
    return AuditResult(
        epsilon_lower=bound,
        epsilon=epsilon,
        delta=delta,
        violated=bound > epsilon,
        event=candidate.witness.describe(),
        direction=_direction(candidate),
        count_p=count_p,
        count_q=count_q,
        samples=samples,
        selection_samples=n_select + n_stream,
        certification_samples=trials,
        p_lower=p_low,
        q_upper=q_high,
        ceiling=ceiling,
        confidence_level=confidence_level,
        seed=seed,
        certified_events=len(chosen),
        one_sided_support=count_q == 0 and count_p > 0,
        method=method,
        seconds=time.perf_counter() - started,
        candidates=tuple({"event": c.witness.describe(), "direction": _direction(c),
                          "predicted_bound": c.predicted} for c in candidates[:5]),
        witness=candidate.witness.to_dict(),
        details=details,
        support_proof=proven,
        warnings=tuple(warnings),
        samples_used=n_select + n_stream + outcome.n_used,
        looks=outcome.looks,
        stopped=outcome.stopped,
        look_schedule=tuple(n_select + n_stream + n for n in plan.looks),
    )
