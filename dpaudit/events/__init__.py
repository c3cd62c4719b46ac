"""Immutable privacy events: what a mechanism did, for the accountants to interpret.

Events are frozen values composed into trees (the design of Google's dp_accounting). An accountant walks
the tree, first checking every node is supported, then updating its state, so an unsupported event
never leaves it half-composed.

Conventions (shared by every accountant):
- ``Laplace(noise_multiplier)`` adds Laplace noise of scale b = noise_multiplier * C and
  ``Gaussian(noise_multiplier)`` Gaussian noise of standard deviation sigma = noise_multiplier * C, where
  C bounds one record's contribution (its L1 resp. L2 norm). Under add/remove-one neighbours the
  sensitivity is C; under replace-one it is 2C (one record removed, another added), as in dp_accounting.
- ``PureDP(epsilon)`` is any epsilon-DP mechanism (under the accountant's neighbouring relation); its
  worst case is binary randomized response. ``RandomizedResponse(epsilon, num_buckets)`` is k-ary
  randomized response: the true bucket with probability e^eps / (e^eps + k - 1), each other bucket
  with probability 1 / (e^eps + k - 1); it is exactly epsilon-DP under either relation (a record's
  value changes).
- ``DiscreteGaussian(sigma, sensitivity=1)`` and ``DiscreteLaplace(scale, sensitivity=1)`` add integer noise
  (absolute scale) to an integer query that one record changes by at most ``sensitivity`` under
  add/remove-one, so by 2 * sensitivity under replace-one. ``ZCDP(rho)``, ``ApproxDP(epsilon, delta)`` and
  ``BoundedRange(epsilon)`` are guarantees under the accountant's relation (like ``PureDP``).
  ``TreeAggregation(noise_multiplier, steps)`` is a Gaussian of noise multiplier
  noise_multiplier / sqrt(ceil(log2(steps + 1))) (dp_accounting's single-epoch tree aggregation).
- ``PoissonSampled(sampling_probability, event)`` runs ``event`` on a Poisson subsample;
  ``SampledWithoutReplacement(source_size, sample_size, event)`` on a uniformly random subset of fixed
  size (meaningful under replace-one only): DP-SGD with a fixed batch of B out of n records per step is
  ``SampledWithoutReplacement(n, B, Gaussian(z))`` (``SampledWithReplacement`` for draws with replacement).
- ``MixtureOfGaussians(sigma, c, p)``: N(0, sigma^2) against sum_i p_i N(c_i, sigma^2) (matrix-mechanism
  amplification; add/remove, PLD). ``TruncatedSubsampledGaussian(n, q, B, z)``: a Poisson sample cut to at most
  B records (PLD, either relation). ``RepeatAndSelect(event, mean, shape)``: the best of a random number of
  runs (hyperparameter tuning; RDP). ``UserLevel(event, k)``: user-level neighbours, a user contributing at
  most k records (exact for unsampled and Poisson-sampled Gaussian steps, else group privacy). ``RandomAllocation(z, t, k)``: each record in k random steps of t (PLD upper
  and lower). ``BandMF(z, b, n, q, column_norm)``: DP-FTRL with a b-banded factorisation, b-min-separated or
  cyclic-Poisson (amplified) participation.

Example:
    >>> step = PoissonSampled(0.01, Gaussian(noise_multiplier=1.0))
    >>> SelfComposed(step, 1000)
    SelfComposed(event=PoissonSampled(sampling_probability=0.01, event=Gaussian(noise_multiplier=1.0)), count=1000)
"""

from __future__ import annotations

from . import tree
from .conversion import from_dp_accounting, to_dp_accounting
from .tree import (
    NEIGHBOURING_RELATIONS,
    ZCDP,
    ApproxDP,
    BandMF,
    BoundedRange,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    MixtureOfGaussians,
    PoissonSampled,
    PrivacyEvent,
    PureDP,
    RandomAllocation,
    RandomizedResponse,
    RepeatAndSelect,
    SampledWithReplacement,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    TruncatedSubsampledGaussian,
    UserLevel,
    check_event,
    check_neighbouring,
    iter_leaves,
)

__all__ = [*tree.__all__, "from_dp_accounting", "to_dp_accounting"]
