"""Attributing the output shift of one adjacent pair to the noise draws that produced it.

For each seed w the mechanism runs once on d and once on d' (identical draws while the sequences of draw
calls agree). The replay then establishes, by measurement, the model ``M(x; w, z) = c(x) + P z`` where z
are the noise primitives' standardised values and w everything else drawn:

1. the sequences of draws agree on every seed (else: control flow diverges, hand to the audit);
2. the shift ``M(d; w) - M(d'; w)`` is the same for every seed, and the output does not change when the
   randomness other than the noise is redrawn with the noise held fixed (else the output is not the
   data's value plus noise -- a selection, a comparison, a subsample -- and the replay cannot decide);
3. ``P`` is measured column by column (one perturbed run per noise element) and the model is checked
   with random perturbations of the noise at several magnitudes, on d, on d' and on a second seed, and
   against the other seeds' runs (their outputs must differ by ``P`` times their noise's difference) (else
   not affine: post-processing such as clipping, rounding or argmax -- undecided; or the noise enters
   differently on d and d' -- a data-dependent noise scale, which diverges);
4. the noise shift ``delta_z`` solving ``P delta_z = shift`` is the pair's privacy loss: exact when the
   moved columns of P are independent; when they are not, a lower bound from the outputs that each carry
   one noise element alone (Gaussian: the exact image covariance); a shift outside the range of P (the
   outputs move where no noise reaches) gives epsilon = inf, assuming the affine model checked with
   perturbations up to :data:`PROBE_SCALES` standard units holds everywhere.

Noise the replay cannot move is never taken for noise: noise drawn from a generator the mechanism seeds itself
(``default_rng(12345)``, the global state after ``np.random.seed(0)``) is the same under every seed, and noise
drawn but not reaching the outputs (multiplied by zero, discarded) leaves them unchanged at every perturbation,
up to :data:`EXTREME_PERTURBATION` standard units. When the outputs then stay the same under every seed and move
between d and d', the mechanism is deterministic on the pair as observed: epsilon = inf, a finding; otherwise
the pair is undecided with the reason. Several noises reaching one output (Laplace plus Gaussian) are bracketed
from the exact law of their sum (``privacy.laplace_gaussian_lower``) and, on a single output, above by either
noise alone; a bracket [0, inf] decides nothing and is undecided.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .privacy import ShiftPrivacy, laplace_gaussian_lower, shift_privacy
from .recording import DISCRETE_FAMILIES, Draw, seeded_inside
from .result import DECIDED, DIVERGES, UNDECIDED, DrawShift, PairReplay
from .runs import Run, first_difference, run_once

__all__ = ["replay_pair", "PROBE_SCALES", "MAX_NOISE_ELEMENTS", "FROZEN_SWAPS", "EXTREME_PERTURBATION", "Claim"]

#: Magnitudes (standard units) of the random noise perturbations that check the affine model.
PROBE_SCALES: tuple[float, ...] = (1.0, 30.0, 1000.0)
#: Other draws of the non-noise randomness under which the output must not change (noise held fixed).
FROZEN_SWAPS: int = 32
#: Pairs whose runs draw more noise elements than this are not attributed (one run per element).
MAX_NOISE_ELEMENTS: int = 256
#: Standard units of the perturbation that must leave the outputs unchanged before noise is called unused (a
#: selection among outputs, report noisy max with a clear winner, flips long before).
EXTREME_PERTURBATION: float = 1e12
#: Relative tolerance of float comparisons of outputs.
_RELATIVE = 1e-9

Claim = Any  # (epsilon, delta) tuple or a PrivacyEvent; interpreted by the caller's ``judge``


def _equal_nan(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(np.isnan(a), np.isnan(b)))


def _difference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    same = (np.isnan(a) & np.isnan(b)) | (a == b)  # equal infinities too
    with np.errstate(invalid="ignore"):
        return np.where(same, 0.0, a - b)


def _tolerance(*arrays: np.ndarray) -> np.ndarray:
    magnitude = np.zeros_like(arrays[0])
    for array in arrays:
        magnitude = np.maximum(magnitude, np.nan_to_num(np.abs(array), nan=0.0, posinf=0.0))
    return _RELATIVE * (1.0 + magnitude)


def _unit(draws: Sequence[Draw], element: int) -> dict[int, np.ndarray]:
    """A perturbation of one noise element (global element index over the primitive draws) by +1."""
    for draw in draws:
        if element < draw.elements:
            shift = np.zeros(draw.shape)
            shift.reshape(-1)[element] = 1.0
            return {draw.index: shift}
        element -= draw.elements
    raise IndexError(element)


def _split(draws: Sequence[Draw], vector: np.ndarray) -> dict[int, np.ndarray]:
    out, start = {}, 0
    for draw in draws:
        out[draw.index] = vector[start:start + draw.elements].reshape(draw.shape)
        start += draw.elements
    return out


def _scales_differ(base: Run, other: Run) -> str | None:
    for draw, other_draw in zip(base.primitives, other.primitives):
        if not np.allclose(draw.scale, other_draw.scale, rtol=_RELATIVE, atol=0.0):
            return (f"noise scale depends on the data: {draw.describe()} has scale {float(np.max(draw.scale)):.6g} on "
                    f"d, {float(np.max(other_draw.scale)):.6g} on d'")
    return None


def replay_pair(mechanism: Any, d: Any, d_prime: Any, seeds: Sequence[int], judge: Any,
                probe_seed: int = 0) -> PairReplay:
    """Replay one pair with the run seeds ``seeds``; ``judge(laplace, mu, discrete)`` -> (violated, lower, upper)
    compares a noise shift with the claim."""
    started = time.perf_counter()

    def done(status: str, **fields: Any) -> PairReplay:
        return PairReplay(d, d_prime, status, seconds=time.perf_counter() - started, **fields)

    base = [run_once(mechanism, d, seed) for seed in seeds]
    other = [run_once(mechanism, d_prime, seed) for seed in seeds]
    for run, run_prime in zip(base, other):
        where = first_difference(run, run_prime) or _scales_differ(run, run_prime)
        if where is not None:
            return done(DIVERGES, divergence=where, reason="the draws differ between d and d'")
        if run.outputs.shape != run_prime.outputs.shape:
            return done(DIVERGES, divergence=f"output shape {run.outputs.shape} on d, {run_prime.outputs.shape} on d'",
                        reason="the output's shape depends on the data")
    shift = _difference(base[0].outputs, other[0].outputs)
    norms = dict(shift_l1=float(np.abs(shift).sum()), shift_l2=float(np.linalg.norm(shift)))
    tolerance = _tolerance(base[0].outputs, other[0].outputs)
    for run, run_prime in zip(base, other):
        if not _equal_nan(run.outputs, run_prime.outputs) or np.any(
                np.abs(_difference(run.outputs, run_prime.outputs) - shift) > _tolerance(run.outputs, run_prime.outputs)
                + tolerance):
            return done(UNDECIDED, reason="the shift M(d; w) - M(d'; w) changes with the randomness w: the output is "
                                          "not the data's value plus noise (a selection, comparison or subsample)",
                        **norms)
    frozen = _frozen_randomness_matters(mechanism, d, d_prime, seeds, base, other)
    if frozen is not None:
        return done(UNDECIDED, reason=frozen, **norms)
    moves = bool(np.any(np.abs(shift) > tolerance))
    fixed_outputs = _fixed(base) and _fixed(other)
    inside = _fixed_noise(base)
    if inside:
        why = (f"the noise {inside[0].describe()} comes from a generator seeded inside the mechanism: it is the same "
               "under every seed, whatever randomness the mechanism is handed")
        if fixed_outputs and moves:
            return _deterministic(done, judge, why + f"; the outputs stayed the same under {len(seeds)} seeds and "
                                                   "differ between d and d'", len(seeds), norms)
        return done(UNDECIDED, reason=why + " (seed it from the rng argument): the replay cannot move it", **norms)
    primitives = base[0].primitives
    elements = sum(draw.elements for draw in primitives)
    if elements == 0:
        random_outputs = any(not _equal_nan(run.outputs, base[0].outputs) or np.any(
            np.abs(_difference(run.outputs, base[0].outputs)) > tolerance) for run in base[1:])
        if random_outputs or any(run.draws for run in base):
            return done(UNDECIDED, reason="no additive noise draw the replay can attribute the shift to (the "
                                          "randomness is uniforms, integers or bits)", **norms)
        violated, lower, upper = judge(np.array([math.inf if moves else 0.0]), 0.0, ())
        return done(DECIDED, reason="the mechanism is deterministic" + (" and its output moves" if moves else ""),
                    laplace_shift=math.inf if moves else 0.0, gaussian_mu=0.0, epsilon_lower=lower,
                    epsilon_upper=upper, bound="exact", violated=violated, **norms)
    if elements > MAX_NOISE_ELEMENTS:
        return done(UNDECIDED, reason=f"{elements} noise elements per run (the replay attributes at most "
                                      f"{MAX_NOISE_ELEMENTS})", **norms)
    # the noise map P, one perturbed run per element
    columns = []
    for element in range(elements):
        probe = run_once(mechanism, d, seeds[0], _unit(primitives, element))
        if probe.signature != base[0].signature or not _equal_nan(probe.outputs, base[0].outputs):
            return done(UNDECIDED, reason="moving one noise draw changes the draws or the NaN pattern (the output "
                                          "is not affine in the noise)", **norms)
        columns.append(_difference(probe.outputs, base[0].outputs))
    matrix = np.stack(columns, axis=1)
    # the affine model, checked with random perturbations on d, on d' and on a second seed
    generator = np.random.default_rng(probe_seed)
    discrete = np.concatenate([np.full(draw.elements, draw.family in DISCRETE_FAMILIES) for draw in primitives])
    checks = [(d, seeds[0], base[0], "d"), (d_prime, seeds[0], other[0], "d'")]
    if len(seeds) > 1:
        checks.append((d, seeds[1], base[1], "d"))
    for magnitude in PROBE_SCALES:
        vector = generator.standard_normal(elements) * magnitude
        vector[discrete] = np.round(vector[discrete])  # integer noise moves in integer steps
        predicted = matrix @ vector
        for data, seed, reference, which in checks:
            if reference.primitives and sum(p.elements for p in reference.primitives) != elements:
                return done(UNDECIDED, reason="the number of noise elements changes with the seed", **norms)
            probe = run_once(mechanism, data, seed, _split(reference.primitives, vector))
            moved = _difference(probe.outputs, reference.outputs)
            slack = _tolerance(probe.outputs, reference.outputs) + _RELATIVE * np.abs(matrix) @ np.abs(vector)
            if probe.signature != reference.signature or not _equal_nan(probe.outputs, reference.outputs) or np.any(
                    np.abs(moved - predicted) > slack):
                if which == "d'" and probe.signature == reference.signature:
                    return done(DIVERGES, divergence="the output responds differently to the same noise on d and d' "
                                                     "(a data-dependent noise scale or noise map)",
                                reason="the noise's effect depends on the data", **norms)
                return done(UNDECIDED, reason=f"the output is not affine in the noise (checked at {magnitude:g} "
                                              "standard units): post-processing such as clipping, rounding or a "
                                              "selection", **norms)
    # the same model across the seeds: their outputs differ by P times the difference of their own noise
    for runs in (base, other):
        for run in runs[1:]:
            moved_noise = _standard_noise(run) - _standard_noise(runs[0])
            slack = _tolerance(run.outputs, runs[0].outputs) + _RELATIVE * np.abs(matrix) @ np.abs(moved_noise)
            if np.any(np.abs(_difference(run.outputs, runs[0].outputs) - matrix @ moved_noise) > slack):
                return done(UNDECIDED, reason="the outputs under other seeds are not the noise map applied to their "
                                              "noise: the output is not affine in the noise (a selection or "
                                              "comparison)", **norms)
    if not np.any(np.abs(matrix) > _RELATIVE * (1.0 + np.abs(matrix).max())) and fixed_outputs and moves and \
            _never_reached(mechanism, ((d, base[0]), (d_prime, other[0])), seeds[0], primitives, generator):
        return _deterministic(done, judge, f"the noise drawn ({primitives[0].describe()}{', ...' if len(primitives) > 1 else ''}) "
                                           f"never reaches the outputs (unchanged up to {EXTREME_PERTURBATION:g} standard "
                                           f"units: multiplied by zero or discarded); the outputs stayed the same under "
                                           f"{len(seeds)} seeds and differ between d and d'", len(seeds), norms)
    return _attribute(done, matrix, shift, tolerance, primitives, judge, norms)


def _fixed_noise(runs: Sequence[Run]) -> list[Draw]:
    """The noise draws of a generator the mechanism seeded itself whose values are the same under every seed (a
    generator seeded from the rng it is handed changes with it, and is replayed as any other)."""
    fixed = []
    for draw in runs[0].primitives:
        if seeded_inside(draw) and all(other.draws[draw.index].value is not None and np.array_equal(
                other.draws[draw.index].value, draw.value, equal_nan=True) for other in runs[1:]):
            fixed.append(draw)
    return fixed


def _fixed(runs: Sequence[Run]) -> bool:
    """Whether every run gave the first run's outputs (the outputs do not change with the seed)."""
    return all(_equal_nan(run.outputs, runs[0].outputs) and not np.any(
        np.abs(_difference(run.outputs, runs[0].outputs)) > _tolerance(run.outputs, runs[0].outputs)) for run in runs[1:])


