"""Attack risk read from an accountant's privacy curve: the true-positive rate any membership attack can
reach at each false-positive rate, its advantage, and its accuracy at a prior.

Kulynych, Gomez, Kaissis, du Pin Calmon & Troncoso 2024, "Attack-aware noise calibration for differential
privacy" (NeurIPS; the riskcal library): a claim whose trade-off function is f (Dong, Roth & Su 2022) bounds
every attack that tells whether a record was in (P = M(d)) or out (Q = M(d')):

* **TPR at FPR**: an attack with false-positive rate alpha has true-positive rate at most 1 - f(alpha);
* **advantage**: TPR - FPR <= max_alpha (1 - alpha - f(alpha)) = delta(0), the total-variation distance
  (Kulynych et al. 2024, Sec. 3; Dong-Roth-Su 2022, Prop. 2.12 at epsilon = 0);
* **accuracy at a prior** pi of a binary guess (the secret is 1 with probability pi): at most
  max(pi, 1 - pi) + min(pi, 1 - pi) delta(|ln(pi / (1 - pi))|) (one minus the Bayes risk of Kulynych et
  al. 2025, "The unified theory of privacy risk", Prop. D.1: for a claim on both orderings the best test
  against the likelier side is a hockey-stick divergence at that ratio).

The accountants' trade-off functions are **lower bounds** on the true one (profile upper bounds read on an
epsilon grid, Dong-Roth-Su 2022, Prop. 2.12; exactly G_mu for Gaussian compositions), so every number here
is an **upper bound** on what any attack can reach, rounded up.

**Certified interval** (:func:`tpr_interval`, ``acct.tpr_interval(fprs)``): for one ordered pair (A, B) the best
test's TPR at FPR alpha is exactly inf over all real eps of e^eps alpha + delta_{A||B}(eps) (Neyman-Pearson by
convex duality; Dong, Roth & Su 2022, Prop. 2.12), and for eps < 0, delta_{A||B}(eps) = 1 - e^eps + e^eps
delta_{B||A}(-eps): both adjacency directions' profiles at eps >= 0 give the whole curve. Any attack, also one
mixing tests of both orderings, is bounded by the concave hull of the two orderings' curves (the symmetrised
trade-off function, Dong, Roth & Su 2022, Def. F.1), which is what the interval brackets:

* upper end: the lines min(e^eps alpha + D(eps), 1 - e^-eps (1 - alpha - D(eps))) with D = max(delta_remove,
  delta_add) from a PLD accountant's pessimistic grid PLDs (upper bounds on each direction's delta), minimised
  over every grid loss of either (any set of eps gives an upper bound; on a grid PLD these are all the kinks);
* lower end: each ordering's exact Neyman-Pearson curve of the optimistic grid PLDs (lower bounds on each
  direction's delta at every eps, so below the true curve), their maximum at their vertices, and the concave
  hull of those points (mixing two tests reaches every point between them);

both moved outward by the float error of the sums and the PLDs' error bounds, and both grids refined while the
interval is wider than :data:`TPR_INTERVAL_WIDTH`. Compositions of Gaussians: the closed form rounded both ways;
accountants without a lower curve (RDP, zCDP): the lower end is the FPR itself (random guessing).

Read-out: the profile is read on :data:`RISK_GRID_POINTS` epsilons from 0 to where delta falls to
:func:`risk_floor_delta` of the smallest false-positive rate asked (lines with smaller delta only matter at
false-positive rates far below it; dropping them keeps the trade-off a lower bound), so a PLD accountant
answers in a fraction of a second. Gaussian DP is read in closed form: TPR = Phi(Phi^-1(FPR) + mu),
advantage = 2 Phi(mu / 2) - 1.

Example:
    >>> from dpaudit.accountant import PLDAccountant
    >>> from dpaudit.events import Gaussian
    >>> acct = PLDAccountant().compose(Gaussian(1.0))
    >>> round(float(acct.tpr_at_fpr(0.01)), 4)
    0.0924
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_delta, check_probability
from ..errors import InvalidArgument, UnsupportedEventError
from ..tradeoff import ProfileTradeoff, _array
from .curves import accountant_profile, gdp_delta, gdp_tradeoff, guarantee_profile, guarantee_tradeoff

__all__ = ["STANDARD_FPRS", "RISK_GRID_POINTS", "AttackRisk", "attack_risk", "tpr_at_fpr", "advantage",
           "bayes_accuracy", "gdp_tpr_at_fpr", "gdp_advantage", "epsilon_for_tpr", "risk_floor_delta",
           "risk_tradeoff", "AttackRiskReadouts", "tpr_lower_from_tests",
           "guarantee_attack_risk", "tpr_interval", "TprInterval", "TPR_INTERVAL_WIDTH"]

#: False-positive rates the command line and reports show by default.
STANDARD_FPRS = (0.001, 0.01, 0.1)
#: Epsilon grid points on which a numeric accountant's profile is read for its risk curve.
RISK_GRID_POINTS = 600
_U = 2.0**-53
_FAR_EPSILON = 1e3
#: ``tpr_interval`` refines a PLD accountant's lower end while its interval is wider than this at some FPR >= 1e-4.
TPR_INTERVAL_WIDTH = 5e-5
_MAX_REFINEMENTS = 4  # halvings of the optimistic grid (each doubles its cost), as for the epsilon interval
_MAX_LOWER_CELLS = 2**22  # no finer optimistic PLD than this many cells
_HULL_POINTS = 20000  # vertices of the lower curves kept for the concave hull (any subset gives a lower bound)


def risk_floor_delta(smallest_fpr: float) -> float:
    """delta at which the risk grid ends: 1e-3 of the smallest positive false-positive rate asked, kept in
    [1e-8, 1e-6] (below 1e-8 a PLD's own error floor and tilted read-outs dominate; 1e-6 already resolves
    false-positive rates of 1e-3)."""
    return min(max(1e-3 * smallest_fpr, 1e-8), 1e-6)


def _mu(accountant: Any) -> float | None:
    """mu when the accountant's composition is exactly mu-GDP (it says so), else None."""
    gaussian_mu = getattr(accountant, "gaussian_mu", None)
    return gaussian_mu() if callable(gaussian_mu) else None


