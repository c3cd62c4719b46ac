"""The random-allocation family: ``RandomAllocation(z, t, k)``, each record used in exactly k of t Gaussian steps.

Source: Feldman & Shenfeld (2025), "Privacy amplification by random allocation" (arXiv:2502.08202). Under
add/remove-one, with s = 1 / z and the t outputs in units of the noise, one record in one uniformly random
step of t is the pair (remove direction) P = (1/t) sum_i N(s e_i, I_t) against Q = N(0, I_t), with loss
L = ln(S / t), S = sum_i Y_i, Y_i = exp(s x_i - s^2 / 2): under Q the Y_i are i.i.d. LN(-s^2/2, s^2); under P
(by symmetry) one of them is LN(+s^2/2, s^2). The add direction is the reversed pair, loss -ln(S / t) under
the Q-law of S.

k = 1, both ends (analysis ours; ``dpaudit.accountant.pld_core.lattice_sums``): the law of S' = the sum of the
Y_i rounded to a lattice is computed, and S' - b + c >= S >= S' - b - c pointwise outside a failure event of
probability at most 1e-15 plus the summands' mass above the lattice (Hoeffding's inequality on the rounding
errors, b their summed mean). The upper end takes the upper bracket for the remove direction and the lower one
for the add direction (whose loss decreases in S), the failure event at loss +inf: the loss is pointwise at
least the true one under the first law, so its hockey-stick curve E_P[(1 - e^{eps - L})_+] + P(L = inf) is
larger at every eps (the Q-mass it lacks sits on outcomes P never produces), a dominating pair that composes
soundly with any other event. The lower end takes the other bracket (a pointwise smaller loss, which also
stays a lower bound after composition) and subtracts the failure probability from delta (``GridPLD.error``).
The remove direction's two ends read one law whose tails were dropped: the lower end without them (less
P-mass), the upper end with their mass at +inf.

Little noise, k = 1 (analysis ours). The lattice step is set by the heavy-tailed summand's range, so two parts
are bracketed otherwise. (a) The add direction's upper end brackets S_cap = sum_i min(Y_i, 2t) from below instead
of S (``rounded_sum_law(cap=...)``, where the base summand's lattice reaches beyond 64 t): S >= S_cap, so the
add loss is pointwise at least the true one, and on the outcomes it changes both sums are >= 2t, where the add
loss is < -ln 2, so delta(eps) of the event itself is unchanged for eps >= 0 (compositions and the
replace-one chain, which also read the losses below -ln 2, get a sound but looser curve); the capped
summands have no long tail and take a fine lattice. (b) In the remove direction, the outcomes where the
shifted summand Y lies above the top y_0 of its lattice are left out of the lattice law and counted apart:
there L = ln((Y + R) / t) with R the sum of the t - 1 base summands, independent of Y, and R <= r except with
probability at most 1e-11 / P(Y > y_0) (a union bound on the summands above a cap B and Chebyshev's inequality
on the sum of the capped ones), so on Y in (y_j, y_j+1] of a geometric grid L <= ln((y_j+1 + r) / t), and the
mass 1e-11 where R > r sits at +inf. (c) The add direction's upper end from the largest summand (analysis ours):
S >= max_i Y_i = exp(s M - s^2/2), M = max_i x_i, so the add loss is pointwise at most ln t + s^2/2 - s M, whose
law under the first distribution is that of M, P(M <= c) = Phi(c)^t: sliced in c (each slice at its lower edge,
the lowest, of mass e^-40, at +inf), its P-masses from log Phi, and their float error (the log-CDFs' error over
their difference per slice, with scipy's log_ndtr within the bound of ``_log_ndtr_error``) at +inf. It is tight
where the largest summand carries the sum (z = 0.1, t = 10^4: 28.9 at delta 1e-6, the largest-output lower
end 26.95, the Gaussian 96.7) and loose otherwise; each end takes it where it is tighter. Where the add lattice
would give up (its bracket reaching 0 on about half of the outcomes, predicted from the largest summand:
``_add_lattice_hopeless``), the lattice is not built.

k > 1: the upper end is the paper's reduction of k-of-t allocation to the k-fold composition of
1-of-floor(t/k) allocation (Feldman & Shenfeld 2025; the bound their ``random-allocation`` package evaluates,
``num_steps_per_round = floor(t / k)``). It is sound: a uniform k-subset is one element drawn from each block of a
uniformly random partition of the t steps into k blocks of at least floor(t/k) steps (the result is invariant under
permutations of the steps, so uniform), and 1-of-(m + 1) allocation is a mixture over which m steps may hold the
record of 1-of-m allocation plus a step of pure noise; the pair without the record is common to all components, so by
the joint convexity of the hockey-stick divergence the mixture is dominated by the k-fold product of 1-of-floor(t/k)
pairs, in both directions. The same argument holds for a uniformly random partition into blocks of any fixed sizes
m_1 + ... + m_k = t (one element of each block is again a uniform k-subset), so where a block has at most
_EXACT_BLOCKS_MOST_STEPS steps the t mod k blocks of floor(t/k) + 1 steps are kept at their size (``_blocks``; the
product of 1-of-m_b pairs): RandomAllocation(0.5, 10, 3) 18.296 (floor sizes 18.579), (0.8, 10, 3) 8.796 (9.046).
At little noise it gives up about ln(k^k / k!) (the record's outputs fall in distinct
blocks in a fraction k! / k^k of the partitions). There (s >= _LOG_UPPER_FROM, and s >= _LOG_UPPER_SMALL_FROM where
a block has at most _LOG_UPPER_SMALL_MOST_STEPS steps) the remove direction also takes the
generating-function bound e_k(Y) <= prod_i (1 + u Y_i) / u^k (``_generating_upper_pld``, ours), each end the
tighter: RandomAllocation(0.2, 10, 3) 73.09 (the reduction 74.63), RandomAllocation(0.3, 1000, 10) 55.61 (72.9),
RandomAllocation(0.5, 10, 3) 17.57 (18.30). It gives up -ln P_u(N = k), N the Poisson-binomial count with
probabilities u Y_i / (1 + u Y_i): near 0 where the record's outputs carry e_k, about ln(1 / P(Poisson(k) = k)) (1.5
nats for k = 3) where N spreads over many steps, which is why it is not built with more noise or longer blocks (its
scale u t is ranked on _LOG_SCALES and refined between the neighbours by golden section, ``_refined_scale``; the
list's and the refined scale are both built and the tighter taken). The lower end (ours) is the pair of laws of the statistic T = the sum
of the Y_i, each cut at one top and rounded to a lattice (k shifted summands under P): one function of the
outputs whichever steps hold the record, so by
the data-processing inequality its PLD is dominated by the true one, also after composition. The two laws
are exact up to FFT round-off and cut tails: the P-side errors count in ``GridPLD.error`` directly, the
Q-side ones weighted by e^L of the largest loss kept (a Q-mass error dq at loss L moves delta by at most
e^eps dq <= e^L dq, also after composition); the cells of the largest losses, 1e-12 of P-mass, are dropped
(less P-mass: still lower).

A second lower end, both k (after ShuffleAccountant's lower bound in Chua et al. 2024, "How private are DP-SGD
implementations?", which the ``random-allocation`` package evaluates for one epoch and k = 1): the pair of laws
of M = max_i x_i, the largest output in units of the noise, P(M <= c) = Phi(c - s)^k Phi(c)^(t - k) with the
record and Phi(c)^t without, cut into slices of c (the two end slices unbounded, so no mass is lost). M and its
slice are functions of the outputs whichever steps hold the record, so by the data-processing inequality the
slices' PLD is dominated by the true one, in every epoch and after any composition (the package's bound takes
threshold events {M > C} of one epoch; the slices' PLD contains them and composes). Slice masses come from
log Phi (``scipy.special.log_ndtr``, within the bound of ``_log_ndtr_error``), with a bound on each mass's relative
float error (``_slice_log_masses``): the losses are lowered and the P-masses shrunk by it (smaller P-masses and
losses only lower delta, also after composition). At little noise the largest summand carries the sum and the
max pair is the tighter one; otherwise the sum's.

A third lower pair for k > 1 (ours): the laws of N = #{i : x_i > c}, Bin(t, q0) without the record and
Bin(k, q1) * Bin(t - k, q0) with it (q0 = P(x > c), q1 = Phi(s - c)), again a function of the outputs whichever
steps hold the record. It sees all k record outputs where the largest output sees one: z = 0.3, t = 1000, k = 10
gives 42.7 against 17.7 at delta 1e-6, and k = 1083 of 2236 at z = 0.72 gives 512 where the sum statistic gives
19.6. Thresholds come from a fixed list (_COUNT_LEVELS). Each binomial is cut to a window of _COUNT_SD standard
deviations: dropping P-mass of the first law only lowers delta, and where P is the second law each of its values
is raised by the mass cut, an upper bound on what the cut removed. scipy's binomial pmf is taken within
_BINOMIAL_ERROR relative (measured, and tested against a 40-digit evaluation): the losses are lowered and the
first law's masses shrunk by it.

A fourth lower pair for k > 1, the remove direction (ours; ``_log_lower_pld``): the laws of the statistic
T = sum_i min(round(ln(1 + u Y_i) / h), top), the log of prod_i (1 + u Y_i), whose coefficient of u^k is the
likelihood ratio's numerator e_k(Y) (u = c / t, c from a geometric list ranked on a coarser lattice, then refined
between its neighbours; both built, the more revealing taken: ``_log_lower_best``). It follows the
sizes of all k record outputs, and is close to sufficient: with k = 1 it comes within 0.1% of the tight lattice
interval (z = 0.5, t = 2: 1.68366 against the quadrature's 1.684088), and RandomAllocation(0.8, 100, 3) gets 3.585
where the other pairs gave 3.18 (a Monte Carlo estimate of the true epsilon: 3.58 +- 0.02), RandomAllocation(0.2, 10,
3) 72.95 (was 56.9). Its summands' laws are normal-CDF differences (each within _NDTR_ULPS ulps of its values); the law
with the record is their convolution. Without the record its losses reach tens of nats past what float64 resolves
of a convolution, so that law is computed tilted, each summand's cell j weighted by e^(a j) (the tilt placed where
the first law's upper 1e-6 lies; a convolution of tilted laws is the tilted convolution), and recovered at n as
M^t e^(-a n) times the tilted law, raised by that law's error bound and cut mass and by the float error of log M^t:
an upper bound on each cell of the second law, so the losses are lowered (lower). Its scale and lattice are ranked
on its atoms (a finer lattice resolves more, but its error bounds, counted on every cell of the second law, grow
with its length): with much noise and many steps it is the lower end (z = 2, t = 10^6, k = 10: 0.016365 against
the count's 0.01215, upper end 0.017228).

Each direction takes whichever of its lower PLDs has the larger epsilon at most of delta in {1e-5, 1e-6, 1e-7}:
each is a lower PLD, so the choice only decides tightness. The sum statistic's laws are long, and slow to build,
for many shifted summands, many steps and at little noise, so for k > 1 they are built only at z > 0.5
(_MAX_PAIR_ONLY_FROM), k <= _STATISTIC_MOST_SELECTED and t <= _STATISTIC_MOST_STEPS (any t at z >= 0.8, where the sum
statistic is the lower end with much noise and many steps: z = 2, t = 10^6, k = 10 0.016998 against the log statistic's
0.016325, upper end 0.017234). Where they are skipped the max
or count pair won at every point checked but two (t = 367367, k = 27, z = 0.56: 1.44 against 1.48; t = 99999,
k = 50, z = 0.8: 0.88 against 1.33).

Every record in every step (k = t, t = 1 included): exactly the t-fold composition of Gaussian(z), the Gaussian
leaf of mu = sqrt(t) / z (normal form; the Gaussian family interprets it).

The bound without amplification. A fixed allocation of the record to k steps is the k-fold Gaussian, mu =
sqrt(k) / z, and random allocation is a mixture of fixed allocations with the same law without the record;
hockey-stick divergence is jointly convex, so in both directions the Gaussian pair of mu dominates the
allocation's. Each direction's upper end is the lattice's unless this pair has the smaller epsilon at each of
delta in {1e-5, 1e-6, 1e-7} (both are dominating pairs, so the choice only decides tightness), and it is this pair
where the lattice gives up (too little noise: the lattice bracket gives an infinite loss to at least half of
the upper end's outcomes), instead of a refusal. In the add direction the largest summand's upper end (c) is a
third candidate: of the candidates, the one with the smallest epsilon at most of those deltas is taken.

Replace-one (x replaced by x', both of norm <= C): the upper end chains the two directions through the
dataset without the record (Dong, Roth & Su 2022, "Gaussian differential privacy", the group-privacy
argument of Thm 2.14): T(D, D') >= g(1 - f(alpha)) with f the remove and g the add trade-off curve, computed
exactly on the piecewise-linear curves of the two upper PLDs and turned back into a PLD (the same curve bounds
both directions). It is exact for t = 1 (the Gaussian with sensitivity 2C) and otherwise looser than the
replace-one pair; where the fixed allocation's Gaussian at sensitivity 2C (a dominating pair by joint convexity,
as above) is tighter, or the chained curve has no finite loss (little noise), the upper end is that Gaussian.
The lower end is the more revealing of two pairs: the add/remove pair itself (x' = 0 is a record of norm <= C,
and then D' is D without x, so the replace-one curve is at least as revealing as either add/remove direction),
and x' = -x, whose record is in the same k steps (the allocation follows the record's position, not its value):
the largest output's laws with the k record outputs at mean s and at -s (as for the add/remove pair above; the
Gaussian at sensitivity 2C exactly when t = k = 1), and up to _LOG_OPPOSITE_MOST_STEPS steps the log statistic's laws
with the record's outputs at s and at -s (``_log_lower_pld(other=-s)``; the second law tilted as a whole):
z = 2, t = 10 lower end 1.367 (was 0.729; upper 1.486), z = 3, t = 100, k = 10 3.097 (was 1.486; upper 3.186). No further sampler over the allocation.
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import numpy as np
from scipy.special import log_ndtr, ndtr, ndtri

from ...errors import UnsupportedEventError
from ...events import RandomAllocation
from ..curves import gdp_epsilon
from ..leaf import Leaf
from ..pld_core.grid import GridPLD, from_atoms
from ..registry import Family
from ..pld_core.lattice_sums import FAILURE, LatticeLaw, power_law, rounded_sum_law, sum_law, summand_top
from . import gaussian

__all__ = ["FAMILY"]

_FINEST = 1e-6  # finest lattice step of a summand
_OTHERS_MASS = 1e-11  # remove direction, shifted summand above its lattice: the mass where the others exceed r
_TAIL_Z = 9.0  # ... its geometric grid runs to this standard score (P(Z > 9) = 1.1e-19 above, at +inf)
_TAIL_CELLS = 1 << 21  # ... at most this many cells
_U = 2.0**-53
_USELESS_INF_MASS = 0.5  # an upper PLD with this much mass at +inf is refused (no useful epsilon)
_ADD_CAP = 2  # the add direction's upper end: summands capped at this many times t ...
_CAP_ABOVE = 64  # ... where the base summand's lattice reaches beyond this many times t (little noise)
_SUMMAND_CELLS = 1 << 20  # cells of the widest summand law at the chosen step
_SUM_CELLS = 1 << 21  # cells of the law of the sum at the chosen step
_SHIFTED_CELLS = 1 << 23  # most cells of a summand's lattice
_DROPPED_TAIL = 1e-12  # lower end for k > 1: P-mass of the largest losses left out
_MAX_SLICES = 1 << 17  # slices of the largest output between its two unbounded end slices
_MAX_END = -40.0  # log P-mass of each unbounded end slice of the largest output
_CHOICE_DELTAS = (1e-5, 1e-6, 1e-7)  # PLDs of one end are compared by their epsilon at these deltas
_MAX_PAIR_ONLY_FROM = 2.0  # k > 1, s >= this (z <= 0.5): no sum statistic (the max pair was the larger in the
# remove direction at every point checked, z 0.3-0.5, t 50-10^4, k 2-10; its laws took 2-10 s there)
_COUNT_LEVELS = tuple(10.0 ** -j for j in range(1, 11))  # k > 1: thresholds of the count statistic, P(x > c)
_COUNT_SD = 20.0  # ... each binomial kept within this many standard deviations of its mean
_COUNT_WORK = 50_000_000  # ... a threshold whose two binomials' windows multiply to more is skipped
_STATISTIC_MOST_SELECTED = 64  # the sum statistic's laws (long for many shifted summands) only for k up to this
_STATISTIC_MOST_STEPS = 50_000  # ... and t up to this (RandomAllocation(0.56, 367367, 27): 3.8 s for 1.48 against
# the largest output's 1.44), or any t at s <= this (z >= 0.8), where it beats the log statistic at t = 10^6, k = 10:
_STATISTIC_ANY_STEPS_UPTO = 1.25  # z = 2 0.016998 (log statistic 0.016325), z = 0.8 0.069024 (0.06766), 6-21 s
_EXACT_BLOCKS_MOST_STEPS = 100  # k > 1: the reduction's blocks take their exact sizes up to this many steps each
_BINOMIAL_ERROR = 1e-10  # relative error taken for scipy.stats.binom.pmf (measured: at most 2.5e-12 for t <= 2e6)
_LARGEST_CELLS = 1 << 20  # slices of the largest output, the add direction's upper end
_LARGEST_PROBE_STEP = 1e-2  # ... whose epsilon is first compared with the Gaussian's on this grid
_LOG_SCALES = tuple(10.0 ** (j / 4) for j in range(-12, 17))  # k > 1: the log statistic's u t (u: its weight of Y)
_LOG_OPPOSITE_MOST_STEPS = 10_000  # ... replace-one (the record replaced by its opposite) up to this many steps
_LOG_CELLS = 1 << 12  # ... cells of one summand's lattice (its top: the shifted output at s + _LOG_TOP)
_LOG_SUM_CELLS = 1 << 20  # ... at most about this many cells of the sum's law (a coarser step where it would be longer)
_LOG_UPPER_CELLS = 1 << 18  # ... the upper end's summand lattice (its bracket's width grows with the step: 2^14 cells gave
# 38.619 at z = 0.2, t = 10^6, k = 3, 2^18 38.553 in 1.7 s)
_LOG_UPPER_FROM = 2.5  # ... the upper end built for s at least this (z <= 0.4; with more noise the bound
# e_k <= prod (1 + u Y) / u^k gives up more than the reduction to 1-of-t/k: RandomAllocation(0.8, 100, 3) 4.93 vs 3.82)
_SCALE_SEARCH_STEPS = 5  # ... each chosen scale refined by this many golden-section steps between its neighbours
_LOG_UPPER_SMALL_FROM = 1.6  # ... and for s at least this (z <= 0.625) where a block of the reduction has at most
_LOG_UPPER_SMALL_MOST_STEPS = 100  # this many steps: RandomAllocation(0.5, 10, 3) 17.68 vs 18.30, (0.6, 10, 3) 13.50
# vs 13.80, (0.5, 30, 10) 36.62 vs 39.60; (0.8, 10, 3) 9.06 vs 8.80 and (0.5, 1000, 3) 7.71 vs 6.51 (1e-6, grid 2e-3)
_LOG_TOP = 9.0  # ... the standard score of the shifted output at the summand's top cell (the rest on it)
_LOG_SEARCH_COARSER = 4  # ... the scales are ranked on a lattice this much coarser
_LOG_TILT_DELTA = 1e-6  # ... the law without the record is tilted to the point with this P-mass above
_NDTR_ULPS = 8  # accuracy taken for scipy.special.ndtr(x): _NDTR_ULPS + 2 x^2 ulps of its value, and 1e-300 absolute
_LOG_NDTR_ULPS = 8  # accuracy of scipy.special.log_ndtr at c <= 0, ulps of its value (and more above: _log_ndtr_error)


def _lattice_step(s: float, t: int, k: int, cap: float | None = None) -> float:
    """Lattice step: the base summand within _SUMMAND_CELLS and the sum's spread (16 standard deviations plus
    two of the largest base summands) within _SUM_CELLS, both longer for heavy-tailed summands. (A shifted
    summand, heavier by e^{s^2}, gets at most _SHIFTED_CELLS points; the mass above counts as failure.)
    ``cap``: the summands are min(Y, cap) (second moment E[Y^2 1{Y <= cap}] + cap^2 P(Y > cap)), on the
    plain lattice (they have no long tail)."""
    base_top = summand_top(s, shifted=False)
    variance = math.expm1(s * s)
    # heavy-tailed summands (little noise) get longer lattices: their long tails need a finer step
    longer = 4 if s >= 1.8 else 2 if s >= 1.2 else 1
    if cap is not None and cap < base_top:
        base_top, longer = cap, 1
        z = (math.log(cap) + s * s / 2) / s  # the cap's standard score under LN(-s^2/2, s^2)
        variance = math.exp(s * s) * float(ndtr(z - 2 * s)) + cap * cap * float(ndtr(-z))
    spread = 16.0 * math.sqrt(t * variance) + 2.0 * base_top
    return max(_FINEST, base_top / (longer * _SUMMAND_CELLS), spread / (longer * _SUM_CELLS))


def _add_cap(s: float, t: int) -> float | None:
    """The add direction's upper end caps every summand at _ADD_CAP t where the base summand's lattice reaches
    beyond _CAP_ABOVE t (little noise); None otherwise (see the module docstring)."""
    return _ADD_CAP * t if summand_top(s, shifted=False) > _CAP_ABOVE * t else None


def _bracket_law(s: float, t: int, remove: bool, pessimistic: bool) -> LatticeLaw:
    """The lattice law behind one end of one direction. The remove direction's two ends share one law with its
    tails dropped (the upper end counts the dropped mass at +inf); the add direction's upper end brackets the
    capped sum from below with its large sums moved down, its lower end drops both tails (the large sums, of
    negative loss, more freely)."""
    if remove:
        return _sum_law(s, t, True, "drop", None)
    if pessimistic:
        return _sum_law(s, t, False, "down", _add_cap(s, t))
    return _sum_law(s, t, False, "drop_high", None)


# The laws do not depend on the loss grid, which the accountant varies while planning: one computation each.
@lru_cache(maxsize=16)
def _sum_law(s: float, t: int, remove: bool, side: str, cap: float | None) -> LatticeLaw:
    return rounded_sum_law(s, t - 1 if remove else t, 1 if remove else 0, _lattice_step(s, t, 1, cap), side,
                           max_cells=_SHIFTED_CELLS, cap=cap, leave_out_above=remove)


def _others_bound(s: float, t: int, failure: float) -> float:
    """r with P(R > r) <= ``failure`` for R the sum of t - 1 base summands (LN(-s^2/2, s^2), mean 1): with B
    such that (t - 1) P(Y > B) = failure / 2, P(R > r) <= P(some Y_i > B) + P(sum min(Y_i, B) > r), and the
    capped sum (mean <= t - 1, variance <= (t - 1) E[min(Y, B)^2]) exceeds r = t - 1 + sqrt(2 (t - 1)
    E[min(Y, B)^2] / failure) with probability at most failure / 2 (Chebyshev)."""
    z = -float(ndtri(failure / (2.0 * (t - 1))))  # the standard score of B
    cap = math.exp(-s * s / 2 + s * z)
    second = math.exp(s * s) * float(ndtr(z - 2 * s)) + cap * cap * failure / (2.0 * (t - 1))
    return (t - 1) + math.sqrt(2.0 * (t - 1) * second / failure)


def _shifted_tail_atoms(s: float, t: int, law: LatticeLaw, step: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(losses, P-masses, mass at +inf) of the remove direction's outcomes left out of ``law``: the shifted summand
    Y above the top y_0 of its lattice (see the module docstring). There L = ln((Y + R) / t) with R the sum of
    the t - 1 base summands, independent of Y, and R <= r except with probability at most _OTHERS_MASS /
    P(Y > y_0) (:func:`_others_bound`): on Y in (y_j, y_j+1] of a geometric grid, L <= ln((y_j+1 + r) / t).
    The grid runs to exp(mu + 9 s) (the mass above, and the mass where R > r, at +inf); cell masses are
    differences of the normal survival function, each within a few ulps of the tail mass: (cells + 1) 8 u
    P(Y > y_0) in all, also at +inf."""
    if law.left_out <= _OTHERS_MASS:
        return np.zeros(0), np.zeros(0), law.left_out
    mu = s * s / 2
    r = _others_bound(s, t, _OTHERS_MASS / law.left_out) if t > 1 else 0.0
    low, high = math.log(law.left_out_above), mu + _TAIL_Z * s
    if low >= high:
        return np.zeros(0), np.zeros(0), law.left_out
    cells = int(min(_TAIL_CELLS, math.ceil((high - low) / (step / 2))))
    log_y = np.linspace(low, high, cells + 1)
    tail = ndtr((mu - log_y) / s)  # P(Y > y_j)
    masses = np.maximum(tail[:-1] - tail[1:], 0.0)
    losses = np.log((np.exp(log_y[1:]) + r) / t)
    losses += 1e-12 * np.maximum(1.0, np.abs(losses))  # a hair high: float rounding of the loss
    inf_mass = float(tail[-1]) + _OTHERS_MASS + (cells + 1) * 8 * _U * law.left_out
    return losses, masses, inf_mass


