"""The witness's checks: each one parameter of the claim, read from the ledgers of one run.

Deterministic checks (a finding needs no statistics: under a correct stack it cannot happen):

* ``reads_before_attach`` (data): records read before ``hooks.attach`` (a non-private warm-up, normalisation
  statistics, a first training phase under another engine, a copy of the data);
* ``reads_outside_noisy_steps`` (data): records read after attach that fed no noisy step (a second loader, an
  evaluation or fine-tuning pass on the private data);
* ``examples_outside_the_ledger`` (data): per-example gradients with no read behind them (data copied into
  tensors, in-loop augmentation multiplying examples): the ledger cannot say which records they were;
* ``noisy_steps`` (update): the noisy steps of the run (those of any other DP optimizer included) against
  the claim's steps;
* ``unexplained_updates`` (update): any parameter change between attach and the model returned that no
  noisy step made;
* ``clipping`` (clipping): every example's clipped gradient, all parameters together, has norm at most the
  C the noise is scaled by, and the clipped sum is the sum of the examples' clipped gradients.

Statistical checks, each at an equal share of the false-alarm rate (Bonferroni over :data:`STATISTICAL`):

* ``inclusion_rate`` (data): the records each noisy step used against Poisson(q) of the claim, with the five
  tests of :func:`~dpaudit.training.sampler.poisson_tests` (Holm within; records read k times per step show
  as duplicates and a k-fold batch total);
* ``noise_level`` (noise): sum_t |u_t|^2 / (sigma_t C)^2 ~ chi-square(sum_t m_t) exactly, u_t the noise of step
  t on all its m_t coordinates and sigma_t the claim's (two-sided; one-sided below with a slack when sigma
  is implied by an epsilon);
* ``noise_independence`` (noise): with z_t the noise in units of the optimizer's sigma C, |sum_t z_t|^2 / T
  and sum_t |z_t - mean z|^2 are independent chi-squares with m and m (T - 1) degrees of freedom under
  independent Gaussian noise of any common scale, so their ratio is exactly F(m, m (T - 1)) (two-sided; the
  same noise every step makes the second zero).

Reads in DataLoader worker processes (``num_workers > 0``) are only counted: before attach they are reads
before attach; after it, ``reads_outside_noisy_steps``, ``examples_outside_the_ledger`` and
``inclusion_rate`` are not tested and the result carries a warning saying why (:func:`ledger_limits`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .claim import ClaimedRun
from .recorder import WitnessHooks

__all__ = ["WitnessCheck", "STATISTICAL", "witness_checks", "ledger_limits"]

STATISTICAL = ("inclusion_rate", "noise_level", "noise_independence")


@dataclass(frozen=True)
class WitnessCheck:
    """One check of a witnessed run: ``name``, the ``family`` (data, update, clipping, noise), ``flagged``,
    its ``statistic`` and what a correct stack gives (``expected``), the ``p_value`` and ``false_alarm_rate``
    of a statistical check (None for a deterministic one), whether it could be ``tested``, and a sentence
    saying what it shows."""

    name: str
    family: str
    flagged: bool
    statistic: float
    expected: float | None
    p_value: float | None
    false_alarm_rate: float | None
    tested: bool
    sentence: str

    @property
    def deterministic(self) -> bool:
        return self.p_value is None

    def to_dict(self) -> dict[str, Any]:
        def plain(x: Any) -> Any:
            return ("inf" if x > 0 else "-inf") if isinstance(x, float) and math.isinf(x) else x

        return {"name": self.name, "family": self.family, "flagged": self.flagged, "statistic": plain(self.statistic),
                "expected": plain(self.expected), "p_value": self.p_value, "false_alarm_rate": self.false_alarm_rate,
                "deterministic": self.deterministic, "tested": self.tested, "sentence": self.sentence}

    def line(self) -> str:
        if not self.tested and self.sentence.startswith("not tested"):  # the sentence says it, and why
            return f"{self.name}: {self.sentence}"
        verdict = "FLAGGED" if self.flagged else ("pass" if self.tested else "not tested")
        p = "" if self.p_value is None else f" (p = {self.p_value:.3g}, false-alarm share {self.false_alarm_rate:.3g})"
        return f"{self.name}: {verdict}{p}: {self.sentence}"


def _check(name: str, family: str, flagged: bool, statistic: float, expected: float | None, sentence: str,
           p_value: float | None = None, alpha: float | None = None, tested: bool = True) -> WitnessCheck:
    return WitnessCheck(name, family, bool(flagged), float(statistic), None if expected is None else float(expected),
                        None if p_value is None else float(p_value), alpha, tested, sentence)


# ------------------------------------------------------------------------------------------ data
def _data_checks(h: WitnessHooks, records: int) -> list[WitnessCheck]:
    before = len(h.reads_before_attach) + h.worker_reads_before_attach
    bulk = f" (in bulk: dataset.{', dataset.'.join(sorted(set(h.bulk_before_attach)))})" if h.bulk_before_attach else ""
    distinct = len(set(h.reads_before_attach))
    if h.worker_reads_before_attach:
        read = (f"{before} reads before hooks.attach, {h.worker_reads_before_attach} of them in DataLoader worker processes "
                f"(which records the ledger cannot see; {distinct} distinct records read in this process){bulk}")
    else:
        read = f"{before} reads of {distinct} of the {records} records before hooks.attach{bulk}"
    out = [_check("reads_before_attach", "data", before > 0, before, 0,
                  f"{read}: training, statistics or copies made before the engine was attached are outside the claim"
                  if before else "no record was read before hooks.attach (in this process or a DataLoader worker)")]
    unseen_reads = h.worker_reads_after_attach
    if unseen_reads:  # the reads after attach cannot be placed in steps: say so, flag nothing on them
        why = worker_limit(h)
        return out + [_check("reads_outside_noisy_steps", "data", False, 0, None, f"not tested: {why}", tested=False),
                      _check("examples_outside_the_ledger", "data", False, 0, None, f"not tested: {why}", tested=False)]
    stray = h.stray_between + h.stray_after
    bulk_after = f" (dataset.{', dataset.'.join(sorted(set(h.bulk_after_attach)))} read in bulk)" if h.bulk_after_attach else ""
    out.append(_check("reads_outside_noisy_steps", "data", stray > 0, stray, 0,
                      f"{stray} reads after attach fed no noisy step ({h.stray_between} between steps, {h.stray_after} "
                      f"after the last){bulk_after}: a second loader, an evaluation or a fine-tuning pass on the private "
                      "data is outside the claim" if stray else
                      f"every read after attach fed a noisy step ({sum(b.size for b in h.step_batches)} reads)"))
    unseen = h.unledgered_examples
    out.append(_check("examples_outside_the_ledger", "data", unseen > 0, unseen, 0,
                      f"{unseen} per-example gradients of noisy steps had no read of the dataset behind them (data copied "
                      "into tensors or examples multiplied in the training loop): the ledger cannot say which records they "
                      "were, so the sampling cannot be witnessed"
                      if unseen else "every example of every noisy step was a record read from the dataset"))
    return out


def worker_limit(h: WitnessHooks) -> str:
    """What the ledger could not see when records were read in DataLoader worker processes after attach."""
    return (f"{h.worker_reads_after_attach} reads after hooks.attach were made in DataLoader worker processes "
            "(num_workers > 0), which the data ledger counts but cannot place: which records they were and which step "
            "they fed never reach the training process, so reads outside noisy steps and each step's sampling cannot be "
            "witnessed; witness the same stack with num_workers=0 (the sampling and the training are the same)")


def ledger_limits(h: WitnessHooks) -> tuple[str, ...]:
    """Warnings for what the ledgers of this run could not see."""
    return (f"the data ledger could not see this run's reads: {worker_limit(h)}",) if h.worker_reads_after_attach else ()


def _inclusion_check(h: WitnessHooks, claim: ClaimedRun, records: int, alpha: float, seed: int) -> WitnessCheck:
    from ...auditor import holm_adjust
    from ..sampler import poisson_tests

    batches = h.step_batches
    if h.worker_reads_after_attach:
        return _check("inclusion_rate", "data", False, 0, None, f"not tested: {worker_limit(h)}", p_value=1.0, alpha=alpha,
                      tested=False)
    if claim.rates is None or len(batches) < 2:
        why = "the claim gives no sampling rate" if claim.rates is None else f"the run took {len(batches)} noisy step(s)"
        return _check("inclusion_rate", "data", False, 0, None, f"not tested: {why} (at least 2 noisy steps and a "
                      "sampling rate are needed)", p_value=1.0, alpha=alpha, tested=False)
    rates = claim.rates[:len(batches)] if claim.rates.size >= len(batches) else np.concatenate(
        [claim.rates, np.full(len(batches) - claim.rates.size, claim.rates[-1])])
    groups = [(q, [b for b, r in zip(batches, rates) if r == q]) for q in np.unique(rates)]
    groups = [(q, g) for q, g in groups if len(g) >= 2]
    share = alpha / max(1, len(groups))
    worst: tuple[float, str, float, float, float] | None = None
    for q, group in groups:
        raw = poisson_tests(group, records, float(q), seed, max(999, math.ceil(20.0 / share)))
        adjusted = holm_adjust([r[3] for r in raw])
        k = int(np.argmin(adjusted))
        p = min(1.0, float(adjusted[k]) * len(groups))
        if worst is None or p < worst[0]:
            worst = (p, raw[k][0], raw[k][1], raw[k][2], float(q))
    if worst is None:
        return _check("inclusion_rate", "data", False, 0, None, "not tested: no sampling rate held for 2 noisy steps",
                      p_value=1.0, alpha=alpha, tested=False)
    p, test, statistic, expected, q = worst
    used = np.concatenate(batches)
    mean_rate = used.size / (records * len(batches))
    flagged = p <= alpha
    sentence = (f"the records each noisy step used, {len(batches)} steps of {records} records, against Poisson sampling at "
                f"q = {q:.4g}: mean inclusion rate {mean_rate:.4g} per record and step; the strongest test, {test}, "
                f"gives {statistic:.6g} where Poisson gives {expected:.6g}")
    return _check("inclusion_rate", "data", flagged, statistic, expected,
                  sentence + (" (NOT the claim's sampling)" if flagged else ""), p_value=p, alpha=alpha)


# ------------------------------------------------------------------------------------------ updates
def _update_checks(h: WitnessHooks, claim: ClaimedRun) -> list[WitnessCheck]:
    ours = len(h.step_batches)
    others = h.other_dp_steps_before + h.other_dp_steps_after
    taken = ours + others
    if claim.steps is None:
        steps = _check("noisy_steps", "update", others > 0, taken, None,
                       f"{taken} noisy steps ({others} of another DP optimizer); the claim gives no step count",
                       tested=others > 0)
    else:
        flagged = taken > claim.steps
        extra = f", {others} of them by another DP optimizer than the attached one" if others else ""
        steps = _check("noisy_steps", "update", flagged, taken, claim.steps,
                       f"{taken} noisy steps changed the model{extra}; the claim counts {claim.steps}"
                       + (": the claim leaves steps out" if flagged else ""))
    plain = h.plain_steps_after
    sentence = "; ".join(h.unexplained) if h.unexplained else (
        f"every parameter change between attach and the model returned was made by one of the {ours} noisy steps"
        + (f" ({h.plain_steps_before} plain optimizer steps before attach)" if h.plain_steps_before else ""))
    if h.unexplained and plain:
        sentence += f" ({plain} steps of a plain optimizer after attach)"
    return [steps, _check("unexplained_updates", "update", bool(h.unexplained), len(h.unexplained), 0, sentence)]


def _clipping_check(h: WitnessHooks) -> WitnessCheck:
    r = h.clipping
    if r.examples == 0:
        return _check("clipping", "clipping", False, 0, None, "not tested: no example was clipped", tested=False)
    how = ", ".join(f"{count} {mode}" for mode, count in r.witnessed.items() if count)
    above = r.above_bound_after_clipping()
    if r.batch_dependent:
        sentence = (f"in {r.batch_dependent} batch(es) the clipped sum is not the sum of each example's clipped gradient "
                    f"(gap {r.batch_dependence:.3g} of its norm): the clipping depends on the other examples of the batch "
                    "(batch-level clipping), so one example's effect is not bounded by C")
    elif above:
        sentence = (f"an example's clipped gradient, all parameters together, has norm {r.max_clipped_norm:.6g} above the C = "
                    f"{r.bound:g} the noise is scaled by ({r.above_bound} of {r.examples} examples were above C before "
                    "clipping): per-layer thresholds that add up to more than C, or no clipping")
    else:
        sentence = (f"every example's clipped gradient over all parameters has norm <= C = {r.bound:g} (largest "
                    f"{r.max_clipped_norm:.6g}; {r.above_bound} of {r.examples} examples were above C before clipping); "
                    f"batches witnessed: {how}")
        if r.unprobed:
            sentence += (f"; {r.unprobed} batch(es) matched neither Opacus' flat nor its per-layer clipping and were not "
                         f"probed (the first {r.witnessed['probed']} were, and passed)")
    return _check("clipping", "clipping", above or r.batch_dependent > 0, r.max_clipped_norm, r.bound, sentence)


# ------------------------------------------------------------------------------------------ noise
def _noise_level_check(h: WitnessHooks, claim: ClaimedRun, alpha: float) -> WitnessCheck:
    from scipy.stats import chi2

    steps = h.step_noise
    if claim.sigmas is None or not steps:
        why = "the claim gives no noise multiplier" if claim.sigmas is None else "no noisy step's noise could be read"
        return _check("noise_level", "noise", False, 0, None, f"not tested: {why}", p_value=1.0, alpha=alpha, tested=False)
    sigmas = claim.sigmas
    scaled, freedom = 0.0, 0
    for index, (count, squares, _, _) in enumerate(steps):
        sigma = sigmas[min(index, sigmas.size - 1)] * (1.0 - claim.slack)
        if sigma <= 0:
            continue
        scaled += squares / sigma ** 2
        freedom += count
    if freedom == 0:
        return _check("noise_level", "noise", False, 0, None, "not tested: the claim's noise multiplier is 0",
                      p_value=1.0, alpha=alpha, tested=False)
    low = float(chi2.cdf(scaled, freedom))
    p = low if claim.slack > 0 else min(1.0, 2.0 * min(low, float(chi2.sf(scaled, freedom))))
    ratio = math.sqrt(scaled / freedom) * (1.0 - claim.slack)
    flagged = p <= alpha
    sentence = (f"the noise of {len(steps)} noisy steps on {freedom} coordinates measures {ratio:.4f} x the claim's sigma C "
                f"(sigma {float(np.median(sigmas)):.4g}, C = {steps[0][3]:g})")
    if flagged:
        sentence += ": the run adds " + ("less" if ratio < 1 else "more") + " noise than the claim says"
    elif h.unwitnessed_noise:
        sentence += f"; {h.unwitnessed_noise} noisy step(s) could not be read"
    return _check("noise_level", "noise", flagged, scaled, freedom, sentence, p_value=p, alpha=alpha)


def _independence_check(h: WitnessHooks, alpha: float) -> WitnessCheck:
    from scipy.stats import f as fisher

    steps, m, total, squares = h.independence_statistics()
    if steps < 2 or m == 0:
        return _check("noise_independence", "noise", False, 0, None, f"not tested: {steps} noisy step(s) with readable noise",
                      p_value=1.0, alpha=alpha, tested=False)
    mean_part = total / steps
    spread = max(squares - mean_part, 0.0)
    ratio = math.inf if spread == 0 else (mean_part / m) / (spread / (m * (steps - 1)))
    if math.isinf(ratio):
        p = 0.0
    else:
        p = min(1.0, 2.0 * min(float(fisher.cdf(ratio, m, m * (steps - 1))), float(fisher.sf(ratio, m, m * (steps - 1)))))
    flagged = p <= alpha
    sentence = (f"the noise summed over {steps} steps has {ratio:.4g} x the variance independent draws give (F test on {m} "
                "coordinates)")
    if flagged:
        sentence += ": the noise of different steps is not independent (repeated or correlated noise)"
    return _check("noise_independence", "noise", flagged, ratio, 1.0, sentence, p_value=p, alpha=alpha)


def witness_checks(h: WitnessHooks, claim: ClaimedRun, records: int, false_alarm_rate: float, seed: int) -> list[WitnessCheck]:
    """Every check of the run, the false-alarm rate split evenly over the statistical ones."""
    share = false_alarm_rate / len(STATISTICAL)
    data = _data_checks(h, records)
    return [*data[:2], data[2], _inclusion_check(h, claim, records, share, seed), *_update_checks(h, claim),
            _clipping_check(h), _noise_level_check(h, claim, share), _independence_check(h, share)]
