"""Privacy-loss-distribution (PLD) accountant: numerically tight epsilon and delta of event trees.

Over 500 lines on purpose: every read-out (epsilon, delta, the certified intervals, profile, trade-off,
risk) and the grid planning with its size refusals share one cache of composed grids per accountant;
split apart, each would reach into the others' cache.

Every event tree is reduced to a multiset of leaf mechanisms (:mod:`.event_tree`), each leaf's exact
privacy-loss pair is discretised on a common grid (:mod:`.leaf_plds` and :mod:`.families`), and the leaves are composed by
FFT convolution with exponentiation by squaring (:mod:`.pld_core.grid`). Both adjacency directions are
kept separately (for add/remove neighbours: a record removed, a record added) and the larger delta,
respectively epsilon, is reported.

Two discretisations are run:

* pessimistic ("connect the dots", Doroshenko et al. 2022): an **upper bound** on delta(eps) and
  eps(delta), which is what :meth:`PLDAccountant.epsilon` and :meth:`PLDAccountant.delta` return;
* optimistic (outcomes merged, then placed at or below their merged loss): a **lower bound** on the same quantities for the worst-case pairs
  used here, so that :meth:`PLDAccountant.epsilon_interval` brackets the exact value of the
  composition of those pairs.

Numerical error: besides the declared-side discretisation, every number carries the float error bound
of the FFTs (Higham 2002, Thm 24.2: about ``16 u log2(n) sqrt(n)`` in l1 per convolution, u = 2^-53),
which is added to every delta read out (subtracted for the lower bound); tails below 1e-15 of mass per
operation are moved to the declared side. An early squaring's error is repeated in every copy of its block,
so it grows with the number of compositions; a squaring whose bound, times those copies, would exceed
``PRECISE_BUDGET`` (1e-10) splits off its peak or runs in extended precision (``GridPLD.square``), which
keeps the charged error near 1e-9 even after 10^6 steps.

Grids: the step is planned per composition unless given. The lower bound uses one grid (about 1000 cells per
standard deviation of the composed loss). The upper bound is planned for a relative excess of epsilon over
the exact value near :data:`TARGET_EXCESS` (:func:`plan_grid`: from the leaves' log moment generating
functions, the Chernoff tilt and epsilon scale at delta 1e-5); it discretises the leaves on that grid and
coarsens each self-composition as it grows, up to 2^r times (``GridPLD.coarsen``: every atom split onto the
coarse grid keeping its P- and Q-mass, which dominates it), so the leaves' discretisation error is that of
the fine grid while the large FFTs run on the coarse one. Of the two adjacency directions the one that does
not decide epsilon is only screened (its Chernoff bound, or a coarser grid).

Small delta: the FFT's absolute round-off (~1e-13 of the mass) and the truncated upper tail (charged
as loss +inf) put a floor under the plain read-out. Each read-out at a target delta first plans that floor
(:meth:`PLDAccountant._budgets`): the tail cut per operation and the squarings' float-error budget are
lowered to about 1e-4 of the target where float64 storage allows it (its rounding adds about 4 u n over n
steps); the grids are cached per plan. Where the floor still matters (within 30x of the target on a planned
floor, 1000x on the default one, or below ``SMALL_DELTA`` when it cannot be planned) the upper bound is also
computed by exponential tilting (:mod:`.pld_tilted`: delta(eps) = M(lam) e^{-lam eps} S, the tail beyond
the grid bounded by its tilted mass) on the same multi-resolution grids (leaves on the fine grid, coarsened
while composed), its tilt restricted to tilted leaves the grid resolves; the smaller of the sound bounds is
returned. Where the plain grid's floor, bounded below before composing (each self-composed leaf's first
squaring's float error bound, once per copy of the squared pair: :meth:`PLDAccountant._plain_floor`), is
already within 30x of the target, the plain grid is not composed at all (it would charge at least 1/30 of
the target, raising its epsilon by about 0.03 / lam, and the tilted read-out runs anyway): the tilted bound
alone is returned, the plain grid only where tilting gives nothing finite. It stays finite and tight down to
1e-30 and beyond. Below ``SMALL_DELTA`` where the budgets cannot be
planned, the lower end of ``epsilon_interval`` is likewise read by tilting alone (the optimistic one grid,
refined as the interval asks; the plain optimistic read-out only where tilting gives nothing positive), the
add direction only where its Chernoff bound exceeds the remove direction's lower end.

Compositions of bounded-range mechanisms alone (``BoundedRange(eps)`` composed any number of times, up
to :data:`.bounded_range.MAX_WORK`) are not discretised as a dominating pair: their exact optimal adaptive
composition (Dong, Durfee & Rogers 2020) is computed instead (:mod:`.bounded_range`), with both ends
certified; ``epsilon``/``delta`` return its upper end and the intervals bracket the optimum itself.

Exact Gaussian compositions are merged before discretising (k Gaussians with noise multipliers s_i
compose exactly to one with 1/s^2 = sum 1/s_i^2; Dong, Roth & Su 2022). A composition of unsampled
Gaussians alone is exactly mu-GDP (mu = sqrt(sum 1/s_i^2); Dong, Roth & Su 2022, Cor. 3.3): it is read off
the Gaussian curve without a grid (Cor. 2.13, both ends rounded outward), for any number of steps and any
noise (``SelfComposed(Gaussian(1.0), 10**15)``, ``Gaussian(1e-300)``).

Size: a grid that would need more than :data:`MAX_CELLS` cells (a tiny fixed ``discretisation_interval``,
a nested sampled tree whose inner losses span far more than the outer grid's resolution) is refused with
:class:`~dpaudit.errors.UnsupportedEventError` naming the cause and the alternative (``RDPAccountant``)
before anything is allocated; a composition whose composed PLD would need more than
:data:`MAX_COMPOSED_CELLS` cells (10^15 steps), or a tilted grid beyond its limit, with its subclass
:class:`~dpaudit.errors.AccountingTooLargeError`, within milliseconds (``epsilon_upper`` then answers with
the RDP bound).

Example:
    >>> from dpaudit.events import Gaussian, PoissonSampled, SelfComposed
    >>> acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000))
    >>> round(acct.epsilon(target_delta=1e-5), 2)
    1.83
"""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction
from typing import Any

import numpy as np

from .._numeric import round_down, round_up
from .._validation import check_delta, check_epsilon, check_positive, check_positive_int
from ..errors import AccountingTooLargeError, UnsupportedEventError
from ..events import PrivacyEvent, check_event, check_neighbouring
from .closed_form import fraction_up
from .event_tree import Leaf, flatten
from .families.sampled_tree import inner_factor
from .families.zcdp import lower_target as zcdp_lower_target
from .leaf_measures import basic_composition, rho_of_leaf, total_rho
from .leaf_plds import build_leaf, compose_leaves, leaf_loss_moments, leaf_loss_summary, log_mgf_curve
from .leaf_plds import merged as _merged
from .pld_core.grid import GridPLD
from .registry import FAMILIES, relation_scale
from .rdp import leaves_epsilon, leaves_rdp
from .risk import AttackRiskReadouts
from .zcdp import zcdp_delta, zcdp_epsilon

__all__ = ["PLDAccountant", "CELLS_PER_STANDARD_DEVIATION", "FINAL_CELLS_PER_STANDARD_DEVIATION", "TARGET_EXCESS",
           "PLANNING_DELTA", "SMALL_DELTA",
           "INTERVAL_GAP", "MAX_REFINEMENTS", "MAX_CELLS", "MAX_COMPOSED_CELLS", "compose_leaves", "plan_grid"]