@lru_cache(maxsize=8)
def _statistic_laws(s: float, t: int, k: int) -> tuple[LatticeLaw, LatticeLaw]:
    """The sum statistic's laws with the record and without, built side by side in two threads (numpy's FFTs
    release the GIL; the numbers do not depend on it)."""
    h = _lattice_step(s, t, k)
    with ThreadPoolExecutor(max_workers=2) as pool:
        laws = [pool.submit(rounded_sum_law, s, t - shifted, shifted, h, "drop", common_top=True) for shifted in (k, 0)]
        return laws[0].result(), laws[1].result()


# The accountant asks for the same PLD more than once while it plans (each a pass over millions of atoms): one
# computation each.
@lru_cache(maxsize=16)
def _bracket_pld(s: float, t: int, direction: str, step: float, pessimistic: bool) -> GridPLD:
    """The remove or add PLD of one record in one of t steps, on the declared side (see the docstring)."""
    remove = direction == "remove"
    up = remove == pessimistic
    law = _bracket_law(s, t, remove, pessimistic)
    values = law.values() - law.bias + (law.spread if up else -law.spread)
    failure = FAILURE + law.beyond  # outside this event the bracket holds
    keep = (law.pmf > 0) & (values > 0)
    if pessimistic:
        inf_mass = law.worst + law.dropped + failure  # mass cut away: at +inf
        if not remove:
            inf_mass += float(law.pmf[values <= 0].sum())  # S = 0: the add loss is +inf
    else:
        inf_mass = 0.0
    if pessimistic and (not keep.any() or inf_mass >= _USELESS_INF_MASS):
        # little noise: the bracket reaches 0 for most outcomes, so epsilon is infinite at every delta below that
        raise UnsupportedEventError(
            f"RandomAllocation(noise_multiplier={1.0 / s:g}, num_steps={t}): the noise is too small for the "
            "random-allocation analysis (the lattice bracket gives an infinite loss to at least half of the "
            "outcomes); a sound upper bound without amplification is the fixed allocation: "
            "SelfComposed(Gaussian(noise_multiplier), num_selected)")
    if not keep.any():  # the lower end: nothing finite to keep
        return GridPLD(step, 0, np.zeros(1), min(1.0, inf_mass), law.error + (0.0 if pessimistic else failure),
                       pessimistic)
    losses, masses = np.log(values[keep] / t), law.pmf[keep]
    if not remove:
        losses = -losses
    elif pessimistic:  # the outcomes left out of the law (the lower end leaves them out: less P-mass)
        tail_losses, tail_masses, tail_inf = _shifted_tail_atoms(s, t, law, step)
        losses, masses = np.concatenate((losses, tail_losses)), np.concatenate((masses, tail_masses))
        inf_mass += tail_inf
    pld = from_atoms(step, losses, masses, min(1.0, inf_mass), pessimistic)
    # lower end: the failure event's mass may sit anywhere in the law, so delta is lowered by it
    error = law.error + (0.0 if pessimistic else failure)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, error, pessimistic)


