"""Calibration to a privacy target: any parameter of any event tree, and the DP-SGD noise multiplier.

**Any parameter** (:func:`calibrate`).
``calibrate(make_event, target_epsilon, target_delta, bounds=(low, high), direction=...)`` finds the
parameter value x in ``bounds`` whose tree ``make_event(x)`` meets (target_epsilon, target_delta) under the
chosen accountant (its epsilon at target_delta, an upper bound, is <= target_epsilon) and is as close to the
threshold as ``tolerance`` allows:

* ``direction="smallest"``: privacy improves as x grows (a noise multiplier): the smallest such x;
* ``direction="largest"``: privacy degrades as x grows (a sampling rate, a step count): the largest such x.

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

from .._validation import check_choice, check_delta, check_positive, check_positive_int, check_sampling_probability
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
    epsilon: float
    target_epsilon: float
    target_delta: float
    direction: str
    accountant: str
    tolerance: float
    bracket: tuple[float, float | None]
    evaluations: int
    history: tuple[tuple[float, float], ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "epsilon_upper": self.epsilon, "target_epsilon": self.target_epsilon,
                "target_delta": self.target_delta, "direction": self.direction, "accountant": self.accountant,
                "tolerance": self.tolerance, "bracket": list(self.bracket), "evaluations": self.evaluations}


def _epsilon_of(event: PrivacyEvent, target_delta: float, accountant: str, neighbouring: str) -> float:
    if accountant == "pld":
        from .pld import PLDAccountant

        return PLDAccountant(neighbouring).compose(event).epsilon(target_delta)
    if accountant == "rdp":
        from .rdp import RDPAccountant

        return RDPAccountant(neighbouring).compose(event).epsilon(target_delta)
    from .best import epsilon_upper

    return epsilon_upper(event, target_delta, neighbouring=neighbouring).epsilon


def calibrate(make_event: Callable[[Any], PrivacyEvent], target_epsilon: float, target_delta: float, *,
              bounds: tuple[float, float], direction: str = "smallest", accountant: str = "pld",
              neighbouring: str = "add_remove", integer: bool = False, tolerance: float = 1e-4) -> CalibrationResult:
    """The parameter value in ``bounds`` closest to the privacy threshold whose event tree meets the target.

    Args:
        make_event: x -> event tree (e.g. ``lambda s: SelfComposed(PoissonSampled(0.01, Gaussian(s)), 1000)``).
        target_epsilon: > 0; target_delta: in [0, 1).
        bounds: (low, high), low < high, the bracket searched (both ends included).
        direction: "smallest" (epsilon decreases in x, e.g. a noise multiplier) or "largest" (epsilon
            increases in x, e.g. a sampling rate or step count).
        accountant: "pld" (default), "rdp", or "best" (:func:`~dpaudit.accountant.epsilon_upper`).
        neighbouring: "add_remove" or "replace_one".
        integer: search integers only (x is passed as ``int``), e.g. step counts.
        tolerance: relative width of the final bracket (continuous parameters), in (0, 0.01].

    Returns:
        A :class:`CalibrationResult`; ``value`` meets the target.
    """
    if not callable(make_event):
        raise InvalidArgumentType("make_event", f"make_event={make_event!r} must be callable")
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

    history: dict[float, float] = {}

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
            history[x] = _epsilon_of(event, target_delta, accountant, neighbouring)
        return history[x]

    def meets(x: float) -> bool:
        return epsilon(x) <= target_epsilon

    def middle(a: float, b: float) -> float:
        if integer:
            return float(math.floor((a + b) / 2))
        return math.sqrt(a * b) if a > 0 and b > 0 else 0.5 * (a + b)

    def check_monotone() -> None:
        points = sorted(history.items())
        values = [eps for _, eps in points]
        for (x0, e0), (x1, e1) in zip(points, points[1:]):
            worse = e1 > e0 * (1 + _MONOTONE_SLACK) + 1e-12 if direction == "smallest" else e1 < e0 * (1 - _MONOTONE_SLACK) - 1e-12
            if worse and not (math.isinf(e0) and math.isinf(e1)):
                raise InvalidArgument("direction", f"direction={direction!r}: epsilon is not monotone over the bracket "
                                                   f"(epsilon({x0:g}) = {e0:g}, epsilon({x1:g}) = {e1:g}); "
                                                   f"probed {[round(v, 6) for v in values]}")

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
        raise InfeasibleBudgetError(
            f"no parameter value in bounds={bounds!r} meets target_epsilon={target_epsilon!r} at "
            f"target_delta={target_delta!r}: the best end ({safe_end:g}) gives epsilon {epsilon(safe_end):g}")
    if meets(unsafe_end):
        return _result(int(unsafe_end) if integer else unsafe_end, None, history, target_epsilon, target_delta, direction, accountant, tolerance)
    # tighten the bracket with the probes: the closest meeting / failing probes around the threshold
    ok = [x for x in history if history[x] <= target_epsilon]
    bad = [x for x in history if history[x] > target_epsilon]
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
    return _result(int(good) if integer else good, fail, history, target_epsilon, target_delta, direction, accountant, tolerance)


def _result(value: float, fail: float | None, history: dict[float, float], target_epsilon: float,
            target_delta: float, direction: str, accountant: str, tolerance: float) -> CalibrationResult:
    return CalibrationResult(value, history[value], target_epsilon, target_delta, direction, accountant, tolerance,
                             (value, fail), len(history), tuple(sorted(history.items())))


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