#: Grid cells per standard deviation of the composed privacy loss when the step is chosen automatically
#: (the lower bound's grid; the upper bound ends on a grid of FINAL_CELLS_PER_STANDARD_DEVIATION).
CELLS_PER_STANDARD_DEVIATION = 1000
#: Upper bound (automatic grid): the final grid is at most 1/this of the composed loss's standard deviation.
#: The leaves are discretised on a grid 2^r times finer and coarsened while they are composed
#: (``GridPLD.self_compose``).
FINAL_CELLS_PER_STANDARD_DEVIATION = 250
#: Upper bound (automatic grid): the planned relative excess of epsilon over the exact value from the
#: leaves' discretisation, at delta = PLANNING_DELTA (``plan_grid``).
TARGET_EXCESS = 7e-5
PLANNING_DELTA = 1e-5
_PLAN_LAMBDAS = np.geomspace(0.01, 3000.0, 37)
#: Below this target delta (or within 1000x of the grid's own error floor) the upper bound is also read
#: out by exponential tilting with every truncated tail bounded (:mod:`.pld_tilted`), and the smaller
#: of the two sound bounds is returned.
SMALL_DELTA = 1e-8
#: ``epsilon_interval`` refines the lower end's grid while it trails the upper end by more than this.
INTERVAL_GAP = 0.005
#: At most this many halvings of the lower end's grid (each doubles its cost).
MAX_REFINEMENTS = 4
_MAX_LOWER_CELLS = 2**22
_MAX_COARSENINGS = 10  # epsilon_interval: the lower end's grid at most 4^10 times coarser than planned
#: Largest grid (cells) one leaf or a sampled sub-tree's inner composition may need (a float64 array of
#: 2^25 cells is 256 MB; the FFTs hold a few): beyond it the accountant refuses before allocating.
MAX_CELLS = 2**25
#: Largest composed PLD (cells) a composition may need on its final grid (a few tens of FFTs of this size
#: take seconds); beyond it the accountant refuses with :class:`~dpaudit.errors.AccountingTooLargeError`
#: before allocating (``RDPAccountant`` and ``epsilon_upper`` answer such compositions).
MAX_COMPOSED_CELLS = 2**21
_MAX_LEAF_CELLS = 2**17
_MAX_INNER_CELLS = 2**18  # the inner composed tree of a sampled sub-tree (its losses span far more than the outer's)
_MIN_STEP = 1e-7
_MAX_FINE_LEVELS = 8
_SCREEN_MAX_FACTOR = 16  # direction screening only for leaves refined at most this many times (_screened_epsilon)
_ZCDP_SHARE = 0.05  # epsilon_interval: zCDP lower mixtures tried where zCDP steps carry this share of rho
_LEAF_FRACTION = 0.25  # upper bound: leaves on a grid between this fraction and twice it of the one-grid step


