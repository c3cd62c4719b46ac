"""Side-by-side comparison of the closed-form composition theorems at one total delta."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from .._validation import check_delta, check_epsilon, check_positive_int, check_sampling_probability
from ..errors import InfeasibleBudgetError, InvalidArgument
from .closed_form import advanced, amplify, basic
from .optimal import MAX_K as OPTIMAL_MAX_K
from .optimal import optimal

__all__ = ["BudgetRow", "compare_compositions"]


@dataclass(frozen=True)
class BudgetRow:
    """One theorem's bound on k-fold composition; ``epsilon_upper`` is None when it cannot meet delta."""

    theorem: str
    epsilon_upper: float | None
    delta: float
    sampling_probability: float | None
    tightest: bool = False
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _rows_for_step(step_epsilon: float, step_delta: float, k: int, delta: float, q: float | None) -> list[BudgetRow]:
    total = basic(step_epsilon, step_delta, k=k)  # O(1) in k
    rows = [BudgetRow("basic", total.epsilon, total.delta, q)]
    slack = delta - k * step_delta
    if slack > 0.0:
        rows.append(BudgetRow("advanced", advanced(step_epsilon, k, slack, step_delta).epsilon, delta, q))
    else:
        rows.append(BudgetRow("advanced", None, delta, q, note="k * step delta leaves no slack"))
    if k > OPTIMAL_MAX_K:
        rows.append(BudgetRow("optimal", None, delta, q, note=f"k above {OPTIMAL_MAX_K:.0e}, the limit of exact optimal composition"))
        return rows
    try:
        rows.append(BudgetRow("optimal", optimal(step_epsilon, k, delta, step_delta).epsilon, delta, q))
    except InfeasibleBudgetError:
        rows.append(BudgetRow("optimal", None, delta, q, note="per-step deltas exceed delta"))
    return rows


def _mark_tightest(rows: list[BudgetRow], delta: float) -> list[BudgetRow]:
    # Only rows whose delta is within the target compete (basic's delta is k * step delta <= target).
    candidates = [r for r in rows if r.epsilon_upper is not None and r.delta <= delta]
    if not candidates:
        return rows
    best = min(candidates, key=lambda r: r.epsilon_upper)
    return [BudgetRow(**{**r.to_dict(), "tightest": r is best}) for r in rows]


def compare_compositions(
    epsilon: float,
    k: int,
    delta: float,
    *,
    step_delta: float = 0.0,
    sampling_probability: float | None = None,
) -> list[BudgetRow]:
    """Bounds of basic, advanced and optimal composition for k steps of (epsilon, step_delta)-DP at
    total delta; with ``sampling_probability`` also for the same steps run on Poisson q-subsamples
    (each step amplified first, then composed). Every epsilon is an upper bound; the smallest one in
    each group is marked ``tightest``.

    Example:
        >>> [round(r.epsilon_upper, 3) for r in compare_compositions(0.1, 100, 1e-5)]
        [10.0, 5.85, 4.307]
    """
    epsilon = check_epsilon(epsilon, "epsilon")
    k = check_positive_int(k, "k")
    delta = check_delta(delta, "delta")
    step_delta = check_delta(step_delta, "step_delta")
    if k * step_delta > 1.0:
        raise InvalidArgument("step_delta", f"step_delta={step_delta!r} times k={k} exceeds 1")
    rows = _mark_tightest(_rows_for_step(epsilon, step_delta, k, delta, None), delta)
    if sampling_probability is not None:
        q = check_sampling_probability(sampling_probability)
        amplified = amplify(epsilon, step_delta, q)
        rows += _mark_tightest(_rows_for_step(amplified.epsilon, amplified.delta, k, delta, q), delta)
    return rows
