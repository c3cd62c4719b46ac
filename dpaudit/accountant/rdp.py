"""Renyi-DP accountant over a grid of orders, with the tight RDP -> (epsilon, delta) conversion.

RDP curves add under composition (Mironov 2017). A curve rho(alpha) converts to (epsilon, delta)-DP by
(Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021)

    epsilon = min_alpha rho(alpha) + ln(1 - 1/alpha) - (ln delta + ln alpha) / (alpha - 1),
    ln delta = min_alpha (alpha - 1)(rho(alpha) - epsilon + ln(1 - 1/alpha)) - ln alpha,

and, when every event is pure DP, also by basic composition (the order alpha = infinity). Leaf curves
are listed in :mod:`._rdp_formulas`. Under replace-one the Gaussian and Laplace sensitivity is 2C, as
for the PLD accountant (dp_accounting's RDP accountant ignores this: its issue #378).

Poisson subsampling under replace-one (Gaussian and Laplace leaves): the sampled step's output pair is
((1-q) R + q P', (1-q) R + q Q') with R the output without the record, P', Q' with it and its
replacement; the proof of Wang, Balle & Kasiviswanathan (2019, Thm 9) uses only this decomposition and a
Renyi bound for each of the pairs (P', Q'), (R, P'), (R, Q'), here the base curve at sensitivity 2C (the
replace-one pair; the add/remove pairs at sensitivity C have smaller curves for additive noise), so
their bound applies. Its pure-DP level is not amplified (a mixture's likelihood ratio is at most its
components' largest, e^{2 eps}). Other Poisson-sampled leaves under replace-one are refused
(UnsupportedEventError; :class:`~dpaudit.accountant.PLDAccountant` supports them).

Example:
    >>> from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
    >>> acct = RDPAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000))
    >>> round(acct.epsilon(target_delta=1e-5), 3)
    2.101
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from .._numeric import round_up
from .._validation import check_delta, check_epsilon, check_positive_int, check_real_sequence
from ..errors import InvalidArgument, UnsupportedEventError
from ..events import PrivacyEvent, check_event, check_neighbouring
from ._rdp_formulas import DEFAULT_ORDERS, poisson_general_rdp, wor_general_rdp
from .event_tree import Leaf, flatten
from .leaf_measures import total_rho
from .registry import FAMILIES, relation_scale
from .risk import AttackRiskReadouts

__all__ = ["RDPAccountant", "DEFAULT_ORDERS", "RDPCurve", "leaves_rdp", "leaves_epsilon"]


def _check(leaf: Leaf, relation: str) -> str | None:
    if leaf.kind == "tree":  # a sampled sub-tree: its composed curve, then the sampling theorem
        if leaf.sampling == "wr":
            return "no Renyi-DP bound is implemented for sampling with replacement (use PLDAccountant)"
        if leaf.sampling == "poisson" and relation == "replace_one":
            return ("no Renyi-DP bound is implemented for Poisson subsampling of a sub-tree under replace-one "
                    "(use PLDAccountant, which supports it)")
        for inner, _ in leaf.inner:
            reason = _check(inner, relation)
            if reason is not None:
                return reason
        return None
    family = FAMILIES.of_kind(leaf.kind)
    if family.rdp_check is not None and family.rdp_check(leaf, relation) is not None:  # e.g. (eps, delta > 0)
        return family.rdp_check(leaf, relation)
    if family.rdp_from_inner is not None:  # a transform of its inner tree's curve (repeat and select)
        for inner, _ in leaf.inner:
            reason = _check(inner, relation)
            if reason is not None:
                return reason
        return None
    if family.rdp_curve is None:
        return f"no Renyi-DP curve is known for leaf kind {leaf.kind!r} (use PLDAccountant)"
    if leaf.sampling == "poisson" and relation == "replace_one" and not family.rdp_poisson_replace_one:
        return ("no Renyi-DP bound is implemented for Poisson subsampling under replace-one of this event "
                "(only Gaussian and Laplace noise; use PLDAccountant, which supports it)")
    return None


class RDPAccountant(AttackRiskReadouts):
    """Renyi-DP accounting of event trees.

    Args:
        neighbouring: "add_remove" (default) or "replace_one".
        orders: Renyi orders > 1 to track (default: the standard grid ``DEFAULT_ORDERS``).

    ``epsilon`` and ``delta`` are upper bounds (rounded up).
    """

    def __init__(self, neighbouring: str = "add_remove", orders: Any = None) -> None:
        self.neighbouring = check_neighbouring(neighbouring)
        grid = DEFAULT_ORDERS if orders is None else orders
        self.orders = np.unique(check_real_sequence(grid, "orders"))
        if (self.orders <= 1.0).any():
            raise InvalidArgument("orders", f"orders must all be > 1, got {float(self.orders.min())!r}")
        self._rdp = np.zeros_like(self.orders)
        self._pure = 0.0  # basic composition of the pure-DP levels (inf once a non-pure event is added)
        self._leaves: Counter[Leaf] = Counter()

    def compose(self, event: PrivacyEvent, count: int = 1) -> RDPAccountant:
        """Add ``count`` runs of ``event``; the whole tree is checked before any state changes."""
        check_event(event)
        count = check_positive_int(count, "count")
        leaves = flatten(event, count, self.neighbouring, type(self).__name__, check=_check)
        curves = [(leaf, n, self._leaf_rdp(leaf)) for leaf, n in leaves.items()]  # may raise: no state yet
        for leaf, n, curve in curves:
            self._rdp = self._rdp + n * curve
            self._pure += n * self._leaf_pure(leaf)
            self._leaves[leaf] += n
        return self

    @property
    def rdp(self) -> np.ndarray:
        """The composed Renyi-DP curve at ``orders`` (natural log); ``acct.rdp(other_orders)`` evaluates it
        at other orders (an :class:`RDPCurve`)."""
        return RDPCurve(self._rdp.copy(), self._rdp_at)

    def _rdp_at(self, orders: Any) -> np.ndarray:
        other = RDPAccountant(self.neighbouring, orders=orders)
        total = np.zeros_like(other.orders)
        for leaf, n in self._leaves.items():
            total = total + n * other._leaf_rdp(leaf)
        wanted = np.asarray(check_real_sequence(orders, "orders"), dtype=float)
        return total[np.searchsorted(other.orders, wanted)]

    def rho(self) -> float:
        """zCDP parameter of the composition when every leaf has one (unsampled events), else inf."""
        return total_rho(self._leaves, self.neighbouring)

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` would accept ``event`` (nothing is composed)."""
        try:
            flatten(check_event(event), 1, self.neighbouring, type(self).__name__, check=_check)
        except UnsupportedEventError:
            return False
        return True

    def epsilon(self, target_delta: float) -> float:
        """Upper bound on the smallest epsilon with the composition (epsilon, target_delta)-DP."""
        target_delta = check_delta(target_delta, "target_delta")
        if not self._leaves:
            return 0.0
        if target_delta == 0.0:
            return round_up(self._pure, ulps=8)
        a, rho = self.orders, self._rdp
        values = rho + np.log1p(-1.0 / a) - (math.log(target_delta) + np.log(a)) / (a - 1)
        smallest = float(np.min(values))
        if smallest <= -1e-9:  # met at epsilon 0 with a margin far above the float error: an exact zero
            return 0.0
        best = max(smallest, 0.0)
        return min(round_up(best, ulps=16), round_up(self._pure, ulps=8))

    def delta(self, target_epsilon: float) -> float:
        """Upper bound on the smallest delta with the composition (target_epsilon, delta)-DP."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        if not self._leaves or target_epsilon >= self._pure:
            return 0.0
        a, rho = self.orders, self._rdp
        log_delta = float(np.min((a - 1) * (rho - target_epsilon + np.log1p(-1.0 / a)) - np.log(a)))
        if not log_delta < 0.0:  # the bound is 1 or more (or nan from an infinite curve): delta <= 1 always holds
            return 1.0
        return min(1.0, round_up(math.exp(log_delta), ulps=16))

    def to_dict(self, target_delta: float) -> dict[str, Any]:
        return {"accountant": "rdp", "neighbouring": self.neighbouring, "target_delta": target_delta,
                "epsilon_upper": self.epsilon(target_delta)}

    # ------------------------------------------------------------------ whole curves (curves.py)
    def profile(self, epsilons: Any) -> Any:
        """delta(epsilon) at each epsilon (ndarray, upper bounds from the RDP conversion of :meth:`delta`)."""
        from .curves import accountant_profile

        return accountant_profile(self, epsilons)

    def tradeoff(self, alphas: Any) -> Any:
        """f(alpha) the composition guarantees (ndarray): a **lower bound** on its true trade-off function,
        from the RDP profile on an epsilon grid (Dong-Roth-Su 2022, Prop. 2.12)."""
        from .curves import accountant_tradeoff

        return accountant_tradeoff(self, alphas)

    # ------------------------------------------------------------------ leaves
    def _sensitivity(self, leaf: Leaf) -> float:
        return relation_scale(FAMILIES.of_kind(leaf.kind), self.neighbouring)

    def _base_curve(self, leaf: Leaf, scale: float):
        return FAMILIES.of_kind(leaf.kind).rdp_curve(leaf, scale)

    def _base_pure(self, leaf: Leaf, scale: float) -> float:
        return FAMILIES.of_kind(leaf.kind).pure_epsilon(leaf, scale)

    def _tree_curve(self, leaf: Leaf):
        """The RDP curve of a sampled sub-tree's composition (sum of its leaves' curves, each at the
        relation's sensitivity), as a function of the orders."""
        def curve(orders: np.ndarray) -> np.ndarray:
            sub = RDPAccountant(self.neighbouring, orders=orders)
            return sum((n * sub._leaf_rdp(inner) for inner, n in leaf.inner), np.zeros(sub.orders.size))

        return curve

    def _leaf_rdp(self, leaf: Leaf) -> np.ndarray:
        a = self.orders
        if leaf.kind == "tree":  # Poisson (add/remove): Zhu & Wang (2019, Thm 6); WOR (replace-one): WBK Thm 9 --
            # both hold for any mechanism with the given RDP curve, here the composed sub-tree's
            if leaf.sampling == "poisson":
                return poisson_general_rdp(a, leaf.q, self._tree_curve(leaf))
            pure = math.fsum(n * self._leaf_pure(inner) for inner, n in leaf.inner)
            return wor_general_rdp(a, leaf.q, self._tree_curve(leaf), pure)
        from_inner = FAMILIES.of_kind(leaf.kind).rdp_from_inner
        if from_inner is not None:  # unsampled (see _check)
            curve = self._tree_curve(leaf)  # its values here, callable at other orders (group privacy)
            return from_inner(a, RDPCurve(curve(a), curve), leaf)
        scale = self._sensitivity(leaf)
        if leaf.sampling is None:
            return self._base_curve(leaf, scale)(a)
        if leaf.sampling == "poisson" and self.neighbouring == "replace_one":  # Gaussian / Laplace (see _check)
            return wor_general_rdp(a, leaf.q, self._base_curve(leaf, scale), self._base_pure(leaf, scale))
        if leaf.sampling == "poisson":  # add/remove
            exact = FAMILIES.of_kind(leaf.kind).poisson_rdp  # e.g. the Gaussian's own bound
            if exact is not None:
                return exact(a, leaf.q, leaf.param)
            return poisson_general_rdp(a, leaf.q, self._base_curve(leaf, 1.0))
        return wor_general_rdp(a, leaf.q, self._base_curve(leaf, scale), self._base_pure(leaf, scale))

    def _leaf_pure(self, leaf: Leaf) -> float:
        if leaf.kind == "tree":
            eps = math.fsum(n * self._leaf_pure(inner) for inner, n in leaf.inner)
            return eps if not math.isfinite(eps) else math.log1p(leaf.q * math.expm1(eps))
        scale = self._sensitivity(leaf)
        eps = self._base_pure(leaf, scale)
        if leaf.sampling is None or not math.isfinite(eps):
            return eps
        if leaf.sampling == "poisson" and self.neighbouring == "replace_one":
            return eps  # not amplified (see the module docstring)
        # Poisson (add/remove) and without replacement (replace-one): ln(1 + q(e^eps - 1))
        # (Balle, Barthe & Gaboardi 2018, Thms 8 and 9)
        return math.log1p(leaf.q * math.expm1(eps))

    def __repr__(self) -> str:
        return f"RDPAccountant(neighbouring={self.neighbouring!r}, orders={self.orders.size})"


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


