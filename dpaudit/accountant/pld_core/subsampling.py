"""The Poisson-subsampled pair of a composed inner pair given by its grid PLD (sampled sub-trees).

For an inner pair with P-masses p at losses l (Q-mass e^{-l} p, the rest of Q, r = 1 - sum e^{-l} p, at loss
-inf; P-mass at +inf): "remove" is (q P + (1-q) Q, Q) with losses psi(l) = ln(1 - q + q e^l) (and ln(1-q)
for r), "add" is (Q, q P + (1-q) Q) with losses -psi(l) (Zhu, Dong & Wang 2022, Thm 11: this holds for
any dominating pair of the inner mechanism, in particular a composition).

Float error. The sampled pair carries the inner PLD's own error (absolute, in l1) times the largest weight an inner
mass gets (1 + e^{-l} at the lowest inner loss kept); the lower side's remove direction can take the inner Q-masses
composed by a convolution of their own instead (their own error, not the P-masses' times e^{-l}). The arithmetic of
the sampled atoms themselves (products, exponentials and logarithms of exact grid losses) rounds each mass and loss
relatively, by a few ulps: that is absorbed into the masses and losses on the declared side (raised for the upper
side, lowered for the lower side; delta is increasing in every mass and every loss, also after composition) rather
than charged as an absolute error, which a many-fold composition would otherwise multiply into a floor near 1e-12.
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
    # the masses' own rounding is relative (a product and an exp of an exact grid loss, a few ulps each): it is
    # absorbed into the masses, raised (pessimistic) or lowered (optimistic) by _MASS_ROUNDING, and into the
    # atoms' losses, moved the same way by a few ulps of their size; only the inner PLD's own error (absolute,
    # in l1) is carried as error
    side = 1.0 if pessimistic else -1.0
    q_mass = p * np.exp(-l)
    total_q = float(q_mass.sum())
    err = inner.error * (1.0 + math.exp(min(700.0, -float(l[0]))))
    rest = 1.0 - total_q  # Q-mass at inner loss -inf
    if pessimistic:  # more Q-mass where P has none only lowers the losses below; keep it an upper bound
        rest += err + (_MASS_ROUNDING + (l.size + 4) * _U) * total_q
    else:
        rest -= err + (_MASS_ROUNDING + (l.size + 4) * _U) * total_q
    rest = max(0.0, rest)
    log_1q, log_qq = math.log1p(-q), math.log(q)
    psi = np.logaddexp(log_1q, log_qq + l)
    if direction == "remove":
        masses = p * (q + (1.0 - q) * np.exp(-l))
        atoms = np.append(psi, log_1q)
        atom_masses = np.append(masses, (1 - q) * rest)
        inf_mass = q * inner.inf_mass
    else:
        atoms = np.append(-psi, -log_1q)
        atom_masses = np.append(q_mass, rest)
        inf_mass = 0.0
    atoms = _moved(atoms, side)
    atom_masses = atom_masses * (1.0 + side * _MASS_ROUNDING)
    if pessimistic:
        pld = from_atoms(step, atoms, atom_masses, inf_mass, True)
        return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + err, True)
    return _merged_atoms(step, atoms, atom_masses, inf_mass)


_MASS_ROUNDING = 32 * _U  # relative rounding of an atom's mass (p (q + (1-q) e^{-l}), p e^{-l}), with room


def _moved(losses: np.ndarray, side: float) -> np.ndarray:
    """Computed losses (logs and log-sum-exps of exact grid losses, a few ulps of their size off) moved up
    (``side`` = 1, pessimistic) or down (-1, optimistic) past any such rounding: raising a loss only raises
    delta, lowering it only lowers delta, also after composition."""
    return losses + side * 8 * _U * (np.abs(losses) + 1.0)


def subsampled_lower_pair(remove: GridPLD, add: GridPLD, q: float, step: float | None = None,
                          remove_q: GridPLD | None = None) -> tuple[GridPLD, GridPLD]:
    """Optimistic (remove, add) PLDs of the Poisson-subsampled pair from the optimistic PLDs of the inner
    pair (P, Q) in both directions: "remove" (q P + (1-q) Q, Q) from the inner "remove" PLD, "add"
    (Q, q P + (1-q) Q) from the inner "add" PLD (losses m = ln dQ/dP under Q: the mixture's loss is
    -ln(q e^{-m} + 1 - q), and Q-mass where P has none sits at -ln(1-q)).

    ``remove_q``: the implied Q-masses (P-mass times e^{-loss}) of the inner "remove" PLD composed by a
    convolution of their own (``compose_leaves(..., measure="q")``); its error is then that of those masses,
    not the P-masses' error times e^{-loss} (up to e^4 = 55 times it at the lowest loss kept), which sets the
    float floor of a sampled sub-tree composed many times at small delta. Each side may have cut different
    tail cells: a mass missing on one side only lowers the mixture's masses.

    Why each stays a lower bound (Blackwell order of measure pairs): an optimistic PLD is obtained from
    the exact pair by merging outcomes, lowering the first measure and raising the second (rounding a loss
    down keeps the P-mass and raises the implied Q-mass), and all three commute with composition.
    "add": merging commutes with the mixture, a raised P only raises the mixture's second measure, and
    the optimistic PLD lowers Q only by dropping whole outcomes (whose mixture outcomes then carry no
    first measure and never count). "remove": a raised Q enters the mixture's first measure as
    (1-q) Q; that is a merge of the mixture's Q-only outcome ((1-q) r, r) into the raised atom as long as
    the implied Q-masses sum to at most 1, so P-mass is dropped from the lowest losses (where it carries
    the most Q-mass) until they do, float error included; the rest of Q is the Q-only outcome at loss
    ln(1-q), understated by the float error (dropping first-measure mass is allowed). Float rounding of
    the masses (relative, a few ulps) and of the losses is taken downward (masses lowered, losses moved
    down: delta, a sum of masses times weights increasing in the loss, composed by convolution, only
    falls). The result is on the grid of ``step`` (default the inner grid's)."""
    return _lower_remove(remove, q, step or remove.step, remove_q), _lower_add(add, q, step or add.step)


def _aligned(pld: GridPLD, other: GridPLD | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(losses, masses of ``pld``, masses of ``other`` or those of ``pld`` times e^{-loss}) on the cells
    where either has mass (both on one grid)."""
    if other is None:
        keep = pld.pmf > 0
        l, p = pld.losses[keep], pld.pmf[keep]
        return l, p, p * np.exp(-l)
    if other.step != pld.step:
        raise ValueError("the inner PLD and its Q-masses must share one grid")
    lo = min(pld.offset, other.offset)
    size = max(pld.offset + pld.pmf.size, other.offset + other.pmf.size) - lo
    p, b = np.zeros(size), np.zeros(size)
    p[pld.offset - lo:pld.offset - lo + pld.pmf.size] = pld.pmf
    b[other.offset - lo:other.offset - lo + other.pmf.size] = other.pmf
    keep = (p > 0) | (b > 0)
    return (lo + np.flatnonzero(keep)) * pld.step, p[keep], b[keep]


def _lower_remove(inner: GridPLD, q: float, step: float, inner_q: GridPLD | None = None) -> GridPLD:
    l, p, q_mass = _aligned(inner, inner_q)
    low = l < _LOW_CUT  # dropped: their mixture atoms sit within q e^{_LOW_CUT} / (1-q) of ln(1-q) anyway
    l, p, q_mass = l[~low], p[~low], q_mass[~low]
    log_1q, log_qq = math.log1p(-q), math.log(q)
    if l.size == 0:
        return from_atoms(step, np.array([log_1q]), np.array([1.0 - q]), q * inner.inf_mass, False)
    # error of the Q-masses: of the P-masses times e^{-loss} (l >= _LOW_CUT: no overflow), or the separately
    # composed Q-masses' own; plus their relative rounding and the sum's
    if inner_q is None:
        err_q = inner.error * math.exp(-float(l[0]))
        q_mass = q_mass * (1.0 - _MASS_ROUNDING)
    else:
        err_q = inner_q.error
    err_sum = err_q + (_MASS_ROUNDING + (l.size + 4) * _U) * float(q_mass.sum())
    excess = float(q_mass.sum()) + err_sum - 1.0
    if excess > 0:  # drop P-mass from the lowest losses until the implied Q-masses sum to at most 1
        cum = np.cumsum(q_mass)
        cut = int(np.searchsorted(cum, excess))
        if cut >= q_mass.size:
            return from_atoms(step, np.array([log_1q]), np.array([1.0 - q]), q * inner.inf_mass, False)
        share = min(1.0, (excess - (float(cum[cut - 1]) if cut else 0.0)) / float(q_mass[cut]) * (1 + 16 * _U))
        p, q_mass = p.copy(), q_mass.copy()
        p[cut] *= 1.0 - share
        q_mass[cut] *= 1.0 - share
        p[:cut] = 0.0
        q_mass[:cut] = 0.0
    rest = max(0.0, 1.0 - float(q_mass.sum()) - err_sum)
    psi = _moved(np.logaddexp(log_1q, log_qq + l), -1.0)
    masses = (q * p + (1 - q) * q_mass) * (1.0 - _MASS_ROUNDING)
    pld = _merged_atoms(step, np.append(psi, log_1q - 8 * _U), np.append(masses, (1 - q) * rest), q * inner.inf_mass)
    err = q * inner.error + (1 - q) * err_q
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + err, False)


def _lower_add(inner: GridPLD, q: float, step: float) -> GridPLD:
    keep = inner.pmf > 0
    m, u = inner.losses[keep], inner.pmf[keep]
    log_1q = math.log1p(-q)
    # the masses are the inner ones (no arithmetic on them); the computed losses are moved down past their rounding
    atoms = _moved(np.append(-np.logaddexp(log_1q, math.log(q) - m), -log_1q), -1.0)
    pld = _merged_atoms(step, atoms, np.append(u, inner.inf_mass), 0.0)
    return GridPLD(pld.step, pld.offset, pld.pmf, pld.inf_mass, pld.error + inner.error, False)


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