def _composed(accountant: Any) -> bool:
    leaves = getattr(accountant, "leaves", None)
    if not isinstance(leaves, dict):
        leaves = getattr(accountant, "_leaves", None)
    return bool(leaves)


def _key(accountant: Any) -> Any:
    leaves = getattr(accountant, "leaves", None)
    if not isinstance(leaves, dict):
        leaves = getattr(accountant, "_leaves", None)
    return tuple(sorted((repr(k), v) for k, v in leaves.items())) if isinstance(leaves, dict) else None


def _profile_reader(accountant: Any) -> Callable[[np.ndarray], np.ndarray]:
    """delta at an array of epsilons (upper bounds): the PLD's grid read-out without small-delta tilting
    when the accountant offers it, else its public ``delta``."""
    read = getattr(accountant, "_risk_profile", None)
    return read if callable(read) else (lambda grid: accountant_profile(accountant, grid))


def _epsilon_top(accountant: Any, floor: float) -> float:
    """Where the grid ends: the epsilon at which delta falls to ``floor`` above the delta that no epsilon
    removes (the plateau of (epsilon, delta) steps; beyond it every line is dominated)."""
    plateau = float(_profile_reader(accountant)(np.array([_FAR_EPSILON]))[0])
    for target in (plateau + floor, plateau + 1e-6, plateau + 1e-4, plateau + 1e-2):
        if target >= 1.0:
            break
        value = accountant.epsilon(target)
        if math.isfinite(value):
            return max(value, 1e-3)
    return 50.0