def _never_reached(mechanism: Any, references: Sequence[tuple[Any, Run]], seed: int, primitives: Sequence[Draw],
                   generator: np.random.Generator) -> bool:
    """Whether moving every noise element by EXTREME_PERTURBATION standard units (random signs) leaves the draws and
    the outputs of each reference run unchanged."""
    elements = sum(draw.elements for draw in primitives)
    vector = np.where(generator.random(elements) < 0.5, -1.0, 1.0) * EXTREME_PERTURBATION
    for data, reference in references:
        probe = run_once(mechanism, data, seed, _split(reference.primitives, vector))
        if probe.signature != reference.signature or not _equal_nan(probe.outputs, reference.outputs) or np.any(
                np.abs(_difference(probe.outputs, reference.outputs)) > _tolerance(probe.outputs, reference.outputs)):
            return False
    return True


def _deterministic(done: Any, judge: Any, reason: str, seeds: int, norms: dict[str, float]) -> PairReplay:
    """A finding: the outputs are fixed per input and differ between d and d' (epsilon = inf)."""
    violated, lower, upper = judge(np.array([math.inf]), 0.0, ())
    return done(DECIDED, reason=reason, laplace_shift=math.inf, gaussian_mu=0.0, epsilon_lower=lower,
                epsilon_upper=upper, violated=violated,
                bound=f"assumes the outputs are fixed per input, as on the {seeds} seeds replayed", **norms)


