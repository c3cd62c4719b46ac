"""Sampler check: does a data loader really sample as declared (Poisson with rate q)?

DP-SGD's accounting (Opacus' and ours) assumes Poisson sampling: in every step each of the n records is
in the batch independently with probability q. A shuffled or fixed-size loader accounted as Poisson is a
known privacy bug (Chua et al. 2024: the real epsilon can be far larger). :func:`check_sampler` iterates the
loader's *batch sampler* (the indices of every batch, without loading any data) for a few epochs and tests
the hypothesis H0 "membership is Poisson(q)" with five tests:

* ``batch_total``: the total of all batch sizes ~ Binomial(n T, q) (exact two-sided binomial test);
* ``batch_dispersion``: sum_t (B_t - n q)^2, the spread of the batch sizes B_t ~ Binomial(n, q) (fixed-size
  batches are underdispersed);
* ``record_dispersion``: sum_i (c_i - T q)^2 over the records' appearance counts c_i ~ Binomial(T, q)
  (a shuffled loader shows every record exactly once per epoch: underdispersed);
* ``step_independence``: the records shared by disjoint pairs of consecutive steps,
  ~ Binomial(n floor(T/2), q^2) (within an epoch a shuffled loader never repeats a record);
* ``duplicates``: a record twice in one batch is impossible under Poisson sampling (p = 0 if seen).

The two dispersion tests are Monte Carlo tests (the statistic simulated under H0 with a seeded generator,
p = (1 + #{simulated at least as extreme}) / (1 + draws), two-sided by doubling the smaller tail), which are
exactly valid; the record test uses at most 2,000 records chosen by the seed. The family-wise false-alarm
rate is held at ``false_alarm_rate`` by Holm's step-down adjustment over the five tests; ``p_value`` is the
smallest adjusted p-value and ``violated`` is ``p_value <= false_alarm_rate``.

What it needs: a loader whose ``batch_sampler`` yields the dataset indices of each batch (every
``torch.utils.data.DataLoader`` built with ``batch_size`` or ``batch_sampler``, including Opacus'
``DPDataLoader`` and the loader ``BatchMemoryManager`` yields, whose logical batches are read), or any re-iterable object yielding index batches (pass ``records``). Iterable-style
datasets have no indices: make them yield each record's id and pass
:class:`~dpaudit.training.RecordIdBatches` ``(loader)`` (a loader over one is refused with that advice).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._validation import check_nonnegative_int, check_positive_int, check_probability, check_sampling_probability
from ..errors import InvalidArgument, InvalidArgumentType
from .record_ids import ITERABLE_HINT, is_iterable_style

__all__ = ["check_sampler", "SamplerCheckResult", "SamplerTest", "index_batches", "poisson_tests", "monte_carlo_two_sided"]

_RECORD_CAP = 2000  # records used by the Monte Carlo record-dispersion test


@dataclass(frozen=True)
class SamplerTest:
    """One test of H0 (Poisson(q) membership): its statistic, the value H0 expects, the raw and the
    Holm-adjusted p-value, and whether it rejected H0 at the family-wise false-alarm rate."""

    name: str
    statistic: float
    expected: float
    p_value: float
    adjusted_p_value: float
    rejected: bool
    description: str

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class SamplerCheckResult:
    """Outcome of :func:`check_sampler`: ``violated`` (H0 "Poisson(q) membership" rejected; the chance of
    that for a correct loader is at most ``false_alarm_rate``), ``p_value`` (the smallest Holm-adjusted
    p-value), the batches seen and every test."""

    violated: bool
    p_value: float
    false_alarm_rate: float
    sample_rate: float
    records: int
    steps: int
    epochs: int
    mean_batch_size: float
    tests: tuple[SamplerTest, ...]
    seed: int
    seconds: float
    sampling: str = "poisson"
    method: str = ("exact binomial tests (batch total, step overlaps), Monte Carlo dispersion tests (batch sizes, "
                   "record counts), duplicate check; Holm over all")

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["tests"] = [t.to_dict() for t in self.tests]
        return data

    def summary(self) -> str:
        verdict = "NOT Poisson" if self.violated else "consistent with Poisson"
        lines = [f"sampler check: {verdict} (q={self.sample_rate:g}) over {self.steps} steps of {self.records} records "
                 f"(p = {self.p_value:.3g}, false-alarm rate {self.false_alarm_rate:g})"]
        for t in self.tests:
            lines.append(f"  {t.name}: {t.statistic:.6g} (H0 expects {t.expected:.6g}), p = {t.p_value:.3g}, "
                         f"adjusted {t.adjusted_p_value:.3g}{'  REJECTED' if t.rejected else ''}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------------ the batches
def _torch_generators(batch_sampler: Any) -> list[Any]:
    found = []
    for holder in (batch_sampler, getattr(batch_sampler, "sampler", None)):
        generator = getattr(holder, "generator", None)
        if generator is not None and hasattr(generator, "get_state") and hasattr(generator, "manual_seed"):
            found.append(generator)
    return found


def index_batches(data_loader: Any, epochs: int, seed: int) -> list[np.ndarray]:
    """The dataset indices of every batch the loader yields over ``epochs`` epochs (no data is loaded).

    Uses ``data_loader.batch_sampler`` when there is one, else iterates ``data_loader`` itself, which must
    then yield index sequences. Torch's global generator and the sampler's own generators are seeded from
    ``seed`` for the check and restored afterwards, so the user's training randomness is left untouched.
    """
    if is_iterable_style(getattr(data_loader, "dataset", None)):
        raise InvalidArgument("data_loader", f"data_loader iterates an iterable-style dataset, which has no record "
                                             f"indices for the sampler check to read: {ITERABLE_HINT}")
    source = _logical_batches(getattr(data_loader, "batch_sampler", None))
    if source is None:
        if hasattr(data_loader, "dataset"):
            raise InvalidArgument("data_loader", "data_loader has no batch_sampler (built with batch_size=None?): the "
                                                 "sampler check needs the indices of each batch; build the DataLoader "
                                                 "with batch_size or batch_sampler, or pass the index batches")
        source = data_loader
    if not isinstance(source, Iterable):
        raise InvalidArgumentType("data_loader", f"data_loader={data_loader!r} must be a DataLoader (with a "
                                                 "batch_sampler) or an iterable of index batches")
    generators = _torch_generators(source)
    try:
        import torch
    except ImportError:
        torch = None
    saved = [g.get_state() for g in generators]
    batches: list[np.ndarray] = []
    context = torch.random.fork_rng(devices=[]) if torch is not None else _no_context()
    with context:
        if torch is not None:
            torch.manual_seed(seed)
            for offset, g in enumerate(generators):
                g.manual_seed(seed + 1 + offset)
        try:
            for _ in range(epochs):
                for batch in source:
                    batches.append(_as_indices(batch, len(batches)))
        finally:
            for g, state in zip(generators, saved):
                g.set_state(state)
    return batches


def _logical_batches(batch_sampler: Any) -> Any:
    """The sampler of the logical batches behind Opacus' ``BatchMemoryManager`` (its ``BatchSplittingSampler``
    cuts each logical batch into physical ones and signals the optimizer to skip all but the last: the noisy
    step is per logical batch, and iterating it would also signal the user's optimizer); any other sampler
    as is."""
    if type(batch_sampler).__name__ == "BatchSplittingSampler" and hasattr(batch_sampler, "max_batch_size"):
        return batch_sampler.sampler
    return batch_sampler


class _no_context:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _as_indices(batch: Any, step: int) -> np.ndarray:
    if hasattr(batch, "detach"):
        batch = batch.detach().cpu().numpy()
    try:
        array = np.asarray(list(batch) if not isinstance(batch, np.ndarray) else batch)
    except TypeError:
        raise InvalidArgumentType("data_loader", f"batch {step} is {type(batch).__name__}, not a sequence of record "
                                                 "indices (does the batch sampler yield indices?)") from None
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
        raise InvalidArgumentType("data_loader", f"batch {step} is not a 1-d sequence of integer record indices "
                                                 f"(dtype {array.dtype}, shape {array.shape})")
    return array.astype(np.int64)


def _records_of(data_loader: Any) -> int | None:
    """n from the loader's dataset, else its (batch) sampler's sampler or ``num_samples`` (Opacus' sampler)."""
    batch_sampler = getattr(data_loader, "batch_sampler", None)
    for holder in (getattr(data_loader, "dataset", None), getattr(batch_sampler, "sampler", None),
                   getattr(data_loader, "sampler", None)):
        if holder is None:
            continue
        try:
            return len(holder)
        except TypeError:
            continue
    for holder in (batch_sampler, data_loader):
        count = getattr(holder, "num_samples", None)
        if isinstance(count, int):
            return count
    return None


# ------------------------------------------------------------------------------------------ the tests
_INVERSION_TABLE = 1 << 16  # most outcomes of a binomial drawn by inverting its CDF (a table of this many floats)


def _two_sided_binomial(count: int, trials: int, p: float) -> float:
    from scipy.stats import binomtest

    if trials == 0:
        return 1.0
    if count > trials:  # more inclusions than records x steps: a record twice in a step, impossible under H0
        return 0.0
    return float(binomtest(count, trials, p, alternative="two-sided").pvalue)


def monte_carlo_two_sided(observed: float, simulated: np.ndarray) -> float:
    """Two-sided Monte Carlo p-value of ``observed`` against draws under H0: (1 + #{at least as extreme}) /
    (1 + draws) on each tail, the smaller doubled (valid at any number of draws)."""
    draws = simulated.size
    high = (1 + int(np.count_nonzero(simulated >= observed))) / (draws + 1)
    low = (1 + int(np.count_nonzero(simulated <= observed))) / (draws + 1)
    return min(1.0, 2.0 * min(high, low))


def _dispersion(counts: np.ndarray, mean: float) -> float:
    return float(np.sum((counts - mean) ** 2))


def _simulated_dispersion(trials: int, q: float, size: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """``draws`` values of sum_i (c_i - trials q)^2 over ``size`` iid c_i ~ Binomial(trials, q). With fewer
    outcomes than terms, the same law from how many terms take each outcome (a multinomial over the
    trials + 1 outcomes): O(draws trials) work instead of O(draws size). Otherwise each c_i is drawn by
    inverting the binomial CDF at a uniform (one table lookup; numpy's own sampler loops about trials q times per
    draw when trials q is small), above :data:`_INVERSION_TABLE` outcomes by numpy's binomial sampler."""
    from scipy.stats import binom

    outcomes = np.arange(trials + 1)
    if trials + 1 < size:
        pmf = binom.pmf(outcomes, trials, q)
        counts = rng.multinomial(size, pmf / pmf.sum(), size=draws)
        return counts @ ((outcomes - trials * q) ** 2)
    out = np.empty(draws)
    chunk = max(1, (1 << 22) // max(size, 1))
    table = trials + 1 <= _INVERSION_TABLE
    if table:
        cdf = binom.cdf(outcomes, trials, q)
        cdf[-1] = np.inf  # every uniform in [0, 1) falls at or below the last outcome
        squares = (outcomes - trials * q) ** 2
    for start in range(0, draws, chunk):
        rows = min(chunk, draws - start)
        if table:
            out[start:start + rows] = squares[np.searchsorted(cdf, rng.random((rows, size)), side="right")].sum(axis=1)
        else:
            sample = rng.binomial(trials, q, size=(rows, size))
            out[start:start + rows] = np.sum((sample - trials * q) ** 2, axis=1)
    return out


def poisson_tests(batches: list[np.ndarray], records: int, q: float, seed: int, draws: int) -> list[tuple[str, float, float, float, str]]:
    """(name, statistic, expected under H0, raw p-value, description) of the five tests."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(29,)))
    steps = len(batches)
    sizes = np.array([b.size for b in batches], dtype=np.int64)
    out = []
    total = int(sizes.sum())
    out.append(("batch_total", float(total), records * steps * q, _two_sided_binomial(total, records * steps, q),
                "total of all batch sizes ~ Binomial(n T, q)"))
    observed = _dispersion(sizes, records * q)
    out.append(("batch_dispersion", observed, steps * records * q * (1 - q),
                monte_carlo_two_sided(observed, _simulated_dispersion(records, q, steps, draws, rng)),
                "sum_t (B_t - n q)^2 with B_t ~ Binomial(n, q) (fixed-size batches: too small)"))
    members = np.concatenate(batches) if total else np.zeros(0, dtype=np.int64)
    step_of = np.repeat(np.arange(steps, dtype=np.int64), sizes)
    memberships = np.unique(step_of * records + members)  # each (step, record) pair once, sorted by step
    duplicated = total - int(memberships.size)
    counts = np.bincount(members, minlength=records) if total else np.zeros(records, dtype=np.int64)
    chosen = rng.choice(records, size=min(records, _RECORD_CAP), replace=False)
    observed = _dispersion(counts[chosen], steps * q)
    out.append(("record_dispersion", observed, chosen.size * steps * q * (1 - q),
                monte_carlo_two_sided(observed, _simulated_dispersion(steps, q, chosen.size, draws, rng)),
                f"sum_i (c_i - T q)^2 over {chosen.size} records, c_i ~ Binomial(T, q) (shuffled epochs: too small)"))
    pairs = steps // 2
    paired = memberships[memberships < 2 * pairs * records]  # the memberships of steps 0 .. 2 pairs - 1
    pair_keys = (paired // records) // 2 * records + paired % records  # (pair j, record): twice if in both steps
    shared = int(paired.size - np.unique(pair_keys).size)
    out.append(("step_independence", float(shared), records * pairs * q * q,
                _two_sided_binomial(shared, records * pairs, q * q),
                "records shared by steps (2j, 2j+1) ~ Binomial(n floor(T/2), q^2)"))
    out.append(("duplicates", float(duplicated), 0.0, 0.0 if duplicated else 1.0,
                "a record twice in one batch (impossible under Poisson sampling)"))
    return out


def check_sampler(
    data_loader: Any,
    sample_rate: float,
    seed: int = 0,
    *,
    epochs: int = 2,
    false_alarm_rate: float = 0.05,
    records: int | None = None,
    draws: int | None = None,
) -> SamplerCheckResult:
    """Test that the loader's batch membership is Poisson with rate ``sample_rate``.

    Args:
        data_loader: the loader training really uses (e.g. the one ``make_private`` returned), or any
            re-iterable object yielding the index batches of one epoch.
        sample_rate: the declared q (what the accountant was told; Opacus: ``1 / len(data_loader)``).
        seed: seeds the loader's randomness for the check and the Monte Carlo tests (reproducible).
        epochs: passes over the loader (at least 2 steps in total are needed).
        false_alarm_rate: the probability that a correct Poisson loader is flagged (family-wise, Holm).
        records: number of records n (default: ``len(data_loader.dataset)``).
        draws: Monte Carlo draws per dispersion test (default: enough for the Holm split, at least 999).

    Returns:
        SamplerCheckResult with ``violated``, ``p_value`` and every test.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(1)
        >>> poisson = [np.flatnonzero(rng.random(1000) < 0.1) for _ in range(20)]
        >>> check_sampler(poisson, 0.1, records=1000, epochs=1).violated
        False
        >>> shuffled = [p for _ in range(2) for p in np.split(rng.permutation(1000), 10)]
        >>> check_sampler(shuffled, 0.1, records=1000, epochs=1).violated
        True
    """
    started = time.perf_counter()
    q = check_sampling_probability(sample_rate, "sample_rate")
    seed = check_nonnegative_int(seed, "seed")
    epochs = check_positive_int(epochs, "epochs")
    alpha = check_probability(false_alarm_rate, "false_alarm_rate", low_open=True, high_open=True)
    n = _records_of(data_loader) if records is None else check_positive_int(records, "records")
    if n is None:
        raise InvalidArgument("records", "records must be given: the number of records cannot be read from "
                                         "data_loader (it has no dataset with a length)")
    draws = max(999, math.ceil(20.0 / alpha)) if draws is None else check_positive_int(draws, "draws")
    batches = index_batches(data_loader, epochs, seed)
    if len(batches) < 2:
        raise InvalidArgument("epochs", f"the loader yielded {len(batches)} batch(es) over {epochs} epoch(s); at least "
                                        "2 steps are needed: raise epochs")
    for step, batch in enumerate(batches):
        if batch.size and (batch.min() < 0 or batch.max() >= n):
            raise InvalidArgument("records", f"batch {step} holds index {int(batch.max() if batch.max() >= n else batch.min())}"
                                             f" outside [0, {n}): is records={n} the dataset's size?")
    from ..auditor import holm_adjust

    raw = poisson_tests(batches, n, q, seed, draws)
    adjusted = holm_adjust([r[3] for r in raw])
    tests = tuple(SamplerTest(name, float(stat), float(expected), float(p), float(adj), bool(adj <= alpha), text)
                  for (name, stat, expected, p, text), adj in zip(raw, adjusted))
    p_value = float(min(adjusted))
    return SamplerCheckResult(
        violated=bool(p_value <= alpha), p_value=p_value, false_alarm_rate=alpha, sample_rate=q, records=n,
        steps=len(batches), epochs=epochs, mean_batch_size=float(np.mean([b.size for b in batches])), tests=tests,
        seed=seed, seconds=time.perf_counter() - started)
