"""PLD pairs of normalised leaves, read through the family registry, and their composition on a grid.

Each leaf's (remove, add) pair comes from the family registered for its kind (:mod:`.registry`); pairs are
composed by FFT convolution with exponentiation by squaring (:mod:`.pld_core.grid`). Both adjacency
directions are kept separately; a symmetric pair is one object twice. Exact compositions within a family
(unsampled Gaussians: mu^2 add up; unsampled zCDP steps: rho adds up) are merged first (:func:`merged`).
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .leaf import Leaf
from .pld_core.grid import PRECISE_BUDGET, GridPLD, error_budget, identity
from .registry import FAMILIES

__all__ = ["build_leaf", "compose_leaves", "merged", "leaf_loss_moments", "leaf_loss_summary", "log_mgf_curve"]


_PROBE_STEP = 64.0  # loss step of the coarse build measuring a leaf's span
_WIDE = 4096.0  # a probed span beyond this sets the first step (2 * 10^6 cells at 2e-3)


def build_leaf(leaf: Leaf, relation: str, step: float, pessimistic: bool,
               lam: float | None = None, only: str | None = None) -> tuple[GridPLD | None, GridPLD | None]:
    """(remove-direction PLD, add-direction PLD) of a normalised leaf; the same object twice when the
    pair is symmetric. ``leaf.param`` is at sensitivity C; replace-one doubles it where needed.
    ``lam``: grid the continuous tails far enough (and untruncated) for a read-out tilted by e^{lam L}.
    ``only`` ("remove" or "add"): the other direction of an asymmetric pair is not built (None)."""
    return FAMILIES.of_kind(leaf.kind).pld_pair(leaf, relation, step, pessimistic, lam, only)


def merged(leaves: Counter[Leaf]) -> Counter[Leaf]:
    """The leaves with every family's unsampled leaves composed exactly where the family knows how (all
    unsampled Gaussians into one, mu^2 adding up; all unsampled ZCDP leaves into one total, Bun & Steinke
    2016, Lemma 2.3, whose dominating pair is built once); merged leaves come last, in registry order."""
    out: Counter[Leaf] = Counter()
    groups: dict[str, list[tuple[Leaf, int]]] = {}
    for leaf, count in leaves.items():
        family = FAMILIES.of_kind(leaf.kind)
        if family.merge_unsampled is not None and leaf.sampling is None:
            groups.setdefault(family.name, []).append((leaf, count))
        else:
            out[leaf] += count
    for family in FAMILIES:
        if family.name in groups:
            for leaf, count in family.merge_unsampled(groups[family.name]):
                out[leaf] += count
    return out


def compose_leaves(leaves: Counter[Leaf], relation: str, step: float, pessimistic: bool,
                   fine: int = 1, only: str | None = None, measure: str = "p",
                   built: dict[Leaf, tuple[GridPLD | None, GridPLD | None]] | None = None
                   ) -> tuple[GridPLD | None, GridPLD | None]:
    """(remove, add) composed PLDs of the leaves on a grid of the given step (the same object twice
    while every leaf is symmetric); with ``fine`` = 2^r > 1 (upper bound only) each leaf is discretised
    on step / fine and coarsened to step while it is self-composed. ``only`` ("remove" or "add"): that
    direction alone is computed, the other is None (unless every leaf is symmetric: one object twice).

    ``measure="q"`` (lower bound only): the same composition's implied Q-masses (each P-mass times e^{-loss};
    the Q-mass of a composition is the convolution of the parts' Q-masses) by a convolution of their own, each
    part's turned into Q-masses (:func:`_q_masses`) before it is composed. Its float error is that of the
    Q-masses themselves, where e^{-loss} times the P-masses' error would be far larger at negative losses
    (the remove side of a Poisson-sampled sub-tree, :func:`.pld_core.subsampling.subsampled_lower_pair`).

    ``built``: leaf pairs already built with these arguments (``build_leaf(leaf, relation, step / fine,
    pessimistic, only=only)``), used instead of building them again."""
    if measure not in ("p", "q") or (measure == "q" and (pessimistic or fine != 1)):
        raise ValueError("measure must be 'p', or 'q' for an optimistic composition on one grid")
    convert = _q_masses if measure == "q" else (lambda pld: pld)
    remove: GridPLD | None = None
    add: GridPLD | None = None
    symmetric = True  # every leaf so far a symmetric pair (then both directions are one object)
    # a float-error budget below the default (a small target delta): the convolutions of different leaves in
    # extended precision too (a few of them; their float64 bound, ~1e-12, would be charged in full)
    precise = error_budget() < PRECISE_BUDGET
    for leaf, count in sorted(leaves.items(), key=lambda item: repr(item[0])):
        family = FAMILIES.of_kind(leaf.kind)
        exact = None
        if family.exact_power is not None and leaf.sampling is None:  # e.g. the exact binomial of binary RR
            exact = family.exact_power(leaf, count, step, pessimistic)
        if exact is not None:
            part_remove = part_add = convert(exact)
        else:
            leaf_remove, leaf_add = (built[leaf] if built is not None and leaf in built
                                     else build_leaf(leaf, relation, step / fine, pessimistic, only=only))
            if measure == "q":
                leaf_remove, leaf_add = (convert(leaf_remove),) * 2 if leaf_add is leaf_remove else (
                    None if leaf_remove is None else convert(leaf_remove), None if leaf_add is None else convert(leaf_add))
            final = step if fine > 1 else None

            def power(pld: GridPLD | None) -> GridPLD | None:
                return None if pld is None else pld.self_compose(count, final_step=final)

            part_remove = power(leaf_remove)
            part_add = part_remove if leaf_add is leaf_remove else power(leaf_add)
        if symmetric and part_add is part_remove:
            remove = add = part_add if add is None else add.compose(part_add, precise=precise)
            continue
        symmetric = False
        if only != "add":
            remove = part_remove if remove is None else remove.compose(part_remove, precise=precise)
        if only != "remove":
            add = part_add if add is None else add.compose(part_add, precise=precise)
    if remove is None and add is None:
        one = identity(step, pessimistic)
        return one, one
    if symmetric:
        return remove, add  # one object
    return (None if only == "add" else remove), (None if only == "remove" else add)


_Q_ROUNDING = 16 * 2.0**-53  # relative rounding of a Q-mass p e^{-l} (an exp of an exact grid loss and a product)


def _q_masses(pld: GridPLD) -> GridPLD:
    """An optimistic PLD's implied Q-masses, p e^{-l} at each grid loss l, as a vector on the same grid (mass
    at +inf has none), each lowered past its rounding; its error is the P-masses' error times the largest
    e^{-l}. A lower bound on the Q-masses wherever the PLD's masses are exact."""
    if pld.pessimistic:
        raise ValueError("Q-masses are taken of optimistic PLDs only")
    keep = pld.pmf > 0
    with np.errstate(over="ignore"):
        scale = np.exp(-pld.losses[keep])
    masses = np.zeros(pld.pmf.size)
    masses[keep] = pld.pmf[keep] * scale * (1.0 - _Q_ROUNDING)
    error = 0.0 if pld.error == 0.0 or not keep.any() else pld.error * float(scale.max())
    if not np.all(np.isfinite(masses)) or not math.isfinite(error):
        raise OverflowError("implied Q-masses beyond the float range")
    return GridPLD(pld.step, pld.offset, masses, 0.0, error, False)


