"""Reproducible, chunked, parallel sampling of a black-box mechanism.

Samples are drawn in fixed-size *blocks*; block b of stream (side, phase) uses its own generator seeded
by ``SeedSequence(seed, spawn_key=(side, phase, b))``. Results therefore depend only on the seed, never
on how blocks are grouped into memory chunks or spread over workers. The statistics never see the
backend: a backend maps a picklable per-block task over block indices and returns per-block results,
so a distributed backend (a cluster's map) can be added by implementing
:class:`~dpaudit.auditor.backends.Backend`. Layers: the backends (``backends.py``: serial, process;
``dask_backend.py``: a Dask cluster) and the output-type handling (``outcomes.py``) sit below this module;
:func:`choose_backend` picks one backend per audit.

RNG discipline. Third-party mechanisms often ignore the ``rng`` they are given and draw from the global
``numpy.random`` or ``random`` state. Before each block the sampler therefore seeds both global states
from the block's own seed sequence (and restores the caller's state afterwards), so such mechanisms are
reproducible and their blocks independent, in one process or across forked workers (which would
otherwise replay identical copies of the parent's global state). :func:`probe_randomness` detects the
mechanisms that still read an unseeded source (outputs differ between two runs of the same block) or
that ignore every seed (identical outputs for different seeds).
"""

from __future__ import annotations

import os
import pickle
import random
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import MechanismError
from .backends import BLOCK_SIZE, Backend, ProcessBackend, Progress, SerialBackend
from .dask_backend import DaskBackend, resolve_scheduler
from .outcomes import append_dtype_column, check_dtype, object_outputs, output_width

__all__ = [
    "BLOCK_SIZE",
    "SIDE_D",
    "SIDE_D_PRIME",
    "PHASE_SELECT",
    "PHASE_CERTIFY",
    "PHASE_ACCURACY",
    "PHASE_PROBE",
    "draw_raw_block",
    "seeded_global_state",
    "probe_randomness",
    "RandomnessProbe",
    "choose_backend",
    "canonical_outputs",
    "validated_outputs",
    "draw_block",
    "block_sizes",
    "probe_outcomes",
    "probe_dtypes",
]

SIDE_D, SIDE_D_PRIME = 0, 1
PHASE_SELECT, PHASE_CERTIFY, PHASE_ACCURACY, PHASE_PROBE = 0, 1, 2, 3
_GLOBAL_STATE_KEY = 1  # extra spawn-key word: the global states' seeds never equal the rng's stream
_SIDE_NAMES = {SIDE_D: "d", SIDE_D_PRIME: "d_prime"}
_PHASE_NAMES = {PHASE_SELECT: "selection", PHASE_CERTIFY: "certification", PHASE_ACCURACY: "accuracy", PHASE_PROBE: "probe"}


def block_sizes(total: int, block: int = BLOCK_SIZE) -> list[int]:
    """Sizes of the blocks that make up ``total`` samples."""
    full, rest = divmod(total, block)
    return [block] * full + ([rest] if rest else [])


def validated_outputs(raw: Any, size: int, where: str) -> np.ndarray:
    """Check a mechanism's batch: a real-valued array of ``size`` outputs stacked on axis 0, of shape
    (size,) or (size, d). Raises MechanismError naming what is wrong."""
    if isinstance(raw, (list, tuple)):
        try:
            raw = np.asarray(raw)
        except (ValueError, TypeError) as exc:  # ragged lists and the like
            found = sorted({type(item).__name__ for item in list(raw)[:1000]})
            raise MechanismError(f"{where}: the mechanism returned a list that is not a rectangular array of numbers "
                                 f"(element types {', '.join(found)}: {exc})") from exc
    if not isinstance(raw, np.ndarray):
        raise MechanismError(f"{where}: the mechanism returned {type(raw).__name__}, expected a numpy array of {size} outputs")
    if raw.ndim == 0 or raw.shape[0] != size:
        raise MechanismError(f"{where}: the mechanism returned shape {raw.shape} for size={size}; outputs must be stacked on axis 0")
    if raw.ndim > 2:
        raise MechanismError(f"{where}: outputs must have shape (size,) or (size, d), got {raw.shape}")
    if raw.dtype == object:  # audited when every element is a real number of one type, else refused
        raw = object_outputs(raw, where)
    if raw.dtype == object or not (np.issubdtype(raw.dtype, np.number) or raw.dtype == bool) or np.issubdtype(raw.dtype, np.complexfloating):
        raise MechanismError(f"{where}: outputs must be real numbers, got dtype {raw.dtype}")
    return raw


