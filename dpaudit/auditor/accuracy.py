"""Statistical checks of (alpha, beta)-accuracy theorems.

A theorem claims P[error(data, M(data)) > alpha] <= beta. We run the mechanism ``samples`` times, count
failures F, and test H0: rate <= beta against rate > beta with the exact one-sided binomial test
(p-value P[Binomial(n, beta) >= F]); the theorem is rejected (``holds`` is False) when the p-value is
below 1 - confidence_level. We also report the Clopper-Pearson interval of the failure rate and the
empirical (1 - beta)-quantile of the error with a distribution-free interval, so the theorem's slack
alpha / quantile is a number. Several checks run together are corrected with Holm's method.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from .._validation import check_nonnegative_int, check_positive_int, check_probability, check_real
from ..errors import InvalidArgument, InvalidArgumentType, MechanismError
from .._json import json_ready
from ..stats import binomial_test_greater, clopper_pearson_interval, quantile_interval
from .sampling import PHASE_ACCURACY, SIDE_D, block_sizes, draw_raw_block

__all__ = ["AccuracyResult", "check_accuracy", "check_accuracies", "holm_adjust", "sample_errors"]


@dataclass(frozen=True)
class AccuracyResult:
    """Outcome of :func:`check_accuracy`.

    ``holds`` is False when H0: P[error > alpha] <= beta is rejected at ``confidence_level`` (None when
    the theorem's precondition fails on the data and nothing was tested: see ``reason``).
    """

    name: str
    alpha: float
    beta: float
    samples: int
    failures: int
    failure_rate: float
    rate_lower: float
    rate_upper: float
    p_value: float
    holds: bool | None
    confidence_level: float
    quantile: float  # empirical (1 - beta)-quantile of the error
    quantile_lower: float
    quantile_upper: float
    slack: float  # alpha / quantile: how loose the theorem is (1 = tight; inf when the quantile is <= 0)
    nan_errors: int
    seed: int
    applicable: bool
    reason: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return json_ready(asdict(self))

    def summary(self) -> str:
        if not self.applicable:
            return f"{self.name}: not tested: {self.reason}"
        verdict = "holds" if self.holds else "REJECTED"
        return (f"{self.name}: P[error > {self.alpha:.4g}] = {self.failure_rate:.4g} "
                f"[{self.rate_lower:.4g}, {self.rate_upper:.4g}] vs beta = {self.beta:g}, p = {self.p_value:.3g}: {verdict}; "
                f"empirical {1 - self.beta:g}-quantile {self.quantile:.4g}, slack {self.slack:.3g}")


def _resolve(mechanism: Any, alpha: float | None, beta: float, error: Callable | None) -> tuple[float, Callable]:
    if error is None:
        error = getattr(mechanism, "error", None)
        if not callable(error):
            raise InvalidArgument("error", "error=None: give error(data, outputs) or use a mechanism with an .error method")
    elif not callable(error):
        raise InvalidArgumentType("error", f"error={error!r} must be callable as error(data, outputs)")
    if alpha is None:
        theorem = getattr(mechanism, "accuracy", None)
        if not callable(theorem):
            raise InvalidArgument("alpha", "alpha=None: give alpha or use a mechanism with an .accuracy(beta) method")
        alpha = theorem(beta)
    alpha = check_real(alpha, "alpha")
    if alpha < 0:
        raise InvalidArgument("alpha", f"alpha={alpha!r} must be >= 0")
    return alpha, error


def _precondition(mechanism: Any, data: Any, alpha: float, precondition: Callable | None) -> tuple[bool, str]:
    check = precondition if precondition is not None else getattr(mechanism, "accuracy_precondition", None)
    if check is None:
        return True, ""
    verdict = check(data, alpha)
    if isinstance(verdict, tuple):
        return bool(verdict[0]), str(verdict[1]) if len(verdict) > 1 else ""
    return bool(verdict), "" if verdict else "the theorem's precondition does not hold on these data"


def check_accuracy(
    mechanism: Callable,
    data: Any,
    alpha: float | None = None,
    beta: float = 0.05,
    error: Callable | None = None,
    samples: int = 100_000,
    confidence_level: float = 0.95,
    seed: int = 0,
    *,
    name: str | None = None,
    precondition: Callable | None = None,
) -> AccuracyResult:
    """Test the claim P[error(data, outputs) > alpha] <= beta by running ``mechanism`` ``samples`` times.

    ``alpha`` defaults to ``mechanism.accuracy(beta)``, ``error`` to ``mechanism.error``, and the
    precondition to ``mechanism.accuracy_precondition(data, alpha)`` when the mechanism has them.

    Example:
        >>> import numpy as np
        >>> def laplace(data, size, rng):
        ...     return data + rng.laplace(0.0, 1.0, size)
        >>> result = check_accuracy(laplace, 0.0, alpha=np.log(1 / 0.05), beta=0.05,
        ...                         error=lambda d, y: np.abs(y - d), samples=20_000)
        >>> result.holds
        True
    """
    if not callable(mechanism):
        raise InvalidArgumentType("mechanism", f"mechanism={mechanism!r} must be callable as mechanism(data, size, rng)")
    beta = check_probability(beta, "beta", low_open=True, high_open=True)
    alpha, error = _resolve(mechanism, alpha, beta, error)
    samples = check_positive_int(samples, "samples")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    label = name or getattr(mechanism, "name", None) or getattr(mechanism, "__name__", "mechanism")
    started = time.perf_counter()

    applicable, reason = _precondition(mechanism, data, alpha, precondition)
    if not applicable:
        nan = math.nan
        return AccuracyResult(label, alpha, beta, 0, 0, nan, nan, nan, nan, None, confidence_level, nan, nan, nan, nan,
                              0, seed, False, reason or "precondition fails", time.perf_counter() - started)

    errors = sample_errors(mechanism, data, error, samples, seed)

    nan_errors = int(np.isnan(errors).sum())
    failures = int(np.sum(errors > alpha)) + nan_errors  # an undefined error counts against the theorem
    p_value = float(binomial_test_greater(failures, samples, beta))
    low, high = clopper_pearson_interval(failures, samples, confidence_level)
    finite = np.where(np.isnan(errors), np.inf, errors)
    quantile, q_low, q_high = quantile_interval(finite, 1.0 - beta, confidence_level)
    slack = alpha / quantile if quantile > 0 else math.inf
    return AccuracyResult(
        name=label, alpha=alpha, beta=beta, samples=samples, failures=failures, failure_rate=failures / samples,
        rate_lower=float(low), rate_upper=float(high), p_value=p_value, holds=p_value >= 1.0 - confidence_level,
        confidence_level=confidence_level, quantile=quantile, quantile_lower=q_low, quantile_upper=q_high, slack=slack,
        nan_errors=nan_errors, seed=seed, applicable=True, reason="", seconds=time.perf_counter() - started,
    )


def sample_errors(mechanism: Callable, data: Any, error: Callable, samples: int, seed: int = 0) -> np.ndarray:
    """The theorem's error of ``samples`` independent runs (the stream check_accuracy tests; seeded by block)."""
    errors = []
    for block, size in enumerate(block_sizes(samples)):
        outputs = draw_raw_block(mechanism, data, size, seed, SIDE_D, PHASE_ACCURACY, block)
        try:
            values = np.asarray(error(data, outputs), dtype=np.float64)
        except Exception as exc:
            raise MechanismError(f"error(data, outputs) raised {type(exc).__name__}: {exc}") from exc
        if values.shape not in ((size,), (size, 1)):
            raise MechanismError(f"error(data, outputs) must return {size} values (one per output), got shape {values.shape}")
        errors.append(values.reshape(size))
    return np.concatenate(errors)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (family-wise error control, any dependence).

    Example:
        >>> holm_adjust([0.01, 0.04, 0.03])
        [0.03, 0.06, 0.06]
    """
    p = np.asarray(p_values, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    m = p.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    # printed at 15 digits, never below the raw p-value (the rounding must not make a test less conservative)
    return [max(round(float(v), 15), float(raw)) for v, raw in zip(result, p)]


def check_accuracies(checks: Sequence[dict[str, Any]], confidence_level: float = 0.95, seed: int = 0) -> list[AccuracyResult]:
    """Run several accuracy checks and control the family-wise error rate with Holm's method: with
    probability >= confidence_level no true theorem is rejected. Each dict holds the keyword
    arguments of :func:`check_accuracy` (``mechanism`` and ``data`` required); seeds differ per check.
    """
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    results = []
    for index, spec in enumerate(checks):
        arguments = {"seed": int(np.random.SeedSequence(seed, spawn_key=(5, index)).generate_state(1)[0]), **spec,
                     "confidence_level": confidence_level}
        results.append(check_accuracy(**arguments))
    tested = [i for i, r in enumerate(results) if r.applicable]
    adjusted = holm_adjust([results[i].p_value for i in tested]) if tested else []
    for i, p_adjusted in zip(tested, adjusted):
        results[i] = replace(results[i], p_value=p_adjusted, holds=p_adjusted >= 1.0 - confidence_level)
    return results