def _aligned(a: LatticeLaw, b: LatticeLaw) -> tuple[np.ndarray, np.ndarray]:
    lo = min(a.offset, b.offset)
    hi = max(a.offset + a.pmf.size, b.offset + b.pmf.size)
    out_a, out_b = np.zeros(hi - lo), np.zeros(hi - lo)
    out_a[a.offset - lo:a.offset - lo + a.pmf.size] = a.pmf
    out_b[b.offset - lo:b.offset - lo + b.pmf.size] = b.pmf
    return out_a, out_b


@lru_cache(maxsize=16)
def _statistic_lower_pld(s: float, t: int, k: int, direction: str, step: float) -> GridPLD:
    """A lower PLD of k-of-t allocation: the pair of laws of the rounded sum statistic (see the docstring)."""
    with_record, without = _statistic_laws(s, t, k)
    first, second = (with_record, without) if direction == "remove" else (without, with_record)
    p, q = _aligned(first, second)
    second_error = second.error + second.dropped
    valid = (p > 0) & (q > 0)
    losses = np.log(p[valid] / q[valid]) - 1e-12  # a hair low: float rounding of the ratio
    masses = p[valid]
    # keep the losses up to where at most _DROPPED_TAIL of P-mass lies above (dropping P-mass only lowers
    # delta); the Q-side error then counts at most e^cap times
    order = np.argsort(losses)
    above = np.cumsum(masses[order][::-1])[::-1]  # P-mass at or above each sorted loss
    kept = order[above > _DROPPED_TAIL]
    if kept.size == 0:
        kept = order[-1:]
    if kept.size == 0:  # no outcome of both laws (their lattices are apart): this statistic shows no loss
        return GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
    cap = float(losses[kept].max())
    error = first.error + math.exp(min(cap, 700.0)) * second_error
    pld = from_atoms(step, losses[kept], masses[kept], 0.0, False)
    return GridPLD(pld.step, pld.offset, pld.pmf, 0.0, error, False)


