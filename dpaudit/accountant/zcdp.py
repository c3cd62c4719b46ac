"""Zero-concentrated DP accountant: rho adds up, converted to (epsilon, delta) by the tight bound of
Canonne, Kamath & Steinke (2020).

A mechanism is rho-zCDP if D_alpha(M(d) || M(d')) <= alpha rho for every alpha > 1 and neighbours d, d'
(Bun & Steinke 2016, Def. 1.1); the rho of adaptively composed mechanisms add up (Lemma 2.3). Per-event rho
(:func:`.leaf_measures.rho_of_leaf`): Gaussian mu^2/2, discrete Gaussian D^2/(2 sigma^2) (Canonne, Kamath &
Steinke 2020), pure eps-DP events (Laplace, discrete Laplace, randomized response, PureDP) eps^2/2 (Bun &
Steinke 2016, Prop. 1.4), bounded range eps^2/8 (Cesar & Rogers 2021), ZCDP(rho) rho; tree aggregation as
the Gaussian it is. Subsampled events and (eps, delta) steps with delta > 0 have no zCDP bound here and are
refused (use :class:`~dpaudit.accountant.RDPAccountant` or :class:`~dpaudit.accountant.PLDAccountant`).

Conversion (Canonne, Kamath & Steinke 2020, Prop. 12, applied at every order alpha > 1 of the rho-zCDP
curve alpha rho): delta(eps) = min_alpha exp((alpha-1)(alpha rho - eps)) (1 - 1/alpha)^alpha / (alpha - 1) and
eps(delta) = min_alpha alpha rho + ln(1 - 1/alpha) - (ln delta + ln alpha)/(alpha - 1). Every alpha gives a
valid bound, so the numerical minimisation (a dense order grid refined by golden section) can only cost
tightness, never soundness; results are rounded up.

Example:
    >>> from dpaudit.events import SelfComposed, ZCDP
    >>> acct = ZCDPAccountant().compose(SelfComposed(ZCDP(0.01), 100))
    >>> round(acct.rho(), 9)
    1.0
    >>> round(acct.epsilon(target_delta=1e-5), 3)
    7.077
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from .._numeric import round_up
from .._validation import check_delta, check_epsilon, check_positive_int, check_real_sequence
from ..errors import InvalidArgument, UnsupportedEventError
from ..events import PrivacyEvent, check_event, check_neighbouring
from .event_tree import Leaf, flatten
from .leaf_measures import rho_of_leaf
from .risk import AttackRiskReadouts

__all__ = ["ZCDPAccountant", "zcdp_epsilon", "zcdp_delta"]

_GRID = np.concatenate([1.0 + np.geomspace(1e-6, 1.0, 200)[:-1], np.geomspace(2.0, 1e8, 400)])
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


def _minimise(function, best_alpha: float) -> float:
    """Golden-section refinement of a function of log(alpha - 1) around the best grid order."""
    index = int(np.searchsorted(_GRID, best_alpha))
    lo = math.log(_GRID[max(index - 1, 0)] - 1.0)
    hi = math.log(_GRID[min(index + 1, _GRID.size - 1)] - 1.0)
    value = function(1.0 + math.exp(lo))
    value = min(value, function(1.0 + math.exp(hi)))
    c, d = hi - _GOLDEN * (hi - lo), lo + _GOLDEN * (hi - lo)
    fc, fd = function(1.0 + math.exp(c)), function(1.0 + math.exp(d))
    for _ in range(60):
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - _GOLDEN * (hi - lo)
            fc = function(1.0 + math.exp(c))
        else:
            lo, c, fc = c, d, fd
            d = lo + _GOLDEN * (hi - lo)
            fd = function(1.0 + math.exp(d))
        value = min(value, fc, fd)
    return value


def _epsilon_at(rho: float, log_delta: float, alpha: float) -> float:
    return alpha * rho + math.log1p(-1.0 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1.0)


def _log_delta_at(rho: float, epsilon: float, alpha: float) -> float:
    return (alpha - 1.0) * (alpha * rho - epsilon + math.log1p(-1.0 / alpha)) - math.log(alpha)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Upper bound on epsilon at ``delta`` of any rho-zCDP mechanism (Canonne, Kamath & Steinke 2020, Prop. 12)."""
    rho = check_epsilon(rho, "rho")
    delta = check_delta(delta, "delta")
    if rho == 0.0:
        return 0.0
    if delta == 0.0:
        return math.inf
    log_delta = math.log(delta)
    a = _GRID
    values = a * rho + np.log1p(-1.0 / a) - (log_delta + np.log(a)) / (a - 1.0)
    best = float(a[int(np.argmin(values))])
    value = min(float(values.min()), _minimise(lambda alpha: _epsilon_at(rho, log_delta, alpha), best))
    return round_up(max(value, 0.0), ulps=64)