def _standard_noise(run: Run) -> np.ndarray:
    """A run's noise in the units the replay moves it by: (value - location) / unit, every element."""
    parts = [((draw.value - draw.location) / draw.unit).reshape(-1) for draw in run.primitives]
    return np.concatenate(parts) if parts else np.zeros(0)


def _frozen_randomness_matters(mechanism: Any, d: Any, d_prime: Any, seeds: Sequence[int], base: Sequence[Run],
                               other: Sequence[Run]) -> str | None:
    """Why the shift cannot be attributed to the noise alone, or None.

    The output must depend on the noise primitives only. When a run draws anything else (uniforms,
    integers, bits), it is repeated under :data:`FROZEN_SWAPS` other seeds with the first seed's noise
    values forced in, on d and on d'; the outputs must stay the first seed's. Otherwise the mechanism
    mixes over randomness the replay does not move (a subsample, a selection, independent dither) and the
    loss at frozen randomness is not the mixture's. A dependence on an event rarer than about
    1/FROZEN_SWAPS can go unseen: that is the assumption under which such a pair is decided.
    """
    if any(run.signature != base[0].signature for run in base[1:]):
        return "the sequence of draws changes with the randomness (not only with the data)"
    if not any(draw.family is None for draw in base[0].draws):
        return None  # nothing but noise primitives
    noise = {draw.index: draw.value - draw.location for draw in base[0].primitives}
    swaps = [int(s) for s in np.random.SeedSequence(seeds[0], spawn_key=(3,)).generate_state(FROZEN_SWAPS)]
    for seed in swaps:
        for data, reference in ((d, base[0]), (d_prime, other[0])):
            forced = run_once(mechanism, data, seed, overrides=noise)
            if forced.signature != reference.signature:
                return "the sequence of draws changes with the randomness (not only with the data)"
            if not _equal_nan(forced.outputs, reference.outputs) or np.any(
                    np.abs(_difference(forced.outputs, reference.outputs)) > _tolerance(forced.outputs, reference.outputs)):
                return ("the output depends on randomness other than the additive noise (a subsample, a selection, "
                        "independent dither): the loss at frozen randomness is not the mechanism's")
    return None


