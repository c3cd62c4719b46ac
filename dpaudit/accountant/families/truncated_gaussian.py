"""The truncated subsampled Gaussian family: a Gaussian sum over a Poisson sample cut to at most B records.

Source: dp_accounting's ``TruncatedSubsampledGaussianDpEvent`` and its PLD
(``from_truncated_subsampled_gaussian_mechanism``; arXiv:2508.15089, Sec. 4.3 of the supplement). With n
records, rate q and cap B, the differing record's sample is truncated with probability
tau = P(Binomial(n - 1, q) >= B); conditioned on no truncation the step is the Poisson-sampled Gaussian at
rate q, conditioned on truncation dp_accounting's (slightly loose) bound: the replace-one Poisson-sampled
Gaussian at noise multiplier z / 2 (the Gaussian family's antipodal pair at mu = 2 / z) at rate q' = P(Binomial(n, q) > B) B / (tau n). By joint
convexity of the hockey-stick divergence the mixture (1 - tau) (first pair) + tau (second pair), each
revealed, dominates the step (an upper bound only; the lower side is the trivial one).

* Normal form: ("truncated_gaussian", mu = 1 / z) with (n, q, B) in ``Leaf.data``. Either relation; the
  event carries its own sampling, so a further sampler over it is refused.
* No Renyi-DP curve, pure-DP level or zCDP parameter is claimed (RDPAccountant refuses the event).
"""

from __future__ import annotations

from ...events import TruncatedSubsampledGaussian
from ..leaf import Leaf
from ..leaf_plds import build_leaf
from ..pld_core.grid import identity
from ..registry import Family

__all__ = ["FAMILY", "truncation_weights"]


def truncation_weights(n: int, q: float, b: int) -> tuple[float, float]:
    """(tau, q'): the probability the differing record's sample is cut, and its rate given a cut."""
    from scipy.stats import binom  # local: scipy.stats is slow to import

    tau = float(binom.sf(b - 1, n - 1, q))
    if tau == 0.0:
        return 0.0, 0.0
    return tau, min(1.0, float(binom.sf(b, n, q)) * b / tau / n)


def _normal_form(event: TruncatedSubsampledGaussian) -> Leaf:
    return Leaf("truncated_gaussian", 1.0 / event.noise_multiplier,
                data=(event.dataset_size, event.sampling_probability, event.truncated_batch_size))


def _check(leaf: Leaf, relation: str) -> str | None:
    if leaf.sampling is not None:
        return "a truncated subsampled Gaussian carries its own sampling; no analysis of a sampler over it"
    return None


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    if not pessimistic:
        one = identity(step, False)
        return one, one
    n, q, b = leaf.data
    sampled = Leaf("gaussian", leaf.param, sampling="poisson", q=q) if q < 1.0 else Leaf("gaussian", leaf.param)
    remove, add = build_leaf(sampled, relation, step, True, lam)
    tau, q_cut = truncation_weights(n, q, b)
    if tau == 0.0:
        return remove, add
    cut = Leaf("gaussian", 2.0 * leaf.param, sampling="poisson", q=q_cut) if q_cut < 1.0 else \
        Leaf("gaussian", 2.0 * leaf.param)
    cut_pld, _ = build_leaf(cut, "replace_one", step, True, lam)  # symmetric
    mixed_remove = cut_pld.mixture(remove, tau)
    return mixed_remove, (mixed_remove if add is remove else cut_pld.mixture(add, tau))


FAMILY = Family(
    name="truncated_gaussian", events=(TruncatedSubsampledGaussian,), kinds=("truncated_gaussian",),
    normal_form=_normal_form, pld_pair=_pld_pair, pld_check=_check, rdp_check=_check,
)
