"""Update-scale check: is the noise of every released update the one the optimizer declares, whatever the
realised batch size?

DP-SGD with Poisson sampling releases ``(sum of clipped gradients + N(0, (sigma C)^2)) / D`` per step, and
the analysis needs the divisor ``D`` to be a public constant (Opacus: the *expected* batch size q n times
the accumulated micro-batches). Normalising by the batch size actually drawn (a known bug class, Opacus
issue 819) makes every update reveal the batch size, which the accountant never charges for; the Dirac
canary's score cannot see it (the canary's share of the update stays close to C).

The white-box hooks see the pure noise of each update: on the coordinates of the canaries that are not in
the step's batch every other record's gradient is zeroed, so after multiplying the update back by the
declared divisor and dividing by sigma C, those m_t values are, for a correct stack, exactly independent
N(0, 1) draws, independent of the realised batch size B_t. With s_t their sum of squares, H0 says
s_t ~ chi-square(m_t), independently over steps and of every B_t (the noise is drawn independently of the
sampling). Two tests of H0:

* ``batch_size_dependence``: S = sum_t (B_t - mean B)(s_t - m_t). Conditional on the B_t and m_t, S is a
  weighted sum of centred chi-squares; its null distribution is simulated exactly (steps with equal
  (B_t, m_t) pooled into one chi-square of their summed degrees of freedom), two-sided Monte Carlo p-value
  ``(1 + #{as extreme}) / (1 + draws)`` doubled on the smaller tail (valid at every sample size). A divisor
  equal to B_t makes s_t shrink as B_t grows: S far below 0.
* ``noise_level``: sum_t s_t ~ chi-square(sum_t m_t) exactly (two-sided): noise of another scale than the
  declared sigma C (a noise multiplier from another calibration, noise not scaled by C).

Holm's step-down adjustment over the two holds the false-alarm rate of a correct stack at
``false_alarm_rate``; ``violated`` is ``p_value <= false_alarm_rate``. Full-batch training has a constant
B_t (S = 0, p = 1): there the divisor cannot depend on the sampling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._validation import check_nonnegative_int, check_positive_int, check_probability
from ..errors import InvalidArgument
from .sampler import SamplerTest, monte_carlo_two_sided

__all__ = ["UpdateScaleCheck", "check_update_scale", "STEP_COLUMNS"]

STEP_COLUMNS = ("batch_size", "noise_coordinates", "sum_of_squares")


@dataclass(frozen=True)
class UpdateScaleCheck:
    """Outcome of :func:`check_update_scale`: ``violated`` (H0 "the update's noise is N(0, (sigma C)^2) after
    the declared divisor, independent of the realised batch size" rejected; a correct stack is flagged with
    probability at most ``false_alarm_rate``), ``p_value`` (smallest Holm-adjusted p-value), the steps and
    noise coordinates used, the noise's measured scale (1 = as declared) and both tests."""

    violated: bool
    p_value: float
    false_alarm_rate: float
    steps: int
    noise_coordinates: int
    noise_scale: float
    batch_size_range: tuple[int, int]
    tests: tuple[SamplerTest, ...]
    seed: int
    method: str = ("Monte Carlo test of sum_t (B_t - mean B)(s_t - m_t) (the noise's dependence on the realised batch "
                   "size) and exact chi-square test of the noise level; Holm over both")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["tests"] = [t.to_dict() for t in self.tests]
        data["batch_size_range"] = list(self.batch_size_range)
        return data

    def summary(self) -> str:
        verdict = "DEPENDS on the batch or differs from the declared noise" if self.violated else "as declared"
        lines = [f"update-scale check: {verdict} over {self.steps} steps, {self.noise_coordinates} noise coordinates "
                 f"(p = {self.p_value:.3g}, false-alarm rate {self.false_alarm_rate:g}; measured noise scale "
                 f"{self.noise_scale:.4f} of the declared)"]
        lines += [f"  {t.name}: {t.statistic:.6g} (H0 expects {t.expected:.6g}), p = {t.p_value:.3g}, adjusted "
                  f"{t.adjusted_p_value:.3g}{'  REJECTED' if t.rejected else ''}" for t in self.tests]
        return "\n".join(lines)


