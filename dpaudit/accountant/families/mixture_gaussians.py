"""The mixture-of-Gaussians family: ``MixtureOfGaussians(sigma, c, p)``, N(0, sigma^2) against sum_i p_i N(c_i, sigma^2).

Source: Choquette-Choo, Ganesh, Steinke & Thakurta (2024), "Privacy amplification for matrix mechanisms"
(arXiv:2310.15526), the mechanism of dp_accounting's ``MixtureOfGaussiansDpEvent`` (its PLD:
``from_mixture_gaussian_mechanism``).

* Normal form: ("mog", max m_i) with the scaled sensitivities m_i = c_i / sigma and the probabilities in
  ``Leaf.data``. Add/remove-one only (as dp_accounting); other relations and samplers are refused.
* PLD pair, exact: remove direction (P, Q) = (sum_i p_i N(m_i, 1), N(0, 1)) with loss
  L(x) = ln sum_i p_i exp(m_i x - m_i^2 / 2), increasing and convex in x (every m_i >= 0), so
  P(L > v) = sum_i p_i Phi(m_i - x_v), Q(L > v) = Phi(-x_v) at the root x_v of L(x) = v (Newton from the
  right: monotone for a convex increasing function, never past the root); add direction the reversed pair,
  loss -L(x). Poisson sampling at rate q (add/remove) is the mixture with a zero sensitivity of weight 1 - q.
* No Renyi-DP curve, pure-DP level or zCDP parameter is claimed (RDPAccountant refuses the event).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp, ndtr

from ...events import MixtureOfGaussians
from ..leaf import Leaf
from ..pld_core.base_pairs import Z_DEFAULT, Tails, tails_pld, tilt_quantile
from ..registry import Family

__all__ = ["FAMILY", "mixture_of_leaf"]

_NEWTON_STEPS = 400
_TOLERANCE = 1e-12  # relative; far above the float error of the loss and of the converged Newton root


def mixture_of_leaf(leaf: Leaf) -> tuple[np.ndarray, np.ndarray]:
    """(scaled sensitivities m_i, probabilities p_i) of a "mog" leaf, its Poisson sampling folded in."""
    m, p = (np.array(part, dtype=float) for part in leaf.data)
    if leaf.sampling == "poisson":
        m, p = np.append(0.0, m), np.append(1.0 - leaf.q, leaf.q * p)
    keep = p > 0
    return m[keep], p[keep]


class _MixtureTails(Tails):
    """Tails of the remove direction (``reverse=False``: P = mixture, Q = N(0, 1)) or the add direction."""

    def __init__(self, m: np.ndarray, p: np.ndarray, reverse: bool, pessimistic: bool) -> None:
        self.m, self.log_p, self.p, self.reverse = m, np.log(p), p, reverse
        # the root is moved by _TOLERANCE so that every cell's losses lie on the side its grid point assumes
        self.shift = (1.0 if reverse else -1.0) * (1.0 if pessimistic else -1.0) * _TOLERANCE
        zero = m == 0.0
        self.floor = float(logsumexp(self.log_p[zero])) if zero.any() else -math.inf  # L(-inf)
        self.top = int(np.argmax(m))

    def loss(self, x):
        x = np.asarray(x, dtype=float)
        return logsumexp(self.log_p + np.multiply.outer(x, self.m) - self.m * self.m / 2, axis=-1)

    def _root(self, v: np.ndarray) -> np.ndarray:
        """x with L(x) = v (-inf where v <= L(-inf)), moved by the tolerance towards the heavy side; Newton
        from a point right of the root, stopped when its steps are below the float resolution. The start is
        the smallest root of one component's term plus the zero components' floor (L is at least each, so each
        such root lies right of L's root); Newton then needs a few steps only."""
        below = v <= self.floor
        target = np.where(below, self.floor + 1.0, v)
        positive = self.m > 0
        m_pos, log_p_pos = self.m[positive], self.log_p[positive]
        with np.errstate(divide="ignore"):
            rest = target + np.log(-np.expm1(np.minimum(self.floor - target, 0.0)))  # ln(e^v - e^floor)
        starts = (rest[..., None] - log_p_pos + m_pos * m_pos / 2) / m_pos
        x = starts.min(axis=-1)
        flat_x, flat_target = x.reshape(-1), target.reshape(-1)
        active = np.arange(flat_x.size)  # points whose Newton steps are still above the float resolution
        for _ in range(_NEWTON_STEPS):
            xa = flat_x[active]
            terms = self.log_p + np.multiply.outer(xa, self.m) - self.m * self.m / 2
            top = terms.max(axis=-1, keepdims=True)
            weights = np.exp(terms - top)
            total = weights.sum(axis=-1)
            value = top[:, 0] + np.log(total)
            slope = (weights @ self.m) / total
            move = np.maximum((value - flat_target[active]) / slope, 0.0)
            flat_x[active] = xa - move  # convex, increasing: the tangent root stays right of the root
            active = active[move > 4e-16 * (1.0 + np.abs(xa - move))]
            if active.size == 0:
                break
        else:
            raise ArithmeticError("the mixture-of-Gaussians loss could not be inverted to full precision")
        x = flat_x.reshape(x.shape)
        return np.where(below, -math.inf, x + self.shift * (1.0 + np.abs(x)))

    def _mixture_above(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(mixture mass above x, below x)."""
        diff = np.subtract.outer(self.m, x)  # (k, n)
        return self.p @ ndtr(diff), self.p @ ndtr(-diff)

    def __call__(self, v):
        v = np.asarray(v, dtype=float)
        if not self.reverse:  # L > v  <=>  X > x_v
            x = self._root(v)
            sp, fp = self._mixture_above(x)
            return sp, fp, ndtr(-x), ndtr(x)
        x = self._root(-v)  # -L > v  <=>  X < x_{-v}
        sq_mix, fq_mix = self._mixture_above(x)
        return ndtr(x), ndtr(-x), fq_mix, sq_mix

    def range(self, z: float = Z_DEFAULT) -> tuple[float, float]:
        top = float(self.m.max())
        if not self.reverse:
            return float(self.loss(-Z_DEFAULT)), float(self.loss(top + z))
        return -float(self.loss(top + Z_DEFAULT)), -float(self.loss(-z))

    def atoms(self) -> list[tuple[float, float, float]]:
        return []


def _normal_form(event: MixtureOfGaussians) -> Leaf:
    sigma = event.standard_deviation
    m = tuple(c / sigma for c in event.sensitivities)
    return Leaf("mog", max(m), data=(m, tuple(event.sampling_probs)))


def _check(leaf: Leaf, relation: str) -> str | None:
    if relation != "add_remove":
        return "the mixture of Gaussians is accounted under neighbouring='add_remove' only (as dp_accounting)"
    if leaf.sampling not in (None, "poisson"):
        return "the mixture of Gaussians can be Poisson-sampled only (no analysis of other samplers)"
    return None


def _pld_pair(leaf: Leaf, relation: str, step: float, pessimistic: bool, lam: float | None = None,
              only: str | None = None):
    reason = _check(leaf, relation)
    if reason is not None:
        from ...errors import UnsupportedEventError

        raise UnsupportedEventError(reason)
    m, p = mixture_of_leaf(leaf)
    if not (m > 0).any():  # reveals nothing
        from ..pld_core.grid import identity

        one = identity(step, pessimistic)
        return one, one
    z = tilt_quantile(float(m.max()), lam)
    remove = None if only == "add" else tails_pld(_MixtureTails(m, p, False, pessimistic), 1.0, "sym", step, pessimistic, z)
    add = None if only == "remove" else tails_pld(_MixtureTails(m, p, True, pessimistic), 1.0, "sym", step, pessimistic, z)
    return remove, add


FAMILY = Family(
    name="mixture_of_gaussians", events=(MixtureOfGaussians,), kinds=("mog",), normal_form=_normal_form,
    pld_pair=_pld_pair, pld_check=_check, rdp_check=_check,
)
