"""User-level epsilon of an event: the tightest of three sound statements, and which one it is.

A user contributes at most k records; neighbouring datasets differ in one user's records (add/remove of a
user by default). For ``event`` (the record-level mechanism, e.g. DP-SGD's
``SelfComposed(PoissonSampled(q, Gaussian(s)), T)``), :func:`user_level_epsilon` computes

* **exact** -- ``PLDAccountant`` on ``UserLevel(event, k)``: unsampled Gaussian/Laplace steps at sensitivity k
  (eps-DP steps at k eps), Poisson-sampled Gaussian steps as the mixture sum_j Bin(j; k, q) N(j, s^2) against
  N(0, s^2) (records sampled, each of the user's records independently; Ganesh 2024, Thm 3.1;
  :mod:`.families.user_level`). Add/remove only for sampled steps.
* **group privacy on the PLD** -- the record-level PLD's privacy profile through Vadhan (2017, "The
  complexity of differential privacy", Lemma 2.2, the tighter form of its proof): (eps, delta)-DP for records
  gives (k eps, delta (e^{k eps} - 1) / (e^eps - 1))-DP for users; the smallest such k eps over the profile.
  tensorflow_privacy's user-level statement is this over the RDP accountant's profile (never tighter).
* **group privacy on the RDP curve** -- ``RDPAccountant`` on ``UserLevel(event, k)`` (Mironov 2017, Prop. 2 per
  step, at the next power of two >= k); any relation, any sampled step with an RDP curve.
* **group privacy on the RDP profile** -- Vadhan's lemma over the record-level RDP accountant's (eps, delta):
  tensorflow_privacy's statement. Looser than on the PLD where both are finite, but the RDP profile reaches
  deltas far below a PLD grid's floor, which large k needs (the factor grows like e^{(k-1) eps}).

and returns the smallest with its name (every one an upper bound, rounded up). When users rather than
records are sampled (each sampled user contributes all of up to k records), write the sampler outside:
``PoissonSampled(q, UserLevel(Gaussian(s), k))`` is exactly ``PoissonSampled(q, Gaussian(s / k))``.

Example:
    >>> from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
    >>> r = user_level_epsilon(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000), 3, 1e-5)
    >>> r.statement.split(":")[0], round(r.epsilon_upper, 2)
    ('mixture', 6.34)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._numeric import round_up
from .._validation import check_delta, check_positive_int
from ..errors import UnsupportedEventError
from ..events import PrivacyEvent, UserLevel, check_event, check_neighbouring
from .families.user_level import MIXTURE_STATEMENT, RDP_STATEMENT

__all__ = ["UserLevelEpsilon", "user_level_epsilon", "group_privacy_epsilon", "PROFILE_STATEMENT", "RDP_PROFILE_STATEMENT",
           "SCALED_STATEMENT", "RECORD_STATEMENT"]

PROFILE_STATEMENT = ("group privacy on the PLD: the record-level privacy profile through Vadhan 2017, Lemma 2.2 "
                     "((eps, delta) -> (k eps, delta (e^{k eps} - 1) / (e^eps - 1)))")
RDP_PROFILE_STATEMENT = ("group privacy on the RDP profile: the record-level RDP accountant's (eps, delta) through "
                         "Vadhan 2017, Lemma 2.2 (tensorflow_privacy's user-level statement)")
SCALED_STATEMENT = "exact group change of unsampled steps (sensitivity k; k eps for eps-DP steps)"
RECORD_STATEMENT = "record level (k = 1)"
_SCAN_POINTS = 300  # epsilons scanned from eps_record(target / k) up to 100 times it (or + 100)
_SCAN_SPAN = 100.0
_BISECTIONS = 30


@dataclass(frozen=True)
class UserLevelEpsilon:
    """User-level epsilon (upper bound) at ``target_delta``, the ``statement`` it comes from, and every
    candidate's value (inf where that statement does not apply)."""

    epsilon_upper: float
    statement: str
    max_contributions: int
    target_delta: float
    neighbouring: str
    candidates: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"bound": "upper", "epsilon_upper": self.epsilon_upper, "statement": self.statement,
                "max_contributions": self.max_contributions, "target_delta": self.target_delta,
                "neighbouring": self.neighbouring, "candidates": dict(self.candidates)}


def _group_delta_factor(epsilon: float, k: int) -> float:
    """(e^{k eps} - 1) / (e^eps - 1) (k at eps = 0), rounded up."""
    if epsilon == 0.0:
        return float(k)
    if k * epsilon > 700:
        return math.inf
    return round_up(math.expm1(k * epsilon) / math.expm1(epsilon), ulps=8)


