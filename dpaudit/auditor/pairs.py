"""Adjacent-pair search: screen many candidate pairs cheaply, certify the most promising on fresh samples.

Stage 1 audits every candidate with a small budget and ranks them by the bound found (skipped when ``top``
covers every pair: the ranking would decide nothing). Stage 2 audits
the ``top`` best again with the full budget and fresh random streams, at confidence
1 - (1 - confidence_level) / top each (Bonferroni over the certified pairs), so the best of them is
still a lower bound with probability >= confidence_level.

Candidate generators: the classic StatDP patterns for query-answer vectors (Ding et al. 2018), and
datasets drawn from hypothesis strategies with their add/remove or replace-one neighbours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._validation import check_choice, check_flag, check_nonnegative_int, check_positive_int, check_probability
from ..errors import InvalidArgument, InvalidArgumentType
from .._json import json_ready
from .audit import audit, check_futility
from .result import AuditResult

__all__ = ["statdp_query_pairs", "dataset_pairs", "search_pairs", "PairSearchResult"]


def statdp_query_pairs(length: int = 5) -> list[tuple[list[int], list[int]]]:
    """The StatDP adjacent query-vector patterns (each answer moves by at most 1).

    One above / one below, one above rest below, one below rest above, half up half down,
    all above / all below, and the X shape.

    Example:
        >>> statdp_query_pairs(4)[0]
        ([1, 1, 1, 1], [2, 1, 1, 1])
    """
    n = check_positive_int(length, "length")
    ones = [1] * n
    half = n // 2
    pairs = [
        (ones, [2] + [1] * (n - 1)),
        (ones, [0] + [1] * (n - 1)),
        (ones, [2] + [0] * (n - 1)),
        (ones, [0] + [2] * (n - 1)),
        (ones, [0] * half + [2] * (n - half)),
        (ones, [2] * n),
        (ones, [0] * n),
        ([1] * half + [0] * (n - half), [0] * half + [1] * (n - half)),
    ]
    unique: list[tuple[list[int], list[int]]] = []
    for pair in pairs:
        if pair not in unique and pair[0] != pair[1]:
            unique.append(pair)
    return unique


def dataset_pairs(records, count: int = 20, *, neighbouring: str = "add_remove", max_size: int = 10,
                  seed: int = 0) -> list[tuple[list, list]]:
    """Adjacent dataset pairs from a hypothesis strategy of single ``records``.

    Datasets are lists of 0..max_size records drawn (deterministically for a given seed) by
    hypothesis; each gives one pair: under "add_remove" the dataset and itself plus one more record,
    under "replace_one" the dataset and a copy with its first record replaced.

    Example:
        >>> from hypothesis import strategies as st
        >>> pairs = dataset_pairs(st.integers(0, 3), count=3, seed=1)
        >>> all(len(b) == len(a) + 1 for a, b in pairs)
        True
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed
    from hypothesis import strategies as st

    count = check_positive_int(count, "count")
    check_choice(neighbouring, "neighbouring", ("add_remove", "replace_one"))
    max_size = check_nonnegative_int(max_size, "max_size")
    if not isinstance(records, st.SearchStrategy):
        raise InvalidArgumentType("records", "records must be a hypothesis strategy of single records")
    minimum = 1 if neighbouring == "replace_one" else 0
    drawn: list[tuple[list, list]] = []
    strategy = st.tuples(st.lists(records, min_size=minimum, max_size=max(max_size, minimum)), records)

    @hypothesis_seed(seed)
    @settings(max_examples=count, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: tuple[list, Any]) -> None:
        dataset, other = example
        if neighbouring == "add_remove":
            pair = (list(dataset), list(dataset) + [other])
        else:
            pair = (list(dataset), [other] + list(dataset[1:]))
        if pair[0] != pair[1] and pair not in drawn:
            drawn.append(pair)

    collect()
    return drawn[:count]


@dataclass(frozen=True)
class PairSearchResult:
    """The certified best pair (``result``), with the screening table behind the choice."""

    result: AuditResult
    pair: tuple[Any, Any]
    screened: tuple[dict, ...]
    certified: tuple[dict, ...]

    @property
    def epsilon_lower(self) -> float:
        return self.result.epsilon_lower

    @property
    def violated(self) -> bool:
        return self.result.violated

    def to_dict(self) -> dict[str, Any]:
        return json_ready({"result": self.result.to_dict(), "pair": [np.asarray(p).tolist() for p in self.pair],
                           "screened": list(self.screened), "certified": list(self.certified)})