def risk_tradeoff(accountant: Any, smallest_fpr: float) -> ProfileTradeoff:
    """The trade-off lower bound used for risk: the accountant's profile (upper bounds, from its public
    ``delta``) on :data:`RISK_GRID_POINTS` epsilons from 0 to where delta falls to
    :func:`risk_floor_delta`, plus its pure epsilon if finite, as a :class:`~dpaudit.tradeoff.ProfileTradeoff`.
    Cached on the accountant until its composition changes."""
    floor = risk_floor_delta(smallest_fpr)
    key = (floor, _key(accountant))
    cache = getattr(accountant, "_risk_curve", None)
    if cache is not None and key[1] is not None and cache[0] == key:
        return cache[1]
    grid = np.linspace(0.0, _epsilon_top(accountant, floor), RISK_GRID_POINTS)
    pure = getattr(accountant, "_pure_epsilon", getattr(accountant, "_pure", None))
    value = pure() if callable(pure) else pure
    if isinstance(value, (int, float)) and math.isfinite(value):
        grid = np.unique(np.append(grid, float(value)))
    curve = ProfileTradeoff(grid, _profile_reader(accountant)(grid))
    try:
        accountant._risk_curve = (key, curve)
    except AttributeError:  # pragma: no cover - accountants with __slots__
        pass
    return curve


def _out(values: np.ndarray, scalar: bool) -> Any:
    return float(values) if scalar else values


# ------------------------------------------------------------------------------------------- GDP
def gdp_tpr_at_fpr(mu: float, fprs: Any) -> Any:
    """Phi(Phi^-1(FPR) + mu): the largest true-positive rate of any test at each false-positive rate under
    mu-GDP (1 - G_mu(FPR), Dong, Roth & Su 2022, Def. 2.6), rounded up. Vectorised over ``fprs``.

    Example:
        >>> round(gdp_tpr_at_fpr(1.0, 0.05), 4)
        0.2595
    """
    scalar = np.ndim(fprs) == 0
    alphas = _array(fprs, "fprs", low=0.0, high=1.0)
    tpr = np.maximum(1.0 - gdp_tradeoff(mu, alphas) + 2 * _U, alphas)
    return _out(np.clip(tpr, 0.0, 1.0), scalar)


def gdp_advantage(mu: float) -> float:
    """2 Phi(mu / 2) - 1 = delta(0) of mu-GDP: the largest TPR - FPR of any test (rounded up)."""
    return float(gdp_delta(mu, 0.0))


# -------------------------------------------------------------------------------- any accountant
def tpr_at_fpr(accountant: Any, fprs: Any) -> Any:
    """Upper bound on the true-positive rate of any membership attack at each false-positive rate: 1 - f(FPR)
    with f the trade-off lower bound of the accountant's composition (exact G_mu for Gaussian
    compositions; a PLD accountant's pessimistic grid PLDs read exactly, :func:`tpr_interval`'s upper end;
    otherwise the profile on an epsilon grid); never below FPR; rounded up. A scalar gives a float, an array
    an array of its shape."""
    scalar = np.ndim(fprs) == 0
    alphas = _array(fprs, "fprs", low=0.0, high=1.0)
    if not _composed(accountant):
        return _out(alphas.copy(), scalar)
    mu = _mu(accountant)
    if mu is not None:
        return gdp_tpr_at_fpr(mu, fprs)
    exact = _pld_upper(accountant, np.ravel(alphas))
    if exact is not None:
        return _out(exact.reshape(alphas.shape), scalar)
    positive = alphas[alphas > 0]
    curve = risk_tradeoff(accountant, float(positive.min()) if positive.size else 0.0)
    tpr = np.maximum(1.0 - curve(alphas) + 2 * _U, alphas)
    return _out(np.clip(tpr, 0.0, 1.0), scalar)


class _GridProfile:
    """One adjacency direction's delta(eps) at any eps >= 0 from a grid PLD: sum over losses l_i > eps of
    p_i (1 - e^{eps - l_i}) plus the mass at +inf, from running tail sums, moved outward by their float error
    and the PLD's error bound (up for a pessimistic PLD, down for an optimistic one)."""

    def __init__(self, pld: Any, pessimistic: bool) -> None:
        losses, pmf = pld.losses, np.asarray(pld.pmf, dtype=float)
        positive = losses > 0.0
        self.losses, p_pos = losses[positive], pmf[positive]
        self.tail_p = np.concatenate([np.cumsum(p_pos[::-1])[::-1], [0.0]])  # sum over i >= j
        self.tail_q = np.concatenate([np.cumsum((p_pos * np.exp(-self.losses))[::-1])[::-1], [0.0]])
        self.inf_mass, self.error, self.pessimistic = pld.inf_mass, abs(pld.error), pessimistic
        self.cells = p_pos.size

    def __call__(self, eps: np.ndarray) -> np.ndarray:
        first = np.searchsorted(self.losses, eps, side="right")  # the first loss > eps
        above_p, above_q = self.tail_p[first], self.tail_q[first]
        raw = above_p - np.exp(eps) * above_q + self.inf_mass
        slack = 4.0 * (self.cells + 8) * _U * (above_p + self.inf_mass) + self.error
        return np.clip(raw + slack if self.pessimistic else raw - slack, 0.0, 1.0)

    def top(self) -> float:
        """The mass at +inf (delta as eps grows), moved outward by the error bound."""
        sign = 1.0 if self.pessimistic else -1.0
        return min(1.0, max(0.0, self.inf_mass + sign * self.error))


