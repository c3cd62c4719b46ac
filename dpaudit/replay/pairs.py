"""Adjacent pairs to drive the replay over: StatDP query patterns and hypothesis-generated datasets."""

from __future__ import annotations

from typing import Any

from .._validation import check_choice, check_positive_int
from ..auditor import dataset_pairs, statdp_query_pairs

__all__ = ["generated_pairs"]


def generated_pairs(kind: str, count: int = 100, *, length: int = 5, neighbouring: str = "add_remove",
                    low: float = -10.0, high: float = 10.0, seed: int = 0) -> list[tuple[Any, Any]]:
    """Pairs for a replay: ``kind`` "statdp" (the StatDP query-vector patterns of ``length`` answers, each
    answer moving by at most 1, plus ``count`` hypothesis-drawn query vectors moved the same ways) or
    "datasets" (``count`` hypothesis-drawn datasets of up to ``length`` real records in [low, high] and
    their add/remove or replace-one neighbours).

    Example:
        >>> len(generated_pairs("datasets", 5, seed=1)) <= 5
        True
    """
    from hypothesis import strategies as st

    check_choice(kind, "kind", ("statdp", "datasets"))
    count = check_positive_int(count, "count")
    length = check_positive_int(length, "length")
    records = st.floats(low, high, allow_nan=False, allow_infinity=False, width=32)
    if kind == "datasets":
        return dataset_pairs(records, count, neighbouring=neighbouring, max_size=length, seed=seed)
    pairs: list[tuple[Any, Any]] = [(list(map(float, a)), list(map(float, b))) for a, b in statdp_query_pairs(length)]
    # drawn query vectors of `length` answers in [low, high], each answer moved by -1, 0 or +1
    vectors = dataset_pairs(records, count, neighbouring="replace_one", max_size=length, seed=seed)
    moves = dataset_pairs(st.sampled_from([-1.0, 0.0, 1.0]), count, neighbouring="replace_one", max_size=length,
                          seed=seed + 1)
    for (vector, _), (move, _) in zip(vectors, moves):
        answers = (list(vector) * length)[:length] if vector else [0.0] * length
        steps = (list(move) * length)[:length] if move else [1.0] + [0.0] * (length - 1)
        moved = [a + s for a, s in zip(answers, steps)]
        if moved != answers:
            pairs.append((answers, moved))
    return pairs
