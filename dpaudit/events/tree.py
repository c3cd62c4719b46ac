"""Privacy event types and the trees they compose into (the definitions behind :mod:`dpaudit.events`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .._validation import (
    check_choice,
    check_delta,
    check_epsilon,
    check_positive,
    check_positive_int,
    check_real,
    check_real_sequence,
    check_sampling_probability,
)
from ..errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "NEIGHBOURING_RELATIONS",
    "check_neighbouring",
    "check_event",
    "PrivacyEvent",
    "Laplace",
    "Gaussian",
    "PureDP",
    "RandomizedResponse",
    "Composed",
    "SelfComposed",
    "PoissonSampled",
    "SampledWithoutReplacement",
    "SampledWithReplacement",
    "iter_leaves",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "ZCDP",
    "ApproxDP",
    "BoundedRange",
    "TreeAggregation",
    "MixtureOfGaussians",
    "TruncatedSubsampledGaussian",
    "RepeatAndSelect",
    "UserLevel",
    "RandomAllocation",
    "BandMF",
]

NEIGHBOURING_RELATIONS: tuple[str, ...] = ("add_remove", "replace_one")


def check_neighbouring(value: Any, name: str = "neighbouring") -> str:
    """Validate a neighbouring relation name ("add_remove" or "replace_one")."""
    return check_choice(value, name, NEIGHBOURING_RELATIONS)


class PrivacyEvent:
    """Base class of all privacy events (immutable, hashable, comparable by value)."""

    def children(self) -> tuple[PrivacyEvent, ...]:
        """Direct sub-events (empty for a leaf)."""
        return ()


def check_event(value: Any, name: str = "event") -> PrivacyEvent:
    """Return ``value`` if it is a privacy event, else raise a TypeError naming ``name``."""
    if not isinstance(value, PrivacyEvent):
        raise InvalidArgumentType(name, f"{name}={value!r} must be a PrivacyEvent, not {type(value).__name__}")
    return value


@dataclass(frozen=True)
class Laplace(PrivacyEvent):
    """Laplace noise of scale noise_multiplier * C (C: one record's L1 contribution bound)."""

    noise_multiplier: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))


@dataclass(frozen=True)
class Gaussian(PrivacyEvent):
    """Gaussian noise of standard deviation noise_multiplier * C (C: one record's L2 contribution bound)."""

    noise_multiplier: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))