class PLDAccountant(AttackRiskReadouts):
    """Tight (epsilon, delta) accounting with privacy loss distributions.

    Args:
        neighbouring: "add_remove" (default) or "replace_one"; every event is interpreted under it
            (Gaussian and Laplace sensitivity doubles under replace-one).
        discretisation_interval: grid step of the privacy loss (one grid for leaves and composition);
            None (default) plans the grids per composition (module docstring, :func:`plan_grid`), which keeps
            results about 0.01-0.02% above the exact value at a few to a hundred milliseconds
            (reports/accounting_grid.md).

    ``epsilon`` and ``delta`` are upper bounds (pessimistic discretisation, rounded up);
    ``epsilon_interval`` and ``delta_interval`` add the optimistic lower bound.
    """

    def __init__(self, neighbouring: str = "add_remove", discretisation_interval: float | None = None) -> None:
        self.neighbouring = check_neighbouring(neighbouring)
        if discretisation_interval is not None:
            discretisation_interval = check_positive(discretisation_interval, "discretisation_interval")
        self.discretisation_interval = discretisation_interval
        self._leaves: Counter[Leaf] = Counter()
        self._cache: dict[Any, tuple[GridPLD, GridPLD]] = {}

    # ------------------------------------------------------------------ state
    def compose(self, event: PrivacyEvent, count: int = 1) -> PLDAccountant:
        """Add ``count`` runs of ``event``; the whole tree is checked before any state changes."""
        check_event(event)
        count = check_positive_int(count, "count")
        leaves = flatten(event, count, self.neighbouring, type(self).__name__, check=_pld_check)
        self._leaves.update(leaves)
        self._cache.clear()
        return self

    def supports(self, event: PrivacyEvent) -> bool:
        """Whether :meth:`compose` would accept ``event`` (nothing is composed)."""
        try:
            flatten(check_event(event), 1, self.neighbouring, type(self).__name__, check=_pld_check)
        except UnsupportedEventError:
            return False
        return True

    def rho(self) -> float:
        """zCDP parameter of the composition when every leaf has one (unsampled events), else inf."""
        return total_rho(self._leaves, self.neighbouring)

    def rdp(self, orders: Any) -> Any:
        """Renyi-DP curve (upper bound) of the composition at ``orders`` (each > 1), from the leaves' RDP
        curves (as RDPAccountant computes them); +inf where some leaf has no RDP bound."""
        return leaves_rdp(self._leaves, self.neighbouring, orders)

    @property
    def leaves(self) -> dict[Leaf, int]:
        """The normalised leaf mechanisms composed so far and their counts."""
        return dict(self._leaves)

    def step(self, pessimistic: bool = True) -> float:
        """The grid step in use for the upper (or lower) bound, chosen from the composed events
        unless fixed; 0.0 when no grid is used (compositions of unsampled Gaussians are read off the exact
        mu-GDP curve, Dong, Roth & Su 2022, Cor. 3.3)."""
        exact = self._bounded_range()
        if exact is not None:
            return exact.step
        if self._leaves and self._gdp() is not None:
            return 0.0  # exactly mu-GDP: no grid
        if self.discretisation_interval is not None:
            return self.discretisation_interval
        return self._plan(pessimistic)[0]

    def _plan(self, pessimistic: bool) -> tuple[float, int, float]:
        key = ("plan", pessimistic)
        if key not in self._cache:
            summaries = self._summaries() if pessimistic else None
            self._cache[key] = plan_grid(_merged(self._leaves), self.neighbouring, pessimistic, summaries)
        return self._cache[key]

    def _summaries(self) -> dict[Leaf, Any]:
        """Each merged leaf's :func:`.leaf_plds.leaf_loss_summary` (pessimistic, with its log-MGF curves at
        the planning tilts), computed once per composition."""
        if "summaries" not in self._cache:
            self._cache["summaries"] = {leaf: _summary(leaf, self.neighbouring, True, _PLAN_LAMBDAS)
                                        for leaf in _merged(self._leaves)}
        return self._cache["summaries"]

    def _chernoff_epsilon(self, direction: int, target_delta: float, fine: bool = False) -> float:
        """An upper bound on one direction's (0: remove, 1: add) epsilon at ``target_delta`` from the leaves'
        log-MGF curves of pessimistic PLDs (dominating pairs): delta(eps) <= P(some loss is +inf) +
        M(lam) e^{-lam eps} lam^lam / (lam + 1)^(lam + 1) at every lam > 0 (Chernoff, with the hockey-stick
        weight's maximum; the optimal RDP conversion); inf when no lam reaches the target. From the planning
        discretisation (its connect-the-dots split inflates ln M by about n lam (lam + 1) h^2 / 12, which
        matters at 10^5 steps and more) or (``fine``) from the leaves on the planned leaf grid, at tilts around
        the planning one."""
        leaves = _merged(self._leaves)
        if fine:
            lams = self._plan_tilt() * np.geomspace(0.25, 4.0, 9)
            log_mgf = np.zeros(lams.size)
            inf_mass = 0.0
            for leaf, count in leaves.items():
                pld = build_leaf(leaf, self.neighbouring, self.leaf_step(), True,
                                 only="add" if direction else "remove")[direction]
                log_mgf += count * log_mgf_curve(pld, lams, cells=pld.pmf.size)
                inf_mass += count * pld.inf_mass  # union bound
        else:
            lams = _PLAN_LAMBDAS
            log_mgf = np.zeros(lams.size)
            inf_mass = 0.0
            for leaf, count in leaves.items():
                curves = self._summaries()[leaf][3]
                log_mgf += count * curves[direction]
                inf_mass += count * curves[2 + direction]
        budget = target_delta - inf_mass * (1 + 1e-9)
        if budget <= 0:
            return math.inf
        values = (log_mgf + lams * np.log(lams / (lams + 1)) - np.log1p(lams) - math.log(budget)) / lams
        return max(0.0, float(np.min(values)) * (1 + 1e-9) + 1e-12)

    def _plan_tilt(self) -> float:
        """The tilt of the Chernoff bound the upper grid is planned with (``plan_grid``)."""
        log_mgf = sum(count * np.maximum(self._summaries()[leaf][3][0], self._summaries()[leaf][3][1])
                      for leaf, count in _merged(self._leaves).items())
        with np.errstate(invalid="ignore"):
            chernoff = (log_mgf - math.log(PLANNING_DELTA)) / _PLAN_LAMBDAS
        return float(_PLAN_LAMBDAS[int(np.nanargmin(chernoff))]) if np.isfinite(chernoff).any() else 1.0

    def leaf_step(self, pessimistic: bool = True) -> float:
        """The grid step the leaves are discretised on: :meth:`step`, or (upper bound, automatic grid) a
        power-of-two fraction of it, coarsened while composing."""
        return self.step(pessimistic) / self._leaf_factor(pessimistic)

    def _leaf_factor(self, pessimistic: bool = True) -> int:
        """How many times finer than :meth:`step` the leaves are discretised (1 on a fixed grid)."""
        if self.discretisation_interval is not None or self._bounded_range() is not None or self._gdp() is not None:
            return 1
        return self._plan(pessimistic)[1]

    def tilt_step(self, pessimistic: bool) -> float:
        """Grid of the exponentially tilted read-out: one grid for leaves and composition."""
        if self.discretisation_interval is not None:
            return self.discretisation_interval
        return self._plan(pessimistic)[2]

    # ------------------------------------------------------------------ results
    def epsilon(self, target_delta: float) -> float:
        """Upper bound on the smallest epsilon with the composition (epsilon, target_delta)-DP."""
        target_delta = check_delta(target_delta, "target_delta")
        with _bounded_size(self), self._budgets(target_delta):
            return self._epsilon(target_delta, pessimistic=True)

    def delta(self, target_epsilon: float) -> float:
        """Upper bound on the smallest delta with the composition (target_epsilon, delta)-DP."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        with _bounded_size(self), self._budgets(None):
            value = self._delta(target_epsilon, pessimistic=True, tilt=False)
        if 0.0 < value < 1.0:  # re-read on the grids planned for a delta this small (what epsilon() uses there),
            with _bounded_size(self), self._budgets(value):  # tilted near their floor
                value = min(value, self._delta(target_epsilon, pessimistic=True))
        return value

    def epsilon_interval(self, target_delta: float) -> tuple[float, float]:
        """(lower, upper) bracketing the exact epsilon of the composed worst-case pairs.

        The lower end is the epsilon of an optimistic PLD: each leaf's exact pair with outcomes merged (a
        post-processing) and put on the grid at or below their merged likelihood ratio, so it is less
        informative than the exact pair, also after composition (rounded down). Where the loss accumulates
        (Poisson subsampling, at ln(1-q) and -ln(1-q)) cells are merged into groups at exactly a grid ratio
        (:mod:`.pld_core.merging`), which keeps the error second order in the step. A Poisson-sampled
        sub-tree's lower pair is the mixture over one record's inclusion of its inner composed optimistic
        pair (:mod:`.families.sampled_tree`). A zCDP step's lower side is a mechanism with the guarantee: the
        Gaussian, or (the larger lower end is kept) a Gaussian / randomized-response mixture proven rho-zCDP
        chosen for the target delta over each sampling rate above it (:func:`.families.zcdp.lower_mixture`).
        While the lower end trails the upper end by more than
        :data:`INTERVAL_GAP` its grid is halved (at most :data:`MAX_REFINEMENTS` times, and only while the
        finer PLDs stay below ``_MAX_LOWER_CELLS`` cells); where the planned optimistic grid would be too
        large it is coarsened (by 4 at a time) until it fits, which still gives a lower bound. The grid
        widths used are in :meth:`interval_grids`."""
        target_delta = check_delta(target_delta, "target_delta")
        with _bounded_size(self), self._budgets(target_delta):
            return self._epsilon_interval(target_delta)

    def _epsilon_interval(self, target_delta: float) -> tuple[float, float]:
        upper = self._epsilon(target_delta, pessimistic=True)
        refinement = 0
        try:
            lower = self._epsilon(target_delta, pessimistic=False)
        except UnsupportedEventError:  # the optimistic grid would be too large: a coarser one is still a lower bound
            lower, refinement = self._coarser_lower(target_delta)
        if self._bounded_range() is not None:  # the exact optimum's own bracket: no grid to refine
            self._last_refinement = 0
            return min(lower, upper), upper
        chosen = None  # zCDP leaves: a worse mechanism with the guarantee than the Gaussian, where one helps
        if lower < (1.0 - INTERVAL_GAP) * upper:
            target = self._screened_lower_target(target_delta, refinement)
            if target is not None:
                value = self._lower_with(target, target_delta, refinement)
                if value > lower:
                    lower, chosen = value, target
        self._lower_delta = chosen
        try:
            with zcdp_lower_target(chosen):
                return self._refined_interval(target_delta, lower, upper, refinement)
        finally:
            self._lower_delta = None

    def _screened_lower_target(self, target_delta: float, refinement: int) -> float | None:
        """The delta (of :meth:`_lower_targets`) whose zCDP lower mixtures give the largest lower end on a grid
        4 times coarser than ``refinement``'s, if that beats the Gaussian lower sides on the same grid; else None
        (then the Gaussian's lower end is kept without computing any mixture's on the full grid)."""
        targets = self._lower_targets(target_delta)
        if not targets:
            return None
        coarse = refinement - 2
        try:
            best, chosen = self._epsilon(target_delta, pessimistic=False, refinement=coarse), None
            for target in targets:
                value = self._lower_with(target, target_delta, coarse)
                if value > best:
                    best, chosen = value, target
        except UnsupportedEventError:
            return None
        return chosen

    def _lower_with(self, target: float, target_delta: float, refinement: int) -> float:
        """The lower end with every zCDP leaf's lower side the mixture chosen for ``target``
        (:func:`.families.zcdp.lower_mixture`)."""
        self._lower_delta = target
        try:
            with zcdp_lower_target(target):
                return self._epsilon(target_delta, pessimistic=False, refinement=refinement)
        finally:
            self._lower_delta = None

    def _lower_targets(self, target_delta: float) -> list[float]:
        """Deltas to choose zCDP leaves' lower mixtures for: the target over each sampling rate r a zCDP leaf
        sits under (its own delta is about that much larger) and over sqrt(r) (1 when unsampled: the target);
        only where the zCDP leaves carry at least _ZCDP_SHARE of their (sub-)composition's rho (leaves with no
        rho, sampled ones, count 0), elsewhere their lower side moves the lower end little. Each gives a lower
        bound; the largest is kept."""
        rates: set[float] = set()

        def visit(leaves: Any, rate: float) -> None:
            rhos = {leaf: count * (leaf.param if leaf.kind == "zcdp" else rho_of_leaf(leaf, self.neighbouring) or 0.0)
                    for leaf, count in leaves}
            zcdp = sum(rho for leaf, rho in rhos.items() if leaf.kind == "zcdp")
            if zcdp > 0 and zcdp >= _ZCDP_SHARE * sum(rhos.values()):
                rates.update(rate * (leaf.q if leaf.sampling in ("poisson", "wor") else 1.0)
                             for leaf in rhos if leaf.kind == "zcdp")
            for leaf, _ in leaves:
                if leaf.inner:
                    visit(leaf.inner, rate * (leaf.q if leaf.sampling in ("poisson", "wor") else 1.0))

        visit(self._leaves.items(), 1.0)
        targets = {target_delta / rate for rate in rates} | {target_delta / math.sqrt(rate) for rate in rates}
        return sorted(t for t in targets if 0.0 < t < 0.1)

    def _refined_interval(self, target_delta: float, lower: float, upper: float, refinement: int
                          ) -> tuple[float, float]:
        """The lower end's grid halved while it trails the upper end (see :meth:`epsilon_interval`)."""
        while (math.isfinite(upper) and upper > 0 and lower < (1.0 - INTERVAL_GAP) * upper
               and refinement < MAX_REFINEMENTS and self._lower_cells(refinement, target_delta) * 2 <= _MAX_LOWER_CELLS):
            refinement += 1
            try:
                finer = self._epsilon(target_delta, pessimistic=False, refinement=refinement)
            except UnsupportedEventError:  # a finer grid would be too large: keep the lower end found so far
                refinement -= 1
                break
            gain, lower = finer - lower, max(lower, finer)
            if gain < 0.1 * (upper - lower + gain):  # the gap is not the grid's (e.g. a sampled sub-tree's
                break  # lower side, one component only): a finer grid will not close it
        self._last_refinement = refinement
        return min(lower, upper), upper

    def _coarser_lower(self, target_delta: float) -> tuple[float, int]:
        """(lower end, refinement) on the first optimistic grid 4, 16, ... times coarser than the planned one
        that fits (refinement -2, -4, ...); (0.0, 0) when none up to 4^10 times coarser does."""
        for refinement in range(-2, -2 * _MAX_COARSENINGS - 1, -2):
            try:
                return self._epsilon(target_delta, pessimistic=False, refinement=refinement), refinement
            except UnsupportedEventError:
                continue
        return 0.0, 0

    def interval_grids(self) -> tuple[float, float]:
        """(grid width of the lower end, grid width of the upper end) used by the last
        :meth:`epsilon_interval` (before any call: the planned widths)."""
        return self.step(False) / 2 ** getattr(self, "_last_refinement", 0), self.step(True)

    def delta_interval(self, target_epsilon: float) -> tuple[float, float]:
        """(lower, upper) bracketing the exact delta at ``target_epsilon``."""
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
        with _bounded_size(self), self._budgets(None):
            lower = self._delta(target_epsilon, pessimistic=False)
            upper = self._delta(target_epsilon, pessimistic=True)
        return min(lower, upper), upper

    def to_dict(self, target_delta: float) -> dict[str, Any]:
        """JSON-ready summary at ``target_delta``."""
        lower, upper = self.epsilon_interval(target_delta)
        lower_grid, upper_grid = self.interval_grids()
        return {"accountant": "pld", "neighbouring": self.neighbouring, "target_delta": target_delta,
                "epsilon_upper": upper, "epsilon_lower": lower, "discretisation_interval": upper_grid,
                "discretisation_interval_lower": lower_grid}

    # ------------------------------------------------------------------ whole curves (curves.py)
    def gaussian_mu(self) -> float | None:
        """mu when the composition is exactly mu-GDP (only unsampled Gaussians: mu^2 add up), else None."""
        from .curves import gaussian_mu

        return gaussian_mu(self._leaves, self.neighbouring)

    def profile(self, epsilons: Any) -> Any:
        """delta(epsilon) at each epsilon (ndarray, upper bounds): the exact GDP curve for compositions of
        Gaussians, else the pessimistic PLD read-out of :meth:`delta` (both adjacency directions)."""
        from .curves import accountant_profile

        return accountant_profile(self, epsilons, self.gaussian_mu())

    def tradeoff(self, alphas: Any) -> Any:
        """f(alpha) the composition guarantees (ndarray): a **lower bound** on its true trade-off function.
        Exact G_mu for compositions of Gaussians; otherwise sup over an epsilon grid of
        max(1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha)) (Dong-Roth-Su 2022, Prop. 2.12)
        with the pessimistic profile."""
        from .curves import accountant_tradeoff

        return accountant_tradeoff(self, alphas, self.gaussian_mu())

    def _risk_profile(self, epsilons: Any) -> Any:
        """delta at each epsilon for the attack-risk read-outs (:mod:`.risk`): the pessimistic grid read-out
        of :meth:`delta` (the same upper bound) without its tilted refinement of deltas near the grid's
        error floor, which only matters at false-positive rates far below those the risk grid serves."""
        return np.array([self._delta(float(e), pessimistic=True, tilt=False) for e in np.ravel(epsilons)])

    # ------------------------------------------------------------------ internals
    def _bounded_range(self) -> Any:
        """The exact optimal composition when every leaf is an unsampled BoundedRange of one epsilon and
        it is within :data:`.bounded_range.MAX_WORK`, else None (cached with the PLDs)."""
        if "br" not in self._cache:
            self._cache["br"] = None
            if len(self._leaves) == 1:
                (leaf, count), = self._leaves.items()
                if leaf.kind == "br" and leaf.sampling is None:
                    from .bounded_range import bounded_range_cells, bounded_range_composition

                    cells = bounded_range_cells(leaf.param, count, self.discretisation_interval)
                    if cells is not None:
                        self._cache["br"] = bounded_range_composition(leaf.param, count, cells)
        return self._cache["br"]

    def _gdp(self) -> float | None:
        """mu when the composition is exactly mu-GDP (unsampled Gaussians only), cached; else None."""
        if "mu" not in self._cache:
            self._cache["mu"] = self.gaussian_mu()
        return self._cache["mu"]

    def _epsilon(self, target_delta: float, pessimistic: bool, refinement: int = 0) -> float:
        if not self._leaves:
            return 0.0
        mu = self._gdp()
        if mu is not None:  # exactly mu-GDP: the Gaussian curve itself, any number of steps and any mu
            from .curves import gdp_epsilon, gdp_epsilon_lower

            if not pessimistic:
                return gdp_epsilon_lower(mu, target_delta)
            return math.inf if not math.isfinite(mu * mu) or target_delta == 0.0 else float(gdp_epsilon(mu, target_delta))
        exact = self._bounded_range()
        if exact is not None:
            if pessimistic:
                return min(exact.epsilon(target_delta), self._pure_epsilon(target_delta))
            return exact.epsilon_lower(target_delta)
        if target_delta == 0.0 and pessimistic:
            return self._pure_epsilon()
        if self._tilted_only(target_delta) and (refinement == 0 or not pessimistic):
            # float64 storage cannot plan the plain grid's floor below the target (about 4 u n over n steps): the
            # tilted read-out answers, the plain one only where tilting gives nothing finite (upper), nothing
            # positive (lower)
            if pessimistic:
                tilted = self._with_tilted(math.inf, target_delta, True)
                if math.isfinite(tilted):
                    return min(_up(tilted), self._pure_epsilon(target_delta), self._rdp_epsilon(target_delta),
                               self._zcdp_epsilon(target_delta))
            else:
                tilted = self._with_tilted(0.0, target_delta, False, refinement)
                if tilted > 0.0:
                    return round_down(tilted)
        if (pessimistic and refinement == 0 and target_delta > 0 and getattr(self, "_level", None) is not None
                and target_delta < 30.0 * self._plain_floor()):
            # the plain grid would charge at least target / 30 of float error (so the tilted read-out below runs
            # anyway, and the plain one's epsilon is raised by about 0.03 / lam or more): tilting alone, the
            # plain grid only where tilting gives nothing finite
            tilted = self._with_tilted(math.inf, target_delta, True)
            if math.isfinite(tilted):
                return min(_up(tilted), self._pure_epsilon(target_delta), self._rdp_epsilon(target_delta),
                           self._zcdp_epsilon(target_delta))
        screened = self._screened_epsilon(target_delta) if pessimistic and refinement == 0 else None
        if screened is not None:
            value, read = screened
        else:
            read = list(self._plds(pessimistic, refinement))
            value = max(pld.epsilon(target_delta) for pld in read)
        floor = max(p.inf_mass + abs(p.error) for p in read)
        # the upper side also tries tilting near its error floor (which it charges in full: within 1000x of the
        # target on the default budgets, within 30x on budgets planned for this delta, where the floor moves
        # epsilon by at most about 0.03 / lam); the lower side subtracts the floor, which costs little until the
        # target is within 10x of it
        planned = getattr(self, "_level", None) is not None  # tail and float budgets planned for this delta
        small = target_delta < (30.0 if planned and pessimistic else 1e3 if pessimistic else 10.0) * floor or (
            target_delta < SMALL_DELTA and not planned)
        if small and target_delta > 0:  # tails bounded analytically (upper) / read out by tilting (lower)
            value = self._with_tilted(value, target_delta, pessimistic, refinement)
        if pessimistic:
            return min(_up(value), self._pure_epsilon(target_delta), self._rdp_epsilon(target_delta),
                       self._zcdp_epsilon(target_delta))
        return round_down(value)

    def _with_tilted(self, value: float, target_delta: float, pessimistic: bool, refinement: int = 0) -> float:
        """``value`` combined with the exponentially tilted read-out at ``target_delta`` (:mod:`.pld_tilted`):
        the smaller upper bound, or the larger lower bound. The upper side runs on the planned multi-resolution
        grids (leaves on the fine grid, coarsened while composed), the lower side on the one grid. A tilted
        grid too large to build (:class:`~dpaudit.errors.AccountingTooLargeError`: a large tilt reaching far
        into a subsampled leaf's tail) leaves ``value`` as it is."""
        from .pld_tilted import tilted_epsilon, tilted_lower_epsilon

        key = ("tilted", target_delta, pessimistic, refinement, None if pessimistic else getattr(self, "_lower_delta", None))
        if key not in self._cache:
            leaves = _merged(self._leaves)
            try:
                if pessimistic and self.discretisation_interval is None:
                    tilted = self._tilted_upper(leaves, target_delta)
                elif pessimistic:
                    tilted = tilted_epsilon(leaves, self.neighbouring, self.tilt_step(True), target_delta)
                else:
                    tilted, cells = tilted_lower_epsilon(
                        leaves, self.neighbouring, self.tilt_step(False) / 2**refinement, target_delta,
                        add_bound=lambda: self._chernoff_epsilon(1, target_delta))
                    self._cache[("tilted cells", target_delta, refinement)] = cells
            except AccountingTooLargeError:
                tilted = math.inf if pessimistic else 0.0
            self._cache[key] = tilted
        tilted = self._cache[key]
        return min(value, tilted) if pessimistic else max(value, tilted)

    def _tilted_upper(self, leaves: Counter[Leaf], target_delta: float) -> float:
        """The tilted upper bound on the planned multi-resolution grids, the add direction only when its Chernoff
        bound (:meth:`_chernoff_epsilon`, no composition) does not already stay below the remove direction's value
        (as the plain read-out screens it, :meth:`_screened_epsilon`)."""
        from .pld_tilted import choose_tilts, tilted_epsilon_of

        step, fine = self.step(True), self._leaf_factor(True)
        lams = choose_tilts(leaves, self.neighbouring, step, target_delta=target_delta, cell_step=step / fine)
        value = tilted_epsilon_of(leaves, self.neighbouring, step, lams[0], 0, target_delta, fine)
        if len(lams) > 1:
            nested = any(leaf.kind == "tree" for leaf in self._leaves)
            if not (self._chernoff_epsilon(1, target_delta) <= value
                    or (not nested and self._chernoff_epsilon(1, target_delta, fine=True) <= value)):
                value = max(value, tilted_epsilon_of(leaves, self.neighbouring, step, lams[1], 1, target_delta, fine))
        return value

    def _rdp_epsilon(self, target_delta: float) -> float:
        """The RDP accountant's bound on the same leaves when some sampled leaf's PLD pair is known to be
        looser than it (its family's ``sampled_pld_loose``: sampled zCDP), else inf; both are upper bounds
        on the same epsilon, so their minimum is one too."""
        if not any(leaf.sampling is not None and FAMILIES.of_kind(leaf.kind).sampled_pld_loose
                   for leaf in self._leaves):
            return math.inf
        if ("rdp", target_delta) not in self._cache:
            self._cache[("rdp", target_delta)] = leaves_epsilon(self._leaves, self.neighbouring, target_delta)
        return self._cache[("rdp", target_delta)]

    def _zcdp_epsilon(self, target_delta: float) -> float:
        """The Canonne-Kamath-Steinke conversion of the composition's zCDP parameter when every leaf has one and
        some leaf is a zCDP step (whose PLD pair, built from that same bound on a grid, charges the grid's float
        slack as mass at +inf, which matters below delta 1e-9), else inf; an upper bound on the same epsilon."""
        if not any(leaf.kind == "zcdp" for leaf in self._leaves):
            return math.inf
        rho = self.rho()
        return zcdp_epsilon(rho, target_delta) if math.isfinite(rho) else math.inf

    def _delta(self, target_epsilon: float, pessimistic: bool, tilt: bool = True) -> float:
        if not self._leaves:
            return 0.0
        mu = self._gdp()
        if mu is not None:
            from .curves import gdp_delta, gdp_delta_lower

            if not math.isfinite(mu * mu):  # no information limit: delta(eps) = 1 for every finite eps
                return 1.0 if pessimistic else gdp_delta_lower(mu, target_epsilon)
            return float(gdp_delta(mu, target_epsilon)) if pessimistic else gdp_delta_lower(mu, target_epsilon)
        exact = self._bounded_range()
        if exact is not None:
            return exact.delta(target_epsilon) if pessimistic else exact.delta_lower(target_epsilon)
        basic_delta = self._basic_delta(target_epsilon) if pessimistic else 1.0
        if basic_delta == 0.0:
            return 0.0
        remove, add = self._plds(pessimistic)
        value = max(remove.delta(target_epsilon), add.delta(target_epsilon))
        planned = getattr(self, "_level", None) is not None
        if tilt and pessimistic and value < (30.0 if planned else 1e3) * max(p.inf_mass + p.error for p in (remove, add)):
            from .pld_tilted import tilted_delta

            try:  # on the planned multi-resolution grids, as the epsilon read-out (_with_tilted)
                if self.discretisation_interval is None:
                    tilted = tilted_delta(_merged(self._leaves), self.neighbouring, self.step(True), target_epsilon,
                                          True, self._leaf_factor(True))
                else:
                    tilted = tilted_delta(_merged(self._leaves), self.neighbouring, self.tilt_step(True), target_epsilon)
            except AccountingTooLargeError:
                tilted = 1.0
            value = min(value, tilted)
        if pessimistic and any(leaf.kind == "zcdp" for leaf in self._leaves) and math.isfinite(self.rho()):
            value = min(value, zcdp_delta(self.rho(), target_epsilon))  # as in _zcdp_epsilon
        return min(1.0, _up(value), basic_delta) if pessimistic else round_down(value)

    def _basic_delta(self, target_epsilon: float) -> float:
        """Basic composition's delta (rounded up) when its summed epsilon is within ``target_epsilon``, else 1."""
        levels = basic_composition(self._leaves, self.neighbouring)
        if levels is None or levels[0] > Fraction(target_epsilon):
            return 1.0
        return min(1.0, fraction_up(levels[1]))

    def _pure_epsilon(self, target_delta: float = 0.0) -> float:
        """Basic composition when every leaf is unsampled and has a pure-DP or (epsilon, delta) level
        (randomized response, Laplace, ApproxDP, ...): the summed epsilon when the summed delta is within
        ``target_delta``, else inf; Laplace with scale b is (sensitivity / b)-DP."""
        levels = basic_composition(self._leaves, self.neighbouring)
        if levels is None or levels[1] > Fraction(target_delta):
            return math.inf
        return fraction_up(levels[0])

    def _check_composed(self, step: float) -> None:
        """Refuse (:class:`~dpaudit.errors.AccountingTooLargeError`, before allocating) a composition whose
        composed PLD would need more than :data:`MAX_COMPOSED_CELLS` cells of ``step``: it spans about 17
        standard deviations of the composed loss (the tails cut at 1e-15) plus the widest leaf (10^15 steps of
        DP-SGD: 10^8 cells at the largest step the plan allows)."""
        if self.discretisation_interval is None and self._bounded_range() is None and self._gdp() is None:
            summaries = self._summaries()
            variance = sum(count * summaries[leaf][1] for leaf, count in _merged(self._leaves).items())
            span = max((summaries[leaf][2] for leaf in summaries), default=0.0)
            cells = (17.0 * math.sqrt(variance) + span) / step
            if cells > MAX_COMPOSED_CELLS:
                raise AccountingTooLargeError(
                    f"PLDAccountant: the composition of {sum(self._leaves.values()):,} events would need about "
                    f"{cells:.3g} grid cells (limit {MAX_COMPOSED_CELLS:.3g}) and does not finish in seconds; use "
                    "RDPAccountant (or epsilon_upper, which falls back to it)", cells=cells)

    def _check_cells(self, step: float) -> None:
        """Refuse (before allocating) a grid of ``step`` on which some leaf, or the inner tree of a sampled
        sub-tree, would need more than :data:`MAX_CELLS` cells, or the composition more than
        :data:`MAX_COMPOSED_CELLS` (:meth:`_check_composed`, at the final step)."""
        for leaf in _merged(self._leaves):
            key = ("span", leaf)
            if key not in self._cache:
                self._cache[key] = _loss_span(leaf, self.neighbouring)
            cells = self._cache[key] / step
            if cells > MAX_CELLS:
                fixed = self.discretisation_interval is not None
                cause = (f"discretisation_interval={self.discretisation_interval!r} is too fine" if fixed else
                         "the losses of a nested sampled sub-tree span far more than the composed loss's grid resolves")
                raise UnsupportedEventError(
                    f"PLDAccountant: {cause}: a grid of step {step:.3g} would need {cells:.3g} cells for {leaf.kind!r} "
                    f"leaves (limit {MAX_CELLS:.3g}); use " + ("a coarser discretisation_interval or " if fixed else "")
                    + "RDPAccountant (or epsilon_upper, which falls back to it)")

    def _plds(self, pessimistic: bool, refinement: int = 0) -> tuple[GridPLD, GridPLD]:
        key = pessimistic if refinement == 0 else (pessimistic, refinement)
        if not pessimistic and getattr(self, "_lower_delta", None) is not None:
            key = (key, "zcdp", self._lower_delta)  # zCDP leaves' lower sides chosen for this delta
        if key not in self._grids:
            leaves = _merged(self._leaves)
            step = self.step(pessimistic) / 2**refinement
            fine = 1 if refinement else self._leaf_factor(pessimistic)
            self._check_composed(step)
            self._check_cells(step / fine)
            if key is True and ("upper", "remove", False) in self._grids:  # computed by _screened_epsilon
                self._grids[key] = (self._upper("remove")[0], self._upper("add")[0])
            else:
                self._grids[key] = compose_leaves(leaves, self.neighbouring, step, pessimistic, fine)
        return self._grids[key]

    def _upper(self, direction: str, coarse: bool = False) -> tuple[GridPLD, bool]:
        """(upper-bound PLD of one adjacency direction, "remove" or "add", whether every leaf is symmetric),
        on the planned grids or (``coarse``, a screen) with the leaves discretised on the final grid too (leaves
        refined at most _SCREEN_MAX_FACTOR times) or on a grid 4 times coarser than the planned one."""
        key = ("upper", direction, coarse)
        if key not in self._grids:
            if not coarse and True in self._grids:
                pair = self._grids[True]
            else:
                fine = self._leaf_factor()
                if coarse:
                    fine = 1 if fine <= _SCREEN_MAX_FACTOR else fine // 4
                self._check_composed(self.step(True))
                self._check_cells(self.step(True) / fine)
                built = self._grids.get("remove leaves") if direction == "remove" and not coarse else None
                pair = compose_leaves(_merged(self._leaves), self.neighbouring, self.step(True), True, fine,
                                      only=direction, built=built)
            self._grids[key] = (pair[0 if direction == "remove" else 1], pair[0] is pair[1])
        return self._grids[key]

    def _screened_epsilon(self, target_delta: float) -> tuple[float, list[GridPLD]] | None:
        """max over the two adjacency directions of the upper epsilon, computing the direction that does not
        decide it only as far as needed. The remove direction is computed on the planned grids (of
        Poisson-subsampled mechanisms it carries the unbounded upper losses; the add direction's are at most
        -ln(1 - q) per step). The add direction is screened first by its Chernoff bound from the leaves'
        log-MGF curves (:meth:`_chernoff_epsilon`: no composition at all), then on a coarser grid (an upper bound
        as well: leaves refined at most _SCREEN_MAX_FACTOR times discretised on the final grid, whose
        connect-the-dots error is factor^2 times the planned one; others on a grid 4 times coarser, 16 times the
        error), and computed on the planned grids only when every screen exceeds the remove direction's epsilon. The result is the same upper bound as with
        both directions on the planned grids whenever a screen holds. None on a fixed grid.
        Returns (epsilon, the PLDs read)."""
        if True in self._grids or self.discretisation_interval is not None:
            return None
        decided, symmetric = self._upper("remove")
        value = decided.epsilon(target_delta)
        if symmetric:
            self._grids[True] = (decided, decided)
            return value, [decided]
        if self._chernoff_epsilon(1, target_delta) <= value:
            return value, [decided]  # the add direction cannot decide it
        nested = any(leaf.kind == "tree" for leaf in self._leaves)  # (a fine sampled sub-tree is a composition)
        if not nested and self._chernoff_epsilon(1, target_delta, fine=True) <= value:
            return value, [decided]
        if self._leaf_factor() > 1:
            rough, _ = self._upper("add", coarse=True)
            if rough.epsilon(target_delta) <= value:
                return value, [decided, rough]
        other, _ = self._upper("add")
        self._grids[True] = (decided, other)
        return max(value, other.epsilon(target_delta)), [decided, other]

    @property
    def _grids(self) -> dict[Any, Any]:
        """The composed grids of the current tail and float-error budgets (:meth:`_budgets`)."""
        return self._cache.setdefault(("grids", getattr(self, "_level", None)), {})

    def _budgets(self, target_delta: float | None) -> Any:
        """Context of a read-out at ``target_delta``: the tail mass cut per operation and the squarings' float
        error budget (:func:`.pld_core.grid.budgets`) lowered so that, together, they cost the plain read-out
        at most about 1e-4 of the target (both are charged to delta in full), where float64 storage comes
        close (its rounding, a relative u per squaring and copy, adds about 4 u n over n steps: at most 1e-2 of
        the target, which moves epsilon by about 1e-2 / lam); elsewhere the
        defaults (1e-15 per operation, 1e-10), and the tilted read-out handles the small deltas. Grids are
        cached per budget."""
        from .pld_core.grid import PRECISE_BUDGET, TAIL_MASS, budgets

        level = None
        if target_delta is not None and target_delta > 0 and self.discretisation_interval is None:
            steps = max(1, sum(_leaf_steps(leaf) * count for leaf, count in _merged(self._leaves).items()))
            floor = 1e-4 * target_delta
            if floor < 2 * TAIL_MASS * steps + 4 * PRECISE_BUDGET and 4 * 2.0**-53 * steps <= 300 * floor:
                tail = 10.0 ** math.floor(math.log10(max(1e-300, floor / (4 * steps))))
                level = (min(TAIL_MASS, tail), min(PRECISE_BUDGET, 10.0 ** math.floor(math.log10(floor / 4))))
        self._level = level
        return budgets(*level) if level is not None else budgets(TAIL_MASS, PRECISE_BUDGET)

    def _plain_floor(self) -> float:
        """A lower bound on the float error the plain upper grid of the remove direction (always read) charges on
        the current budgets (:meth:`_budgets`), without composing it: each self-composed leaf's first squaring
        charges at least :func:`.pld_core.grid.squaring_error` of its leaf grid (on the budget that squaring gets),
        and every later squaring and composition carries that error once per copy of the squared pair in the
        result (count // 2 copies; the masses it is multiplied by are within 1e-3 of 1, hence the 0.99)."""
        from .pld_core.grid import error_budget, squaring_error

        if "plain floor" not in self._grids:
            floor, built = 0.0, {}
            step, fine = self.step(True), self._leaf_factor(True)
            self._check_composed(step)  # the plain grid's own refusals, before any leaf is built (as :meth:`_upper`)
            self._check_cells(step / fine)
            for leaf, count in _merged(self._leaves).items():
                if count < 2 or (FAMILIES.of_kind(leaf.kind).exact_power is not None and leaf.sampling is None):
                    continue
                built[leaf] = build_leaf(leaf, self.neighbouring, step / fine, True, only="remove")
                remove = built[leaf][0]  # (kept for the plain grid, :meth:`_upper`, should it be composed)
                if remove is None:
                    continue
                first = squaring_error(remove.pmf, error_budget() / (count >> 1))
                floor = max(floor, 0.99 * (count >> 1) * first)
            self._grids["plain floor"], self._grids["remove leaves"] = floor, built
        return self._grids["plain floor"]

    def _tilted_only(self, target_delta: float) -> bool:
        """Whether a read-out at ``target_delta`` is by exponential tilting alone: below :data:`SMALL_DELTA` on
        the automatic grid where the plain grid's float error cannot be planned below the target
        (:meth:`_budgets`); the plain grid is then only a fallback."""
        return (target_delta < SMALL_DELTA and self.discretisation_interval is None
                and getattr(self, "_level", None) is None)

    def _lower_cells(self, refinement: int, target_delta: float) -> int:
        """Cells of the lower end's composed PLD at ``refinement`` (the tilted one when it alone was read at
        ``target_delta``)."""
        cells = self._cache.get(("tilted cells", target_delta, refinement))
        if cells is not None and False not in self._grids and (False, refinement) not in self._grids:
            return cells
        remove, add = self._plds(False, refinement)
        return max(remove.pmf.size, add.pmf.size)

    def __repr__(self) -> str:
        return f"PLDAccountant(neighbouring={self.neighbouring!r}, leaves={sum(self._leaves.values())})"