def _dependence_test(batch: np.ndarray, count: np.ndarray, squares: np.ndarray, draws: int,
                     rng: np.random.Generator) -> tuple[float, float]:
    weights = batch - batch.mean()
    observed = float(np.sum(weights * (squares - count)))
    if not np.any(weights):
        return observed, 1.0
    pairs = np.stack([batch, count], axis=1)
    groups, inverse = np.unique(pairs, axis=0, return_inverse=True)
    freedom = np.bincount(inverse.reshape(-1), weights=count, minlength=len(groups))
    weight = groups[:, 0] - batch.mean()
    used = freedom > 0
    freedom, weight = freedom[used], weight[used]
    simulated = np.empty(draws)
    chunk = max(1, (1 << 21) // max(len(freedom), 1))
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        simulated[start:start + rows] = (rng.chisquare(freedom, size=(rows, len(freedom))) - freedom) @ weight
    return observed, monte_carlo_two_sided(observed, simulated)


def check_update_scale(steps: Any, false_alarm_rate: float = 0.001, seed: int = 0, *,
                       draws: int | None = None) -> UpdateScaleCheck:
    """Test that the released updates' noise is as declared and independent of the realised batch size.

    Args:
        steps: one row per optimizer step (pooled over runs): realised batch size B_t, number m_t of pure-noise
            coordinates seen, and s_t, the sum of their squares after multiplying the update by the declared
            divisor and dividing by sigma C (what :class:`~dpaudit.training.OpacusHooks` records:
            ``hooks.update_steps()``, a run's ``RunOutcome.update_steps``).
        false_alarm_rate: the probability that a correct stack is flagged (both tests, Holm).
        seed: seeds the Monte Carlo null distribution.
        draws: Monte Carlo draws (default: enough for the Holm split, at least 999).
    """
    alpha = check_probability(false_alarm_rate, "false_alarm_rate", low_open=True, high_open=True)
    seed = check_nonnegative_int(seed, "seed")
    draws = max(999, math.ceil(40.0 / alpha)) if draws is None else check_positive_int(draws, "draws")
    table = np.asarray(steps, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != 3:
        raise InvalidArgument("steps", f"steps must have one row (batch_size, noise_coordinates, sum_of_squares) per "
                                       f"step, got shape {table.shape}")
    table = table[table[:, 1] > 0]
    if table.shape[0] == 0:
        raise InvalidArgument("steps", "no step in steps had a pure-noise coordinate: the check needs white-box (Dirac gradient) "
                                       "canaries, some of them outside each batch, and a noise multiplier above 0")
    if not np.all(np.isfinite(table)) or np.any(table < 0):
        raise InvalidArgument("steps", "steps must hold finite, non-negative batch sizes, counts and sums of squares")
    batch, count, squares = table[:, 0], table[:, 1], table[:, 2]
    from scipy.stats import chi2

    from ..auditor import holm_adjust

    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(41,)))
    dependence, p_dependence = _dependence_test(batch, count, squares, draws, rng)
    total, freedom = float(squares.sum()), float(count.sum())
    p_level = min(1.0, 2.0 * min(float(chi2.cdf(total, freedom)), float(chi2.sf(total, freedom))))
    raw = [("batch_size_dependence", dependence, 0.0, p_dependence,
            "sum_t (B_t - mean B)(s_t - m_t): the noise's scale against the realised batch size"),
           ("noise_level", total, freedom, p_level, "sum_t s_t ~ chi-square(sum_t m_t): the declared noise sigma C")]
    adjusted = holm_adjust([r[3] for r in raw])
    tests = tuple(SamplerTest(name, float(stat), float(expected), float(p), float(adj), bool(adj <= alpha), text)
                  for (name, stat, expected, p, text), adj in zip(raw, adjusted))
    p_value = float(min(adjusted))
    return UpdateScaleCheck(violated=bool(p_value <= alpha), p_value=p_value, false_alarm_rate=alpha,
                            steps=int(table.shape[0]), noise_coordinates=int(freedom),
                            noise_scale=math.sqrt(total / freedom), batch_size_range=(int(batch.min()), int(batch.max())),
                            tests=tests, seed=seed)