def _attribute(done: Any, matrix: np.ndarray, shift: np.ndarray, tolerance: np.ndarray,
               primitives: Sequence[Draw], judge: Any, norms: dict[str, float]) -> PairReplay:
    families = np.concatenate([np.full(draw.elements, draw.family, dtype=object) for draw in primitives])
    used = np.any(np.abs(matrix) > _RELATIVE * (1.0 + np.abs(matrix).max()), axis=0)
    if not used.any():
        return done(UNDECIDED, reason="no noise draw moves the outputs at the magnitudes probed: the noise is unused "
                                      "or selects among outputs (report noisy max with a clear winner)", **norms)
    moved = matrix[:, used]
    solution, *_ = np.linalg.lstsq(moved, shift, rcond=None) if moved.size else (np.zeros(0),)
    residual = shift - moved @ solution if moved.size else shift
    if np.any(np.abs(residual) > 1e3 * tolerance + 1e-6 * np.abs(shift).max()):
        if not used.all():  # an idle noise draw may be a selection that did not flip: no verdict
            return done(UNDECIDED, reason="the outputs move where no noise reaches, and some noise draws do not move "
                                          "the outputs (possibly a selection that did not change)", **norms)
        violated, lower, upper = judge(np.array([math.inf]), 0.0, ())
        return done(DECIDED, reason="the outputs move in a direction no noise draw reaches", laplace_shift=math.inf,
                    gaussian_mu=0.0, epsilon_lower=lower, epsilon_upper=upper, violated=violated,
                    bound=f"assumes the output is affine in the noise (checked up to {max(PROBE_SCALES):g} "
                          "standard units)", **norms)
    rank = np.linalg.matrix_rank(moved) if moved.size else 0
    noise_shift = np.zeros(matrix.shape[1])
    if rank == moved.shape[1]:
        noise_shift[used] = solution
        bound = "exact"
    elif np.all(families[used] == "gaussian"):
        covariance = moved @ moved.T
        mu = float(math.sqrt(max(0.0, float(shift @ np.linalg.pinv(covariance) @ shift))))
        violated, lower, upper = judge(np.zeros(0), mu, ())
        return done(DECIDED, reason="Gaussian noise through a non-injective map: the image covariance",
                    laplace_shift=0.0, gaussian_mu=mu, epsilon_lower=lower, epsilon_upper=upper, violated=violated,
                    bound="exact", **norms)
    else:
        noise_shift = _single_noise_rows(matrix, shift, tolerance)
        bound = "lower bound: only the outputs that each carry one noise element alone"
    laplace = noise_shift[families == "laplace"]
    mu = float(np.linalg.norm(noise_shift[families == "gaussian"]))
    integer_events, off_grid = _integer_shifts(noise_shift, families, primitives)
    if off_grid:
        violated, lower, upper = judge(np.array([math.inf]), 0.0, ())
        return done(DECIDED, reason="integer noise moved by a fraction of a step: the outputs on d and d' lie on "
                                    "different grids", laplace_shift=math.inf, gaussian_mu=0.0, epsilon_lower=lower,
                    epsilon_upper=upper, violated=violated, bound=bound, **norms)
    summed = [] if bound == "exact" else _summed_noise_rows(moved, families[used], shift, tolerance)
    if summed:  # noises summed on one output: the exact law of the sum below, either noise alone above
        single_output = matrix.shape[0] == 1 and bool(np.all(np.isin(families[used], ("laplace", "gaussian"))))
        bound += "; the outputs carrying one Laplace and Gaussian noise: the exact law of their sum (half-lines)"

        def bracket(delta: float) -> ShiftPrivacy:
            lower = max([shift_privacy(laplace, mu, delta, integer_events).lower]
                        + [laplace_gaussian_lower(b, sigma, moved_by, delta) for b, sigma, moved_by in summed])
            upper = _either_noise_upper(moved[0], families[used], float(shift[0]), delta) if single_output else math.inf
            return ShiftPrivacy(delta, lower, max(upper, lower))

        violated, lower, upper = judge(laplace, mu, integer_events, bracket=bracket)
        if single_output:
            bound = "the exact law of the noises' sum below (half-lines), either noise alone above"
    else:
        violated, lower, upper = judge(laplace, mu, integer_events)
    if not used.all():
        bound += "; assumes the noise draws that do not move the outputs are unused"
    if bound != "exact" and not (summed and single_output and used.all()):
        upper = math.inf
    if lower <= 0.0 and math.isinf(upper):
        return done(UNDECIDED, reason="the shift could not be bracketed: no output carries a noise the replay can "
                                      "read alone or as a Laplace and Gaussian sum (epsilon in [0, inf])", **norms)
    shifts, start = [], 0
    for draw in primitives:
        part = noise_shift[start:start + draw.elements]
        start += draw.elements
        l1 = draw.family in ("laplace", "discrete_laplace")
        size = float(np.abs(part).sum()) if l1 else float(np.linalg.norm(part))
        moved_output = part * draw.unit.reshape(-1)
        output = float(np.abs(moved_output).sum()) if l1 else float(np.linalg.norm(moved_output))
        shifts.append(DrawShift(draw.index, draw.source, draw.method, str(draw.family),
                                float(np.max(draw.scale)) if draw.scale is not None and draw.scale.size else 1.0,
                                draw.elements, size, output))
    return done(DECIDED, reason="the shift is the noise's, moved", laplace_shift=float(np.abs(laplace).sum()),
                gaussian_mu=mu, epsilon_lower=lower, epsilon_upper=upper, bound=bound, violated=violated,
                draws=tuple(shifts), **norms)