@dataclass(frozen=True)
class PureDP(PrivacyEvent):
    """Any epsilon-DP mechanism; accountants use its worst case, binary randomized response."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))


@dataclass(frozen=True)
class RandomizedResponse(PrivacyEvent):
    """k-ary randomized response with parameter epsilon over ``num_buckets`` >= 2 values."""

    epsilon: float
    num_buckets: int = 2

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        buckets = check_positive_int(self.num_buckets, "num_buckets")
        if buckets < 2:
            raise InvalidArgument("num_buckets", f"num_buckets={self.num_buckets!r} must be >= 2")
        object.__setattr__(self, "num_buckets", buckets)


@dataclass(frozen=True, init=False)
class Composed(PrivacyEvent):
    """Sequential (possibly adaptive) composition: ``Composed([e1, e2])`` or ``Composed(e1, e2)``."""

    events: tuple[PrivacyEvent, ...]

    def __init__(self, *events: PrivacyEvent | Iterable[PrivacyEvent]) -> None:
        if len(events) == 1 and not isinstance(events[0], PrivacyEvent):
            if not isinstance(events[0], Iterable):
                raise InvalidArgumentType("events", f"events={events[0]!r} must be privacy events or an iterable of them")
            events = tuple(events[0])
        flat = tuple(check_event(e, "events") for e in events)
        if not flat:
            raise InvalidArgument("events", "events must not be empty")
        object.__setattr__(self, "events", flat)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return self.events


@dataclass(frozen=True)
class SelfComposed(PrivacyEvent):
    """``count`` sequential runs of the same event."""

    event: PrivacyEvent
    count: int

    def __post_init__(self) -> None:
        check_event(self.event)
        object.__setattr__(self, "count", check_positive_int(self.count, "count"))

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


@dataclass(frozen=True)
class PoissonSampled(PrivacyEvent):
    """``event`` run on a subsample that keeps each record independently with probability q."""

    sampling_probability: float
    event: PrivacyEvent

    def __post_init__(self) -> None:
        object.__setattr__(self, "sampling_probability", check_sampling_probability(self.sampling_probability))
        check_event(self.event)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


@dataclass(frozen=True)
class SampledWithoutReplacement(PrivacyEvent):
    """``event`` run on ``sample_size`` records drawn uniformly without replacement from ``source_size``."""

    source_size: int
    sample_size: int
    event: PrivacyEvent

    def __post_init__(self) -> None:
        source = check_positive_int(self.source_size, "source_size")
        sample = check_positive_int(self.sample_size, "sample_size")
        if sample > source:
            raise InvalidArgument("sample_size", f"sample_size={sample} must be <= source_size={source}")
        object.__setattr__(self, "source_size", source)
        object.__setattr__(self, "sample_size", sample)
        check_event(self.event)

    @property
    def sampling_probability(self) -> float:
        """q = m / n."""
        return self.sample_size / self.source_size

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


def iter_leaves(event: PrivacyEvent) -> Iterator[PrivacyEvent]:
    """All leaf events of a tree, depth first."""
    children = event.children()
    if not children:
        yield event
        return
    for child in children:
        yield from iter_leaves(child)


# --------------------------------------------------------------------------- integer noise and guarantees
# Integer-valued noise: one record changes the integer query by at most ``sensitivity`` (default 1)
# under add/remove-one, so by at most 2 * sensitivity under replace-one (the Laplace/Gaussian convention).


def _check_sensitivity(value: Any) -> int:
    return check_positive_int(value, "sensitivity")


@dataclass(frozen=True)
class DiscreteGaussian(PrivacyEvent):
    """Discrete Gaussian noise N_Z(0, sigma^2), P(x) proportional to exp(-x^2 / (2 sigma^2)) on the integers,
    added to an integer query that one record changes by at most ``sensitivity`` (Canonne, Kamath & Steinke
    2020). ``sigma`` is absolute (not a multiplier)."""

    sigma: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "sigma", check_positive(self.sigma, "sigma"))
        object.__setattr__(self, "sensitivity", _check_sensitivity(self.sensitivity))


@dataclass(frozen=True)
class DiscreteLaplace(PrivacyEvent):
    """Discrete Laplace (two-sided geometric) noise, P(x) proportional to exp(-|x| / scale) on the integers,
    added to an integer query that one record changes by at most ``sensitivity``; pure DP with
    epsilon = sensitivity / scale (dp_accounting's DiscreteLaplaceDpEvent has noise_parameter = 1 / scale)."""

    scale: float
    sensitivity: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "scale", check_positive(self.scale, "scale"))
        object.__setattr__(self, "sensitivity", _check_sensitivity(self.sensitivity))


@dataclass(frozen=True)
class ZCDP(PrivacyEvent):
    """Any rho-zero-concentrated-DP mechanism (Bun & Steinke 2016): D_alpha <= alpha * rho for every
    alpha > 1, under the accountant's neighbouring relation. PLDAccountant adds up the rho of all ZCDP
    events and uses a dominating pair built from the Canonne-Kamath-Steinke profile of the total."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_positive(self.rho, "rho"))


@dataclass(frozen=True)
class ApproxDP(PrivacyEvent):
    """Any (epsilon, delta)-DP mechanism; accountants use its worst case (Kairouz, Oh & Viswanath 2015):
    an outcome of probability delta that only one side can produce, otherwise randomized response."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", check_delta(self.delta, "delta"))