class _bounded_size:
    """Context of a read-out: a float overflow or a failed allocation inside the grid machinery (losses
    beyond the float range, a grid no machine holds) becomes dpaudit's own UnsupportedEventError naming
    the alternative, never a raw OverflowError or MemoryError."""

    def __init__(self, accountant: PLDAccountant) -> None:
        self.accountant = accountant

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, error: Any, trace: Any) -> bool:
        if kind is not None and issubclass(kind, (OverflowError, MemoryError)):
            self.accountant._cache.clear()
            raise UnsupportedEventError(
                f"PLDAccountant cannot discretise this composition ({kind.__name__}: {error}): its losses exceed "
                "the float range or its grid the memory; use RDPAccountant (or epsilon_upper, which falls back to it)"
            ) from None
        return False


def _loss_span(leaf: Leaf, relation: str) -> float:
    """Loss span of a leaf's pessimistic PLD, from :func:`leaf_loss_moments`, in units of the grid it is built on;
    for a sampled sub-tree: of its inner composed tree, on a grid ``inner_factor`` times coarser than the outer
    one (:func:`.families.sampled_tree.inner_factor`), so divided by that factor."""
    if leaf.kind == "tree" and leaf.inner:
        inner = sum(count * _loss_span(sub, relation) for sub, count in leaf.inner)
        return inner / inner_factor(leaf, relation)
    return leaf_loss_moments(leaf, relation, True)[2]


