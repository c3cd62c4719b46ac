"""Grid PLDs of mechanisms given by exact atoms (loss, ln P-mass, ln Q-mass), and of their sampled versions.

Pessimistic: each atom split onto the two grid points around it keeping its P- and Q-mass
(:func:`.grid.from_atoms`), truncated mass sent to +inf; optimistic: losses rounded down. Sampling:
Poisson (add/remove) gives the pairs (qP + (1-q)Q, Q) and (Q, qP + (1-q)Q) (Zhu, Dong & Wang 2022);
replace-one the mixture with a fresh loss-0 outcome of weight 1 - q (joint convexity); sampling without
replacement (replace-one) the remove pair symmetrised as in Dong, Roth & Su (2022, Thm. 4.2).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from ..leaf import Leaf
from .grid import GridPLD, from_atoms

__all__ = ["atom_pair", "Atoms"]

_U = 2.0**-53

#: (leaf, sensitivity scale) -> (losses, ln P-masses, ln Q-masses, truncated mass bound).
Atoms = Callable[[Leaf, float], tuple[np.ndarray, np.ndarray, np.ndarray, float]]


def _directed(losses, log_p, log_q, direction: str, q: float):
    """(losses, log-masses of the first distribution) of the pair in the given direction."""
    if direction == "sym":
        return losses, log_p
    with np.errstate(divide="ignore", invalid="ignore"):
        log_mix = np.logaddexp(math.log(q) + log_p, math.log1p(-q) + log_q)
        if direction == "remove":
            return log_mix - log_q, log_mix
        return log_q - log_mix, log_q


def _grid_atoms(losses: np.ndarray, log_mass: np.ndarray, tail: float, step: float, pessimistic: bool) -> GridPLD:
    """A grid PLD of atoms (loss may be +inf; -inf atoms carry no P-mass), tail mass to +inf if pessimistic."""
    keep = np.isfinite(log_mass)
    losses, mass = losses[keep], np.exp(log_mass[keep])
    inf = np.isposinf(losses)
    inf_mass = float(mass[inf].sum())
    losses, mass = losses[~inf], mass[~inf]
    if pessimistic:
        inf_mass += tail
        error = 16 * _U * float(mass.sum()) + 1e-300  # float error of the masses (a few ulps each)
    else:
        mass = mass * (1.0 - 1e-12)
        error = 0.0
    pld = from_atoms(step, losses, mass, min(1.0, inf_mass), pessimistic)
    return replace(pld, error=pld.error + error)


def _mixture_with_zero(losses, log_mass, tail, q: float):
    """Atoms of (q P + (1-q) R, q Q + (1-q) R) with R a fresh outcome (loss 0)."""
    return (np.append(losses, 0.0), np.append(math.log(q) + log_mass, math.log1p(-q)), q * tail)


def _symmetrised_atoms(losses, log_mass, tail):
    """Dong-Roth-Su symmetrisation: keep losses > 0, mirror them (mass e^{-l}) and put the rest at 0."""
    finite = np.isfinite(log_mass)
    losses, mass = losses[finite], np.exp(log_mass[finite])
    inf_mass = float(mass[np.isposinf(losses)].sum()) + tail
    positive = (losses > 0) & np.isfinite(losses)
    lp, mp = losses[positive], mass[positive]
    mirrored = mp * np.exp(-lp)
    zero = max(0.0, 1.0 - float(mp.sum()) - float(mirrored.sum()) - inf_mass)
    out_l = np.concatenate([lp, -lp, [0.0, np.inf]])
    with np.errstate(divide="ignore"):
        out_m = np.log(np.concatenate([mp, mirrored, [zero, inf_mass]]))
    return out_l, out_m, 0.0


def atom_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, atoms: Atoms, additive: bool,
              attained_replace_one: bool) -> tuple[GridPLD, GridPLD]:
    """(remove, add) grid PLDs of an atom leaf, any sampling. ``additive``: the sensitivity doubles under
    replace-one; ``attained_replace_one``: the add/remove pairs at sensitivity C are attained under
    replace-one Poisson sampling (a record replaced by a zero record), so they serve as its lower side."""
    double = 2.0 if relation == "replace_one" and additive else 1.0
    if leaf.sampling is None:
        losses, log_p, _, tail = atoms(leaf, double)
        one = _grid_atoms(losses, log_p, tail, step, pessimistic)
        return one, one
    q = leaf.q
    if leaf.sampling == "poisson" and (relation == "add_remove" or (not pessimistic and attained_replace_one)):
        # add/remove: exact; replace-one lower bound: attained with a record replaced by a zero record
        losses, log_p, log_q, tail = atoms(leaf, 1.0)
        remove = _grid_atoms(*_directed(losses, log_p, log_q, "remove", q), tail, step, pessimistic)
        add = _grid_atoms(*_directed(losses, log_p, log_q, "add", q), tail, step, pessimistic)
        return remove, add
    losses, log_p, log_q, tail = atoms(leaf, double)
    if leaf.sampling == "poisson":  # replace-one: mixture with a fresh loss-0 outcome
        one = _grid_atoms(*_mixture_with_zero(losses, log_p, tail, q), step, pessimistic)
        return one, one
    # without replacement (replace-one only): remove pair of the replace-one base pair
    removed = _directed(losses, log_p, log_q, "remove", q)
    if not pessimistic:
        one = _grid_atoms(*removed, 0.0, step, pessimistic)
        return one, one
    one = _grid_atoms(*_symmetrised_atoms(*removed, tail), step, pessimistic)
    return one, one