def leaf_loss_moments(leaf: Leaf, relation: str, pessimistic: bool = True) -> tuple[float, float, float]:
    """(largest loss mean, largest loss variance over the two directions, loss span) of a leaf's
    pessimistic PLD, from a discretisation with 500 to 20,000 cells; used only to plan the grid. The first
    try, at step 2e-3, is within range for loss spans from 1 to 40 (subsampled Gaussians at common noise
    levels); otherwise the leaf is rebuilt at 1/1500 of its span."""
    return leaf_loss_summary(leaf, relation, pessimistic)[:3]


def leaf_loss_summary(leaf: Leaf, relation: str, pessimistic: bool = True, lams: np.ndarray | None = None,
                      min_step: float = 0.0
                      ) -> tuple[float, float, float, tuple[np.ndarray, np.ndarray, float, float] | None]:
    """:func:`leaf_loss_moments` and, at each tilt in ``lams``, ln M(lam), the log moment generating function
    of each direction's finite losses (:func:`log_mgf_curve`), with each direction's mass at +inf: (remove
    curve, add curve, remove inf mass, add inf mass), from the same discretisation (None without ``lams``).
    Of the pessimistic PLD, a dominating pair's, the curves are upper bounds (Chernoff bounds from them hold).
    ``min_step``: no build on a finer grid (a sampled sub-tree whose inner composition would need too many cells
    there; its summary then rests on fewer than 500 cells)."""
    step = max(2e-3, min_step)
    # a leaf whose losses span more than _WIDE (little noise) starts at its own scale, measured on a coarse grid
    # first: one build at 2e-3 would hold up to ~10^9 cells. (A coarse grid widens a span by a few of its cells,
    # more for a composed sub-tree, so only spans far beyond the usual trigger it.)
    with np.errstate(all="ignore"):  # a span estimate: the coarse grid's edge cases (0/0 far out) are moot
        probe = build_leaf(leaf, relation, _PROBE_STEP, pessimistic)
    wide = max(_span(probe[0]), _span(probe[1]))
    if wide > _WIDE:
        step = max(wide / 1500.0, min_step)
    for _ in range(6):
        remove, add = build_leaf(leaf, relation, step, pessimistic)
        span = max(_span(remove), _span(add))
        cells = span / step
        if 500 <= cells <= 20000 or step < 1e-12 or (cells < 500 and step <= min_step):
            break
        step = max(span / 1500.0, 1e-13, min_step)
    means, variances = [], []
    for pld in (remove, add):
        l, p = pld.losses, pld.pmf
        total = p.sum()
        if total <= 0:  # every loss at +inf (little noise): no finite part to summarise
            means.append(0.0)
            variances.append(0.0)
            continue
        mean = float((l * p).sum() / total)
        means.append(mean)
        variances.append(float(((l - mean) ** 2 * p).sum() / total))
    curves = None
    if lams is not None:
        # unpooled: pooling at a block's top loss adds up to lam times the block width per leaf, n times
        remove_curve = log_mgf_curve(remove, lams, remove.pmf.size)
        add_curve = remove_curve if add is remove else log_mgf_curve(add, lams, add.pmf.size)
        curves = (remove_curve, add_curve, remove.inf_mass, add.inf_mass)
    return max(means), max(variances), span, curves