def _summary(leaf: Leaf, relation: str, pessimistic: bool, lams: np.ndarray | None) -> Any:
    """:func:`.leaf_plds.leaf_loss_summary`, for a sampled sub-tree on grids no finer than its inner composition
    allows (at most _MAX_INNER_CELLS cells there)."""
    min_step = _loss_span(leaf, relation) / _MAX_INNER_CELLS if leaf.kind == "tree" and leaf.inner else 0.0
    return leaf_loss_summary(leaf, relation, pessimistic, lams, min_step=min_step)


def _leaf_steps(leaf: Leaf) -> int:
    """How many compositions a leaf stands for (a sampled sub-tree: its inner leaves' count)."""
    if leaf.kind == "tree" and leaf.inner:
        return max(1, sum(_leaf_steps(inner) * count for inner, count in leaf.inner))
    return 1


def _pld_check(leaf: Leaf, relation: str) -> str | None:
    """Reason the PLD accountant cannot interpret a leaf (its family's check), or None."""
    check = FAMILIES.of_kind(leaf.kind).pld_check
    return None if check is None else check(leaf, relation)


def _up(value: float) -> float:
    """Round an upper bound up, keeping an exact 0 exact: the read-outs return 0.0 only when the
    outward-rounded delta at epsilon 0 (or the bound itself) is already within target, so no rounding
    error remains to cover (rounding 0.0 up would give the smallest subnormal, 2e-323, not 0)."""
    return 0.0 if value == 0.0 else round_up(value)


