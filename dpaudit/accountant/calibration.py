"""Calibration to a privacy target: any parameter of any event tree, and the DP-SGD noise multiplier.

**Any parameter** (:func:`calibrate`).
``calibrate(make_event, target_epsilon, target_delta, bounds=(low, high), direction=...)`` finds the
parameter value x in ``bounds`` whose tree ``make_event(x)`` meets (target_epsilon, target_delta) under the
chosen accountant (its epsilon at target_delta, an upper bound, is <= target_epsilon) and is as close to the
threshold as ``tolerance`` allows:

* ``direction="smallest"``: privacy improves as x grows (a noise multiplier): the smallest such x;
* ``direction="largest"``: privacy degrades as x grows (a sampling rate, a step count): the largest such x.

**Attack-risk targets** (Kulynych et al. 2024, "Attack-aware noise calibration for differential privacy").
``max_tpr_at_fpr=(tpr, fpr)`` asks that no membership attack with false-positive rate ``fpr`` reach a
true-positive rate above ``tpr`` (the accountant's ``tpr_at_fpr``, an upper bound), ``max_advantage`` that
no attack's TPR - FPR exceed it (``advantage``); they replace or join the (epsilon, delta) target (every
target given is met). A risk target needs less noise than the (epsilon, delta) target of equal risk
(:func:`~dpaudit.accountant.risk.epsilon_for_tpr`: the epsilon whose worst-case trade-off curve gives that
TPR at that FPR), because the mechanism's own curve lies below the (epsilon, delta) one elsewhere. A target
below a random guess (tpr < fpr) -> InvalidArgument naming ``max_tpr_at_fpr``.

Method: the whole bracket is probed at a few points (which checks the stated monotonicity), then
bisection (geometric when both ends are positive, on integers with ``integer=True``) keeps an end that
meets the target and one that does not, until they are within a relative ``tolerance`` (integers:
adjacent); the end that **meets** the target is returned, so the answer never lies on the unsafe side of
the accountant's bound. A 0.1% step from it in the unsafe direction fails the target whenever
``tolerance`` < 1e-3 (default 1e-4) and the accountant's epsilon moves with the parameter.

Errors (never a value on the unsafe side): the target met nowhere in the bounds ->
:class:`~dpaudit.errors.InfeasibleBudgetError`; ``make_event`` raising or returning a non-event ->
InvalidArgument/InvalidArgumentType naming ``make_event`` and the value; epsilon not monotone in the
stated direction over the probed points -> InvalidArgument naming ``direction``; target_delta = 0 with
Gaussian noise in the tree -> InvalidArgument naming ``target_delta``.

Example:
    >>> from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
    >>> res = calibrate(lambda s: SelfComposed(PoissonSampled(0.01, Gaussian(s)), 1000), 3.0, 1e-5,
    ...                 bounds=(0.3, 10.0), direction="smallest")
    >>> round(res.value, 3)
    0.814

**DP-SGD noise** (:func:`dpsgd_noise_multiplier`). DP-SGD with noise multiplier sigma, Poisson sampling
rate q and T steps is the event ``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``. Its accountant epsilon decreases in sigma, so
a bracketing search on ln(sigma) (doubling to bracket, then bisection) finds sigma within a relative
``tolerance`` of the threshold; the **upper** end of the final bracket is returned, whose epsilon the
accountant has certified to be <= target (the answer errs towards more noise).

For a single Gaussian release use :func:`~dpaudit.accountant.analytic_gaussian_sigma` (Balle & Wang 2018).

Example:
    >>> round(dpsgd_noise_multiplier(3.0, 1e-5, 0.01, 1000), 2)
    0.81
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .._validation import (
    check_choice,
    check_delta,
    check_positive,
    check_positive_int,
    check_probability,
    check_sampling_probability,
)
from ..errors import InfeasibleBudgetError, InvalidArgument, InvalidArgumentType
from ..events import Gaussian, PoissonSampled, PrivacyEvent, SelfComposed, check_neighbouring, iter_leaves

__all__ = ["CalibrationResult", "calibrate", "CALIBRATION_ACCOUNTANTS", "DIRECTIONS",
           "dpsgd_event", "dpsgd_epsilon", "dpsgd_noise_multiplier", "ACCOUNTANTS"]

CALIBRATION_ACCOUNTANTS = ("pld", "rdp", "best")
DIRECTIONS = ("smallest", "largest")
_PROBES = 5
_MONOTONE_SLACK = 1e-3  # relative wiggle of a numeric accountant tolerated before non-monotonicity is reported


@dataclass(frozen=True)
class CalibrationResult:
    """The calibrated ``value`` (meets the target), its certified ``epsilon`` and the final bracket
    ``(safe, unsafe)``; ``unsafe`` is None when the whole bracket meets the target."""

    value: float
    epsilon: float | None
    target_epsilon: float | None
    target_delta: float | None
    direction: str
    accountant: str
    tolerance: float
    bracket: tuple[float, float | None]
    evaluations: int
    history: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    tpr_upper: float | None = None
    max_tpr_at_fpr: tuple[float, float] | None = None
    advantage_upper: float | None = None
    max_advantage: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {"value": self.value, "epsilon_upper": self.epsilon, "target_epsilon": self.target_epsilon,
                "target_delta": self.target_delta, "direction": self.direction, "accountant": self.accountant,
                "tolerance": self.tolerance, "bracket": list(self.bracket), "evaluations": self.evaluations}
        if self.max_tpr_at_fpr is not None:
            data["max_tpr_at_fpr"] = list(self.max_tpr_at_fpr)
            data["tpr_upper"] = self.tpr_upper
        if self.max_advantage is not None:
            data["max_advantage"] = self.max_advantage
            data["advantage_upper"] = self.advantage_upper
        return data


def _epsilon_of(event: PrivacyEvent, target_delta: float, accountant: str, neighbouring: str) -> float:
    if accountant == "pld":
        from .pld import PLDAccountant

        return PLDAccountant(neighbouring).compose(event).epsilon(target_delta)
    if accountant == "rdp":
        from .rdp import RDPAccountant

        return RDPAccountant(neighbouring).compose(event).epsilon(target_delta)
    from .best import epsilon_upper

    return epsilon_upper(event, target_delta, neighbouring=neighbouring).epsilon


def _risk_of(event: PrivacyEvent, accountant: str, neighbouring: str, read: Callable[[Any], float]) -> float:
    """An attack-risk read-out (an upper bound) of the event under the chosen accountant; "best" takes the
    smaller of the PLD and RDP accountants' (both are upper bounds on the same risk)."""
    from .pld import PLDAccountant
    from .rdp import RDPAccountant

    kinds = {"pld": (PLDAccountant,), "rdp": (RDPAccountant,), "best": (PLDAccountant, RDPAccountant)}[accountant]
    values = [read(kind(neighbouring).compose(event)) for kind in kinds
              if len(kinds) == 1 or kind(neighbouring).supports(event)]
    return min(values) if values else math.inf