def canonical_outputs(raw: Any, size: int, where: str) -> np.ndarray:
    """A validated batch as a 2-d float64 array (one row per output).

    NaN is kept as an ordinary symbol (every NaN made identical) and -0.0 becomes 0.0, so equal outputs
    have equal bytes.
    """
    out = np.array(validated_outputs(raw, size, where), dtype=np.float64, copy=True).reshape(size, -1)
    out[np.isnan(out)] = np.nan
    # -0.0 is kept (the sign of zero is a searched feature); atoms compare values, and -0.0 == 0.0
    return out


def _generator(seed: int, side: int, phase: int, block: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(side, phase, block)))


@contextmanager
def seeded_global_state(seed: int, side: int, phase: int, block: int) -> Iterator[None]:
    """Seed the global ``numpy.random`` and ``random`` states from the block's seed sequence for the
    duration of the block, then restore the caller's states."""
    saved_numpy, saved_python = np.random.get_state(), random.getstate()
    words = np.random.SeedSequence(seed, spawn_key=(side, phase, block, _GLOBAL_STATE_KEY)).generate_state(8)
    np.random.seed(words)
    random.seed(int.from_bytes(words.tobytes(), "little"))
    try:
        yield
    finally:
        np.random.set_state(saved_numpy)
        random.setstate(saved_python)


def block_label(side: int, phase: int, block: int, seed: int) -> str:
    """Where a block comes from, for error messages: input, phase, block index and seed."""
    return f"mechanism on {_SIDE_NAMES.get(side, side)} ({_PHASE_NAMES.get(phase, phase)} block {block}, seed {seed})"


def draw_raw_block(mechanism: Callable, data: Any, size: int, seed: int, side: int, phase: int, block: int) -> np.ndarray:
    """Draw one block of ``size`` validated outputs, as the mechanism shapes them; a crash in the
    mechanism becomes MechanismError naming the input, the block and the seed."""
    where = block_label(side, phase, block, seed)
    try:
        with seeded_global_state(seed, side, phase, block):
            raw = mechanism(data, size, _generator(seed, side, phase, block))
    except MechanismError as exc:
        raise MechanismError(f"{where}: {exc}") from exc
    except Exception as exc:  # the mechanism is user code: report any crash clearly
        raise MechanismError(f"{where} raised {type(exc).__name__}: {exc}") from exc
    return validated_outputs(raw, size, where)


