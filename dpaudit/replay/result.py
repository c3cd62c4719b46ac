"""Results of a replay: one pair (:class:`PairReplay`) and the whole run over many pairs (:class:`ReplayResult`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DrawShift", "PairReplay", "ReplayResult", "DECIDED", "DIVERGES", "UNDECIDED"]

#: Pair statuses: the shift was attributed to the noise; the draws differ between d and d'; the replay
#: cannot decide (the output is not the data's value plus noise, or the shift depends on the randomness).
DECIDED, DIVERGES, UNDECIDED = "decided", "diverges", "undecided"


def _number(value: float | None) -> Any:
    if value is None:
        return None
    return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")


def _data(value: Any) -> Any:
    return np.asarray(value).tolist() if isinstance(value, (np.ndarray, list, tuple)) else value


@dataclass(frozen=True)
class DrawShift:
    """How far one noise draw had to move to explain the output shift.

    ``shift`` is in standard units of the noise (integer steps for discrete noise; L1 over the draw's
    elements for the Laplace families, L2 for the Gaussian ones); ``output_shift`` is the same in the units
    of the noise's value (the measured sensitivity this draw carries; Laplace at claimed epsilon allows
    ``scale * epsilon``).
    """

    index: int
    source: str
    method: str
    family: str
    scale: float
    elements: int
    shift: float
    output_shift: float

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "source": self.source, "method": self.method, "family": self.family,
                "scale": self.scale, "elements": self.elements, "shift": self.shift,
                "output_shift": self.output_shift}


@dataclass(frozen=True)
class PairReplay:
    """The replay of one adjacent pair.

    Attributes:
        d, d_prime: the pair.
        status: DECIDED, DIVERGES or UNDECIDED.
        reason: why it is not decided, or how the bound was obtained.
        divergence: where the draws (or the noise's effect) differ between d and d' (status DIVERGES).
        shift_l1, shift_l2: norms of M(d; w) - M(d'; w) under identical draws, in output units (nan when
            the draws differ).
        laplace_shift, gaussian_mu: the noise shift explaining it (L1 over Laplace elements, L2 over
            Gaussian ones, standard units); None unless decided.
        epsilon_lower, epsilon_upper: the pair's epsilon at the claimed delta implied by the shift (a lower
            bound and an upper bound); None unless decided.
        bound: "exact" or the assumption/relaxation the lower bound rests on.
        violated: the lower bound exceeds the claim.
        draws: per noise draw, the shift attributed to it.
    """

    d: Any
    d_prime: Any
    status: str
    reason: str = ""
    divergence: str | None = None
    shift_l1: float = math.nan
    shift_l2: float = math.nan
    laplace_shift: float | None = None
    gaussian_mu: float | None = None
    epsilon_lower: float | None = None
    epsilon_upper: float | None = None
    bound: str = ""
    violated: bool = False
    draws: tuple[DrawShift, ...] = ()
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"d": _data(self.d), "d_prime": _data(self.d_prime), "status": self.status, "reason": self.reason,
                "divergence": self.divergence, "shift_l1": _number(self.shift_l1), "shift_l2": _number(self.shift_l2),
                "laplace_shift": _number(self.laplace_shift), "gaussian_mu": _number(self.gaussian_mu),
                "epsilon_lower": _number(self.epsilon_lower), "epsilon_upper": _number(self.epsilon_upper),
                "bound": self.bound, "violated": self.violated, "draws": [d.to_dict() for d in self.draws],
                "seconds": self.seconds}


@dataclass(frozen=True)
class ReplayResult:
    """A replay over one or more adjacent pairs.

    Attributes:
        violated: some pair's implied epsilon (a lower bound) exceeds the claim.
        control_flow_diverges: on some pair the sequence of draws (or the noise's effect on the output)
            differs between d and d'; not a violation: such entries are for the statistical audit.
        max_shift: the largest L1 norm of M(d; w) - M(d'; w) over the pairs whose draws agree (output units;
            0.0 when none).
        epsilon_lower: the largest implied epsilon lower bound over the decided pairs (0.0 when none).
        claim: the claim replayed against ({"epsilon", "delta"} or {"event"}).
        pairs: every pair's replay; ``worst``: the pair with the largest epsilon_lower (else the first
            diverging, else the first).
        undecided: how many pairs the replay could not decide.
    """

    violated: bool
    control_flow_diverges: bool
    max_shift: float
    epsilon_lower: float
    claim: dict[str, Any]
    pairs: tuple[PairReplay, ...]
    seed: int
    seconds: float
    draws_per_run: int = 0
    noise_families: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())

    @property
    def decided(self) -> int:
        return sum(pair.status == "decided" for pair in self.pairs)

    @property
    def undecided(self) -> int:
        return sum(pair.status == "undecided" for pair in self.pairs)

    @property
    def diverging(self) -> int:
        return sum(pair.status == "diverges" for pair in self.pairs)

    @property
    def worst(self) -> PairReplay:
        decided = [p for p in self.pairs if p.epsilon_lower is not None]
        if decided:
            return max(decided, key=lambda p: p.epsilon_lower)
        diverging = [p for p in self.pairs if p.status == "diverges"]
        return (diverging or list(self.pairs))[0]

    @property
    def verdict(self) -> str:
        """"violation", "diverges" (hand to the statistical audit), "pass", or "undecided" (no pair decided)."""
        if self.violated:
            return "violation"
        if self.control_flow_diverges:
            return "diverges"
        return "pass" if self.decided else "undecided"

    def summary(self) -> str:
        worst = self.worst
        claim = ", ".join(f"{k}={v}" for k, v in self.claim.items())
        lines = [f"replay: {self.verdict} ({claim}); {len(self.pairs)} pair(s): {self.decided} decided, "
                 f"{self.diverging} diverging, {self.undecided} undecided; max shift {self.max_shift:.6g}, "
                 f"implied epsilon >= {self.epsilon_lower:.6g}"]
        if worst.status == "diverges":
            lines.append(f"draws diverge: {worst.divergence}")
        elif worst.status == "undecided":
            lines.append(f"undecided: {worst.reason}")
        elif worst.epsilon_lower is not None:
            lines.append(f"worst pair d={_data(worst.d)!r} d_prime={_data(worst.d_prime)!r}: epsilon in "
                         f"[{worst.epsilon_lower:.6g}, {worst.epsilon_upper:.6g}] ({worst.bound})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {"violated": self.violated, "control_flow_diverges": self.control_flow_diverges,
                "max_shift": _number(self.max_shift), "epsilon_lower": _number(self.epsilon_lower),
                "verdict": self.verdict, "claim": self.claim, "seed": self.seed, "seconds": self.seconds,
                "decided": self.decided, "diverging": self.diverging, "undecided": self.undecided,
                "draws_per_run": self.draws_per_run, "noise_families": list(self.noise_families),
                "worst": self.worst.to_dict(), "pairs": [pair.to_dict() for pair in self.pairs],
                "notes": list(self.notes)}