def _pair_seed(seed: int, stage: int, index: int) -> int:
    return int(np.random.SeedSequence(seed, spawn_key=(4, stage, index)).generate_state(1)[0])


def search_pairs(
    mechanism: Callable,
    pairs: Sequence[tuple[Any, Any]],
    epsilon: float = 1.0,
    delta: float = 0.0,
    *,
    samples: int = 1_000_000,
    screen_samples: int = 20_000,
    top: int = 3,
    confidence_level: float = 0.95,
    seed: int = 0,
    workers: int | None = None,
    keep_details: bool = False,
    scheduler: Any = None,
    sequential: bool = True,
    stop_for_futility: bool = False,
) -> PairSearchResult:
    """Find the adjacent pair on which ``mechanism`` leaks most and certify it.

    Returns the best certified pair; its bound holds with probability >= confidence_level jointly
    with the other certified pairs' (Bonferroni over ``top``). When ``top`` covers every pair, none is
    screened (``screened`` is empty): all are certified, in their given order (a tie keeps the first).
    ``keep_details`` keeps the certified audits' details (for report figures drawn from the same numbers
    as the tables). The screening audits
    use their whole (small) budget, so the ranking compares like with like; the certified audits are
    sequential unless ``sequential=False``, and stop for futility only with ``stop_for_futility=True``
    (:func:`~dpaudit.audit`).

    Example:
        >>> import numpy as np
        >>> def noisy_max_value(q, size, rng):
        ...     return np.max(np.asarray(q, float) + rng.laplace(0, 2.0, (size, len(q))), axis=1)
        >>> found = search_pairs(noisy_max_value, statdp_query_pairs(5), samples=100_000, workers=1)
        >>> found.violated
        True
    """
    pairs = list(pairs)
    if not pairs:
        raise InvalidArgument("pairs", "pairs must contain at least one (d, d_prime) pair")
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise InvalidArgument("pairs", f"pairs[{index}] must be a (d, d_prime) pair")
    top = min(check_positive_int(top, "top"), len(pairs))
    screen_samples = check_positive_int(screen_samples, "screen_samples")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    stop_for_futility = check_futility(stop_for_futility, check_flag(sequential, "sequential"))

    screened = []
    if top < len(pairs):
        for index, (d, d_prime) in enumerate(pairs):
            quick = audit(mechanism, d, d_prime, epsilon, delta, screen_samples, 0.5, _pair_seed(seed, 1, index), workers=workers,
                          scheduler=scheduler, sequential=False)
            screened.append({"index": index, "epsilon_screen": quick.epsilon_lower, "event": quick.event})
        ranking = sorted(screened, key=lambda row: -row["epsilon_screen"])[:top]
    else:  # every pair is certified: screening would only order them (the best certified bound wins either way)
        ranking = [{"index": index} for index in range(len(pairs))]

    per_pair_confidence = 1.0 - (1.0 - confidence_level) / top
    certified, best = [], None
    for row in ranking:
        d, d_prime = pairs[row["index"]]
        result = audit(mechanism, d, d_prime, epsilon, delta, samples, per_pair_confidence,
                       _pair_seed(seed, 2, row["index"]), workers=workers, keep_details=keep_details,
                       scheduler=scheduler, sequential=sequential, stop_for_futility=stop_for_futility)
        certified.append({"index": row["index"], "epsilon_lower": result.epsilon_lower, "event": result.event})
        if best is None or result.epsilon_lower > best[0].epsilon_lower:
            best = (result, row["index"])
    result, index = best
    # Report the overall confidence, not the per-pair one.
    result = replace(result, confidence_level=confidence_level,
                     method=result.method + f"; best of {top} certified pairs (Bonferroni)"
                     + (f" after screening {len(pairs)}" if screened else ", every pair certified (none screened)"))
    return PairSearchResult(result, tuple(pairs[index]), tuple(screened), tuple(certified))
