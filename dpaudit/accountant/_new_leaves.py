"""Normal form, pure-DP level, Renyi-DP curve and zCDP parameter of the accountant-breadth events.

The events of :mod:`dpaudit.events` added for accountant breadth become normalised leaves
(:class:`~._event_tree.Leaf`) of these kinds:

* ``DiscreteGaussian(sigma, s)`` -> ("dgauss", sigma, extra=s); ``DiscreteLaplace(scale, s)`` -> ("dlap", scale,
  extra=s). The integer sensitivity is s under add/remove-one and 2 s under replace-one (the convention of
  Laplace and Gaussian).
* ``ApproxDP(eps, delta)`` -> ("approx", eps, extra=delta) when delta > 0, else binary randomized response
  ("rr", eps), its exact worst case.
* ``BoundedRange(eps)`` -> ("br", eps); ``ZCDP(rho)`` -> ("zcdp", rho). Both are guarantees under the
  accountant's neighbouring relation (no doubling under replace-one), like ``PureDP``.
* ``TreeAggregation(z, n)`` -> ("gaussian", sqrt(depth) / z) with depth = ceil(log2(n + 1)): a record enters
  ``depth`` nodes, each with independent Gaussian noise z C, so the release is one Gaussian mechanism of
  sensitivity sqrt(depth) C (dp_accounting's ``_compute_rdp_single_epoch_tree_aggregation``).

Renyi-DP of one run (natural log), at order alpha > 1, integer sensitivity D:

* discrete Gaussian: alpha D^2 / (2 sigma^2) (Canonne, Kamath & Steinke 2020, Prop. 5 / Thm. 4: the
  discrete Gaussian is D^2/(2 sigma^2)-zCDP);
* discrete Laplace P(x) ~ r^{|x|}, r = e^{-1/scale}: the exact sum
  D_alpha = ln(c [r^{(1-alpha) D} + r^{alpha D}] / (1 - r) + c sum_{0<x<D} r^{(2alpha-1)x + (1-alpha)D}) / (alpha - 1),
  c = (1 - r)/(1 + r) (geometric series over x <= 0, x >= D and the middle);
* bounded range: min(alpha eps^2 / 8, RDP of binary randomized response at eps): an eps-BR mechanism is
  eps^2/8-zCDP (Cesar & Rogers 2021, Lemma 3.2) and eps-DP (dominated by randomized response, Kairouz, Oh &
  Viswanath 2015);
* zCDP: alpha rho (Bun & Steinke 2016, Def. 1.1);
* (eps, delta) with delta > 0: no finite Renyi divergence (refused).

zCDP parameter rho of one run: Gaussian mu^2/2 (Bun & Steinke 2016, Prop. 1.6); discrete Gaussian
D^2/(2 sigma^2); Laplace, discrete Laplace, randomized response and pure DP: eps^2/2 with eps their pure level
(Bun & Steinke 2016, Prop. 1.4); bounded range eps^2/8 (Cesar & Rogers 2021); zCDP rho.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from ..events import ApproxDP, BoundedRange, DiscreteGaussian, DiscreteLaplace, PrivacyEvent, TreeAggregation, ZCDP
from ._event_tree import Leaf

__all__ = ["NEW_KINDS", "base_leaf", "integer_sensitivity", "pure_epsilon", "rdp_curve", "rdp_check", "rho_of_leaf"]

#: Leaf kinds interpreted by this module (and by :mod:`._pld_new_leaves`).
NEW_KINDS = frozenset({"dgauss", "dlap", "approx", "br", "zcdp"})
#: Kinds that are guarantees under the accountant's relation (never doubled under replace-one).
GUARANTEE_KINDS = frozenset({"approx", "br", "zcdp", "rr"})


def base_leaf(event: PrivacyEvent) -> Leaf | None:
    """The normalised leaf of an accountant-breadth event (None if ``event`` is not one)."""
    if isinstance(event, DiscreteGaussian):
        return Leaf("dgauss", event.sigma, extra=float(event.sensitivity))
    if isinstance(event, DiscreteLaplace):
        return Leaf("dlap", event.scale, extra=float(event.sensitivity))
    if isinstance(event, ApproxDP):
        if event.delta == 0.0:
            return Leaf("rr", event.epsilon, 2)
        return Leaf("approx", event.epsilon, extra=event.delta)
    if isinstance(event, BoundedRange):
        return Leaf("br", event.epsilon)
    if isinstance(event, ZCDP):
        return Leaf("zcdp", event.rho)
    if isinstance(event, TreeAggregation):
        return Leaf("gaussian", math.sqrt(event.depth) / event.noise_multiplier)
    return None


def integer_sensitivity(leaf: Leaf, scale: float) -> int:
    """Integer sensitivity of a discrete-noise leaf: its per-record bound times ``scale`` (1 or 2)."""
    return int(round(leaf.extra * scale))


def _dlap_epsilon(scale: float, sensitivity: int) -> float:
    return sensitivity / scale


def pure_epsilon(leaf: Leaf, scale: float) -> float:
    """Pure-DP level of an unsampled new leaf (inf if none); ``scale`` is 2 for additive noise under
    replace-one, else 1 (ignored by guarantee kinds)."""
    if leaf.kind == "dlap":
        return _dlap_epsilon(leaf.param, integer_sensitivity(leaf, scale))
    if leaf.kind == "br":
        return leaf.param
    return math.inf  # dgauss, zcdp, approx with delta > 0


def _dlap_rdp(orders: np.ndarray, scale: float, sensitivity: int) -> np.ndarray:
    a = np.asarray(orders, dtype=float)
    log_r = -1.0 / scale
    log_c = math.log(-math.expm1(log_r)) - math.log1p(math.exp(log_r))
    log_1mr = math.log(-math.expm1(log_r))
    d = sensitivity
    parts = [log_c + (1 - a) * d * log_r - log_1mr, log_c + a * d * log_r - log_1mr]
    if d > 1:
        x = np.arange(1, d, dtype=float)
        middle = logsumexp(log_c + ((2 * a[:, None] - 1) * x[None, :] + (1 - a[:, None]) * d) * log_r, axis=1)
        parts.append(middle)
    total = logsumexp(np.stack(parts), axis=0)
    return np.minimum(np.maximum(total / (a - 1), 0.0), d / scale)


def rdp_check(leaf: Leaf, relation: str) -> str | None:
    """Reason the RDP accountant cannot interpret a new leaf, or None."""
    if leaf.kind == "approx":
        return (f"an (epsilon, delta) step with delta={leaf.extra!r} > 0 has no finite Renyi divergence "
                "(use PLDAccountant)")
    return None


def rdp_curve(leaf: Leaf, scale: float):
    """The Renyi-DP curve alpha -> D_alpha of one run of an unsampled new leaf."""
    from ._rdp_formulas import rr_rdp

    if leaf.kind == "dgauss":
        d = integer_sensitivity(leaf, scale)
        return lambda a: np.asarray(a, dtype=float) * d * d / (2.0 * leaf.param**2)
    if leaf.kind == "dlap":
        d = integer_sensitivity(leaf, scale)
        return lambda a: _dlap_rdp(a, leaf.param, d)
    if leaf.kind == "br":
        eps = leaf.param
        return lambda a: np.minimum(np.asarray(a, dtype=float) * eps * eps / 8.0, rr_rdp(np.asarray(a, dtype=float), eps, 2))
    if leaf.kind == "zcdp":
        return lambda a: np.asarray(a, dtype=float) * leaf.param
    raise ValueError(f"no Renyi-DP curve for leaf kind {leaf.kind!r}")


def rho_of_leaf(leaf: Leaf, relation: str) -> float | None:
    """zCDP parameter rho of one run of an unsampled leaf (None if the leaf has no finite zCDP bound)."""
    double = 2.0 if relation == "replace_one" else 1.0
    if leaf.sampling is not None:
        return None
    if leaf.kind == "gaussian":
        return (leaf.param * double) ** 2 / 2.0
    if leaf.kind == "laplace":
        return (leaf.param * double) ** 2 / 2.0
    if leaf.kind == "rr":
        return leaf.param**2 / 2.0
    if leaf.kind == "dgauss":
        d = integer_sensitivity(leaf, double)
        return d * d / (2.0 * leaf.param**2)
    if leaf.kind == "dlap":
        return _dlap_epsilon(leaf.param, integer_sensitivity(leaf, double)) ** 2 / 2.0
    if leaf.kind == "br":
        return leaf.param**2 / 8.0
    if leaf.kind == "zcdp":
        return leaf.param
    return None


def leaves_rdp(leaves: dict, relation: str, orders) -> np.ndarray:
    """Renyi-DP curve (upper bound, natural log) at ``orders`` of a multiset of normalised leaves: the sum of
    the RDP accountant's per-leaf curves (RDP adds up under composition, Mironov 2017), +inf at every order
    when some leaf has no RDP bound here ((eps, delta) steps with delta > 0, Poisson sampling under
    replace-one, sampled sub-trees). Used by accountants that do not track RDP themselves (PLD)."""
    from .._validation import check_real_sequence
    from .rdp import RDPAccountant, _check

    wanted = np.asarray(check_real_sequence(orders, "orders"), dtype=float)
    other = RDPAccountant(relation, orders=wanted)  # validates: every order > 1
    total = np.zeros_like(other.orders)
    for leaf, count in leaves.items():
        if leaf.kind == "tree" or _check(leaf, relation) is not None:
            total = np.full_like(other.orders, math.inf)
            break
        total = total + count * other._leaf_rdp(leaf)
    return total[np.searchsorted(other.orders, wanted)]


#: Largest zCDP rho (per merged leaf) and bounded-range epsilon the PLD accountant builds a pair for: their
#: privacy-loss grids would otherwise need losses beyond e^600.
PLD_MAX_RHO = 400.0
PLD_MAX_BR_EPSILON = 500.0


def pld_check(leaf: Leaf, relation: str) -> str | None:
    """Reason the PLD accountant cannot interpret a leaf, or None (checked at compose time)."""
    if leaf.kind == "zcdp" and leaf.param > PLD_MAX_RHO:
        return f"rho={leaf.param!r} > {PLD_MAX_RHO} is beyond the PLD grid; use ZCDPAccountant or RDPAccountant"
    if leaf.kind == "br" and leaf.param > PLD_MAX_BR_EPSILON:
        return f"epsilon={leaf.param!r} > {PLD_MAX_BR_EPSILON} is beyond the PLD grid; use RDPAccountant"
    if leaf.kind == "dgauss":
        from ._pld_new_leaves import discrete_gaussian_atom_count, MAX_DISCRETE_GAUSSIAN_ATOMS

        count = discrete_gaussian_atom_count(leaf.param, integer_sensitivity(leaf, 2.0))
        if count > MAX_DISCRETE_GAUSSIAN_ATOMS:
            return (f"sigma={leaf.param!r} needs {count} exact atoms (more than {MAX_DISCRETE_GAUSSIAN_ATOMS}); "
                    "use RDPAccountant or ZCDPAccountant")
    return None


def total_rho(leaves: dict, relation: str) -> float:
    """Sum of the leaves' zCDP parameters (inf if some leaf has none), rounded up."""
    from .._numeric import round_up

    parts = []
    for leaf, count in leaves.items():
        rho = rho_of_leaf(leaf, relation)
        if rho is None:
            return math.inf
        parts.append(count * rho)
    return round_up(math.fsum(parts), ulps=4 + len(parts))


class RDPCurve(np.ndarray):
    """An RDP curve at the accountant's orders (an ordinary ndarray); calling it, ``curve(orders)``, evaluates
    the composed curve at other orders."""

    def __new__(cls, values: np.ndarray, evaluate) -> "RDPCurve":
        obj = np.asarray(values, dtype=float).view(cls)
        obj._evaluate = evaluate
        return obj

    def __array_finalize__(self, obj) -> None:
        self._evaluate = getattr(obj, "_evaluate", None)

    def __call__(self, orders) -> np.ndarray:
        if self._evaluate is None:
            raise TypeError("this array is not an accountant's RDP curve")
        return self._evaluate(orders)