def _lines_min(alphas: np.ndarray, eps: np.ndarray, forward: np.ndarray, backward: np.ndarray,
               top: float) -> np.ndarray:
    """min over eps of e^eps alpha + forward(eps) and 1 - e^-eps (1 - alpha - backward(eps)) (the second: the
    profile at -eps), and at alpha = 0 the mass at +inf ``top``; at most 1."""
    up, down = np.exp(eps), np.exp(-eps)
    out = np.empty(alphas.size)
    for i, alpha in enumerate(alphas):
        first = float(np.min(up * alpha + forward))
        second = float(np.min(1.0 - down * (1.0 - alpha - backward)))
        out[i] = min(first, second, 1.0, top if alpha == 0.0 else 1.0)
    return out


def _kinks(*profiles: _GridProfile) -> np.ndarray:
    return np.unique(np.concatenate([[0.0], *[p.losses for p in profiles]]))


def _pld_tpr(plds: tuple[Any, Any], alphas: np.ndarray, pessimistic: bool) -> np.ndarray:
    """The symmetrised best TPR at each FPR (both orderings of the pair and their mixtures: Dong, Roth & Su
    2022, Def. F.1) of the pair whose (remove, add) grid PLDs these are.

    Pessimistic (an upper bound, concave): min over eps of min(e^eps alpha + D(eps), 1 - e^-eps (1 - alpha -
    D(eps))) with D = max(delta_remove, delta_add), at every grid loss of either (Prop. 2.12 of Dong, Roth & Su,
    read at every kink): each ordering's exact curve is below it, so their concave hull is too. Optimistic (a
    lower bound): :func:`_hull_lower`."""
    remove, add = plds
    profile_r = _GridProfile(remove, pessimistic)
    profile_a = profile_r if add is remove else _GridProfile(add, pessimistic)
    if not pessimistic:
        return _hull_lower(profile_r, profile_a, alphas)
    eps = _kinks(profile_r, profile_a)
    both = np.maximum(profile_r(eps), profile_a(eps))
    return _lines_min(alphas, eps, both, both, max(profile_r.top(), profile_a.top()))


def _forward_part(profile: _GridProfile) -> tuple[np.ndarray, np.ndarray, float]:
    """The Neyman-Pearson points of the lines e^eps alpha + delta(eps), eps >= 0: (Q above a loss, P above it
    plus the mass at +inf), ascending in FPR, and delta(0) (the slope-1 line beyond the last point)."""
    x = profile.tail_q[::-1]
    y = profile.tail_p[::-1] + profile.inf_mass
    return x, y, float(profile.tail_p[0] - profile.tail_q[0] + profile.inf_mass)


def _ordering_lower(forward: _GridProfile, backward: _GridProfile, alphas: np.ndarray) -> np.ndarray:
    """The exact Neyman-Pearson curve of the ordered pair whose eps >= 0 profile is ``forward`` and whose
    reverse's is ``backward`` (e^eps alpha + delta_f(eps) at eps >= 0, and through the reverse at eps < 0),
    evaluated by interpolation between its vertices (the curve is linear between them)."""
    x1, y1, d1 = _forward_part(forward)
    part1 = np.where(alphas <= x1[-1], np.interp(alphas, x1, y1), alphas + d1)
    xb, yb, d2 = _forward_part(backward)  # reverse pair's points (Q', P') become (1 - P', 1 - Q') here
    x2, y2 = (1.0 - yb)[::-1], (1.0 - xb)[::-1]
    part2 = np.where(alphas < x2[0], alphas + d2, np.where(alphas > x2[-1], 1.0, np.interp(alphas, x2, y2)))
    return np.minimum(part1, part2)