def zcdp_delta(rho: float, epsilon: float) -> float:
    """Upper bound on delta at ``epsilon`` of any rho-zCDP mechanism (Canonne, Kamath & Steinke 2020, Prop. 12)."""
    rho = check_epsilon(rho, "rho")
    epsilon = check_epsilon(epsilon, "epsilon")
    if rho == 0.0:
        return 0.0
    a = _GRID
    values = (a - 1.0) * (a * rho - epsilon + np.log1p(-1.0 / a)) - np.log(a)
    best = float(a[int(np.argmin(values))])
    value = min(float(values.min()), _minimise(lambda alpha: _log_delta_at(rho, epsilon, alpha), best))
    return min(1.0, round_up(math.exp(value), ulps=64))


def _check(leaf: Leaf, relation: str) -> str | None:
    if rho_of_leaf(leaf, relation) is None:
        if leaf.sampling is not None:
            return "no zCDP bound is implemented for subsampled events (use RDPAccountant or PLDAccountant)"
        return "the event has no zCDP bound (use PLDAccountant)"
    return None


class ZCDPAccountant(AttackRiskReadouts):
    """zCDP accounting of event trees: rho adds up; (epsilon, delta) by the Canonne-Kamath-Steinke bound.

    Args:
        neighbouring: "add_remove" (default) or "replace_one" (Gaussian-type sensitivities double).

    ``epsilon``, ``delta`` and ``rho`` are upper bounds (rounded up).
    """

    def __init__(self, neighbouring: str = "add_remove") -> None:
        self.neighbouring = check_neighbouring(neighbouring)
        self._rho = 0.0
        self._leaves: Counter[Leaf] = Counter()

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` would accept ``event`` (nothing is composed)."""
        try:
            flatten(check_event(event), 1, self.neighbouring, type(self).__name__, check=_check)
        except UnsupportedEventError:
            return False
        return True

    def compose(self, event: PrivacyEvent, count: int = 1) -> ZCDPAccountant:
        """Add ``count`` runs of ``event``; the whole tree is checked before any state changes."""
        check_event(event)
        count = check_positive_int(count, "count")
        leaves = flatten(event, count, self.neighbouring, type(self).__name__, check=_check)
        added = math.fsum(n * float(rho_of_leaf(leaf, self.neighbouring)) for leaf, n in leaves.items())
        self._rho = round_up(self._rho + added, ulps=4 + len(leaves))
        self._leaves.update(leaves)
        self._curve_grid = None
        return self

    @property
    def leaves(self) -> dict[Leaf, int]:
        """The normalised leaf mechanisms composed so far and their counts."""
        return dict(self._leaves)

    def rho(self) -> float:
        """The composed zCDP parameter (upper bound)."""
        return self._rho

    def rdp(self, orders: Any) -> np.ndarray:
        """The Renyi-DP curve alpha rho at ``orders`` (each > 1)."""
        a = np.asarray(check_real_sequence(orders, "orders"), dtype=float)
        if (a <= 1.0).any():
            raise InvalidArgument("orders", f"orders must all be > 1, got {float(a.min())!r}")
        return a * self._rho

    def epsilon(self, target_delta: float) -> float:
        """Upper bound on the smallest epsilon with the composition (epsilon, target_delta)-DP."""
        target_delta = check_delta(target_delta, "target_delta")
        return zcdp_epsilon(self._rho, target_delta)

    def delta(self, target_epsilon: float) -> float:
        """Upper bound on the smallest delta with the composition (target_epsilon, delta)-DP."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        return zcdp_delta(self._rho, target_epsilon)

    def profile(self, epsilons: Any) -> np.ndarray:
        """delta(epsilon) at each epsilon (ndarray of upper bounds)."""
        from .curves import accountant_profile

        return accountant_profile(self, epsilons)

    def tradeoff(self, alphas: Any) -> np.ndarray:
        """f(alpha) the composition guarantees (a lower bound on its true trade-off function), from the
        profile on an epsilon grid."""
        from .curves import accountant_tradeoff

        return accountant_tradeoff(self, alphas)

    def _pure_epsilon(self) -> float:
        return 0.0 if self._rho == 0.0 else math.inf

    def to_dict(self, target_delta: float) -> dict[str, Any]:
        """JSON-ready summary at ``target_delta``."""
        return {"accountant": "zcdp", "neighbouring": self.neighbouring, "target_delta": target_delta,
                "rho": self._rho, "epsilon_upper": self.epsilon(target_delta)}

    def __repr__(self) -> str:
        return f"ZCDPAccountant(neighbouring={self.neighbouring!r}, rho={self._rho!r})"
