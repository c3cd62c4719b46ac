"""The Poisson-subsampled pair of a composed inner pair given by its grid PLD (sampled sub-trees).

For an inner pair with P-masses p at losses l (Q-mass e^{-l} p, the rest of Q, r = 1 - sum e^{-l} p, at loss
-inf; P-mass at +inf): "remove" is (q P + (1-q) Q, Q) with losses psi(l) = ln(1 - q + q e^l) (and ln(1-q)
for r), "add" is (Q, q P + (1-q) Q) with losses -psi(l) (Zhu, Dong & Wang 2022, Thm 11: this holds for
any dominating pair of the inner mechanism, in particular a composition).
"""

from __future__ import annotations

import math

import numpy as np

from .grid import GridPLD, from_atoms, from_centred_masses

__all__ = ["subsampled_pair", "subsampled_lower_pair"]

_LOW_CUT = -4.0  # sampled sub-trees: inner losses below it are raised to it (upper side)
_U = 2.0**-53


def subsampled_pair(inner: GridPLD, q: float, direction: str, pessimistic: bool,
                    step: float | None = None) -> GridPLD:
    """The Poisson-subsampled pair of a composed inner pair given by its PLD (P-masses p at losses l, Q-mass
    e^{-l} p, the rest of Q, r = 1 - sum e^{-l} p, at loss -inf; P-mass at +inf): "remove" is
    (q P + (1-q) Q, Q) with losses psi(l) = ln(1 - q + q e^l) (and ln(1-q) for r), "add" is
    (Q, q P + (1-q) Q) with losses -psi(l) (Zhu, Dong & Wang 2022, Thm 11: this holds for any dominating
    pair of the inner mechanism, in particular a composition). Every atom is then put on the grid of
    ``step`` (default the inner grid's; any step: the atoms are placed one by one) keeping its P- and
    Q-mass (pessimistic) or rounded down (optimistic)."""
    step = inner.step if step is None else step
    losses = inner.losses
    keep = inner.pmf > 0
    l, p = losses[keep], inner.pmf[keep]
    # raise the losses below a cut to it (pessimistic, as in GridPLD.truncate): Q-mass errors are the P-mass
    # errors times e^{-l}, so this caps their amplification at e^{-cut}; after subsampling such outcomes sit
    # within q e^{cut} / (1-q) of ln(1-q) anyway, at most one cell of the output grid: the cut is
    # ln(step / q), within [_LOW_CUT, 0]
    cut = min(0.0, max(_LOW_CUT, math.log(step / q)))
    if pessimistic and l.size and l[0] < cut:
        low = l < cut
        moved = float(p[low].sum())
        l = np.append(cut, l[~low])
        p = np.append(moved, p[~low])
    log_q_mass = np.log(p) - l
    q_mass = np.exp(log_q_mass)
    total_q = float(q_mass.sum())
    err = inner.error * (1.0 + math.exp(min(700.0, -float(l[0])))) + _rounding(l, p)
    rest = 1.0 - total_q  # Q-mass at inner loss -inf
    if pessimistic:
        rest += err  # more Q-mass where P has none only lowers the losses below; keep it an upper bound
    rest = max(0.0, rest)
    log_1q, log_qq = math.log1p(-q), math.log(q)
    psi = np.logaddexp(log_1q, log_qq + l)
    if direction == "remove":
        masses = np.exp(np.logaddexp(log_qq + np.log(p), log_1q + log_q_mass))
        atoms = np.append(psi, log_1q)
        atom_masses = np.append(masses, (1 - q) * rest)
        inf_mass = q * inner.inf_mass
    else:
        atoms = np.append(-psi, -log_1q)
        atom_masses = np.append(q_mass, rest)
        inf_mass = 0.0
    if pessimistic:
        pld = from_atoms(step, atoms, atom_masses, inf_mass, True)
        return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + err, True)
    return _merged_atoms(step, atoms, atom_masses, inf_mass)


def _rounding(losses: np.ndarray, masses: np.ndarray) -> float:
    """Bound on the l1 float error of the atoms' P- and Q-masses computed from (loss, P-mass) atoms: each is an
    exp / log / logaddexp of arguments of size at most |ln p| + |l| (a relative error of u times that, plus a
    few ulps), summed pairwise (log2 n ulps more): 8 u sum over atoms of (p + p e^{-l}) (|ln p| + |l| + 8 +
    log2 n), evaluated with its own rounding covered by the factor 8."""
    keep = masses > 0
    if not keep.any():
        return 0.0
    p, l = masses[keep], losses[keep]
    log_p = np.log(p)
    weight = p + np.exp(np.minimum(log_p - l, 700.0))
    size = np.abs(log_p) + np.abs(l) + 8 + math.log2(masses.size + 1)
    return 8 * _U * float(np.dot(weight, size)) * (1 + 1e-3)