def _max_log_cdf(c: np.ndarray, s: float, t: int, shifted: int) -> np.ndarray:
    """log P(max_i x_i <= c) with ``shifted`` of the t outputs N(s, 1) and the others N(0, 1)."""
    out = (t - shifted) * log_ndtr(c)
    return out + shifted * log_ndtr(c - s) if shifted else out


def _max_edge(s: float, t: int, k: int, upper: bool, other: float = 0.0) -> float:
    """The edge of the unbounded end slice holding e^_MAX_END of the P-mass (of either law), by bisection; the
    second law's k outputs have mean ``other`` (0: no record; -s: the replacing record)."""
    lo, hi = -40.0 - s, 40.0 + s
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        cdf = _max_log_cdf(np.array([mid]), s if upper else other, t, k if upper or other else 0)[0]
        mass = math.log(-math.expm1(cdf)) if upper and cdf < 0 else (-math.inf if upper else cdf)
        if (mass > _MAX_END) == upper:
            lo = mid
        else:
            hi = mid
    return hi if upper else lo


def _log_ndtr_error(c: np.ndarray) -> np.ndarray:
    """A bound on the absolute float error of ``scipy.special.log_ndtr(c)``: _LOG_NDTR_ULPS + 4 c^2 ulps of its
    value for c > 0 (log1p(-ndtr(-c)), whose complementary error function loses accuracy as c grows), and
    _LOG_NDTR_ULPS below. Measured against a 50-digit evaluation on 1.7 10^4 points of [-38, 37.5]: at most 4.4
    ulps for c <= 0, and above at most 8 + 2.1 c^2 (34 ulps up to c = 5, 135 up to 10, 2161 up to 37.5)."""
    ulps = _LOG_NDTR_ULPS + 4.0 * np.maximum(c, 0.0) ** 2
    return ulps * _U * np.abs(log_ndtr(c))


def _slice_log_masses(edges: np.ndarray, s: float, t: int, shifted: int) -> tuple[np.ndarray, np.ndarray]:
    """log masses of the slices (-inf, e_0], (e_0, e_1], ..., (e_n, inf) of the largest output, and a bound on
    each mass's relative float error. The log-CDF log F = (t - k) log Phi(c) + k log Phi(c - s) is within
    (t - k) e(c) + k e(c - s) + 2 u |log F| of its value (e: :func:`_log_ndtr_error`; the product and the sum
    rounded); a middle slice's mass F(e_j+1) (1 - F(e_j) / F(e_j+1)) then has relative error at most
    the two log-CDFs' errors over their difference (d/dx ln(1 - e^-x) = 1 / (e^x - 1) <= 1 / x) plus that of
    F(e_j+1), the top slice's 1 - F(e_n) the error of log F(e_n) times F / (1 - F), and each a few ulps of exp,
    log and expm1 besides."""
    cdf = _max_log_cdf(edges, s, t, shifted)
    with np.errstate(divide="ignore"):
        middle = cdf[1:] + np.log(-np.expm1(cdf[:-1] - cdf[1:]))
        top = np.log(-np.expm1(cdf[-1:]))
    log_masses = np.concatenate((cdf[:1], middle, top))
    err = (t - shifted) * _log_ndtr_error(edges) + 2 * _U * np.abs(cdf)
    if shifted:
        err += shifted * _log_ndtr_error(edges - s)
    tiny = np.finfo(float).tiny
    gap = np.maximum(cdf[1:] - cdf[:-1], tiny)
    relative = np.concatenate((err[:1], (err[:-1] + err[1:]) / gap + err[1:],
                               err[-1:] * np.exp(cdf[-1:]) / np.maximum(-np.expm1(cdf[-1:]), tiny)))
    relative += 8 * _U * (1.0 + np.abs(np.where(np.isfinite(log_masses), log_masses, 0.0)))
    return log_masses, relative


@lru_cache(maxsize=8)
def _max_slices(s: float, t: int, k: int, other: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The slices' log masses and their relative errors, with the record and in the second law (without it, or
    with the replacing record at mean ``other``: :func:`_slice_log_masses`)."""
    edges = np.linspace(_max_edge(s, t, k, False, other), _max_edge(s, t, k, True, other), _MAX_SLICES + 1)
    return *_slice_log_masses(edges, s, t, k), *_slice_log_masses(edges, other, t, k if other else 0)


def _max_lower_pld(s: float, t: int, k: int, direction: str, step: float, other: float = 0.0) -> GridPLD:
    """A lower PLD of k-of-t allocation: the slices of the largest output (see the docstring); ``other`` = -s gives
    the replace-one pair of a record x replaced by -x (the same k steps hold either)."""
    with_record, with_error, without, without_error = _max_slices(s, t, k, other)
    first, second = (with_record, without) if direction == "remove" else (without, with_record)
    first_error, second_error = (with_error, without_error) if direction == "remove" else (without_error, with_error)
    valid = np.isfinite(first) & np.isfinite(second) & (first_error < 0.5) & (second_error < 0.5)
    # lowered by the float error: |ln(m (1 + e))| <= e / (1 - e) <= 2 e for both masses, a few ulps for the difference
    loss = first[valid] - second[valid]
    losses = loss - 2.0 * (first_error[valid] + second_error[valid]) - 4 * _U * np.abs(loss)
    masses = np.exp(first[valid]) * (1.0 - 2.0 * first_error[valid])
    return from_atoms(step, losses, masses, 0.0, False)


def _binomial_pmf(n: np.ndarray, trials: int, p: float) -> np.ndarray:
    from scipy.stats import binom  # local: scipy.stats is slow to import and only needed here

    return binom.pmf(n, trials, p)


def _window(trials: int, p: float) -> tuple[int, int]:
    mean, sd = trials * p, math.sqrt(trials * p * (1.0 - p)) + 1.0
    return max(0, int(mean - _COUNT_SD * sd)), min(trials, int(mean + _COUNT_SD * sd) + 1)


def _binomial_window(trials: int, p: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Bin(trials, p) on the counts within _COUNT_SD standard deviations of its mean: (counts, pmf, mass left out,
    from the two tails' distribution functions, doubled: far more than their float error, and about e^-200)."""
    from scipy.stats import binom  # local: scipy.stats is slow to import and only needed here

    lo, hi = _window(trials, p)
    counts = np.arange(lo, hi + 1)
    pmf = _binomial_pmf(counts, trials, p)
    left_out = float(binom.sf(hi, trials, p)) + (float(binom.cdf(lo - 1, trials, p)) if lo > 0 else 0.0)
    return counts, pmf, 2.0 * left_out