def _risk_targets(max_tpr_at_fpr: Any, max_advantage: Any) -> tuple[tuple[float, float] | None, float | None]:
    """Validated risk targets: (tpr, fpr) with 0 < fpr < 1 and fpr <= tpr < 1 (no attack is held below a
    random guess, TPR = FPR), and an advantage in [0, 1)."""
    pair = None
    if max_tpr_at_fpr is not None:
        try:
            tpr, fpr = max_tpr_at_fpr
        except (TypeError, ValueError):
            raise InvalidArgumentType("max_tpr_at_fpr", f"max_tpr_at_fpr={max_tpr_at_fpr!r} must be a pair (tpr, fpr)") from None
        fpr = check_probability(fpr, "max_tpr_at_fpr", low_open=True, high_open=True)
        tpr = check_probability(tpr, "max_tpr_at_fpr", high_open=True)
        if tpr < fpr:
            raise InvalidArgument("max_tpr_at_fpr", f"max_tpr_at_fpr=({tpr!r}, {fpr!r}): no parameter reaches a "
                                                    "true-positive rate below the false-positive rate (a random "
                                                    "guess has TPR = FPR)")
        pair = (tpr, fpr)
    if max_advantage is not None:
        max_advantage = check_probability(max_advantage, "max_advantage", high_open=True)
    return pair, max_advantage