def plan_grid(leaves: Counter[Leaf], relation: str, pessimistic: bool = True,
              summaries: dict[Leaf, Any] | None = None) -> tuple[float, int, float]:
    """(final grid step, leaf refinement factor 2^r, one-grid step) for a composition.

    One grid (lower bound): two errors are balanced, resolution (about 1000 cells per standard deviation
    of the composed loss) and bias (each connect-the-dots split raises the mean loss by about step^2 / 12,
    so n compositions shift it by n step^2 / 12, kept below 1e-3 of the composed mean or spread).

    Upper bound: planned for a relative excess of epsilon over the exact value near :data:`TARGET_EXCESS`
    at delta = :data:`PLANNING_DELTA` (it stays an upper bound at every delta; only its tightness varies).
    n connect-the-dots splits of step h add about V = n h^2 / 6 to the composed loss variance; by the
    Chernoff bound eps ~ (ln M(lam) + ln(1/delta)) / lam at its optimal tilt lam, whose ln M(lam) grows by
    lam (lam + 1) V / 2 under added variance, that raises epsilon by about (lam + 1) V / 2. The leaf step
    h solves (lam + 1) V / 2 = TARGET_EXCESS eps, with lam and eps the Chernoff bound's, from the leaves'
    log moment generating functions (:func:`.leaf_plds.leaf_loss_summary`). The final grid is 2^r times
    coarser (``GridPLD.self_compose`` coarsens the leaves while composing): at most 1/250 of the composed
    loss's spread, and coarse enough that its own split of the whole composition (at most S^2 / 4 of
    variance) stays within a fifth of the leaves' n h^2 / 6. No leaf gets more than 2^17 cells, and the
    inner composed tree of a sampled sub-tree (built on the same grid) no more than 2^18: nested sampling is
    planned in bounded time and memory, at the price of a coarser grid. Randomized-response and Laplace
    atoms are put on the grid when there is a single such loss (on the final grid, hence on the finer
    ones too). The one-grid step is also the grid of the exponentially tilted read-out (``.pld_tilted``).
    ``summaries``: the leaves' :func:`leaf_summaries` when already computed."""
    if not leaves:
        return 1e-4, 1, 1e-4
    total_mean, total_var, span, total_count = 0.0, 0.0, 0.0, 0
    log_mgf = np.zeros(_PLAN_LAMBDAS.size)
    for leaf, count in leaves.items():
        if summaries is not None and leaf in summaries:
            mean, var, leaf_span, curves = summaries[leaf]
        else:
            mean, var, leaf_span, curves = _summary(leaf, relation, pessimistic, _PLAN_LAMBDAS if pessimistic else None)
        total_mean += count * mean
        total_var += count * var
        total_count += count
        if curves is not None:
            log_mgf += count * np.maximum(curves[0], curves[1])
        span = max(span, leaf_span)
        if leaf.kind == "tree":  # its inner tree is composed on the same grid: bounded cells there too
            span = max(span, _loss_span(leaf, relation) * _MAX_LEAF_CELLS / _MAX_INNER_CELLS)
    spread = math.sqrt(total_var)
    by_resolution = spread / CELLS_PER_STANDARD_DEVIATION
    by_bias = math.sqrt(12.0 * 1e-3 * max(total_mean, spread) / total_count)
    one_grid = max(min(by_resolution, by_bias), span / _MAX_LEAF_CELLS, _MIN_STEP)
    one_grid = _atoms_on_grid(leaves, relation, one_grid)
    if not pessimistic:
        return one_grid, 1, one_grid
    with np.errstate(invalid="ignore"):
        chernoff = (log_mgf - math.log(PLANNING_DELTA)) / _PLAN_LAMBDAS
    best = int(np.nanargmin(chernoff)) if np.isfinite(chernoff).any() else -1
    if best >= 0:
        scale, lam = max(float(chernoff[best]), spread), float(_PLAN_LAMBDAS[best])
    else:  # no finite moment (an atom at +inf): the Gaussian picture, eps ~ mean + 4.3 sd
        scale, lam = max(total_mean + 4.3 * spread, spread), 4.3 / max(spread, 1e-300)
    variance = 2.0 * TARGET_EXCESS * scale / (lam + 1.0)
    # short compositions cost little: their leaves are kept at least as fine as the one grid times sqrt(n)
    leaf = min(math.sqrt(6.0 * variance / total_count), one_grid * math.sqrt(total_count))
    leaf = max(leaf, span / _MAX_LEAF_CELLS, _MIN_STEP)
    final = max(leaf, min(spread / FINAL_CELLS_PER_STANDARD_DEVIATION, math.sqrt(total_count / 30.0) * leaf))
    factor = 1
    while 2 * factor * leaf <= final and factor < 2**_MAX_FINE_LEVELS:
        factor *= 2
    step = _atoms_on_grid(leaves, relation, factor * leaf)
    return step, factor, one_grid


def _atoms_on_grid(leaves: Counter[Leaf], relation: str, step: float) -> float:
    """``step``, lowered to put the atoms of every unsampled RR / Laplace leaf exactly on the grid when they
    share one loss."""
    scales = {_atom_scale(leaf, relation) for leaf in leaves} - {None}
    if len(scales) == 1:
        scale = scales.pop()
        cells = math.ceil(scale / step)
        step = scale / cells
        while step * cells != scale or scale / step != cells:  # make the float grid hit it exactly
            step = math.nextafter(step, 0.0)
            if step * cells < scale * (1 - 1e-12):
                break
    return step


def _atom_scale(leaf: Leaf, relation: str) -> float | None:
    """The loss of the atoms of an unsampled leaf whose atoms share one loss (randomized response, Laplace,
    (eps, delta) +-eps, discrete Laplace 1/scale), else None."""
    family = FAMILIES.of_kind(leaf.kind)
    if leaf.sampling is not None or family.atom_loss is None:
        return None
    return family.atom_loss(leaf, relation_scale(family, relation))
