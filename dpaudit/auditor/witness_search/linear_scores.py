"""Linear learned scores: the logistic regressions of the input on the outputs, fit on selection rows.

:func:`score_projections` gives the real scores the magnitude family scans (each coordinate and, for vectors
and outputs with atoms, a one-hot logistic score); :func:`encoded_logistic` fits the memory-bounded
logistic score used when atoms are too many to one-hot encode.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from ..witness import Column, ColumnAtoms, EncodedLinear, Linear, Projection, atom_log_ratios

__all__ = ["score_projections", "encoded_logistic", "MAX_SCORE_COLUMNS", "LOGISTIC_SAMPLES"]


MAX_SCORE_COLUMNS = 64
LOGISTIC_SAMPLES = 40_000


def _logistic_projection(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> Linear | None:
    """Fit P[d | y] by L2-regularised logistic regression on (a subsample of) the selection batch."""
    take_a = a[rng.permutation(a.shape[0])[:LOGISTIC_SAMPLES]]
    take_b = b[rng.permutation(b.shape[0])[:LOGISTIC_SAMPLES]]
    features = Linear.features(atoms, np.concatenate([take_a, take_b]))
    mean, scale = features.mean(axis=0), features.std(axis=0)
    useful = scale > 0
    if not useful.any():
        return None
    scale = np.where(useful, scale, 1.0)
    x = (features - mean) / scale
    x = np.hstack([x, np.ones((x.shape[0], 1))])
    y = np.concatenate([np.ones(take_a.shape[0]), np.zeros(take_b.shape[0])])
    penalty = 1e-4

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        value = np.mean(np.logaddexp(0.0, z) - y * z) + penalty * w[:-1] @ w[:-1]
        gradient = x.T @ (1.0 / (1.0 + np.exp(-z)) - y) / x.shape[0]
        gradient[:-1] += 2 * penalty * w[:-1]
        return value, gradient

    fit = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 200})
    weights = np.where(useful, fit.x[:-1], 0.0)
    if not np.any(weights):
        return None
    return Linear(atoms, weights, mean, scale)


def score_projections(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> list[Projection]:
    """The real scores searched for half-lines: each coordinate (up to MAX_SCORE_COLUMNS) and, for vectors
    and outputs with atoms, a logistic-regression score learned on the selection outputs ``a``, ``b``."""
    width = a.shape[1]
    projections: list[Projection] = [Column(j, width) for j in range(min(width, MAX_SCORE_COLUMNS))]
    has_atoms = any(v.size for v in atoms.values) or any(atoms.has_nan)
    if width > 1 or has_atoms:
        learned = _logistic_projection(atoms, a, b, rng)
        if learned is not None:
            projections.append(learned)
    return projections


def encoded_logistic(atoms: ColumnAtoms, a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                      samples: int = 40_000) -> EncodedLinear | None:
    """L2-regularised logistic regression of the input on memory-bounded features (EncodedLinear)."""
    take_a = a[rng.permutation(a.shape[0])[:samples]]
    take_b = b[rng.permutation(b.shape[0])[:samples]]
    ratios = atom_log_ratios(atoms, atoms.codes(a), atoms.codes(b))
    features = EncodedLinear.features(atoms, ratios, np.concatenate([take_a, take_b]))
    mean, scale = features.mean(axis=0), features.std(axis=0)
    useful = scale > 0
    if not useful.any():
        return None
    scale = np.where(useful, scale, 1.0)
    x = np.hstack([(features - mean) / scale, np.ones((features.shape[0], 1))])
    y = np.concatenate([np.ones(take_a.shape[0]), np.zeros(take_b.shape[0])])

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        value = np.mean(np.logaddexp(0.0, z) - y * z) + 1e-4 * w[:-1] @ w[:-1]
        gradient = x.T @ (1.0 / (1.0 + np.exp(-z)) - y) / x.shape[0]
        gradient[:-1] += 2e-4 * w[:-1]
        return value, gradient

    fit = minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 200})
    weights = np.where(useful, fit.x[:-1], 0.0)
    if not np.any(weights):
        return None
    return EncodedLinear(atoms, ratios, weights, mean, scale)