def calibrate(make_event: Callable[[Any], PrivacyEvent], target_epsilon: float | None = None,
              target_delta: float | None = None, *, bounds: tuple[float, float], direction: str = "smallest",
              accountant: str = "pld", neighbouring: str = "add_remove", integer: bool = False,
              tolerance: float = 1e-4, max_tpr_at_fpr: tuple[float, float] | None = None,
              max_advantage: float | None = None) -> CalibrationResult:
    """The parameter value in ``bounds`` closest to the privacy threshold whose event tree meets the target.

    Args:
        make_event: x -> event tree (e.g. ``lambda s: SelfComposed(PoissonSampled(0.01, Gaussian(s)), 1000)``).
        target_epsilon: > 0; target_delta: in [0, 1) (both, or neither when a risk target is given).
        max_tpr_at_fpr: an attack-risk target (tpr, fpr): every membership attack with false-positive rate
            fpr has true-positive rate at most tpr (the accountant's ``tpr_at_fpr``, an upper bound;
            Kulynych et al. 2024). Needs less noise than the (epsilon, delta) target of equal risk
            (:func:`~dpaudit.accountant.risk.epsilon_for_tpr`), which holds at every FPR at once.
        max_advantage: an attack-risk target: TPR - FPR of every attack at most this (``advantage``).
        bounds: (low, high), low < high, the bracket searched (both ends included).
        direction: "smallest" (epsilon decreases in x, e.g. a noise multiplier) or "largest" (epsilon
            increases in x, e.g. a sampling rate or step count).
        accountant: "pld" (default), "rdp", or "best" (:func:`~dpaudit.accountant.epsilon_upper`).
        neighbouring: "add_remove" or "replace_one".
        integer: search integers only (x is passed as ``int``), e.g. step counts.
        tolerance: relative width of the final bracket (continuous parameters), in (0, 0.01].

    Every target given must be met. Returns:
        A :class:`CalibrationResult`; ``value`` meets the targets.
    """
    if not callable(make_event):
        raise InvalidArgumentType("make_event", f"make_event={make_event!r} must be callable")
    risk_pair, max_advantage = _risk_targets(max_tpr_at_fpr, max_advantage)
    if (target_epsilon is None) != (target_delta is None):
        missing = "target_delta" if target_delta is None else "target_epsilon"
        raise InvalidArgument(missing, f"{missing} is missing: give target_epsilon and target_delta together")
    if target_epsilon is None and risk_pair is None and max_advantage is None:
        raise InvalidArgument("target_epsilon", "give a target: target_epsilon and target_delta, max_tpr_at_fpr "
                                                "or max_advantage")
    if target_epsilon is not None:
        target_epsilon = check_positive(target_epsilon, "target_epsilon")
        target_delta = check_delta(target_delta, "target_delta")
    direction = check_choice(direction, "direction", DIRECTIONS)
    accountant = check_choice(accountant, "accountant", CALIBRATION_ACCOUNTANTS)
    neighbouring = check_neighbouring(neighbouring)
    tolerance = check_positive(tolerance, "tolerance")
    if tolerance > 0.01:
        raise InvalidArgument("tolerance", f"tolerance={tolerance!r} must be <= 0.01")
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise InvalidArgumentType("bounds", f"bounds={bounds!r} must be a pair (low, high)") from None
    low, high = float(low), float(high)
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise InvalidArgument("bounds", f"bounds={bounds!r} must be finite with low < high")
    if integer:
        low, high = float(math.ceil(low)), float(math.floor(high))
        if low > high:
            raise InvalidArgument("bounds", f"bounds={bounds!r} contain no integer")

    # every target as (name, limit, read-out of an event), all upper bounds
    targets: list[tuple[str, float, Callable[[PrivacyEvent], float]]] = []
    if target_epsilon is not None:
        targets.append(("epsilon", target_epsilon, lambda e: _epsilon_of(e, target_delta, accountant, neighbouring)))
    if risk_pair is not None:
        targets.append(("tpr", risk_pair[0], lambda e: _risk_of(e, accountant, neighbouring,
                                                              lambda a: float(a.tpr_at_fpr(risk_pair[1])))))
    if max_advantage is not None:
        targets.append(("advantage", max_advantage, lambda e: _risk_of(e, accountant, neighbouring,
                                                                     lambda a: a.advantage())))
    values: dict[float, tuple[float, ...]] = {}
    history: dict[float, float] = {}  # x -> the first target's read-out (epsilon when given)

    def build(x: float) -> PrivacyEvent:
        arg: Any = int(x) if integer else x
        try:
            event = make_event(arg)
        except Exception as exc:  # the user's callable: wrap whatever it raises, naming it
            raise InvalidArgument("make_event", f"make_event({arg!r}) raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(event, PrivacyEvent):
            raise InvalidArgumentType("make_event", f"make_event({arg!r}) returned {type(event).__name__}, "
                                                    "not a PrivacyEvent")
        return event

    def epsilon(x: float) -> float:
        if x not in history:
            event = build(x)
            if target_delta == 0.0 and any(isinstance(leaf, Gaussian) for leaf in iter_leaves(event)):
                raise InvalidArgument("target_delta", "target_delta=0.0 must be > 0: the tree has Gaussian noise, "
                                                      "which is never pure DP (no parameter value can meet it)")
            values[x] = tuple(read(event) for _, _, read in targets)
            history[x] = values[x][0]
        return history[x]

    def meets(x: float) -> bool:
        epsilon(x)
        return all(value <= limit for value, (_, limit, _) in zip(values[x], targets))

    def middle(a: float, b: float) -> float:
        if integer:
            return float(math.floor((a + b) / 2))
        return math.sqrt(a * b) if a > 0 and b > 0 else 0.5 * (a + b)

    def check_monotone() -> None:
        for index, (name, _, _) in enumerate(targets):
            points = sorted((x, value[index]) for x, value in values.items())
            probed = [v for _, v in points]
            for (x0, e0), (x1, e1) in zip(points, points[1:]):
                worse = e1 > e0 * (1 + _MONOTONE_SLACK) + 1e-12 if direction == "smallest" else e1 < e0 * (1 - _MONOTONE_SLACK) - 1e-12
                if worse and not (math.isinf(e0) and math.isinf(e1)):
                    raise InvalidArgument("direction", f"direction={direction!r}: {name} is not monotone over the bracket "
                                                       f"({name}({x0:g}) = {e0:g}, {name}({x1:g}) = {e1:g}); "
                                                       f"probed {[round(v, 6) for v in probed]}")

    # probe the bracket (also checks monotonicity at a few points)
    probes = {low, high}
    for i in range(1, _PROBES - 1):
        t = i / (_PROBES - 1)
        x = low * (high / low) ** t if low > 0 else low + t * (high - low)
        probes.add(float(round(x)) if integer else x)
    for x in sorted(probes):
        epsilon(x)
    check_monotone()
    safe_end, unsafe_end = (high, low) if direction == "smallest" else (low, high)
    if not meets(safe_end):
        missed = [f"{name} {value:g} > {limit!r}" for (name, limit, _), value in zip(targets, values[safe_end]) if value > limit]
        wanted = (f"target_epsilon={target_epsilon!r} at target_delta={target_delta!r}" if target_epsilon is not None
                  else "the risk target")
        raise InfeasibleBudgetError(
            f"no parameter value in bounds={bounds!r} meets {wanted}"
            + (f", max_tpr_at_fpr={risk_pair!r}" if risk_pair is not None and target_epsilon is not None else "")
            + (f", max_advantage={max_advantage!r}" if max_advantage is not None and target_epsilon is not None else "")
            + f": the best end ({safe_end:g}) gives " + ", ".join(missed))
    finish = {"history": history, "values": values, "targets": targets, "target_epsilon": target_epsilon,
              "target_delta": target_delta, "direction": direction, "accountant": accountant, "tolerance": tolerance,
              "risk_pair": risk_pair, "max_advantage": max_advantage}
    if meets(unsafe_end):
        return _result(int(unsafe_end) if integer else unsafe_end, None, **finish)
    # tighten the bracket with the probes: the closest meeting / failing probes around the threshold
    ok = [x for x in history if meets(x)]
    bad = [x for x in history if not meets(x)]
    if direction == "smallest":
        good, fail = min(ok), max(x for x in bad if x < min(ok))
    else:
        good, fail = max(ok), min(x for x in bad if x > max(ok))
    while True:
        if integer:
            if abs(good - fail) <= 1:
                break
        elif abs(good - fail) <= tolerance * max(abs(good), abs(fail)):
            break
        mid = middle(good, fail)
        if mid in (good, fail):
            break
        if meets(mid):
            good = mid
        else:
            fail = mid
    check_monotone()
    return _result(int(good) if integer else good, fail, **finish)


def _result(value: float, fail: float | None, *, history: dict[float, float], values: dict[float, tuple[float, ...]],
            targets: list, target_epsilon: float | None, target_delta: float | None, direction: str, accountant: str,
            tolerance: float, risk_pair: tuple[float, float] | None, max_advantage: float | None) -> CalibrationResult:
    read = dict(zip((name for name, _, _ in targets), values[value]))
    return CalibrationResult(value, read.get("epsilon"), target_epsilon, target_delta, direction, accountant, tolerance,
                             (value, fail), len(history), tuple(sorted(history.items())),
                             tpr_upper=read.get("tpr"), max_tpr_at_fpr=risk_pair,
                             advantage_upper=read.get("advantage"), max_advantage=max_advantage)


# ------------------------------------------------------------------------------------ DP-SGD
ACCOUNTANTS = ("pld", "rdp")


def dpsgd_event(noise_multiplier: float, sampling_probability: float, steps: int) -> PrivacyEvent:
    """The event of ``steps`` DP-SGD steps (Poisson sampling, Gaussian noise)."""
    step = Gaussian(noise_multiplier)
    if sampling_probability < 1.0:
        step = PoissonSampled(sampling_probability, step)
    return SelfComposed(step, steps)


def _accountant(name: str, neighbouring: str):
    from .pld import PLDAccountant  # lazily: `import dpaudit.accountant` stays light (numpy only)
    from .rdp import RDPAccountant

    return PLDAccountant(neighbouring) if name == "pld" else RDPAccountant(neighbouring)


def dpsgd_epsilon(noise_multiplier: float, target_delta: float, sampling_probability: float, steps: int,
                  *, accountant: str = "pld", neighbouring: str = "add_remove") -> float:
    """Upper bound on the epsilon of DP-SGD at ``target_delta`` under the chosen accountant."""
    noise_multiplier = check_positive(noise_multiplier, "noise_multiplier")
    target_delta = check_delta(target_delta, "target_delta")
    q = check_sampling_probability(sampling_probability)
    steps = check_positive_int(steps, "steps")
    accountant = check_choice(accountant, "accountant", ACCOUNTANTS)
    neighbouring = check_neighbouring(neighbouring)
    acct = _accountant(accountant, neighbouring).compose(dpsgd_event(noise_multiplier, q, steps))
    return acct.epsilon(target_delta)


def dpsgd_noise_multiplier(target_epsilon: float, target_delta: float, sampling_probability: float, steps: int,
                           *, accountant: str = "pld", neighbouring: str = "add_remove",
                           tolerance: float = 1e-3) -> float:
    """Smallest noise multiplier (within relative ``tolerance``, rounded towards more noise) for which
    ``steps`` DP-SGD steps are (target_epsilon, target_delta)-DP according to ``accountant``.

    Raises:
        InfeasibleBudgetError: when no noise multiplier up to 1e6 meets the target.
    """
    target_epsilon = check_positive(target_epsilon, "target_epsilon")
    target_delta = check_delta(target_delta, "target_delta")
    if target_delta == 0.0:
        raise InvalidArgument("target_delta", "target_delta=0.0 must be > 0: Gaussian noise is never pure DP")
    q = check_sampling_probability(sampling_probability)
    steps = check_positive_int(steps, "steps")
    accountant = check_choice(accountant, "accountant", ACCOUNTANTS)
    neighbouring = check_neighbouring(neighbouring)
    tolerance = check_positive(tolerance, "tolerance")
    if tolerance >= 1.0:
        raise InvalidArgument("tolerance", f"tolerance={tolerance!r} must be < 1")

    def meets(sigma: float) -> bool:
        return dpsgd_epsilon(sigma, target_delta, q, steps, accountant=accountant, neighbouring=neighbouring) <= target_epsilon

    high = 1.0
    while not meets(high):
        high *= 2.0
        if high > 1e6:
            raise InfeasibleBudgetError(f"no noise multiplier up to 1e6 reaches target_epsilon={target_epsilon!r}")
    low = high / 2.0
    while meets(low):
        high, low = low, low / 2.0
        if low < 1e-6:
            return high
    while high / low - 1.0 > tolerance:
        middle = math.sqrt(low * high)
        if meets(middle):
            high = middle
        else:
            low = middle
    return high