def _hull_lower(profile_r: _GridProfile, profile_a: _GridProfile, alphas: np.ndarray) -> np.ndarray:
    """Lower bound of the symmetrised curve from optimistic profiles: each ordering's exact curve (below the
    true one), their maximum at the queried FPRs and at up to :data:`_HULL_POINTS` of their vertices, and the
    upper concave hull of those points (mixing two tests reaches every point between them), read at the
    queried FPRs; moved down by the float error of the sums."""
    vertices = np.concatenate([_forward_part(p)[0] for p in (profile_r, profile_a)] +
                              [1.0 - _forward_part(p)[1] for p in (profile_r, profile_a)])
    vertices = np.unique(np.clip(vertices, 0.0, 1.0))
    if vertices.size > _HULL_POINTS:
        vertices = vertices[np.linspace(0, vertices.size - 1, _HULL_POINTS).astype(int)]
    xs = np.unique(np.concatenate([vertices, alphas, [0.0, 1.0]]))

    def best(points: np.ndarray) -> np.ndarray:
        return np.maximum(_ordering_lower(profile_r, profile_a, points), _ordering_lower(profile_a, profile_r, points))

    ys = np.minimum(best(xs), 1.0)
    hull_x: list[float] = []
    hull_y: list[float] = []
    for x, y in zip(xs.tolist(), ys.tolist()):
        while len(hull_x) >= 2 and (hull_y[-1] - hull_y[-2]) * (x - hull_x[-2]) <= (y - hull_y[-2]) * (hull_x[-1] - hull_x[-2]):
            hull_x.pop()
            hull_y.pop()
        hull_x.append(x)
        hull_y.append(y)
    value = np.maximum(np.interp(alphas, hull_x, hull_y), best(alphas))
    slack = 8.0 * (profile_r.cells + profile_a.cells + 16) * _U + profile_r.error + profile_a.error
    return np.clip(value - slack, 0.0, 1.0)


@dataclass(frozen=True)
class TprInterval:
    """Certified bracket of the best membership attack's TPR at each FPR (``lower[i] <= TPR <= upper[i]`` at
    ``fprs[i]``, for the accountant's worst-case pairs, both orderings): ``method`` says how it was read."""

    fprs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    method: str

    @property
    def width(self) -> np.ndarray:
        return self.upper - self.lower

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "tpr_at_fpr": [
            {"fpr": float(f), "tpr_lower": float(lo), "tpr_upper": float(hi)}
            for f, lo, hi in zip(np.ravel(self.fprs), np.ravel(self.lower), np.ravel(self.upper))]}


def _pld_pair(accountant: Any, pessimistic: bool, refinement: int = 0) -> tuple[Any, Any] | None:
    """A PLD accountant's (remove, add) grid PLDs of its composition (pessimistic, or optimistic on a grid
    2^refinement times finer than planned), or None when it uses no grid (exact forms) or is not one."""
    plds = getattr(accountant, "_plds", None)
    if not callable(plds):
        return None
    exact = getattr(accountant, "_bounded_range", None)
    if callable(exact) and exact() is not None:
        return None
    return plds(pessimistic) if refinement == 0 else plds(pessimistic, refinement)


def _pld_upper(accountant: Any, alphas: np.ndarray) -> np.ndarray | None:
    """Upper TPR from a PLD accountant's pessimistic grid PLDs (exact Neyman-Pearson read-out), rounded up;
    None when it has none."""
    pair = _pld_pair(accountant, True)
    if pair is None:
        return None
    return np.clip(np.maximum(_pld_tpr(pair, alphas, True) * (1 + 8 * _U) + 4 * _U, alphas), 0.0, 1.0)


