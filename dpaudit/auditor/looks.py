"""Looks of a sequential certification: the schedule, the error spent at each look, the futility forecast.

A sequential audit certifies its chosen events (fixed before certification, on the selection batch) in
*looks*: after n_1 < n_2 < ... < n_K = N certification samples per input it recomputes every bound. The
error probability a that a fixed-budget audit gives one one-sided bound is spread over the looks
(alpha-spending, Bonferroni over looks): look k uses a * share_k with sum_k share_k = 1. Every bound at
every look then holds together with probability >= 1 - a per bound (union bound over looks; no
independence between looks is needed), so the audit may stop at any look, for any reason, and the best
bound over the looks made is still a valid lower bound at the stated confidence (an anytime-valid
guarantee over the planned looks). ``FINAL_SHARE`` of a goes to the last look, so at the full budget a
bound is the fixed-budget bound at level a * FINAL_SHARE instead of a (the price of looking).

Looks are made of whole seeded blocks (``sampling.block_sizes`` of each look's increment), so every
backend and worker count draws the same samples. :func:`forecast_counts` gives the optimistic final
counts the futility rule tests (stochastic curtailment under the current trend).

References: Jennison & Turnbull, *Group Sequential Methods with Applications to Clinical Trials* (2000),
ch. 7 (error spending, Lan & DeMets 1983) and ch. 10 (stochastic curtailment, Lan, Simon & Halperin 1982).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_positive_int
from ..errors import InvalidArgument, InvalidArgumentType
from .sampling import block_sizes

__all__ = ["LookPlan", "plan_looks", "look_shares", "forecast_counts", "STOP_REASONS", "FINAL_SHARE", "FIRST_LOOK",
           "MAX_LOOKS", "FUTILITY_Z", "FUTILITY_FROM"]

#: Why a certification stopped: a certified violation, a futile forecast, or the maximum budget reached.
STOP_REASONS = ("violation", "futility", "budget")
#: Share of each bound's error probability spent at the last look (the rest is split evenly over the others).
FINAL_SHARE = 0.8
#: Smallest first look of the default schedule (certification samples per input).
FIRST_LOOK = 2048
#: Most looks of the default schedule.
MAX_LOOKS = 12
#: Futility: future counts are forecast at this many standard deviations in the audit's favour (one-sided 95%).
FUTILITY_Z = 1.6448536269514722
#: Futility is first considered at a look holding this share of the certification budget: earlier forecasts rest on
#: too few samples (a violation they would miss costs power) and too few samples would stand behind the bound.
FUTILITY_FROM = 1.0 / 16.0


@dataclass(frozen=True)
class LookPlan:
    """Certification samples per input at each look (cumulative, increasing, the last one the whole
    certification budget), the error share of each look, and the seeded blocks that make up each look."""

    looks: tuple[int, ...]
    shares: tuple[float, ...]
    sizes: tuple[int, ...]  # block sizes of the whole certification stream, block b seeded by its index
    ends: tuple[int, ...]  # look k is complete after blocks [0, ends[k])

    def blocks(self, look: int) -> range:
        """The block indices drawn for look ``look`` (its increment over the previous look)."""
        return range(0 if look == 0 else self.ends[look - 1], self.ends[look])


def look_shares(count: int) -> tuple[float, ...]:
    """Error shares of ``count`` looks: FINAL_SHARE on the last, the rest evenly on the others (1 look: 1)."""
    if count == 1:
        return (1.0,)
    early = (1.0 - FINAL_SHARE) / (count - 1)
    return tuple([early] * (count - 1) + [FINAL_SHARE])


def _default_looks(n_certify: int, first: int) -> list[int]:
    looks = [n_certify]
    while len(looks) < MAX_LOOKS and math.ceil(looks[0] / 2) >= first:
        looks.insert(0, math.ceil(looks[0] / 2))
    return looks


def _check_looks(looks: Any, samples: int, offset: int) -> list[int]:
    """User looks (total samples per input at each look, selection included) as certification counts."""
    if isinstance(looks, (str, bytes)) or not isinstance(looks, (Sequence, np.ndarray)):
        raise InvalidArgumentType("looks", f"looks={looks!r} must be an increasing sequence of sample counts per input")
    values = [check_positive_int(value, "looks") for value in looks]
    if not values:
        raise InvalidArgument("looks", "looks must hold at least one sample count")
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            raise InvalidArgument("looks", f"looks must be strictly increasing: looks[{i}]={values[i]} <= "
                                           f"looks[{i - 1}]={values[i - 1]}")
    if samples < values[0]:
        raise InvalidArgument("samples", f"samples={samples} (the maximum budget per input) is below the first look "
                                         f"looks[0]={values[0]}")
    if samples < values[-1]:
        raise InvalidArgument("samples", f"samples={samples} (the maximum budget per input) is below the last look "
                                         f"looks[-1]={values[-1]}")
    if values[0] <= offset:
        raise InvalidArgument("looks", f"looks[0]={values[0]} must exceed the {offset} selection samples per input "
                                       "(a look certifies on fresh samples drawn after the selection)")
    counts = [value - offset for value in values]
    if counts[-1] != samples - offset:
        counts.append(samples - offset)
    return counts


def plan_looks(n_certify: int, *, sequential: bool = True, looks: Any = None, samples: int | None = None,
               offset: int = 0, first: int = FIRST_LOOK) -> LookPlan:
    """The look plan of a certification of ``n_certify`` samples per input.

    ``sequential=False``: one look over the fixed-budget blocks (``block_sizes(n_certify)``), share 1.
    Else ``looks`` (total samples per input at each look, selection included: ``offset`` of them; the
    maximum budget ``samples`` is always the last look) or the default geometric schedule: N, N/2, N/4, ...
    down to ``first`` (FIRST_LOOK), at most MAX_LOOKS looks.
    """
    if not sequential or n_certify <= 0:
        counts = [n_certify]
    elif looks is not None:
        counts = _check_looks(looks, n_certify + offset if samples is None else samples, offset)
    else:
        counts = _default_looks(n_certify, first)
    sizes: list[int] = []
    ends: list[int] = []
    previous = 0
    for count in counts:
        sizes += block_sizes(count - previous)
        ends.append(len(sizes))
        previous = count
    return LookPlan(tuple(counts), look_shares(len(counts)), tuple(sizes), tuple(ends))


def forecast_counts(count: Any, n: int, total: int, favour: str) -> np.ndarray:
    """Optimistic final counts after ``total`` samples of an event seen ``count`` times in the first ``n``:
    the current count plus the future count at its one-sided FUTILITY_Z quantile under the current trend
    (rate max(count / n, (count + 1/2) / (n + 1)) upwards, so an unseen event keeps a chance; count / n
    downwards), taken
    ``"up"`` or ``"down"``.

    If the final bound computed from these counts cannot certify a violation, then under the current trend
    each future count lands on the audit's side of its forecast with probability <= 5% (normal
    approximation), so the final look certifies a violation with probability <= 10%: the certification
    stops for futility.
    """
    count = np.asarray(count, dtype=np.float64)
    rest = total - n
    rate = np.maximum((count + 0.5) / (n + 1.0), count / n) if favour == "up" else count / n
    spread = FUTILITY_Z * np.sqrt(rest * rate * (1.0 - rate))
    future = rest * rate + (spread if favour == "up" else -spread)
    final = count + np.clip(np.ceil(future) if favour == "up" else np.floor(future), 0, rest)
    return final.astype(np.int64)
