"""The ``Guarantee`` value type: an (epsilon, delta) differential-privacy guarantee."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ._validation import check_real
from .errors import InvalidArgument
from .tradeoff import guarantee_profile, guarantee_tradeoff

__all__ = ["Guarantee"]


@dataclass(frozen=True)
class Guarantee:
    """An (epsilon, delta)-DP guarantee: for all adjacent inputs and events S,
    P[M(x) in S] <= e^epsilon P[M(x') in S] + delta.

    Values returned by the accountant are upper bounds (rounded up); ``epsilon = inf`` means no
    guarantee. ``delta`` lies in [0, 1].

    Example:
        >>> Guarantee(1.0, 1e-5)
        Guarantee(epsilon=1.0, delta=1e-05)
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        epsilon = check_real(self.epsilon, "epsilon")
        delta = check_real(self.delta, "delta")
        if epsilon < 0:
            raise InvalidArgument("epsilon", f"epsilon={self.epsilon!r} must be >= 0")
        if not 0.0 <= delta <= 1.0:
            raise InvalidArgument("delta", f"delta={self.delta!r} must satisfy 0 <= delta <= 1")
        object.__setattr__(self, "epsilon", epsilon)
        object.__setattr__(self, "delta", delta)

    @property
    def is_pure(self) -> bool:
        """True for a pure (delta = 0) guarantee."""
        return self.delta == 0.0

    def profile(self, epsilons: Any) -> Any:
        """The privacy profile this claim allows, delta(e) at each e (ndarray, rounded up): ``delta`` for
        e >= epsilon, delta + (1 - delta)(e^epsilon - e^e)/(1 + e^epsilon) below (its dominating pair).

        Example:
            >>> Guarantee(1.0, 1e-5).profile([1.0, 2.0]).tolist()
            [1e-05, 1e-05]
        """
        return guarantee_profile(self.epsilon, self.delta, epsilons)

    def tradeoff(self, alphas: Any) -> Any:
        """The trade-off function this claim guarantees, max(0, 1 - delta - e^epsilon alpha,
        e^-epsilon (1 - delta - alpha)) at each alpha (ndarray, rounded down; Dong, Roth & Su 2022,
        Prop. 2.5).

        Example:
            >>> round(float(Guarantee(1.0, 0.0).tradeoff([0.5])[0]), 6)
            0.18394
        """
        return guarantee_tradeoff(self.epsilon, self.delta, alphas)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; ``epsilon`` is the string "inf" when unbounded."""
        return {"epsilon": self.epsilon if math.isfinite(self.epsilon) else "inf", "delta": self.delta}

    def __str__(self) -> str:
        return f"({self.epsilon:.6g}, {self.delta:.3g})-DP"