def group_privacy_epsilon(accountant: Any, max_contributions: int, target_delta: float) -> float:
    """Smallest k eps with delta_record(eps) (e^{k eps} - 1) / (e^eps - 1) <= ``target_delta`` (Vadhan 2017,
    Lemma 2.2) over ``accountant``'s record-level profile (upper bounds), scanned on epsilons from where
    delta_record = target / k (the factor is at least k) up to 100 times that, then bisected where it first
    holds; inf if it holds nowhere there. An upper bound (any point meeting the condition is one), rounded up."""
    k = check_positive_int(max_contributions, "max_contributions")
    target_delta = check_delta(target_delta, "target_delta")
    if k == 1:
        return accountant.epsilon(target_delta)
    if target_delta == 0.0:
        eps = accountant.epsilon(0.0)
        return round_up(k * eps) if math.isfinite(eps) else math.inf

    profile = getattr(accountant, "_risk_profile", None)  # the PLD's plain grid read-out (an upper bound)
    read = profile if callable(profile) else accountant.profile

    def gap(eps: np.ndarray) -> np.ndarray:
        """user-level delta minus the target (<= 0 where k eps is a bound)."""
        factors = np.array([_group_delta_factor(float(e), k) for e in eps])
        with np.errstate(invalid="ignore"):
            return np.nan_to_num(np.asarray(read(eps), dtype=float) * factors, nan=math.inf) - target_delta

    start = accountant.epsilon(target_delta / k)  # the factor is >= k: nothing below this meets the target
    if not math.isfinite(start):
        return math.inf
    grid = start + np.concatenate([[0.0], np.geomspace(1e-5, 1.0, _SCAN_POINTS - 1)]) * max(start, 1.0) * _SCAN_SPAN
    hits = np.flatnonzero(gap(grid) <= 0)
    if hits.size == 0:
        return math.inf
    first = int(hits[0])
    best = float(grid[first])
    if first > 0:  # bisect between the last miss and the first hit
        low, high = float(grid[first - 1]), best
        for _ in range(_BISECTIONS):
            middle = (low + high) / 2
            if gap(np.array([middle]))[0] <= 0:
                high = best = middle
            else:
                low = middle
    return round_up(k * best)


def user_level_epsilon(event: PrivacyEvent, max_contributions: int, target_delta: float,
                       neighbouring: str = "add_remove") -> UserLevelEpsilon:
    """User-level epsilon (upper bound) of ``event`` when a user contributes at most ``max_contributions``
    records: the smallest of the exact user-level PLD, group privacy on the record-level PLD's profile and
    group privacy on the RDP curve (module docstring), with the statement used."""
    from .pld import PLDAccountant
    from .rdp import RDPAccountant

    check_event(event)
    k = check_positive_int(max_contributions, "max_contributions")
    target_delta = check_delta(target_delta, "target_delta")
    relation = check_neighbouring(neighbouring)
    user = UserLevel(event, k)
    candidates: dict[str, float] = {}
    refusals: list[str] = []

    def attempt(name: str, compute) -> None:
        try:
            candidates[name] = compute()
        except UnsupportedEventError as error:
            candidates[name] = math.inf
            refusals.append(str(error))

    def exact() -> float:
        accountant = PLDAccountant(relation).compose(user)
        return accountant.epsilon(target_delta)

    if k == 1:
        attempt(RECORD_STATEMENT, exact)
    else:
        sampled = not PLDAccountant(relation).supports(user) or any(
            leaf.kind == "user" for leaf in PLDAccountant(relation).compose(user).leaves)
        attempt(MIXTURE_STATEMENT if sampled else SCALED_STATEMENT, exact)
        attempt(PROFILE_STATEMENT, lambda: group_privacy_epsilon(PLDAccountant(relation).compose(event), k, target_delta))
        attempt(RDP_STATEMENT, lambda: RDPAccountant(relation).compose(user).epsilon(target_delta))
        attempt(RDP_PROFILE_STATEMENT,
                lambda: group_privacy_epsilon(RDPAccountant(relation).compose(event), k, target_delta))
    if len(refusals) == len(candidates):
        raise UnsupportedEventError(f"no user-level statement applies to {event!r} under neighbouring={relation!r}: "
                                    + "; ".join(refusals))
    statement = min(candidates, key=lambda name: candidates[name])
    return UserLevelEpsilon(candidates[statement], statement, k, target_delta, relation, candidates)
