"""The user-level family: a sampled step seen by a user who contributes up to k records (``UserLevel`` over sampled events).

The tree walk (:mod:`..event_tree`) turns every sampled leaf under ``UserLevel(event, k)`` (k > 1) into a leaf
of kind "user" (``param`` = k, ``inner`` = the sampled leaf); unsampled Gaussian, Laplace and randomized
response leaves keep their exact k-fold group change (their family's ``group``). Two statements:

* **Mixture (exact; PLD accountant).** Records are Poisson-sampled independently, each clipped to C, Gaussian
  noise sigma C, add/remove of one user (k records): the user's records in a step number J ~ Bin(k, q), and the
  step's pair is dominated by the one-dimensional mixture sum_j Bin(j; k, q) N(j, sigma^2) against N(0,
  sigma^2), all k gradients aligned being the worst case (Ganesh 2024, "Tight group-level DP guarantees for
  DP-SGD with sampling via mixture of Gaussians mechanisms", arXiv:2401.10294, Thm 3.1; the statement
  tensorflow_privacy's PLD path computes). It is a :class:`~dpaudit.events.MixtureOfGaussians` pair
  (:mod:`.mixture_gaussians`), both adjacency directions exact. Other sampled leaves, other samplers and
  replace-one have no such pair here: the PLD accountant refuses them.
* **Group privacy on the RDP curve (RDP accountant; any leaf with an RDP curve, any relation).** Mironov
  (2017, "Renyi differential privacy", Prop. 2): a mechanism (a, eps(a))-RDP for neighbours is
  (a / 2^c, 3^c eps(a))-RDP for datasets 2^c neighbours apart, for a >= 2^(c+1). With 2^c >= k (a user with at
  most k records has at most 2^c), the step's curve at order b >= 2 is 3^c eps(2^c b); below order 2 it is the
  value at 2 (Renyi divergence does not decrease with the order). It composes like any RDP curve.

Group privacy on the whole composition's privacy profile (Vadhan 2017, Lemma 2.2: (eps, delta)-DP gives
(k eps, delta (e^{k eps} - 1) / (e^eps - 1))-DP for groups of k) is :func:`..user_level.user_level_epsilon`'s
third candidate; it takes the smallest of the three and says which.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import binom

from ...errors import UnsupportedEventError
from ..leaf import Leaf
from ..registry import Family
from .mixture_gaussians import FAMILY as _MIXTURE

__all__ = ["FAMILY", "mixture_leaf", "group_rdp", "MIXTURE_STATEMENT", "RDP_STATEMENT"]

MIXTURE_STATEMENT = ("mixture: records Poisson-sampled, the user's k records each included independently "
                     "(sum_j Bin(j; k, q) N(j, sigma^2) vs N(0, sigma^2); Ganesh 2024, Thm 3.1), exact")
_MAX_INNER_ORDER = 1024.0
RDP_STATEMENT = "group privacy on the RDP curve (Mironov 2017, Prop. 2, at the next power of two >= k)"


def _inner(leaf: Leaf) -> Leaf:
    return leaf.inner[0][0]


def _mixable(leaf: Leaf, relation: str) -> bool:
    inner = _inner(leaf)
    return relation == "add_remove" and inner.kind == "gaussian" and inner.sampling == "poisson" and \
        len(leaf.inner) == 1 and leaf.inner[0][1] == 1


def mixture_leaf(leaf: Leaf) -> Leaf:
    """The "mog" leaf of a user-level Poisson-sampled Gaussian: sensitivities j mu (j = 0..k) with
    probabilities Bin(j; k, q), unsampled."""
    inner, k = _inner(leaf), int(leaf.param)
    j = np.arange(k + 1)
    p = binom.pmf(j, k, inner.q)
    return Leaf("mog", k * inner.param, data=(tuple(float(x) for x in j * inner.param), tuple(float(x) for x in p / p.sum())))


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    if _mixable(leaf, relation):
        return None
    inner = _inner(leaf)
    return ("user-level accounting on the PLD has the exact pair only for Poisson-sampled Gaussian steps under "
            f"neighbouring='add_remove' (the mixture of Ganesh 2024); got a {inner.kind!r} leaf" +
            (f" under {inner.sampling} sampling" if inner.sampling else "") + f" under {relation!r}: use "
            "RDPAccountant (group privacy on the RDP curve) or dpaudit.accountant.user_level_epsilon (also group "
            "privacy on the privacy profile)")


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    reason = _pld_check(leaf, relation)
    if reason is not None:
        raise UnsupportedEventError(reason)
    return _MIXTURE.pld_pair(mixture_leaf(leaf), relation, step, pessimistic, lam, only)


def group_rdp(orders: np.ndarray, inner_curve, k: int) -> np.ndarray:
    """Mironov (2017, Prop. 2) at 2^c >= k: 3^c eps(2^c max(b, 2)) at each order b; ``inner_curve`` evaluates
    one step's curve at any orders. Orders whose scaled order exceeds :data:`_MAX_INNER_ORDER` get inf (the
    largest standard order: a bound there would cost the general sampled-RDP sums at huge orders)."""
    c = max(0, math.ceil(math.log2(k) - 1e-12))
    if c == 0:
        return np.asarray(inner_curve(orders), dtype=float)
    orders = np.asarray(orders, dtype=float)
    scaled = 2.0**c * np.maximum(orders, 2.0)
    kept = scaled <= _MAX_INNER_ORDER  # beyond: no bound (inf), which the conversion never picks
    values = np.full(orders.shape, math.inf)
    if kept.any():
        unique, back = np.unique(scaled[kept], return_inverse=True)
        values[kept] = np.asarray(inner_curve(unique), dtype=float)[back]
    return 3.0**c * values


def _rdp_from_inner(orders: np.ndarray, inner_curve, leaf: Leaf) -> np.ndarray:
    if not callable(inner_curve):
        raise UnsupportedEventError("user-level group privacy on the RDP curve needs the inner curve at other orders")
    return group_rdp(orders, inner_curve, int(leaf.param))


def _rdp_check(leaf: Leaf, relation: str) -> str | None:
    return None  # the inner leaf is checked by the RDP accountant (a leaf with an inner tree)


FAMILY = Family(
    name="user_level", events=(), kinds=("user",), normal_form=lambda event: None,
    pld_pair=_pld_pair, pld_check=_pld_check, rdp_check=_rdp_check, rdp_from_inner=_rdp_from_inner,
)