def _side_tpr(accountant: Any, alphas: np.ndarray, pessimistic: bool, refinement: int) -> tuple[np.ndarray, int]:
    """(one end of the interval, the cells of its grid PLDs) from a PLD accountant's grid PLDs 2^-refinement of
    the planned step, rounded outward, never past the FPR line."""
    pair = _pld_pair(accountant, pessimistic, refinement)
    cells = max(p.pmf.size for p in pair)
    value = _pld_tpr(pair, alphas, pessimistic)
    if pessimistic:
        return np.clip(np.maximum(value * (1 + 8 * _U) + 4 * _U, alphas), 0.0, 1.0), cells
    return np.maximum(value * (1 - 8 * _U) - 4 * _U, alphas), cells


def tpr_interval(accountant: Any, fprs: Any, max_width: float | None = None) -> TprInterval:
    """Certified interval of the best membership attack's TPR at each FPR in ``fprs`` (module docstring). The
    upper end is at most :func:`tpr_at_fpr`; the lower end is at least the FPR. A PLD accountant's optimistic grid
    is halved while the
    interval is wider than ``max_width`` (default :data:`TPR_INTERVAL_WIDTH`) at some FPR >= 1e-4 asked, and so
    is its pessimistic grid (the coarser of the two first; each at most 4 times, within 2^22 cells): every grid's
    read-out is a bound, the tightest are kept. Arrays of the shape of ``fprs``."""
    alphas = _array(fprs, "fprs", low=0.0, high=1.0)
    goal = TPR_INTERVAL_WIDTH if max_width is None else check_probability(max_width, "max_width", low_open=True)
    flat = np.ravel(alphas)
    shape = alphas.shape
    upper = np.ravel(np.asarray(tpr_at_fpr(accountant, alphas), dtype=float))
    if not _composed(accountant):
        return TprInterval(alphas, alphas.copy(), alphas.copy(), "nothing composed")
    mu = _mu(accountant)
    if mu is not None:
        from scipy.special import ndtr, ndtri

        with np.errstate(divide="ignore"):
            exact = ndtr(ndtri(flat) + mu)
        lower = np.where(flat >= 1.0, 1.0, np.maximum(exact * (1 - 8 * _U) - 4 * _U, flat))
        return TprInterval(alphas, np.clip(lower, 0.0, 1.0).reshape(shape), upper.reshape(shape),
                           "Gaussian DP, closed form")
    if _pld_pair(accountant, True) is None:
        return TprInterval(alphas, alphas.copy(), upper.reshape(shape),
                           "upper bound only (no lower curve): the lower end is the FPR")
    watched = flat >= 1e-4
    cells = {True: max(p.pmf.size for p in _pld_pair(accountant, True)), False: 0}
    try:
        lower, cells[False] = _side_tpr(accountant, flat, False, 0)
    except UnsupportedEventError:  # the planned optimistic grid is out of reach: the trivial lower end
        lower, cells[False] = flat.copy(), _MAX_LOWER_CELLS
    steps = {True: accountant.step(True), False: accountant.step(False)}
    levels = {True: 0, False: 0}
    open_sides = {side for side in (True, False) if cells[side] * 2 <= _MAX_LOWER_CELLS}
    while open_sides and watched.any() and float(np.max((upper - lower)[watched])) > goal:
        side = max(open_sides, key=lambda s: (steps[s] / 2 ** levels[s], s))  # the coarser grid first
        try:
            found, cells[side] = _side_tpr(accountant, flat, side, levels[side] + 1)
        except UnsupportedEventError:  # that grid is out of reach: keep what was found
            open_sides.discard(side)
            continue
        levels[side] += 1
        if side:
            upper = np.minimum(upper, found)
        else:
            lower = np.maximum(lower, found)
        if levels[side] >= _MAX_REFINEMENTS or cells[side] * 2 > _MAX_LOWER_CELLS:
            open_sides.discard(side)
    grids = f"grids 2^-{levels[False]} (lower) and 2^-{levels[True]} (upper) of planned"
    lower = np.minimum(np.clip(lower, 0.0, 1.0), upper)
    return TprInterval(alphas, lower.reshape(shape), upper.reshape(shape),
                       f"PLD bracket: optimistic and pessimistic grid PLDs ({grids}), exact Neyman-Pearson read-out")


def advantage(accountant: Any) -> float:
    """Upper bound on the advantage TPR - FPR of any membership attack: delta(0) of the composition (its
    total-variation distance; 2 Phi(mu/2) - 1 for mu-GDP), rounded up."""
    if not _composed(accountant):
        return 0.0
    mu = _mu(accountant)
    if mu is not None:
        return gdp_advantage(mu)
    return min(1.0, float(accountant.delta(0.0)))