def log_mgf_curve(pld: GridPLD, lams: np.ndarray, cells: int = 2048) -> np.ndarray:
    """ln M(lam) = ln sum_i p_i e^{lam l_i} of a grid PLD's finite part at each lam, with the masses pooled
    into at most ``cells`` blocks at each block's top loss (an over-estimate, also of the float error: the
    largest exponent is factored out and a relative margin of 1e-12 added)."""
    block = max(1, -(-pld.pmf.size // cells))
    pad = (-pld.pmf.size) % block
    pmf = np.append(pld.pmf, np.zeros(pad)).reshape(-1, block).sum(axis=1)
    losses = (pld.offset + block - 1 + block * np.arange(pmf.size)) * pld.step
    keep = pmf > 0
    if not keep.any():  # no finite loss: M(lam) of the finite part is 0
        return np.full(np.shape(lams), -np.inf)
    log_p, losses = np.log(pmf[keep]), losses[keep]
    exponents = log_p[None, :] + lams[:, None] * losses[None, :]
    top = exponents.max(axis=1)
    return top + np.log(np.exp(exponents - top[:, None]).sum(axis=1)) + 1e-12 * (1.0 + np.abs(top))


def _span(pld: GridPLD) -> float:
    return float(pld.pmf.size * pld.step)
