"""The audit result: a frozen, reproducible record of a certified epsilon lower bound."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from .._json import json_ready
from .witness import Witness

__all__ = ["AuditResult", "AuditDetails"]


@dataclass(frozen=True)
class AuditDetails:
    """What reports need beyond the numbers: the witness object, some selection outputs on both inputs,
    and the certification counts block by block (for the bound-against-samples curve)."""

    witness: Witness
    sample_d: np.ndarray | None
    sample_d_prime: np.ndarray | None
    block_sizes: np.ndarray  # trials behind each block's counts: samples per input (both inputs' for a pooled pair)
    block_counts_p: np.ndarray
    block_counts_q: np.ndarray
    alpha: float


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`dpaudit.audit`.

    ``epsilon_lower`` is a lower bound on the mechanism's epsilon at the claimed delta that holds with
    probability >= ``confidence_level`` (rounded down). ``violated`` is ``epsilon_lower > epsilon``.
    ``ceiling`` is the largest bound this sample budget could have certified: a pass with
    ``epsilon_lower`` far below ``ceiling`` means "no leak found at this resolution", not "private".
    """

    epsilon_lower: float
    epsilon: float
    delta: float
    violated: bool
    event: str
    direction: str  # "d -> d_prime": P[S | d] <= e^eps P[S | d_prime] + delta is the violated inequality;
    # "both, pooled": a pooled pair E (d -> d_prime) with E' (d_prime -> d), certified as one (certify.py)
    count_p: int  # certification samples in the event under the numerator input (a pooled pair: count_d(E) + count_d'(E'))
    count_q: int  # ... under the denominator input (a pooled pair: count_d'(E) + count_d(E'))
    samples: int  # per input, selection + certification
    selection_samples: int
    certification_samples: int  # trials behind count_p and count_q: per input, or 2 n (both inputs) for a pooled pair
    p_lower: float
    q_upper: float
    ceiling: float
    confidence_level: float
    seed: int
    certified_events: int
    one_sided_support: bool  # the event never occurred under the denominator input in certification
    method: str
    seconds: float
    candidates: tuple[dict, ...] = ()
    witness: dict | None = None  # the witness event's to_dict(): re-certify it with audit(..., witness=...)
    details: AuditDetails | None = field(default=None, repr=False, compare=False)
    support_proof: bool = False  # epsilon_lower = inf: the mechanism's exact support rules the event out
    warnings: tuple[str, ...] = ()  # degenerate outputs, an unseeded random source (run in one process), ...
    samples_used: int | None = None  # per input, selection + certification drawn (a sequential audit may stop early)
    looks: int = 1  # certification looks made
    stopped: str = "budget"  # "violation" (certified early), "futility" (the budget could not certify one) or "budget"
    look_schedule: tuple[int, ...] = ()  # samples per input at each planned look

    def __post_init__(self) -> None:
        if self.samples_used is None:
            object.__setattr__(self, "samples_used", self.samples)

    @property
    def certification_per_input(self) -> int:
        """Certification samples per input behind the counts: ``certification_samples``, halved for a pooled pair
        (direction "both, pooled"), whose counts are out of both inputs' samples."""
        return self.certification_samples // 2 if self.direction == "both, pooled" else self.certification_samples

    @property
    def epsilon_estimate(self) -> float:
        """Plug-in estimate ln((p_hat - delta) / q_hat) of the witness event (not a bound)."""
        p = self.count_p / self.certification_samples - self.delta
        q = self.count_q / self.certification_samples
        if p <= 0:
            return 0.0
        return math.inf if q == 0 else math.log(p / q)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (infinities as strings)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        data["bound"] = "lower"
        data["epsilon_estimate"] = self.epsilon_estimate
        return json_ready(data)

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        if self.support_proof:
            verdict += " (the witness outputs can never occur under the other input: exact support)"
        elif self.one_sided_support:
            verdict += (f" (the witness never occurred under the other input in {self.certification_samples} certification "
                        "samples: consistent with epsilon = inf; the bound is what this budget can certify)")
        return (
            f"epsilon >= {self.epsilon_lower:.4f} with confidence {self.confidence_level:g} "
            f"(claimed {self.epsilon:g}, delta {self.delta:g}): {verdict}; witness {self.event} [{self.direction}]; "
            f"ceiling {self.ceiling:.3g} at the full budget, "
            f"confidence split over {self.certified_events} certified event-direction(s); "
            f"{self.samples_used} of {self.samples} samples per input used ({self.looks} look(s), stopped: {self.stopped})"
            + "".join(f"\nwarning: {w}" for w in self.warnings)
        )