def bayes_accuracy(accountant: Any, prior: Any) -> Any:
    """Upper bound on the accuracy of any attack guessing a binary secret that is 1 with probability
    ``prior``: max(pi, 1 - pi) + min(pi, 1 - pi) delta(|ln(pi / (1 - pi))|) (module docstring), rounded up.
    One minus it is a lower bound on riskcal's Bayes risk. Vectorised over ``prior`` in [0, 1]."""
    scalar = np.ndim(prior) == 0
    pi = _array(prior, "prior", low=0.0, high=1.0)
    likelier, other = np.maximum(pi, 1.0 - pi), np.minimum(pi, 1.0 - pi)
    if not _composed(accountant):
        return _out(likelier, scalar)
    with np.errstate(divide="ignore"):
        eps = np.abs(np.log(likelier) - np.log(other))
    deltas = accountant_profile(accountant, eps, _mu(accountant))
    value = (likelier + other * deltas) * (1.0 + 8 * _U)
    return _out(np.clip(value, 0.0, 1.0), scalar)


def epsilon_for_tpr(tpr: float, fpr: float, delta: float) -> float:
    """The epsilon whose (epsilon, delta)-DP trade-off curve allows exactly true-positive rate ``tpr`` at
    false-positive rate ``fpr``: the attack risk an (epsilon, delta) target stands for.

    (epsilon, delta)-DP allows TPR = min(1, delta + e^eps FPR, 1 - e^-eps (1 - delta - FPR)) at FPR
    (Kairouz, Oh & Viswanath 2015; Dong-Roth-Su 2022, Prop. 2.5), increasing in epsilon, so the answer is
    max(ln((tpr - delta) / fpr), ln((1 - delta - fpr) / (1 - tpr))). InvalidArgument naming ``tpr`` when
    even epsilon = 0 allows more than ``tpr`` (tpr < fpr + delta).
    """
    fpr = check_probability(fpr, "fpr", low_open=True, high_open=True)
    tpr = check_probability(tpr, "tpr", high_open=True)
    delta = check_delta(delta, "delta")
    if tpr < fpr + delta:
        raise InvalidArgument("tpr", f"tpr={tpr!r} must be >= fpr + delta = {fpr + delta!r}: every "
                                     f"(epsilon, {delta!r})-DP claim allows at least that")
    first = math.log((tpr - delta) / fpr)
    second = math.log((1.0 - delta - fpr) / (1.0 - tpr)) if 1.0 - delta - fpr > 0 else 0.0
    return max(first, second, 0.0)


def tpr_lower_from_tests(alpha_upper: Any, beta_upper: Any, fprs: Any = STANDARD_FPRS) -> np.ndarray:
    """Lower bound on the best attack's true-positive rate at each FPR from certified tests: a test with
    type-I error <= alpha_u and type-II error <= beta_u is an attack with FPR <= alpha_u and TPR >= 1 - beta_u;
    mixing tests (and the trivial ones, (0, 0) and (1, 1)) reaches every point under their upper concave
    hull, and the best TPR is non-decreasing in FPR, so the hull at each FPR is a lower bound (it holds
    whenever every test's bounds do), rounded down."""
    a = np.clip(np.ravel(_array(alpha_upper, "alpha_upper", low=0.0, high=1.0)), 0.0, 1.0)
    t = np.clip(1.0 - np.ravel(_array(beta_upper, "beta_upper", low=0.0, high=1.0)), 0.0, 1.0)
    query = _array(fprs, "fprs", low=0.0, high=1.0)
    xs = np.concatenate([[0.0, 1.0], a])
    ys = np.concatenate([[0.0, 1.0], t])
    order = np.lexsort((-ys, xs))
    hull: list[tuple[float, float]] = []
    for x, y in zip(xs[order], ys[order]):
        if hull and hull[-1][0] == x:
            continue  # same FPR: the first (largest TPR) is kept
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            if (y2 - y1) * (x - x1) <= (y - y1) * (x2 - x1):  # the middle point is under the chord: drop it
                hull.pop()
            else:
                break
        hull.append((float(x), float(y)))
    hx, hy = np.array([p[0] for p in hull]), np.array([p[1] for p in hull])
    value = np.interp(query, hx, np.maximum.accumulate(hy)) - 4 * _U
    return np.clip(value, 0.0, 1.0)


