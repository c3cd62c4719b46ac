"""``replay`` and ``replay_pairs``: record/replay a mechanism on adjacent inputs and compare the shift with the claim.

Gray-box checking after Cebere, Erb, Desfontaines, Bellet & Fitzsimons (PETS 2026): run the code on d and
d' with the same randomness, see what reaches each noise primitive, and compare the measured shift with
what the declared epsilon (or event) allows for the recorded noise. :mod:`.attribution` explains how a
shift is attributed soundly; :mod:`.privacy` how it is compared with the claim.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import check_delta, check_epsilon, check_nonnegative_int, check_positive_int
from ..errors import InvalidArgument, InvalidArgumentType
from ..events import PrivacyEvent
from .attribution import replay_pair
from .hooks import instrumented
from .privacy import event_curve, exceeds_claim, exceeds_claim_bracket, exceeds_curve, exceeds_curve_bracket
from .result import DECIDED, DIVERGES, ReplayResult
from .runs import UninstrumentableMechanism, run_once

__all__ = ["replay", "replay_pairs", "DEFAULT_SEEDS"]

#: Seeds (independent randomness w) each pair is replayed with.
DEFAULT_SEEDS: int = 3


def _claim(mechanism: Any, epsilon: Any, delta: Any, event: Any) -> tuple[dict[str, Any], Any]:
    """The claim as a dict for reports and a judge(laplace, mu, discrete, bracket=None) -> (violated, lower, upper);
    ``bracket``: the pair's epsilon bracket as a function of delta, instead of the shift's event."""
    if event is not None and epsilon is not None:
        raise InvalidArgument("event", "give epsilon= (with delta=) or event=, not both")
    if event is not None:
        if not isinstance(event, PrivacyEvent):
            raise InvalidArgumentType("event", f"event must be a dpaudit.events privacy event, got {type(event).__name__}")

        curve = event_curve(event)

        def judge_event(laplace: np.ndarray, mu: float, discrete: Any = (), bracket: Any = None) -> tuple[bool, float, float]:
            if bracket is not None:
                violated, found = exceeds_curve_bracket(bracket, curve)
            else:
                violated, found = exceeds_curve(laplace, mu, curve, discrete)
            return violated, found.lower, found.upper

        return {"event": repr(event)}, judge_event
    if epsilon is None:
        privacy = getattr(mechanism, "privacy", None)
        if privacy is None:
            raise InvalidArgument("epsilon", "the claim is missing: give epsilon= (and delta=) or event=; the mechanism "
                                             "declares no .privacy")
        epsilon, delta = privacy.epsilon, privacy.delta if delta is None else delta
    epsilon = check_epsilon(epsilon, "epsilon")
    delta = check_delta(0.0 if delta is None else delta, "delta")

    def judge(laplace: np.ndarray, mu: float, discrete: Any = (), bracket: Any = None) -> tuple[bool, float, float]:
        if bracket is not None:  # the pair's own bracket, delta -> ShiftPrivacy (noises summed on one output)
            violated, found = exceeds_claim_bracket(bracket, epsilon, delta)
        else:
            violated, found = exceeds_claim(laplace, mu, epsilon, delta, discrete)
        return violated, found.lower, found.upper

    return {"epsilon": epsilon, "delta": delta}, judge


def _run_seeds(seed: int, count: int) -> list[int]:
    return [int(s) for s in np.random.SeedSequence(seed).generate_state(count)]


def _check_instrumentable(mechanism: Any, data: Any, seed: int) -> tuple[int, tuple[str, ...]]:
    """Two runs with one seed must agree; returns the draws per run and the noise families seen."""
    first, second = run_once(mechanism, data, seed), run_once(mechanism, data, seed)
    same = first.outputs.shape == second.outputs.shape and bool(np.array_equal(first.outputs, second.outputs,
                                                                                equal_nan=True))
    if not same or first.signature != second.signature:
        raise UninstrumentableMechanism(
            "the mechanism cannot be instrumented: two runs with the same seed gave different outputs, so it draws "
            "from a source the replay does not control (the random module, secrets, os.urandom, an unseeded "
            "generator or a C extension); pass it the rng it is given, or audit it statistically (dpaudit audit)")
    families = tuple(sorted({draw.family for draw in first.draws if draw.family}))
    return len(first.draws), families


def replay_pairs(mechanism: Any, pairs: Sequence[tuple[Any, Any]], *, epsilon: float | None = None,
                 delta: float | None = None, event: PrivacyEvent | None = None, seed: int = 0,
                 seeds: int = DEFAULT_SEEDS) -> ReplayResult:
    """Replay ``mechanism(data, size, rng)`` on every adjacent pair of ``pairs``; see :func:`replay`.

    Every pair uses the same run seeds (derived from ``seed``); the result carries every pair, the
    largest measured shift and the largest implied epsilon lower bound.
    """
    if not callable(mechanism):
        raise InvalidArgumentType("mechanism", f"mechanism must be callable (data, size, rng), got {type(mechanism).__name__}")
    pairs = list(pairs)
    if not pairs:
        raise InvalidArgument("pairs", "pairs must hold at least one (d, d_prime) pair")
    for index, pair in enumerate(pairs):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise InvalidArgument("pairs", f"pairs[{index}] must be a (d, d_prime) pair")
    seed = check_nonnegative_int(seed, "seed")
    count = check_positive_int(seeds, "seeds")
    if count < 2:
        raise InvalidArgument("seeds", f"seeds={seeds!r} must be >= 2 (a shift is attributed only when it is the "
                                       "same under independent randomness)")
    claim, judge = _claim(mechanism, epsilon, delta, event)
    started = time.perf_counter()
    run_seeds = _run_seeds(seed, count)
    with instrumented():
        draws_per_run, families = _check_instrumentable(mechanism, pairs[0][0], run_seeds[0])
        results = tuple(replay_pair(mechanism, d, d_prime, run_seeds, judge, probe_seed=seed) for d, d_prime in pairs)
    shifts = [p.shift_l1 for p in results if not math.isnan(p.shift_l1)]
    lowers = [p.epsilon_lower for p in results if p.status == DECIDED and p.epsilon_lower is not None]
    notes = () if families else ("no noise primitive recorded (laplace, normal, standard_normal, dpaudit's samplers, "
                                 "diffprivlib's randomise): shifts cannot be attributed to noise",)
    return ReplayResult(
        violated=any(p.violated for p in results), control_flow_diverges=any(p.status == DIVERGES for p in results),
        max_shift=max(shifts, default=0.0), epsilon_lower=max(lowers, default=0.0), claim=claim, pairs=results,
        seed=seed, seconds=time.perf_counter() - started, draws_per_run=draws_per_run, noise_families=families,
        notes=notes)


def replay(mechanism: Any, d: Any, d_prime: Any, *, epsilon: float | None = None, delta: float | None = None,
           event: PrivacyEvent | None = None, seed: int = 0, seeds: int = DEFAULT_SEEDS) -> ReplayResult:
    """Record/replay ``mechanism`` on the adjacent pair (d, d'): declared vs measured sensitivity.

    The mechanism runs once per input and seed with an instrumented ``numpy.random.Generator`` (also
    numpy's global state, ``default_rng()``, dpaudit's samplers and diffprivlib's ``randomise``), so both
    inputs see identical draws. Findings:

    - ``control_flow_diverges``: the sequence of draws (or the noise scale, or the noise's effect on the
      output) differs between d and d'. Not a violation: such a mechanism (sparse vector, smooth
      sensitivity) may still be private; audit it statistically.
    - ``violated``: the output shift M(d; w) - M(d'; w), attributed to the noise draws that produced it,
      implies an epsilon whose lower bound exceeds the claim (Laplace: the shift exceeds scale * epsilon;
      Gaussian: shift / sigma exceeds the mu the claim allows; compositions through the PLD accountant).
    - otherwise the entry passes, or is undecided when the output is not the data's value plus noise
      (exponential mechanism, report noisy max, randomized response, subsampling): no finding either way.

    Args:
        mechanism: ``mechanism(data, size, rng)``; called with size 1.
        d, d_prime: the adjacent inputs.
        epsilon, delta: the claim; or ``event``: a claimed privacy event (its curve); neither: the
            mechanism's ``.privacy``.
        seed: derives the run seeds; ``seeds``: how many independent randomness draws (>= 2).

    Raises:
        UninstrumentableMechanism (a MechanismError): two runs with the same seed differ.
        MechanismError: the mechanism raised or returned something that is not (size, ...) numbers.

    Example:
        >>> import numpy as np
        >>> def unclipped_sum(data, size, rng):        # declares sensitivity 1 but never clips
        ...     return np.sum(data) + rng.laplace(0.0, 1.0, size)
        >>> r = replay(unclipped_sum, [0.5, 0.5], [0.5, 0.5, 5.0], epsilon=1.0)
        >>> r.violated, r.control_flow_diverges, r.max_shift
        (True, False, 5.0)
    """
    return replay_pairs(mechanism, [(d, d_prime)], epsilon=epsilon, delta=delta, event=event, seed=seed, seeds=seeds)