@lru_cache(maxsize=64)
def _count_pair(s: float, t: int, k: int, q0: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """The laws of N = #{i : x_i > c}, P(x > c) = q0 without the record and q1 = Phi(s - c) in its k steps: at n in
    a window, the P-law (Bin(k, q1) * Bin(t - k, q0), each cut to a window: ``_binomial_window``) and the Q-law
    (Bin(t, q0), exact at each n), and the P-mass the cuts leave out of each P-value (at most their sum). None
    where the two windows multiply to more than _COUNT_WORK (many steps hold the record: other thresholds)."""
    q1 = float(ndtr(s + float(ndtri(q0))))
    (record_lo, record_hi), (rest_lo, rest_hi) = _window(k, q1), _window(t - k, q0)
    if (record_hi - record_lo + 1) * (rest_hi - rest_lo + 1) > _COUNT_WORK:
        return None
    record_counts, record, record_cut = _binomial_window(k, q1)
    rest_counts, rest, rest_cut = _binomial_window(t - k, q0)
    p = np.convolve(record, rest)
    n = np.arange(p.size) + int(record_counts[0]) + int(rest_counts[0])
    q = _binomial_pmf(n, t, q0)
    return n, p, q, record_cut + rest_cut


def _count_atoms(s: float, t: int, k: int, direction: str, q0: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(losses, first-law masses) of the count pair at threshold level q0, lowered by their float error (see
    :func:`_count_lower_pld`); None where the threshold is skipped or no outcome has both masses."""
    pair = _count_pair(s, t, k, q0)
    if pair is None:
        return None
    n, p, q, cut = pair
    first, second = (p, q) if direction == "remove" else (q, p + cut)
    valid = (first > 0) & (second > 0)
    if not valid.any():
        return None
    losses = np.log(first[valid]) - np.log(second[valid]) - 4.0 * _BINOMIAL_ERROR - 4 * _U * (k + 2)
    return losses, first[valid] * (1.0 - 2.0 * _BINOMIAL_ERROR - 4 * _U * (k + 2))


def _atoms_epsilon(losses: np.ndarray, masses: np.ndarray, delta: float) -> float:
    """Smallest eps >= 0 with sum_i m_i (1 - e^(eps - l_i))_+ <= delta, from finitely many atoms (to rank them)."""
    order = np.argsort(losses)[::-1]
    l, m = losses[order], masses[order]
    a = np.cumsum(m)  # P-mass at losses >= l_j
    # on [l_j+1, l_j] delta(eps) = a_j - e^(eps - l_0) b_j, b_j its Q-mass over e^-l_0 (inf far below l_0, where no
    # eps of interest lies): the first j whose delta at l_j+1 exceeds delta
    below = np.append(l[1:], -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        b = np.cumsum(m * np.exp(l[0] - l))
        at_below = a - np.exp(np.maximum(below, 0.0) - l[0]) * b
    j = int(np.argmax(at_below > delta)) if np.any(at_below > delta) else -1
    if j < 0:
        return 0.0
    if a[j] <= delta:
        return max(0.0, float(l[j]))
    return max(0.0, float(l[0] + math.log((a[j] - delta) / b[j])))


@lru_cache(maxsize=64)
def _count_level(s: float, t: int, k: int, direction: str) -> float | None:
    """The threshold level of _COUNT_LEVELS whose count pair has the largest epsilon at most of _CHOICE_DELTAS
    (computed on the atoms, independent of the grid); None if no level holds an outcome of both laws."""
    scores = {}
    for q0 in _COUNT_LEVELS:
        atoms = _count_atoms(s, t, k, direction, q0)
        if atoms is not None:
            scores[q0] = [_atoms_epsilon(*atoms, d) for d in _CHOICE_DELTAS]
    if not scores:
        return None
    wins = dict(zip(scores, _wins(list(scores.values()), larger=True)))
    return max(wins, key=lambda q0: (wins[q0], scores[q0][len(_CHOICE_DELTAS) // 2]))


def _count_lower_pld(s: float, t: int, k: int, direction: str, step: float) -> GridPLD:
    """A lower PLD of k-of-t allocation: the pair of laws of the number of outputs above a threshold c (a function of
    the outputs whichever steps hold the record: dominated by the true pair, also after composition), at the most
    revealing level of _COUNT_LEVELS (:func:`_count_level`). It sees all k record outputs, where the largest output
    sees one. scipy's binomial pmf is taken within _BINOMIAL_ERROR relative: the losses are lowered by twice that
    and the first law's masses shrunk by it; a P-value cut to a window is raised by the mass cut where it is the
    second law (an upper bound on it keeps the loss low)."""
    level = _count_level(s, t, k, direction)
    atoms = None if level is None else _count_atoms(s, t, k, direction, level)
    if atoms is None:
        return GridPLD(step, 0, np.ones(1), 0.0, 0.0, False)
    return from_atoms(step, *atoms, 0.0, False)


def _log_summand(s: float, u: float, h: float, cells: int, mean: float) -> tuple[np.ndarray, np.ndarray]:
    """The law of min(round(g(x) / h), cells - 1) for x ~ N(mean, 1), g(x) = ln(1 + u e^(s x - s^2/2)) (increasing in
    x), and a bound on each cell's float error. Cell j < cells - 1 holds x in (x_j-1, x_j], x_j = g^-1((j + 1/2) h)
    = (ln(expm1((j + 1/2) h) / u) + s^2/2) / s, the last cell everything above. Each mass is a difference of the
    normal CDF where the cell lies below the mean and of its survival function above, each value v = ndtr(y) within
    (_NDTR_ULPS + 2 y^2) u v + 1e-300 (measured: ``test_ndtr_error_is_within_the_bound_taken``): a mass's error is at
    most its two values' errors plus a rounding. The cell holding the mean (lower edge <= 0 < upper edge; with little
    weight u it holds nearly all the mass) is 1 - Phi(lower edge) - Phi(-upper edge), both values at most 1/2 and
    each within its own bound, plus two roundings of at most u each: its error is then about 2 u rather than
    (_NDTR_ULPS + 2 y^2) u of a CDF value near 1, and the sum of t such summands counts it t times."""
    g = (np.arange(cells - 1) + 0.5) * h
    x = (np.log(np.expm1(g) / u) + s * s / 2) / s - mean
    edges = np.concatenate(([-np.inf], x, [np.inf]))
    lower, upper = ndtr(edges), ndtr(-edges)  # the CDF and the survival function at the cell edges
    with np.errstate(invalid="ignore"):
        ulps = np.where(np.isfinite(edges), _NDTR_ULPS + 2.0 * edges * edges, 0.0)
    above = edges[:-1] > 0  # the cell's lower edge above the mean
    pmf = np.where(above, upper[:-1] - upper[1:], lower[1:] - lower[:-1])
    value_error = np.where(above[:, None], np.stack((upper[:-1], upper[1:]), 1), np.stack((lower[:-1], lower[1:]), 1))
    value_error = value_error * np.stack((ulps[:-1], ulps[1:]), 1) * _U + 1e-300
    error = value_error.sum(axis=1) + 2 * _U * np.abs(pmf)
    middle = np.flatnonzero(~above & (edges[1:] > 0))  # the cell holding the mean (one at most)
    if middle.size:
        j = int(middle[0])
        pmf[j] = 1.0 - lower[j] - upper[j + 1]
        error[j] = (ulps[j] * _U * lower[j] + ulps[j + 1] * _U * upper[j + 1] + 2e-300 + 2 * _U
                    + 2 * _U * abs(float(pmf[j])))
    return np.maximum(pmf, 0.0), error


def _tilt(parts: list[tuple[np.ndarray, np.ndarray, int]], target: float) -> tuple[list[tuple[np.ndarray, float, float]], float]:
    """The summand laws (pmf, per-cell error bound, count) tilted by e^(a j) (cell j), one a >= 0, the smallest with
    the sum's mean at least ``target`` cells (bisection; a = 0 if the untilted mean reaches it): each as (tilted pmf,
    l1 bound on its float error, log M) with M = sum_j pmf_j e^(a j), so that the law of the sum at n is
    prod M^count e^(-a n) times that of the sum of the tilted summands; and a."""
    logs = []
    for pmf, _, _ in parts:
        held = pmf > 0
        log_pmf = np.full(pmf.size, -np.inf)
        log_pmf[held] = np.log(pmf[held])
        logs.append((log_pmf, held, np.arange(pmf.size, dtype=float)))

    def tilted(a: float) -> list[tuple[np.ndarray, float]]:
        out = []
        for log_pmf, held, cells in logs:
            log_w = log_pmf + a * cells
            top = float(log_w[held].max())
            w = np.exp(log_w - top)
            total = float(w.sum())
            out.append((w / total, top + math.log(total)))
        return out

    def mean(a: float) -> float:
        return sum(count * float(law @ cells) for (law, _), (_, _, count), (_, _, cells) in zip(tilted(a), parts, logs))

    a = 0.0
    if mean(0.0) < target:
        lo, hi = 0.0, 700.0 / max(max(pmf.size for pmf, _, _ in parts), 1)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            lo, hi = (mid, hi) if mean(mid) < target else (lo, mid)
        a = hi
    out = []
    for (law, log_m), (_, error, _), (_, _, cells) in zip(tilted(a), parts, logs):
        # each cell's error scaled as its mass (e^(a j) / M), and a few roundings of the tilt
        out.append((law, float((error * np.exp(a * cells - log_m)).sum()) + 8 * _U, log_m))
    return out, a


@lru_cache(maxsize=32)
def _log_statistic_laws(s: float, t: int, k: int, scale: float, coarser: int, other: float = 0.0):
    """The log statistic's laws (see :func:`_log_lower_pld`): with the record (untilted) and without it (tilted; or
    with the record's k outputs at mean ``other``, -s for the record replaced by its opposite), the tilt, the log of
    the tilt's normalisation, a bound on its float error, and the lattice step."""
    u = scale / t
    top = math.log1p(u * math.exp(s * (s + _LOG_TOP) - s * s / 2))
    h = top / _LOG_CELLS
    base, _ = _log_summand(s, u, h, _LOG_CELLS, 0.0)
    cells = np.arange(_LOG_CELLS, dtype=float)
    mean = float(base @ cells)
    sd = math.sqrt(max(float(base @ cells**2) - mean * mean, 0.0))
    span = 40.0 * math.sqrt(t) * sd + (k + 10) * _LOG_CELLS  # cells of the sum's law, roughly
    h *= max(1.0, span / _LOG_SUM_CELLS) * coarser
    count = int(math.ceil(top / h)) + 1
    base, base_error = _log_summand(s, u, h, count, 0.0)
    record, record_error = _log_summand(s, u, h, count, s)
    with_record = sum_law(power_law(record, k, float(record_error.sum()), h),
                          power_law(base, t - k, float(base_error.sum()), h))
    above = np.cumsum(with_record.pmf[::-1])[::-1]  # P-mass at or above each cell
    target = with_record.offset + int(np.searchsorted(-above, -_LOG_TILT_DELTA))
    parts = [(base, base_error, t - k if other else t)]
    if other:
        parts.append((*_log_summand(s, u, h, count, other), k))
    tilted, a = _tilt([part for part in parts if part[2] > 0], float(target))
    laws = [power_law(law, part[2], error, h) for (law, error, _), part in zip(tilted, [p for p in parts if p[2] > 0])]
    second = laws[0] if len(laws) == 1 else sum_law(laws[0], laws[1])
    counts = [part[2] for part in parts if part[2] > 0]
    log_norm = sum(c * log_m for c, (_, _, log_m) in zip(counts, tilted))
    # each M's relative float error: its terms' errors and the sum's roundings
    log_norm_error = sum(c * (error + 2 * count * _U) for c, (_, error, _) in zip(counts, tilted)) * 1.01
    return with_record, second, a, log_norm, log_norm_error, h