@dataclass(frozen=True)
class AttackRisk:
    """What a composition's privacy curve allows any membership attack (every number an upper bound):
    ``tpr_upper[i]`` at ``fprs[i]``, the ``advantage_upper`` (TPR - FPR), the accountant that said so."""

    fprs: tuple[float, ...]
    tpr_upper: tuple[float, ...]
    advantage_upper: float
    accountant: str

    def to_dict(self) -> dict[str, Any]:
        return {"bound": "upper (any attack)", "accountant": self.accountant,
                "tpr_at_fpr": [{"fpr": f, "tpr_upper": t} for f, t in zip(self.fprs, self.tpr_upper)],
                "advantage_upper": self.advantage_upper}


def guarantee_attack_risk(epsilon: float, delta: float, fprs: Any = STANDARD_FPRS) -> AttackRisk:
    """:class:`AttackRisk` of an (epsilon, delta)-DP claim: TPR <= 1 - f_{eps,delta}(FPR) = min(1, delta +
    e^eps FPR, 1 - e^-eps (1 - delta - FPR)) (Dong-Roth-Su 2022, Prop. 2.5) and advantage <= delta(0) of its
    dominating pair, delta + (1 - delta) tanh(eps / 2) (Kairouz, Oh & Viswanath 2015), rounded up."""
    alphas = np.atleast_1d(_array(fprs, "fprs", low=0.0, high=1.0)).ravel()
    tpr = np.clip(np.maximum(1.0 - guarantee_tradeoff(epsilon, delta, alphas) + 2 * _U, alphas), 0.0, 1.0)
    edge = float(guarantee_profile(epsilon, delta, np.array([0.0]))[0])
    return AttackRisk(tuple(float(a) for a in alphas), tuple(float(t) for t in tpr), min(1.0, edge), "(epsilon, delta) claim")


def attack_risk(accountant: Any, fprs: Any = STANDARD_FPRS, name: str | None = None) -> AttackRisk:
    """:class:`AttackRisk` of the accountant's composition at ``fprs`` (default :data:`STANDARD_FPRS`)."""
    alphas = np.atleast_1d(_array(fprs, "fprs", low=0.0, high=1.0)).ravel()
    tprs = np.atleast_1d(accountant.tpr_at_fpr(alphas))
    label = name if name is not None else type(accountant).__name__
    return AttackRisk(tuple(float(a) for a in alphas), tuple(float(t) for t in tprs), float(accountant.advantage()), label)


class AttackRiskReadouts:
    """The attack-risk read-outs every accountant offers (mixed into PLD, RDP, zCDP and Opacus-style
    accountants); ``_risk_source`` is the accountant whose curve is read (itself unless it delegates)."""

    def _risk_source(self) -> Any:
        return self

    def tpr_at_fpr(self, fprs: Any) -> Any:
        """Upper bound on the true-positive rate of any membership attack at each false-positive rate in
        ``fprs`` (1 - f(FPR), f the trade-off function the claim guarantees; Kulynych et al. 2024),
        rounded up; float for a scalar, else an ndarray of its shape."""
        return tpr_at_fpr(self._risk_source(), fprs)

    def tpr_interval(self, fprs: Any, max_width: float | None = None) -> TprInterval:
        """Certified (lower, upper) bracket of the best membership attack's TPR at each FPR in ``fprs``
        (:func:`tpr_interval`): ``.lower``, ``.upper``, ``.width``, ``.method``."""
        return tpr_interval(self._risk_source(), fprs, max_width)

    def advantage(self) -> float:
        """Upper bound on the advantage (TPR - FPR) of any membership attack: delta(0), rounded up."""
        return advantage(self._risk_source())

    def bayes_accuracy(self, prior: Any) -> Any:
        """Upper bound on the accuracy of any attack guessing a binary secret of prior ``prior``."""
        return bayes_accuracy(self._risk_source(), prior)