@dataclass(frozen=True)
class BoundedRange(PrivacyEvent):
    """Any epsilon-bounded-range mechanism (Durfee & Rogers 2019; Dong, Durfee & Rogers 2020): the privacy
    loss takes values in an interval of width epsilon; the exponential mechanism exp(epsilon u / (2 Du))
    is epsilon-BR (and epsilon-DP)."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, "epsilon"))


@dataclass(frozen=True)
class TreeAggregation(PrivacyEvent):
    """Single-epoch tree aggregation of ``steps`` Gaussian-noised steps (Kairouz et al. 2021, App. D; as
    dp_accounting's SingleEpochTreeAggregationDpEvent): each record occurs once, so it enters
    depth = ceil(log2(steps + 1)) tree nodes, each with Gaussian noise noise_multiplier * C; the release
    is a Gaussian mechanism with effective noise multiplier noise_multiplier / sqrt(depth)."""

    noise_multiplier: float
    steps: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        object.__setattr__(self, "steps", check_positive_int(self.steps, "steps"))

    @property
    def depth(self) -> int:
        """Number of tree nodes a record enters: ceil(log2(steps + 1)) = bit length of ``steps``."""
        return int(self.steps).bit_length()


@dataclass(frozen=True)
class SampledWithReplacement(PrivacyEvent):
    """``event`` run on ``sample_size`` records drawn uniformly **with** replacement from ``source_size``
    (the argument order of :class:`SampledWithoutReplacement` and dp_accounting's
    SampledWithReplacementDpEvent). Meaningful under replace-one only; a record enters the sample
    K ~ Binomial(sample_size, 1 / source_size) times."""

    source_size: int
    sample_size: int
    event: PrivacyEvent

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_size", check_positive_int(self.source_size, "source_size"))
        object.__setattr__(self, "sample_size", check_positive_int(self.sample_size, "sample_size"))
        check_event(self.event)

    @property
    def sampling_probability(self) -> float:
        """Probability that one draw picks a given record, 1 / source_size."""
        return 1.0 / self.source_size

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


# --------------------------------------------------------------------------- 2026 training schedules


@dataclass(frozen=True, init=False)
class MixtureOfGaussians(PrivacyEvent):
    """The mixture-of-Gaussians mechanism (Choquette-Choo et al. 2024, arXiv:2310.15526; dp_accounting's
    MixtureOfGaussiansDpEvent): without the record the output is N(0, sigma^2), with it
    sum_i p_i N(c_i, sigma^2) (the amplified matrix mechanism: the record's contribution c_i is random).
    ``standard_deviation`` sigma and ``sensitivities`` c_i >= 0 are absolute; ``sampling_probs`` p_i sum
    to 1 (within 1e-12, then normalised). Defined under add/remove-one only."""

    standard_deviation: float
    sensitivities: tuple[float, ...]
    sampling_probs: tuple[float, ...]

    def __init__(self, standard_deviation: float, sensitivities: Any, sampling_probs: Any) -> None:
        sigma = check_positive(standard_deviation, "standard_deviation")
        c = check_real_sequence(sensitivities, "sensitivities", minimum=0.0)
        p = check_real_sequence(sampling_probs, "sampling_probs", minimum=0.0)
        if c.size != p.size:
            raise InvalidArgument("sampling_probs", f"sampling_probs has {p.size} entries, sensitivities {c.size}: "
                                                    "they must be the same length")
        total = math.fsum(p.tolist())
        if abs(total - 1.0) > 1e-12:
            raise InvalidArgument("sampling_probs", f"sampling_probs must sum to 1, got {total!r}")
        object.__setattr__(self, "standard_deviation", sigma)
        object.__setattr__(self, "sensitivities", tuple(float(x) for x in c))
        object.__setattr__(self, "sampling_probs", tuple(float(x) / total for x in p))


@dataclass(frozen=True)
class TruncatedSubsampledGaussian(PrivacyEvent):
    """The Gaussian mechanism on a truncated Poisson sample (dp_accounting's TruncatedSubsampledGaussianDpEvent;
    arXiv:2508.15089): each of ``dataset_size`` records is sampled with probability ``sampling_probability``;
    a sample larger than ``truncated_batch_size`` is cut to a uniformly random subset of that size; Gaussian
    noise of standard deviation noise_multiplier * C is added to the sum (C: one record's L2 bound)."""

    dataset_size: int
    sampling_probability: float
    truncated_batch_size: int
    noise_multiplier: float

    def __post_init__(self) -> None:
        n = check_positive_int(self.dataset_size, "dataset_size")
        b = check_positive_int(self.truncated_batch_size, "truncated_batch_size")
        if b > n:
            raise InvalidArgument("truncated_batch_size", f"truncated_batch_size={b} must be <= dataset_size={n}")
        object.__setattr__(self, "dataset_size", n)
        object.__setattr__(self, "truncated_batch_size", b)
        object.__setattr__(self, "sampling_probability", check_sampling_probability(self.sampling_probability))
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))


@dataclass(frozen=True)
class RepeatAndSelect(PrivacyEvent):
    """Hyperparameter tuning: ``event`` is run K times, K random with mean ``mean`` >= 1, and only the best
    run is released (Papernot & Steinke 2022, arXiv:2110.03620; dp_accounting's RepeatAndSelectDpEvent).
    ``shape`` picks K's law: ``inf`` Poisson, 0 logarithmic, 1 geometric, otherwise the truncated negative
    binomial with that shape."""

    event: PrivacyEvent
    mean: float
    shape: float = math.inf

    def __post_init__(self) -> None:
        check_event(self.event)
        mean = check_real(self.mean, "mean")
        if not (math.isfinite(mean) and mean >= 1.0):
            raise InvalidArgument("mean", f"mean={self.mean!r} must be a finite number >= 1 (expected runs)")
        shape = check_real(self.shape, "shape")
        if math.isnan(shape) or shape < 0:
            raise InvalidArgument("shape", f"shape={self.shape!r} must be >= 0 (inf: Poisson)")
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "shape", shape)

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