def leaves_rdp(leaves: dict, relation: str, orders) -> np.ndarray:
    """Renyi-DP curve (upper bound, natural log) at ``orders`` of a multiset of normalised leaves: the sum of
    the RDP accountant's per-leaf curves (RDP adds up under composition, Mironov 2017), +inf at every order
    when some leaf has no RDP bound here ((eps, delta) steps with delta > 0, Poisson sampling under
    replace-one, sampled sub-trees). Used by accountants that do not track RDP themselves (PLD)."""
    wanted = np.asarray(check_real_sequence(orders, "orders"), dtype=float)
    other = RDPAccountant(relation, orders=wanted)  # validates: every order > 1
    total = np.zeros_like(other.orders)
    for leaf, count in leaves.items():
        if leaf.kind == "tree" or _check(leaf, relation) is not None:
            total = np.full_like(other.orders, math.inf)
            break
        total = total + count * other._leaf_rdp(leaf)
    return total[np.searchsorted(other.orders, wanted)]


def leaves_epsilon(leaves: dict, relation: str, target_delta: float) -> float:
    """The RDP accountant's epsilon (upper bound, Canonne-Kamath-Steinke conversion) of a multiset of
    normalised leaves on the standard orders; inf when some leaf has no RDP bound here. Used by the PLD
    accountant where its own pair is looser than RDP (sampled zCDP)."""
    accountant = RDPAccountant(relation)
    for leaf, count in leaves.items():
        if _check(leaf, relation) is not None:
            return math.inf
        accountant._rdp = accountant._rdp + count * accountant._leaf_rdp(leaf)
        accountant._pure += count * accountant._leaf_pure(leaf)
        accountant._leaves[leaf] += count
    return accountant.epsilon(target_delta)