def subsampled_lower_pair(remove: GridPLD, add: GridPLD, q: float,
                          step: float | None = None) -> tuple[GridPLD, GridPLD]:
    """Optimistic (remove, add) PLDs of the Poisson-subsampled pair from the optimistic PLDs of the inner
    pair (P, Q) in both directions: "remove" (q P + (1-q) Q, Q) from the inner "remove" PLD, "add"
    (Q, q P + (1-q) Q) from the inner "add" PLD (losses m = ln dQ/dP under Q: the mixture's loss is
    -ln(q e^{-m} + 1 - q), and Q-mass where P has none sits at -ln(1-q)).

    Why each stays a lower bound (Blackwell order of measure pairs): an optimistic PLD is obtained from
    the exact pair by merging outcomes, lowering the first measure and raising the second (rounding a loss
    down keeps the P-mass and raises the implied Q-mass), and all three commute with composition.
    "add": merging commutes with the mixture, a raised P only raises the mixture's second measure, and
    the optimistic PLD lowers Q only by dropping whole outcomes (whose mixture outcomes then carry no
    first measure and never count). "remove": a raised Q enters the mixture's first measure as
    (1-q) Q; that is a merge of the mixture's Q-only outcome ((1-q) r, r) into the raised atom as long as
    the implied Q-masses sum to at most 1, so P-mass is dropped from the lowest losses (where it carries
    the most Q-mass) until they do, float error included; the rest of Q is the Q-only outcome at loss
    ln(1-q), understated by the float error (dropping first-measure mass is allowed). The result is on the
    grid of ``step`` (default the inner grid's)."""
    return _lower_remove(remove, q, step or remove.step), _lower_add(add, q, step or add.step)


def _lower_remove(inner: GridPLD, q: float, step: float) -> GridPLD:
    keep = inner.pmf > 0
    l, p = inner.losses[keep], inner.pmf[keep]
    low = l < _LOW_CUT  # dropped: their mixture atoms sit within q e^{_LOW_CUT} / (1-q) of ln(1-q) anyway
    l, p = l[~low], p[~low]
    log_1q, log_qq = math.log1p(-q), math.log(q)
    if l.size == 0:
        return from_atoms(step, np.array([log_1q]), np.array([1.0 - q]), q * inner.inf_mass, False)
    q_mass = p * np.exp(-l)  # l >= _LOW_CUT: no overflow
    err_q = inner.error * math.exp(-float(l[0])) + _rounding(l, p)  # bound on the error of sum q_mass
    excess = float(q_mass.sum()) + err_q - 1.0
    if excess > 0:  # drop P-mass from the lowest losses until the implied Q-masses sum to at most 1
        cum = np.cumsum(q_mass)
        cut = int(np.searchsorted(cum, excess))
        if cut >= q_mass.size:
            return from_atoms(step, np.array([log_1q]), np.array([1.0 - q]), q * inner.inf_mass, False)
        share = min(1.0, (excess - (float(cum[cut - 1]) if cut else 0.0)) / float(q_mass[cut]) * (1 + 16 * _U))
        p = p.copy()
        p[cut] *= 1.0 - share
        p[:cut] = 0.0
        q_mass = p * np.exp(-l)
    rest = max(0.0, 1.0 - float(q_mass.sum()) - err_q)
    psi = np.logaddexp(log_1q, log_qq + l)
    masses = q * p + (1 - q) * q_mass
    pld = _merged_atoms(step, np.append(psi, log_1q), np.append(masses, (1 - q) * rest), q * inner.inf_mass)
    err = inner.error * (q + (1 - q) * math.exp(-float(l[0]))) + _rounding(l, p)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + err, False)


def _lower_add(inner: GridPLD, q: float, step: float) -> GridPLD:
    keep = inner.pmf > 0
    m, u = inner.losses[keep], inner.pmf[keep]
    log_1q = math.log1p(-q)
    atoms = np.append(-np.logaddexp(log_1q, math.log(q) - m), -log_1q)
    pld = _merged_atoms(step, atoms, np.append(u, inner.inf_mass), 0.0)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + inner.error + _rounding(m, u), False)


def _merged_atoms(step: float, losses: np.ndarray, masses: np.ndarray, inf_mass: float) -> GridPLD:
    """Optimistic grid PLD of atoms (loss, P-mass): the atoms in each centred cell (e_k - step/2, e_k + step/2]
    are merged (a post-processing) and the cells are fixed and rounded down as in
    :func:`.grid.from_centred_masses` (second-order accurate where the atoms are dense)."""
    keep = masses > 0
    losses, masses = losses[keep], masses[keep]
    cell = np.ceil(losses / step - 0.5).astype(np.int64)
    first = int(cell.min())
    idx = cell - first
    size = int(idx.max()) + 1
    mass_p = np.bincount(idx, weights=masses, minlength=size)
    # e^{e_k} times the Q-mass m e^{-loss}: exponents within [-step/2, step/2)
    scaled_q = np.bincount(idx, weights=masses * np.exp((cell * step) - losses), minlength=size)
    err = 8 * _U * (mass_p + scaled_q)
    return from_centred_masses(step, first, mass_p, scaled_q, err, err, above=0.0, inf_mass=inf_mass)