def _log_lower_pld(s: float, t: int, k: int, step: float, scale: float, coarser: int = 1, other: float = 0.0
                   ) -> GridPLD:
    """A lower PLD of the remove direction of k-of-t allocation (analysis ours): the pair of laws of the statistic
    T = sum_i min(round(g(x_i) / h), top), g(x) = ln(1 + u Y(x)), u = ``scale`` / t, one function of the outputs
    whichever steps hold the record (dominated by the true pair, also after composition). It is the log of
    prod_i (1 + u Y_i), whose coefficient of u^k is the likelihood ratio's numerator e_k(Y): at little noise it
    follows the k record outputs (the largest output sees one, the count none of their sizes). With the record the
    law is the convolution of k shifted and t - k base summands; without it, its losses reach tens of nats beyond
    what float64 resolves of a plain convolution, so its summands are tilted by e^(a j) (a chosen so the tilted sum
    sits where the first law's upper 1e-6 lies) and the law at n recovered as M^t e^(-a n) times the tilted one's,
    which is raised by its error bound and dropped mass (pointwise) and by the float error of log M^t: the losses
    are lowered (lower). The first law's float error counts in ``error``; its cut mass is dropped (less P-mass).
    ``other`` = -s: the second law has the record's k outputs at mean -s (the record x replaced by -x, which the same
    k steps hold), a lower PLD of replace-one."""
    losses, masses, error = _log_atoms(s, t, k, scale, coarser, other)
    pld = from_atoms(step, losses, masses, 0.0, False)
    return GridPLD(pld.step, pld.offset, pld.pmf, 0.0, error, False)


def _log_atoms(s: float, t: int, k: int, scale: float, coarser: int = 1, other: float = 0.0
               ) -> tuple[np.ndarray, np.ndarray, float]:
    """(losses, first-law masses, the first law's float error) of the log statistic's pair (:func:`_log_lower_pld`)."""
    with_record, without, a, log_norm, log_norm_error, _ = _log_statistic_laws(s, t, k, scale, coarser, other)
    n = with_record.offset + np.arange(with_record.pmf.size)
    index = n - without.offset
    inside = (index >= 0) & (index < without.pmf.size)
    q = np.zeros(n.size)
    q[inside] = np.maximum(without.pmf[index[inside]], 0.0)
    q += without.error + without.dropped + without.worst
    p = with_record.pmf
    keep = p > 0
    log_q = np.log(q[keep]) + log_norm - a * n[keep] + log_norm_error
    losses = np.log(p[keep]) - log_q
    losses -= 8 * _U * (np.abs(losses) + abs(log_norm) + a * np.abs(n[keep]) + 1.0)  # a hair low: the roundings
    return losses, p[keep], with_record.error


def _expected_log_summand(s: float, u: float, mean: float, top: float, floor: float) -> float:
    """An upper bound on E[g(x) 1{g(x) <= top}], g(x) = ln(1 + u e^(s x - s^2/2)), x ~ N(mean, 1): the integral of
    P(g > y) over y in [0, top] as an upper Riemann sum, ``floor`` for [0, floor] and a geometric grid of 2^18 points
    above (each term at its left end: about 1e-4 relative above the integral; P(g > y) within
    (_NDTR_ULPS + 2 z^2) ulps, taken up by a factor)."""
    y = np.concatenate(([0.0], np.geomspace(floor, top, 1 << 18)))
    with np.errstate(divide="ignore"):
        z = (np.log(np.expm1(y[1:-1]) / u) + s * s / 2) / s - mean
    survival = np.concatenate(([1.0], ndtr(-z)))
    slack = 1.0 + (_NDTR_ULPS + 2.0 * float(np.max(z * z, initial=0.0))) * _U + 4 * y.size * _U
    return float(np.diff(y) @ survival) * slack


@lru_cache(maxsize=32)
def _generating_upper_pld(s: float, t: int, k: int, step: float, scale: float, cells: int) -> GridPLD:
    """An upper PLD of the remove direction of k-of-t allocation (analysis ours): e_k(Y) <= prod_i (1 + u Y_i) / u^k
    for every u > 0 (the other terms of the product's expansion are >= 0), so the loss ln(e_k(Y) / C(t, k)) is at
    most T - k ln u - ln C(t, k), T = sum_i g(x_i), g = ln(1 + u Y), u = ``scale`` / t: a sum of independent terms
    under the first law (k shifted outputs). It gives up ln P_u(N = k) (N the Poisson-binomial count with
    probabilities u Y_i / (1 + u Y_i)), near 0 at little noise, where the record's outputs carry e_k and the reduction
    to k-fold 1-of-t/k allocation gives up about ln(k^k / k!). T is bracketed as the lattice sums are: with each
    g_i rounded to the nearest of the lattice of step h (the log statistic's summands; ``cells`` of them up to the
    top G, the mass above at +inf, where the bracket may fail), T = T' - sum e_i, e_i in [-h/2, h/2), and by
    Bernstein's inequality sum e_i >= b - d except with probability FAILURE, b a lower bound on the summed means
    (the lattice mean less an upper bound on E[g 1{g <= G}]: :func:`_expected_log_summand`) and d from the
    variances, each at most E[g^2 1{g < h/2}] + h^2/4 P(g >= h/2) <= u^2 E[Y^2 1{u Y < h/2}] + h^2/4 P(g >= h/2)
    (ln(1 + v) <= v; closed forms). The loss is then at most (the value of T') - b + d - k ln u - ln C(t, k) outside
    an event of probability FAILURE + P(some g_i > G), at +inf; the law of T' is computed with its tails cut
    pessimistically (the upper one to +inf) and its float error counted in ``error``."""
    u, n = scale / t, t - k
    top = math.log1p(u * math.exp(s * (s + _LOG_TOP) - s * s / 2))
    h = top / cells
    edge = (cells - 0.5) * h  # the top cell's upper edge G
    parts, bias, variance, beyond, error = [], 0.0, 0.0, 0.0, 0.0
    for count, mean in ((k, s), (n, 0.0)):
        if not count:
            continue
        pmf, cell_error = _log_summand(s, u, h, cells + 1, mean)  # the last cell: g above G
        above, pmf, cell_error = float(pmf[-1]), pmf[:-1], cell_error[:-1]
        values = np.arange(cells) * h
        rounded_mean = float(values @ pmf) - float(values @ cell_error) - cells * 4 * _U * float(values @ pmf)
        mean_error = rounded_mean - _expected_log_summand(s, u, mean, edge, 1e-12 / t)  # a lower bound on E[e_i]
        half = math.log(math.expm1(h / 2) / u)  # ln Y where g = h/2
        if mean:  # E[Y^2 1{ln Y <= c}] for LN(m, s^2) is e^(2m + 2 s^2) Phi((c - m - 2 s^2) / s)
            second = u * u * math.exp(2 * (s * s / 2) + 2 * s * s) * float(ndtr((half - s * s / 2 - 2 * s * s) / s))
        else:
            second = u * u * math.exp(2 * (-s * s / 2) + 2 * s * s) * float(ndtr((half + s * s / 2 - 2 * s * s) / s))
        tail = float(ndtr(mean - (half + s * s / 2) / s))  # P(g >= h/2)
        bias += count * mean_error
        variance += count * (second + h * h / 4 * tail) * (1 + 1e-6)
        beyond += count * above * (1 + 1e-6) + count * 1e-300
        error_in = float(cell_error.sum())
        parts.append(power_law(pmf, count, error_in, h, "up"))
    law = parts[0] if len(parts) == 1 else sum_law(parts[0], parts[1], "up")
    level = math.log(1.0 / FAILURE)
    deviation = h * level / 3 + math.sqrt((h * level / 3) ** 2 + 2 * variance * level)
    constant = -bias + deviation - k * math.log(u) - (math.lgamma(t + 1) - math.lgamma(k + 1) - math.lgamma(n + 1))
    losses = law.values() + constant
    losses += 1e-12 * np.maximum(1.0, np.abs(losses)) + 8 * _U * (abs(constant) + np.abs(law.values()))
    inf_mass = min(1.0, law.worst + beyond + FAILURE)
    keep = law.pmf > 0
    pld = from_atoms(step, losses[keep], law.pmf[keep], inf_mass, True)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, law.error, True)


def _refined_scale(score, scale: float, best: float, larger: bool) -> float:
    """A golden-section search for the scale between the neighbours of ``scale`` on _LOG_SCALES (a quarter decade
    either side, in log10), ``score(scale)`` the epsilon at the middle of _CHOICE_DELTAS to be made the largest
    (``larger``) or the smallest; ``best`` is the score of ``scale``. Returns the best scale evaluated (``scale`` unless
    another scored better): a choice among valid PLDs, so tightness only, never soundness."""
    sign = 1.0 if larger else -1.0
    chosen, top = scale, sign * best
    lo, hi = math.log10(scale) - 0.25, math.log10(scale) + 0.25
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fa, fb = sign * score(10.0**a), sign * score(10.0**b)
    for x, f in ((a, fa), (b, fb)):
        if f > top:
            chosen, top = 10.0**x, f
    for _ in range(_SCALE_SEARCH_STEPS):
        if fa >= fb:
            hi, b, fb = b, a, fa
            a = hi - ratio * (hi - lo)
            fa = sign * score(10.0**a)
            x, f = a, fa
        else:
            lo, a, fa = a, b, fb
            b = lo + ratio * (hi - lo)
            fb = sign * score(10.0**b)
            x, f = b, fb
        if f > top:
            chosen, top = 10.0**x, f
    return chosen