@dataclass(frozen=True)
class UserLevel(PrivacyEvent):
    """``event`` under user-level neighbours: one user contributes at most ``max_contributions`` records, and
    the neighbouring datasets differ in one user's records. Unsampled Gaussian and Laplace steps exactly at
    ``max_contributions`` times the sensitivity (an eps-DP step is (k eps)-DP; Dwork & Roth 2014, Thm 2.2);
    Poisson-sampled Gaussian steps (records sampled, each of the user's independently) exactly as the mixture
    sum_j Bin(j; k, q) N(j, sigma^2) against N(0, sigma^2) (Ganesh 2024, arXiv:2401.10294, Thm 3.1; add/remove);
    other sampled steps by group privacy on the RDP curve (Mironov 2017, Prop. 2). Users sampled instead of
    records: ``PoissonSampled(q, UserLevel(event, k))``."""

    event: PrivacyEvent
    max_contributions: int

    def __post_init__(self) -> None:
        check_event(self.event)
        object.__setattr__(self, "max_contributions", check_positive_int(self.max_contributions, "max_contributions"))

    def children(self) -> tuple[PrivacyEvent, ...]:
        return (self.event,)


@dataclass(frozen=True)
class RandomAllocation(PrivacyEvent):
    """Random allocation (balls in bins; Feldman & Shenfeld 2025, arXiv:2502.08202): each record is used in
    exactly ``num_selected`` of ``num_steps`` steps, chosen uniformly at random; each step adds Gaussian noise
    of standard deviation noise_multiplier * C to its sum. One event is the whole allocation round (an
    epoch); compose it for several epochs."""

    noise_multiplier: float
    num_steps: int
    num_selected: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        steps = check_positive_int(self.num_steps, "num_steps")
        selected = check_positive_int(self.num_selected, "num_selected")
        if selected > steps:
            raise InvalidArgument("num_selected", f"num_selected={selected} must be <= num_steps={steps}")
        object.__setattr__(self, "num_steps", steps)
        object.__setattr__(self, "num_selected", selected)


@dataclass(frozen=True)
class BandMF(PrivacyEvent):
    """DP-FTRL with a b-banded matrix factorisation (BandMF; Choquette-Choo, Ganesh, McKenna, McMahan, Rush,
    Thakurta & Xu 2023, "(Amplified) banded matrix factorization", arXiv:2306.08153) over ``num_steps`` steps
    with ``num_bands`` = b bands, Gaussian noise of standard deviation noise_multiplier * C, and the strategy
    matrix's largest column L2 norm ``column_norm`` (1 for the usual normalised strategies).

    ``sampling_probability`` = 1: b-min-separated participation (a record in at most ceil(n / b) steps, any
    two at least b apart): the columns a record touches have disjoint supports, so its sensitivity is
    sqrt(ceil(n / b)) * column_norm C. ``sampling_probability`` q < 1: cyclic Poisson sampling (records split
    into b groups, group i eligible in the steps congruent to i mod b, each record Poisson-sampled with rate q
    there; add/remove only): dominated by ceil(n / b) Poisson-sampled Gaussians at noise multiplier
    noise_multiplier / column_norm (the paper's amplification theorem, as jax_privacy accounts for it)."""

    noise_multiplier: float
    num_bands: int
    num_steps: int
    sampling_probability: float = 1.0
    column_norm: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "noise_multiplier", check_positive(self.noise_multiplier, "noise_multiplier"))
        steps = check_positive_int(self.num_steps, "num_steps")
        bands = check_positive_int(self.num_bands, "num_bands")
        if bands > steps:
            raise InvalidArgument("num_bands", f"num_bands={bands} must be <= num_steps={steps}")
        object.__setattr__(self, "num_steps", steps)
        object.__setattr__(self, "num_bands", bands)
        object.__setattr__(self, "sampling_probability", check_sampling_probability(self.sampling_probability))
        object.__setattr__(self, "column_norm", check_positive(self.column_norm, "column_norm"))

    @property
    def participations(self) -> int:
        """Most steps one record can take part in: ceil(num_steps / num_bands)."""
        return -(-self.num_steps // self.num_bands)
