"""The random-allocation family: ``RandomAllocation(z, t)``, each record used in exactly one of t Gaussian steps.

Source: Feldman & Shenfeld (2025), "Privacy amplification by random allocation" (arXiv:2502.08202): the
record is placed in one uniformly random step out of t, each step adds Gaussian noise z C to its sum. Under
add/remove-one, with s = 1 / z and the t outputs in units of the noise, the pair is (remove direction)
P = (1/t) sum_i N(s e_i, I_t) against Q = N(0, I_t), with loss L = ln(S / t), S = sum_i Y_i,
Y_i = exp(s x_i - s^2 / 2): under Q the Y_i are i.i.d. lognormal LN(-s^2/2, s^2); under P (by symmetry) one
of them is LN(+s^2/2, s^2). The add direction is the reversed pair, loss -ln(S / t) under the Q-law of S.

Numerical analysis (ours): the law of S is computed on a grid of step h in y (2.5e-4 to 1e-3, as the cell budget allows) by FFT convolution (t-fold, by
squaring), each summand rounded **up** to the grid (S and so the remove loss only grow: an upper bound) or
**down** (a lower bound), the other way round for the add direction, whose loss decreases in S. A pointwise
larger loss under P is a dominating pair (its hockey-stick curve E_P[(1 - e^{eps - L})_+] is larger at every
eps; the missing Q-mass sits on outcomes P never produces), so the upper PLDs compose soundly with any other
event; the lower PLDs give the lower end of ``epsilon_interval``. Tails cut from the grid go to the loss +inf
(upper) or are dropped (lower); the FFT round-off (per cell at most 16 u log2(n) |a|_2 |b|_2, Higham 2002,
Sec. 24.1) is counted in ``GridPLD.error``. Add/remove-one only; no further sampler over it.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.signal import fftconvolve
from scipy.special import ndtr

from ...errors import UnsupportedEventError
from ...events import RandomAllocation
from ..leaf import Leaf
from ..pld_core.grid import GridPLD, from_atoms
from ..registry import Family

__all__ = ["FAMILY", "allocation_sum_law"]

_TAIL = 1e-15  # mass cut per truncation (to +inf or dropped)
_Z_TAIL = 8.0  # lognormal summands are gridded up to this standard-normal quantile
_MAX_CELLS = 1 << 23
_FINEST, _COARSEST = 2.5e-4, 1e-3  # grid steps in y; S / t is near 1, so the loss moves by about h per cell
_CELL_BUDGET = 2_000_000  # cells of the widest law of S at the chosen step
_U = 2.0**-53


def _summand(mu: float, s: float, h: float, up: bool) -> tuple[np.ndarray, float]:
    """(pmf on y = j h, mass beyond the grid) of LN(mu, s^2) rounded up (``up``) or down to the grid."""
    top = math.exp(mu + s * _Z_TAIL)
    cells = min(_MAX_CELLS, int(math.ceil(top / h)) + 1)
    edges = np.arange(cells + 1) * h
    with np.errstate(divide="ignore"):
        cdf = ndtr((np.log(edges) - mu) / s)
    mass = np.diff(cdf)  # mass in (y_j, y_{j+1}]
    beyond = float(ndtr(-(math.log(edges[-1]) - mu) / s))
    pmf = np.zeros(cells + 1)
    if up:
        pmf[1:] = mass
        return pmf, beyond  # beyond the grid: S = +inf (upper side) or dropped (lower side)
    pmf[:-1] = mass
    pmf[-1] = beyond  # rounded down to the last cell
    return pmf, 0.0


def _cut(pmf: np.ndarray, offset: int, up: bool, pessimistic: bool) -> tuple[np.ndarray, int, float]:
    """Trim both tails of the law of S (cells offset + i) by at most _TAIL each; returns (pmf, offset, mass
    sent to the worst end). Pessimistic and ``up`` (loss increasing in S): the lower tail moves up to the
    first kept cell, the upper tail to S = +inf; pessimistic and not ``up``: the upper tail moves down to the
    last kept cell, the lower tail to S = 0 (loss +inf). Optimistic: both are dropped."""
    pmf = np.maximum(pmf, 0.0)
    cumulative = np.cumsum(pmf)
    total = cumulative[-1]
    lo = int(np.searchsorted(cumulative, _TAIL, side="right"))
    hi = int(np.searchsorted(cumulative, total - _TAIL, side="left")) + 1
    lo, hi = min(lo, pmf.size - 1), max(min(hi, pmf.size), lo + 1)
    kept = pmf[lo:hi].copy()
    below, above = float(pmf[:lo].sum()), float(pmf[hi:].sum())
    to_worst = 0.0
    if pessimistic:
        if up:
            kept[0] += below
            to_worst = above
        else:
            kept[-1] += above
            to_worst = below
    return kept, offset + lo, to_worst


def allocation_sum_law(s: float, t: int, h: float, shifted: bool, up: bool, pessimistic: bool):
    """(pmf, offset, mass at the worst end, round-off bound) of S = sum of t lognormal summands on the grid
    y = j h, one of them LN(+s^2/2, s^2) if ``shifted`` (the P-law), the rest LN(-s^2/2, s^2)."""
    base, beyond = _summand(-s * s / 2, s, h, up)
    worst = 0.0
    error = 0.0

    def combine(a, b):
        nonlocal worst, error
        pmf = fftconvolve(a[0], b[0])
        # FFT convolution round-off: per cell at most c u log2(n) |a|_2 |b|_2 (Higham 2002, Sec. 24.1), c = 16 here
        error += pmf.size * 16 * _U * math.log2(pmf.size + 1) * float(np.linalg.norm(a[0]) * np.linalg.norm(b[0]))
        kept, offset, lost = _cut(pmf, a[1] + b[1], up, pessimistic)
        worst += lost
        return kept, offset

    power = (base, 0)
    result = None
    count = t - 1 if shifted else t
    total_beyond = 1.0 - (1.0 - beyond) ** count
    while count:
        if count & 1:
            result = power if result is None else combine(result, power)
        count >>= 1
        if count:
            power = combine(power, power)
    if shifted:
        own, own_beyond = _summand(s * s / 2, s, h, up)
        total_beyond = 1.0 - (1.0 - total_beyond) * (1.0 - own_beyond)
        result = (own, 0) if result is None else combine(result, (own, 0))
    if pessimistic:
        worst += total_beyond  # a summand beyond its grid (rounded up): S = +inf
    return result[0], result[1], worst, error


def _direction(leaf: Leaf, direction: str, step: float, pessimistic: bool) -> GridPLD:
    s, t = leaf.param, int(leaf.data[0])
    span = math.exp(s * _Z_TAIL + s * s / 2) + 1.5 * t  # about the widest law of S kept
    h = min(_COARSEST, max(_FINEST, span / _CELL_BUDGET))
    remove = direction == "remove"
    up = remove == pessimistic  # remove: S rounded up for the upper bound; add: rounded down
    pmf, offset, worst, error = allocation_sum_law(s, t, h, remove, up, pessimistic)
    index = offset + np.arange(pmf.size)
    keep = (pmf > 0) & (index > 0)
    inf_mass = worst if pessimistic else 0.0
    if pessimistic and not remove:
        inf_mass += float(pmf[(index <= 0)].sum())  # S = 0: the add loss is +inf
    losses = np.log(index[keep] * h / t)
    if not remove:
        losses = -losses
    pld = from_atoms(step, losses, pmf[keep], min(1.0, inf_mass), pessimistic)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, error, pessimistic)


def _normal_form(event: RandomAllocation) -> Leaf:
    return Leaf("random_allocation", 1.0 / event.noise_multiplier, data=(event.num_steps,))


def _check(leaf: Leaf, relation: str) -> str | None:
    if relation != "add_remove":
        return "random allocation is accounted under neighbouring='add_remove' only"
    if leaf.sampling is not None:
        return "random allocation carries its own sampling; no analysis of a sampler over it"
    return None


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    reason = _check(leaf, relation)
    if reason is not None:
        raise UnsupportedEventError(reason)
    remove = None if only == "add" else _direction(leaf, "remove", step, pessimistic)
    add = None if only == "remove" else _direction(leaf, "add", step, pessimistic)
    return remove, add


FAMILY = Family(
    name="random_allocation", events=(RandomAllocation,), kinds=("random_allocation",), normal_form=_normal_form,
    pld_pair=_pld_pair, pld_check=_check, rdp_check=_check,
)