@lru_cache(maxsize=16)
def _generating_scales(s: float, t: int, k: int) -> tuple[float, ...]:
    """The scale of _LOG_SCALES whose generating-function upper end has the smallest epsilon at most of
    _CHOICE_DELTAS, ranked with _LOG_CELLS summand cells on a 1e-3 grid; and, where it scored better there, the scale
    refined between its neighbours (:func:`_refined_scale`; RandomAllocation(0.2, 10^6, 10): u t = 1.78 on the list,
    2.37 refined, 81.125 -> 81.066 at delta 1e-6). Both are built at full resolution and the tighter is taken."""
    scores = [[_generating_upper_pld(s, t, k, 1e-3, scale, _LOG_CELLS).epsilon(d) for d in _CHOICE_DELTAS]
              for scale in _LOG_SCALES]
    wins = _wins(scores, larger=False)
    i = max(range(len(_LOG_SCALES)), key=lambda i: (wins[i], -scores[i][len(_CHOICE_DELTAS) // 2]))
    middle = _CHOICE_DELTAS[len(_CHOICE_DELTAS) // 2]
    refined = _refined_scale(lambda scale: _generating_upper_pld(s, t, k, 1e-3, scale, _LOG_CELLS).epsilon(middle),
                             _LOG_SCALES[i], scores[i][len(_CHOICE_DELTAS) // 2], larger=False)
    return (_LOG_SCALES[i],) if refined == _LOG_SCALES[i] else (_LOG_SCALES[i], refined)


@lru_cache(maxsize=16)
def _log_scales(s: float, t: int, k: int, other: float = 0.0) -> tuple[tuple[float, int], ...]:
    """The scale of _LOG_SCALES whose log statistic has the largest epsilon at most of _CHOICE_DELTAS, ranked on a
    lattice _LOG_SEARCH_COARSER times coarser, by the epsilon of its atoms (independent of the accountant's grid), and
    the lattice (how much coarser than the finest) ranked the same way; then, where it scored better on that coarser
    lattice, the scale refined between the list's neighbours (:func:`_refined_scale`) with its own lattice
    (RandomAllocation(0.2, 10^6, 10): 79.409 -> 79.469 at delta 1e-6). Both are built at full resolution and the more
    revealing is taken."""
    scores = []
    for scale in _LOG_SCALES:
        losses, masses, _ = _log_atoms(s, t, k, scale, _LOG_SEARCH_COARSER, other)
        scores.append([_atoms_epsilon(losses, masses, d) for d in _CHOICE_DELTAS])
    wins = _wins(scores, larger=True)
    i = max(range(len(_LOG_SCALES)), key=lambda i: (wins[i], scores[i][len(_CHOICE_DELTAS) // 2]))
    middle = _CHOICE_DELTAS[len(_CHOICE_DELTAS) // 2]
    refined = _refined_scale(lambda scale: _atoms_epsilon(*_log_atoms(s, t, k, scale, _LOG_SEARCH_COARSER, other)[:2],
                                                          middle), _LOG_SCALES[i], scores[i][len(_CHOICE_DELTAS) // 2],
                             larger=True)
    return tuple((scale, _log_lattice(s, t, k, scale, other))
                 for scale in ((_LOG_SCALES[i],) if refined == _LOG_SCALES[i] else (_LOG_SCALES[i], refined)))


def _log_lattice(s: float, t: int, k: int, scale: float, other: float) -> int:
    """How much coarser than the finest the log statistic's lattice is at ``scale``: ranked as the scales are (a finer
    one resolves more, but its convolutions' error bounds, counted on every cell of the law without the record, grow
    with its length, and they decide where the noise is large and t long)."""
    steps = (1, 2, _LOG_SEARCH_COARSER)
    scores = [[_atoms_epsilon(*_log_atoms(s, t, k, scale, coarser, other)[:2], d) for d in _CHOICE_DELTAS]
              for coarser in steps]
    wins = _wins(scores, larger=True)
    return steps[max(range(len(steps)), key=lambda i: (wins[i], scores[i][len(_CHOICE_DELTAS) // 2]))]


def _log_lower_best(s: float, t: int, k: int, step: float, other: float = 0.0) -> GridPLD:
    """The more revealing of the log statistic's lower PLDs at the scales of :func:`_log_scales`."""
    candidates = [_log_lower_pld(s, t, k, step, scale, coarser, other) for scale, coarser in _log_scales(s, t, k, other)]
    return candidates[0] if len(candidates) == 1 else _more_revealing(candidates[0], candidates[1])


def _largest_add_upper(s: float, t: int, step: float) -> GridPLD:
    """An upper PLD of the add direction of 1-of-t allocation from the largest summand (see the docstring): the
    add loss is at most ln t + s^2 / 2 - s M, M = max_i x_i with P(M <= c) = Phi(c)^t, pessimistic on every
    slice of M (the loss at the slice's lower edge; the lowest slice at +inf) with the slices' mass errors at
    +inf."""
    low, high = _max_edge(s, t, 0, False), _max_edge(s, t, 0, True)
    cells = int(min(_LARGEST_CELLS, max(16, math.ceil((high - low) * s / (step / 4)))))
    edges = np.linspace(low, high, cells + 1)
    log_masses, relative = _slice_log_masses(edges, s, t, 0)  # (-inf, e_0], (e_0, e_1], ..., (e_n, inf)
    losses = math.log(t) + s * s / 2 - s * edges  # each slice at its lower edge, the top slice at e_n
    losses += 1e-12 * np.maximum(1.0, np.abs(losses))  # a hair high: float rounding of the loss
    masses, relative = np.exp(log_masses[1:]), relative[1:]
    # +inf holds all the mass not certified on a slice: a slice's true mass is at least m (1 - 2 e) for a computed
    # m of relative error e < 1/2 (slices of larger error hold none), summed exactly (fsum) and rounded up
    held = relative < 0.5
    certified = math.fsum((masses[held] * (1.0 - 2.0 * relative[held])).tolist())
    inf_mass = max(0.0, 1.0 - certified) + 4 * _U
    return from_atoms(step, losses[held], masses[held], min(1.0, inf_mass), True)


def _add_lattice_hopeless(s: float, t: int) -> bool:
    """Whether the add direction's upper lattice bracket is predicted to give up (at little noise, z = 0.1): the sum
    S of the t summands is at most twice the Hoeffding half-width c of its lattice with probability at least
    1/2, by S <= t max_i Y_i and P(max_i x_i <= m) = Phi(m)^t, so the bracket [S - 2c, S] reaches 0 on about
    half of the outcomes. A prediction, not a bound: it only saves building a lattice whose upper end the largest
    summand's would replace (the choice among upper PLDs decides tightness, never soundness)."""
    step = _lattice_step(s, t, 1, _add_cap(s, t))
    half_width = step * math.sqrt(t * math.log(2.0 / FAILURE) / 2.0)
    m = (math.log(2.0 * half_width / t) + s * s / 2) / s  # t Y <= 2 c  <=>  x <= m
    return t * float(log_ndtr(m)) >= math.log(0.5)


@lru_cache(maxsize=64)
def _largest_may_win(s: float, t: int) -> bool:
    """Whether the add direction's largest-summand upper end can be the tightest: not when, on a coarse grid
    (_LARGEST_PROBE_STEP, less one step), its epsilon is at least the Gaussian's without amplification at each of
    _CHOICE_DELTAS (with much noise the largest summand is far from the sum: its losses span nats where the
    event's span thousandths, and building it on the event's fine grid would take most of the time). Only a
    choice among dominating pairs: tightness, never soundness."""
    coarse = _largest_add_upper(s, t, _LARGEST_PROBE_STEP)
    return any(coarse.epsilon(d) - _LARGEST_PROBE_STEP < float(gdp_epsilon(s, d)) for d in _CHOICE_DELTAS)


def _wins(scores: list[list[float]], larger: bool) -> list[int]:
    """For each candidate's epsilons at _CHOICE_DELTAS, at how many of them it is the largest (``larger``) or the
    smallest of all, ties counting for each."""
    better = (lambda x, y: x >= y) if larger else (lambda x, y: x <= y)
    return [sum(all(better(score[i], other[i]) for other in scores) for i in range(len(_CHOICE_DELTAS)))
            for score in scores]


def _ranking_epsilons(pld: GridPLD) -> list[float]:
    """The epsilons of ``pld`` at _CHOICE_DELTAS, to rank PLDs (one pass over the cells of positive loss, where
    ``GridPLD.epsilon`` reads all of them at each step of a bisection: seconds on the long laws of many steps; the
    read-out of the chosen PLD is the accountant's). On [l_j+1, l_j] of the losses above 0, in decreasing order,
    delta(eps) = A_j - e^eps B_j, A_j the mass at +inf and at l_0..l_j (with the error bound on the PLD's side) and
    B_j the sum of m_i e^-l_i over them."""
    losses = pld.losses
    keep = (losses > 0.0) & (pld.pmf > 0.0)
    l, m = losses[keep][::-1], pld.pmf[keep][::-1]
    floor_mass = pld.inf_mass + (pld.error if pld.pessimistic else -pld.error)
    a = floor_mass + np.cumsum(m)
    b = np.cumsum(m * np.exp(-l))
    below = np.append(l[1:], 0.0)  # the lower end of each piece
    at_below = a - np.exp(below) * b  # delta at the lower end of each piece
    out = []
    for target in _CHOICE_DELTAS:
        if floor_mass > target:
            out.append(math.inf)
            continue
        over = np.flatnonzero(at_below > target)
        if over.size == 0:
            out.append(0.0)
            continue
        j = int(over[0])
        out.append(float(min(l[j], math.log((a[j] - target) / b[j]))) if b[j] > 0 else float(l[j]))
    return out


def _tightest(candidates: list[GridPLD]) -> GridPLD:
    """Of upper PLDs (each a dominating pair), the one with the smallest epsilon at most of _CHOICE_DELTAS."""
    wins = _wins([_ranking_epsilons(pld) for pld in candidates], larger=False)
    return candidates[int(np.argmax(wins))]


def _more_revealing(a: GridPLD, b: GridPLD) -> GridPLD:
    """Of two lower PLDs, the one with the larger epsilon at most of _CHOICE_DELTAS."""
    wins = _wins([_ranking_epsilons(a), _ranking_epsilons(b)], larger=True)[0]
    return a if 2 * wins > len(_CHOICE_DELTAS) else b


@lru_cache(maxsize=8)
def _unamplified(s: float, k: int, step: float) -> GridPLD:
    """The upper PLD of k Gaussian steps at mu = sqrt(k) s (symmetric: built once for both directions); see the
    docstring."""
    return gaussian.FAMILY.pld_pair(Leaf("gaussian", math.sqrt(k) * s), "add_remove", step, True)[0]


def _unamplified_tighter(lattice: GridPLD, s: float, k: int) -> bool:
    """Whether the Gaussian pair (mu = sqrt(k) s, its epsilon in closed form) has the smaller epsilon than the
    lattice's upper PLD at every one of _CHOICE_DELTAS (the lattice's delta error terms can make it infinite at
    the smallest of them while it is far tighter above)."""
    mu = math.sqrt(k) * s
    return all(float(gdp_epsilon(mu, d)) < lattice.epsilon(d) for d in _CHOICE_DELTAS)


def _blocks(t: int, k: int) -> tuple[tuple[int, int], ...]:
    """The blocks of the reduction of k-of-t allocation, as (steps per block, how many blocks): floor(t/k) steps each,
    or, where a block has at most _EXACT_BLOCKS_MOST_STEPS steps (there one step more is worth ln((m + 1) / m) of
    the loss at little noise), the exact sizes, t mod k blocks of floor(t/k) + 1 steps (see the docstring)."""
    m, r = divmod(t, k)
    if r == 0 or m < 2 or m > _EXACT_BLOCKS_MOST_STEPS:
        return ((m, k),)
    return ((m, k - r), (m + 1, r))


def _reduced(build, blocks: tuple[tuple[int, int], ...]) -> GridPLD:
    """The product of the blocks' PLDs (``build(steps)`` the PLD of 1-of-steps allocation): the reduction's pair."""
    out = None
    for steps, count in blocks:
        pld = build(steps)
        pld = pld if count == 1 else pld.self_compose(count)
        out = pld if out is None else out.compose(pld)
    return out


def _upper_pld(s: float, t: int, k: int, direction: str, step: float) -> GridPLD:
    """The upper end of one direction: the lattice's, or the Gaussian pair's where that is tighter; in the add
    direction also the largest summand's, where that is tighter still."""
    if t // k == 1:  # 1 of 1 step is the Gaussian itself
        return _unamplified(s, k, step)
    blocks = _blocks(t, k)
    candidates = []
    try:
        if direction == "add" and _add_lattice_hopeless(s, t // k):
            raise UnsupportedEventError("the add direction's lattice bracket would reach 0")
        candidates.append(_reduced(lambda m: _bracket_pld(s, m, direction, step, True), blocks))
        if _unamplified_tighter(candidates[0], s, k):
            candidates = [_unamplified(s, k, step)]
    except UnsupportedEventError:  # no finite loss on the lattice's upper side
        candidates.append(_unamplified(s, k, step))
    if direction == "add" and _largest_may_win(s, t // k):
        candidates.append(_reduced(lambda m: _largest_add_upper(s, m, step), blocks))
    if direction == "remove" and k > 1 and (s >= _LOG_UPPER_FROM or (
            s >= _LOG_UPPER_SMALL_FROM and t // k <= _LOG_UPPER_SMALL_MOST_STEPS)):
        candidates += [_generating_upper_pld(s, t, k, step, scale, _LOG_UPPER_CELLS) for scale in _generating_scales(s, t, k)]
    return candidates[0] if len(candidates) == 1 else _tightest(candidates)


def _prefetch_laws(s: float, t: int, pessimistic: bool) -> None:
    """Build the two directions' lattice laws of one end side by side, in two threads (numpy's FFTs release the
    GIL; each law is cached, and its numbers do not depend on where it was built): the accountant asks for both."""
    wanted = [(s, t, True, pessimistic)]
    if not (pessimistic and _add_lattice_hopeless(s, t)):
        wanted.append((s, t, False, pessimistic))
    if len(wanted) < 2:
        return
    with ThreadPoolExecutor(max_workers=2) as pool:
        for future in [pool.submit(_bracket_law, *arguments) for arguments in wanted]:
            future.result()


def _add_remove_pair(s: float, t: int, k: int, step: float, pessimistic: bool, only: str | None):
    directions = [d for d in ("remove", "add") if only in (None, d)]
    plds = {}
    if t // k > 1 and (pessimistic or k == 1):  # the ends built from lattice laws
        for steps, _ in _blocks(t, k) if pessimistic else ((t, 1),):
            _prefetch_laws(s, steps, pessimistic)
    for direction in directions:
        if pessimistic:
            plds[direction] = _upper_pld(s, t, k, direction, step)
            continue
        largest = _max_lower_pld(s, t, k, direction, step)
        if k == 1:
            plds[direction] = _more_revealing(_bracket_pld(s, t, direction, step, False), largest)
            continue
        plds[direction] = _more_revealing(largest, _count_lower_pld(s, t, k, direction, step))
        if direction == "remove":
            plds[direction] = _more_revealing(plds[direction], _log_lower_best(s, t, k, step))
        if (s < _MAX_PAIR_ONLY_FROM and k <= _STATISTIC_MOST_SELECTED  # long laws else
                and (t <= _STATISTIC_MOST_STEPS or s <= _STATISTIC_ANY_STEPS_UPTO)):
            plds[direction] = _more_revealing(plds[direction], _statistic_lower_pld(s, t, k, direction, step))
    return plds.get("remove"), plds.get("add")


def _tradeoff_vertices(pld: GridPLD) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (alpha, beta) of the piecewise-linear trade-off curve of the pair behind ``pld``: outcomes
    by increasing loss; alpha the P-mass and beta the Q-mass left (Q-mass with P = 0 is dropped first)."""
    p = np.maximum(pld.pmf, 0.0)
    q = p * np.exp(-pld.losses)
    alpha = np.concatenate(([0.0], np.cumsum(p)))
    beta = np.concatenate(([0.0], np.cumsum(q[::-1])))[::-1]
    return np.minimum(alpha, 1.0), np.minimum(beta, 1.0)


def _chain_pld(remove: GridPLD, add: GridPLD, step: float) -> GridPLD:
    """A pessimistic PLD of the curve g(1 - f(alpha)), f the trade-off curve of ``remove`` and g of ``add``
    (Dong, Roth & Su 2022, Thm 2.14's argument); see the module docstring."""
    fa, fb = _tradeoff_vertices(remove)
    ga, gb = _tradeoff_vertices(add)
    # f is 0 beyond its last vertex (P-mass at +inf); g likewise
    fa, fb = np.append(fa, 1.0), np.append(fb, 0.0)
    ga, gb = np.append(ga, 1.0), np.append(gb, 0.0)
    # breakpoints: f's vertices and the alphas where 1 - f(alpha) meets a vertex of g (f decreasing)
    crossing = np.interp(1.0 - ga, fb[::-1], fa[::-1], left=np.nan, right=np.nan)
    alpha = np.unique(np.concatenate((fa, crossing[np.isfinite(crossing)], [0.0, 1.0])))
    f_at = np.interp(alpha, fa, fb)
    h = np.interp(1.0 - f_at, ga, gb)
    h = np.minimum.accumulate(np.maximum(h - 1e-15, 0.0))  # a hair low, non-increasing
    d_alpha = np.diff(alpha)
    d_beta = -np.diff(h)
    finite = (d_alpha > 0) & (d_beta > 0)
    at_inf = float(d_alpha[(d_alpha > 0) & (d_beta <= 0)].sum())  # P-mass where the curve is flat (at 0)
    if not finite.any():  # the chained curve is 0 wherever it is defined: no finite loss
        return GridPLD(step, 0, np.zeros(1), 1.0, 0.0, True)
    losses = np.log(d_alpha[finite] / d_beta[finite])
    pld = from_atoms(step, losses, d_alpha[finite], min(1.0, at_inf), True)
    # the inputs' delta errors e shift their curves down by at most e (T(a) = sup_eps 1 - delta(eps) - e^eps a),
    # so g(1 - f + e_f) - e_g >= h - |g'|max e_f - e_g, with |g'| <= e^{-L} at g's smallest loss L
    held = add.pmf > 0
    slope = math.exp(min(-float(add.losses[held][0]), 700.0)) if held.any() else 1.0
    error = add.error + slope * remove.error + 1e-14
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, error, True)


def _normal_form(event: RandomAllocation) -> Leaf:
    if event.num_selected == event.num_steps:  # every step holds the record: the t-fold Gaussian, exactly
        return Leaf("gaussian", math.sqrt(event.num_steps) / event.noise_multiplier)
    return Leaf("random_allocation", 1.0 / event.noise_multiplier, data=(event.num_steps, event.num_selected))


def _check(leaf: Leaf, relation: str) -> str | None:
    if leaf.sampling is not None:
        return "random allocation carries its own sampling; no analysis of a sampler over it"
    return None


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    reason = _check(leaf, relation)
    if reason is not None:
        raise UnsupportedEventError(reason)
    s, t, k = leaf.param, int(leaf.data[0]), int(leaf.data[1])
    if relation != "replace_one":
        return _add_remove_pair(s, t, k, step, pessimistic, only)
    remove, add = _add_remove_pair(s, t, k, step, pessimistic, None)
    if pessimistic:  # the chain, or the fixed allocation's Gaussian at twice the sensitivity where that is tighter
        fixed = gaussian.FAMILY.pld_pair(Leaf("gaussian", math.sqrt(k) * s), "replace_one", step, True)[0]
        chained = fixed if t // k == 1 else _tightest([_chain_pld(remove, add, step), fixed])
        return (None if only == "add" else chained), (None if only == "remove" else chained)
    # lower end: x' = 0 makes the replace-one pair the add/remove pair; x' = -x the largest output's pair of means
    # +s and -s in the record's steps (symmetric under x -> -x: one PLD for both directions)
    opposite = _max_lower_pld(s, t, k, "remove", step, other=-s)
    if t <= _LOG_OPPOSITE_MOST_STEPS:
        opposite = _more_revealing(opposite, _log_lower_best(s, t, k, step, -s))
    remove, add = _more_revealing(remove, opposite), _more_revealing(add, opposite)
    return (None if only == "add" else remove), (None if only == "remove" else add)


FAMILY = Family(
    name="random_allocation", events=(RandomAllocation,), kinds=("random_allocation",), normal_form=_normal_form,
    pld_pair=_pld_pair, pld_check=_check, rdp_check=_check,
)