def _integer_shifts(noise_shift: np.ndarray, families: np.ndarray,
                    primitives: Sequence[Draw]) -> tuple[tuple[Any, ...], bool]:
    """The discrete noise events of the integer elements' shifts, and whether some shift is off the integers
    (the outputs then never coincide: epsilon = inf)."""
    from ..events import DiscreteGaussian, DiscreteLaplace

    scales = np.concatenate([np.broadcast_to(draw.scale, draw.shape).reshape(-1) for draw in primitives])
    events: list[Any] = []
    for index in np.flatnonzero(np.isin(families, DISCRETE_FAMILIES)):
        steps = float(noise_shift[index])
        rounded = round(steps)
        if abs(steps - rounded) > 1e-6 * max(1.0, abs(steps)):
            return (), True
        if rounded:
            kind = DiscreteLaplace if families[index] == "discrete_laplace" else DiscreteGaussian
            events.append(kind(float(scales[index]), abs(int(rounded))))
    return tuple(events), False


def _summed_noise_rows(matrix: np.ndarray, families: np.ndarray, shift: np.ndarray,
                       tolerance: np.ndarray) -> list[tuple[float, float, float]]:
    """(Laplace scale, Gaussian sigma, shift) of every moving output that carries exactly one Laplace element and some
    Gaussian ones (their sum: one Gaussian) and nothing else, in output units: its law is Laplace plus Gaussian."""
    rows = []
    scale = np.abs(matrix).max()
    for row in range(matrix.shape[0]):
        nonzero = np.flatnonzero(np.abs(matrix[row]) > _RELATIVE * (1.0 + scale))
        kinds = families[nonzero]
        if abs(shift[row]) <= tolerance[row] or np.count_nonzero(kinds == "laplace") != 1 or not np.all(
                np.isin(kinds, ("laplace", "gaussian"))) or np.count_nonzero(kinds == "gaussian") == 0:
            continue
        b = float(np.abs(matrix[row, nonzero[kinds == "laplace"]]).sum())
        sigma = float(np.linalg.norm(matrix[row, nonzero[kinds == "gaussian"]]))
        rows.append((b, sigma, float(shift[row])))
    return rows