@dataclass(frozen=True)
class RandomnessProbe:
    """What :func:`probe_randomness` found about a mechanism's use of randomness.

    ``unseeded``: two runs of the same block differed, or the mechanism declares ``reproducible = False``
    (as :func:`dpaudit.adapters.opendp` does), so the mechanism reads a source the sampler does not seed (results are not reproducible, and forked workers may replay copies of it: audits run it in
    one process). ``data_blind``: for the same seed the outputs on d and d_prime were identical.
    """

    unseeded: bool
    data_blind: bool
    warnings: tuple[str, ...] = field(default=())


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def probe_randomness(mechanism: Callable, d: Any, d_prime: Any | None, seed: int, size: int = 256) -> RandomnessProbe:
    """Check a mechanism's randomness on small probe blocks (their own streams: audits are unchanged).

    Raises MechanismError when the outputs vary within a block but are identical for two different seeds
    (the mechanism ignores every seed: its samples would repeat from block to block, so no confidence
    statement would hold).
    """
    first = draw_raw_block(mechanism, d, size, seed, SIDE_D, PHASE_PROBE, 0)
    again = draw_raw_block(mechanism, d, size, seed, SIDE_D, PHASE_PROBE, 0)
    other = draw_raw_block(mechanism, d, size, seed, SIDE_D, PHASE_PROBE, 1)
    varies = first.shape[0] > 1 and not all(_same(first[i], first[0]) for i in range(1, min(first.shape[0], 64)))
    warnings = []
    declared = getattr(mechanism, "reproducible", True) is False  # e.g. dpaudit.adapters.opendp: OS randomness
    unseeded = declared or not _same(first, again)
    if declared:
        note = getattr(mechanism, "reproducibility_note", None) or "the mechanism declares itself not reproducible"
        warnings.append(f"{note}; it was run in a single process so its samples stay independent")
    elif unseeded:
        warnings.append("the mechanism's outputs differ between two runs with the same seed: it reads a random source "
                        "the sampler does not seed (not the rng it is given, nor the global numpy.random/random state); "
                        "it was run in a single process so its samples stay independent, and results are not reproducible")
    elif varies and _same(first, other):
        raise MechanismError("the mechanism's outputs vary within a block but are identical for two different seeds: it "
                             "ignores the rng it is given and seeds its own generator, so its samples repeat from block "
                             "to block and no confidence statement would hold; draw from the rng argument")
    data_blind = False
    if d_prime is not None and not unseeded:
        on_other_input = draw_raw_block(mechanism, d_prime, size, seed, SIDE_D, PHASE_PROBE, 0)
        data_blind = _same(first, on_other_input)
        if data_blind:
            warnings.append(f"the outputs on d and d_prime were identical for the same random seed ({size} draws): the "
                            "mechanism may ignore its input or the pair may not differ; a pass says nothing about privacy")
    return RandomnessProbe(unseeded, data_blind, tuple(warnings))


def draw_block(mechanism: Callable, data: Any, size: int, seed: int, side: int, phase: int, block: int,
               dtypes: tuple[str, ...] = ()) -> np.ndarray:
    """Draw one block of ``size`` canonical outputs (2-d float64).

    ``dtypes`` (see ``outcomes.py``): the dtypes probed on the two inputs; one dtype: a block of
    another dtype is refused; several: a column with the block's dtype code is appended to the outputs.
    """
    raw = draw_raw_block(mechanism, data, size, seed, side, phase, block)
    if not dtypes:
        return canonical_outputs(raw, size, "mechanism")
    check_dtype(raw, dtypes, block_label(side, phase, block, seed))
    out = canonical_outputs(raw, size, "mechanism")
    return append_dtype_column(out, raw.dtype) if len(dtypes) > 1 else out


def _picklable(*objects: object) -> bool:
    try:
        pickle.dumps(objects)
        return True
    except Exception:
        return False


def choose_backend(workers: int | None, total_samples: int, mechanism: Callable, data: Iterable,
                   progress: Progress | None, scheduler: Any = None) -> Backend:
    """A Dask cluster when a scheduler is given (argument or $DPAUDIT_SCHEDULER); else processes when more
    than one worker is wanted, the job is large and everything pickles; else this process."""
    scheduler = resolve_scheduler(scheduler)
    if scheduler is not None:
        return DaskBackend(scheduler, progress)
    count = (os.cpu_count() or 1) if workers is None else workers
    if count > 1 and total_samples >= 4 * BLOCK_SIZE and _picklable(mechanism, *data):
        return ProcessBackend(count, progress)
    return SerialBackend(progress)


def probe_dtypes(mechanism: Any, d: Any, d_prime: Any, seed: int, size: int = 64) -> tuple[str, ...]:
    """The dtypes of small probe batches on d and on d_prime (their own streams: audits are unchanged),
    sorted and distinct: one name when they agree, several when the dtype depends on the input."""
    return probe_outcomes(mechanism, d, d_prime, seed, size)[0]


def probe_outcomes(mechanism: Any, d: Any, d_prime: Any, seed: int, size: int = 64) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The dtypes (as :func:`probe_dtypes`) and the output widths (values per output) of small probe batches
    on d and on d_prime, each sorted and distinct."""
    raws = [draw_raw_block(mechanism, data, size, seed, side, PHASE_PROBE, 4) for data, side in ((d, SIDE_D), (d_prime, SIDE_D_PRIME))]
    return tuple(sorted({str(raw.dtype) for raw in raws})), tuple(sorted({output_width(raw) for raw in raws}))