def _either_noise_upper(row: np.ndarray, families: np.ndarray, shift: float, delta: float) -> float:
    """An upper bound on the epsilon at ``delta`` of one output c + sum_j row_j z_j moved by ``shift``: the output is
    a post-processing of the noise vector, and moving one Laplace element by shift / row_j (or the Gaussian ones
    together, by the least norm) realises the shift, so each such move's epsilon bounds the pair's."""
    uppers = [shift_privacy(np.array([shift / coefficient]), 0.0, delta).upper
              for coefficient in row[(families == "laplace") & (row != 0)]]
    gaussian = float(np.linalg.norm(row[families == "gaussian"]))
    if gaussian > 0:
        uppers.append(shift_privacy(np.zeros(0), abs(shift) / gaussian, delta).upper)
    return min(uppers, default=math.inf)


def _single_noise_rows(matrix: np.ndarray, shift: np.ndarray, tolerance: np.ndarray) -> np.ndarray:
    """Noise shifts read from the outputs that carry exactly one noise element (one row per element): their
    joint law is the product of those elements' laws, a marginal of the output, so the loss it gives is a
    lower bound on the pair's."""
    noise_shift = np.zeros(matrix.shape[1])
    taken: set[int] = set()
    scale = np.abs(matrix).max()
    for row in range(matrix.shape[0]):
        nonzero = np.flatnonzero(np.abs(matrix[row]) > _RELATIVE * (1.0 + scale))
        if nonzero.size == 1 and int(nonzero[0]) not in taken and abs(shift[row]) > tolerance[row]:
            column = int(nonzero[0])
            taken.add(column)
            noise_shift[column] = shift[row] / matrix[row, column]
    return noise_shift
