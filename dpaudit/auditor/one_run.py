"""One-run audits: ``audit_one_run`` certifies privacy lower bounds from ONE training run with m canaries.

Each canary is included independently with probability 1/2 (``included``). Guess "in" for the k+ highest
scores, "out" for the k- lowest, abstain otherwise; with r = k+ + k- guesses of which v are right:

* ``method="steinke"``: the (epsilon, delta) bound of Steinke, Nasr & Jagielski 2023, Theorem 3.1
  (:mod:`dpaudit.auditor.one_run_steinke`);
* ``method="fdp"``: the f-DP test of Mahloujifar, Melis & Chaudhuri 2024 (:mod:`dpaudit.auditor.fdp_one_run`)
  against a claimed trade-off curve (a GDP mu, a privacy event's curve from the PLD accountant, an
  (epsilon, delta) Guarantee or a trade-off function), and against the (epsilon, delta)-DP and mu-GDP
  families, next to the Steinke et al. bound on the same guesses.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from .._numeric import round_down
from .._validation import check_delta, check_epsilon, check_nonnegative_int, check_probability
from ..errors import InvalidArgument, InvalidArgumentType
from .._json import json_ready
from .fdp_one_run import (
    claim_inverse_power,
    claim_rejected,
    fdp_epsilon,
    fdp_mu,
    gdp_inverse_power,
    mu_upper_from_pure,
)
from .one_run_steinke import one_run_epsilon, one_run_p_value
from .score_inputs import check_included, check_scores

__all__ = ["audit_one_run", "OneRunResult", "one_run_epsilon", "one_run_p_value", "SELECTION_FRACTION", "METHODS"]


#: Share of the canaries used to choose the guess counts by default when delta > 0: a Bonferroni split over
#: many guess counts is expensive there (see :func:`audit_one_run`).
SELECTION_FRACTION = 0.05
#: Guess fractions k/m whose bound is predicted for the certification canaries (one-sided and symmetric each).
_SELECTION_FRACTIONS = np.geomspace(1e-3, 0.5, 40)
METHODS = ("steinke", "fdp")


def _default_guess_grid(m: int) -> list[tuple[int, int]]:
    """k+ = m/2^j (j = 0, 1, ...; k+ >= 1), one-sided (k- = 0) and symmetric (k- = k+, total <= m)."""
    ks = sorted({max(1, m >> j) for j in range(0, 20) if (m >> j) >= 1})
    grid = [(k, 0) for k in ks]
    grid += [(k, k) for k in ks if 2 * k <= m]
    return grid


def _check_guesses(guesses: Any, m: int) -> list[tuple[int, int]]:
    if guesses is None:
        return _default_guess_grid(m)
    if isinstance(guesses, (int, np.integer)) and not isinstance(guesses, bool):
        guesses = [(int(guesses), 0)]
    elif isinstance(guesses, tuple) and len(guesses) == 2 and all(isinstance(g, (int, np.integer)) for g in guesses):
        guesses = [guesses]
    if not isinstance(guesses, (list, tuple)) or not guesses:
        raise InvalidArgumentType("guesses", f"guesses={guesses!r} must be None, an int k+, a pair (k+, k-) or a "
                                             "non-empty list of pairs")
    out = []
    for pair in guesses:
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise InvalidArgumentType("guesses", f"guesses entry {pair!r} must be a pair (k+, k-)")
        k_plus = check_nonnegative_int(pair[0], "guesses")
        k_minus = check_nonnegative_int(pair[1], "guesses")
        if k_plus + k_minus == 0 or k_plus + k_minus > m:
            raise InvalidArgument("guesses", f"guesses (k+={k_plus}, k-={k_minus}) must make between 1 and m={m} "
                                             "guesses")
        out.append((k_plus, k_minus))
    return out


@dataclass(frozen=True)
class OneRunResult:
    """Outcome of :func:`audit_one_run`: ``epsilon_lower`` (at ``delta``) holds with probability >=
    ``confidence_level``, rounded down, and so do (together with it) ``mu_lower`` and ``claim_rejected``
    of ``method_name="fdp"``. The confidence is split (Bonferroni) over the ``candidates`` guess counts
    certified; ``k_plus``/``k_minus``/``correct`` describe the one that gave epsilon_lower. With
    ``selection_canaries`` > 0 the guess counts were chosen on that many canaries (their inclusion bits
    seen) and only the other ``certified_canaries`` were guessed and certified (the theorem's m).

    ``epsilon_gaussian_assumption`` is NOT assumption-free: the epsilon at delta of the strongest mu-GDP
    curve rejected (Mahloujifar et al.'s "empirical privacy" in the Gaussian family, the number
    jax_privacy's ``epsilon_one_run_fdp`` reports); a lower bound only if the trade-off curve is Gaussian.
    """

    epsilon_lower: float
    epsilon: float | None
    delta: float
    violated: bool
    confidence_level: float
    canaries: int
    included: int
    k_plus: int
    k_minus: int
    guesses: int
    correct: int
    candidates: int
    epsilon_ceiling: float  # the bound if every guess of the largest candidate were right
    method: str
    seconds: float
    method_name: str = "steinke"
    selection_canaries: int = 0
    certified_canaries: int = 0
    epsilon_steinke: float | None = None
    epsilon_fdp: float | None = None
    mu_lower: float | None = None
    epsilon_gaussian_assumption: float | None = None
    claim: str | None = None
    claim_rejected: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["bound"] = "lower"
        data["accuracy"] = self.correct / self.guesses if self.guesses else 0.0
        if self.epsilon_gaussian_assumption is not None:
            data["epsilon_gaussian_assumption_note"] = "assuming a Gaussian trade-off curve (not assumption-free)"
        return json_ready(data)

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        claim = f" (claimed {self.epsilon:g})" if self.epsilon is not None else ""
        text = (f"one-run audit ({self.method_name}), {self.canaries} canaries ({self.included} in): epsilon >= "
                f"{self.epsilon_lower:.4f} at delta {self.delta:g} with confidence {self.confidence_level:g}{claim}: "
                f"{verdict}; {self.correct}/{self.guesses} guesses right (k+={self.k_plus}, k-={self.k_minus}, "
                f"best of {self.candidates}"
                + (f", chosen on {self.selection_canaries} selection canaries" if self.selection_canaries else "")
                + f"); ceiling {self.epsilon_ceiling:.3g}")
        if self.method_name == "fdp":
            text += (f"\nf-DP (Mahloujifar et al. 2024): epsilon >= {self.epsilon_fdp:.4f} from (epsilon, delta) curves "
                     f"(Steinke et al. on the same guesses: {self.epsilon_steinke:.4f}); mu >= {self.mu_lower:.4f}")
            if self.claim is not None:
                text += f"; claim {self.claim}: {'REJECTED' if self.claim_rejected else 'not rejected'}"
            if self.epsilon_gaussian_assumption is not None:
                text += (f"\nassuming a Gaussian trade-off curve: epsilon ~ {self.epsilon_gaussian_assumption:.4f} "
                         "(not a certified bound)")
        return text


def _guess_counts(values: np.ndarray, mask: np.ndarray, tiebreak: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Right guesses among the k highest scores guessed "in" and among the k lowest guessed "out", for every
    k (cumulative); ties are ordered by ``tiebreak`` (random keys independent of the mask)."""
    order = np.lexsort((tiebreak, -values))  # highest first
    return np.cumsum(mask[order]), np.cumsum(~mask[order[::-1]])


def _right(counts: tuple[np.ndarray, np.ndarray], k_plus: int, k_minus: int) -> int:
    top, bottom = counts
    return (int(top[k_plus - 1]) if k_plus else 0) + (int(bottom[k_minus - 1]) if k_minus else 0)


def _steinke_bounds(certified: int, sizes: np.ndarray, rights: np.ndarray, delta: float, significance: float
                    ) -> tuple[np.ndarray, np.ndarray]:
    """(Steinke et al.'s bound at ``delta``, its pure-DP bound) per candidate; the delta > 0 bound never
    exceeds the pure one, so it is computed only where the pure one beats the best so far (others: 0)."""
    pures = np.array([one_run_epsilon(certified, int(r), int(v), 0.0, significance) for r, v in zip(sizes, rights)])
    if delta == 0:
        return pures.copy(), pures
    bounds = np.zeros(pures.size)
    best = 0.0
    for index in np.argsort(-pures, kind="stable"):
        if pures[index] <= best:
            break
        bounds[index] = one_run_epsilon(certified, int(sizes[index]), int(rights[index]), delta, significance)
        best = max(best, bounds[index])
    return bounds, pures


def _membership_model(values: np.ndarray, mask: np.ndarray) -> tuple[float, float]:
    """(a, b) of the logistic fit P[in | score s] = 1 / (1 + e^-(a + b s)) on the selection canaries (Newton's
    method, lightly ridged so that separable data stay finite)."""
    centre, scale = float(values.mean()), float(values.std()) or 1.0
    x = (values - centre) / scale
    y = mask.astype(np.float64)
    w = np.zeros(2)
    design = np.column_stack([np.ones_like(x), x])
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ w, -500, 500)))
        gradient = design.T @ (y - p) - 1e-3 * w
        hessian = (design * (p * (1 - p))[:, None]).T @ design + 1e-3 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-10:
            break
    return float(w[0] - w[1] * centre / scale), float(w[1] / scale)


def _select_guesses(values: np.ndarray, mask: np.ndarray, pick: np.ndarray, keep: np.ndarray, tiebreak: np.ndarray,
                    delta: float, significance: float) -> tuple[int, int]:
    """The (k+, k-) for the certification canaries ``keep`` with the largest predicted bound (Steinke et al.'s
    epsilon at ``delta``, for either method: the f-DP test then runs on the very guesses the default bound
    certifies, so its epsilon_lower is never below it). The prediction uses the selection canaries ``pick`` only through a smooth model of
    P[in | score] (a logistic fit on their scores and inclusion bits), read at the certification canaries'
    own scores: the expected number of right guesses of every (k+, k-) on a geometric grid of fractions,
    one-sided and symmetric. The certification canaries' bits are never looked at."""
    a, b = _membership_model(values[pick], mask[pick])
    certified = keep.size
    order = np.lexsort((tiebreak[keep], -values[keep]))  # highest first
    p_in = 1.0 / (1.0 + np.exp(-np.clip(a + b * values[keep][order], -500, 500)))
    expected_top, expected_bottom = np.cumsum(p_in), np.cumsum(1.0 - p_in[::-1])
    pairs: list[tuple[int, int]] = []
    for fraction in _SELECTION_FRACTIONS:
        k = max(1, int(round(fraction * certified)))
        for pair in ((k, 0), (k, k)):
            if sum(pair) <= certified and pair not in pairs:
                pairs.append(pair)
    sizes = np.array([k_plus + k_minus for k_plus, k_minus in pairs])
    rights = np.array([int(round(expected_top[k_plus - 1] + (expected_bottom[k_minus - 1] if k_minus else 0.0)))
                       for k_plus, k_minus in pairs])
    bounds, _ = _steinke_bounds(certified, sizes, rights, delta, significance)
    return pairs[int(np.argmax(bounds))]


def audit_one_run(
    scores: Any,
    included: Any,
    delta: float = 0.0,
    confidence_level: float = 0.95,
    *,
    epsilon: float | None = None,
    guesses: Any = None,
    seed: int = 0,
    method: str = "steinke",
    claim: Any = None,
    selection_fraction: float | None = None,
) -> OneRunResult:
    """Privacy lower bounds from ONE training run with m canaries, each included with probability 1/2.

    Guess "in" for the k+ highest scores and "out" for the k- lowest, abstain on the rest, and certify:

    * ``method="steinke"``: Steinke, Nasr & Jagielski 2023, Theorem 3.1 (:func:`one_run_p_value`, exact
      binomial tails): ``epsilon_lower`` at ``delta``;
    * ``method="fdp"``: also the f-DP test of Mahloujifar, Melis & Chaudhuri 2024
      (:mod:`dpaudit.auditor.fdp_one_run`) on the same guesses at the same significance: ``epsilon_fdp``
      (the largest epsilon whose (epsilon, delta)-DP curve is rejected), ``mu_lower`` (the largest mu
      whose mu-GDP curve is rejected) and ``claim_rejected`` for ``claim`` (a GDP mu, a privacy event
      whose curve the PLD accountant computes, a Guarantee, or a trade-off function alpha -> beta);
      ``epsilon_lower`` is the larger of epsilon_fdp and the Steinke et al. bound. All hold together:
      every one of them is a test of the same guess count.

    Guess counts: given (``guesses``: an int k+, a pair, or a list of pairs; Bonferroni over them), or by
    default (a) with delta = 0: a grid (k+ = m/2^j, one-sided and symmetric), Bonferroni over all of it;
    (b) with delta > 0: chosen with a random ``selection_fraction`` (default 0.05) of the canaries, whose
    inclusion bits are looked at (a logistic model of P[in | score] fitted on them predicts, at the other
    canaries' own scores, Steinke et al.'s bound of every (k+, k-) on a geometric grid), and
    certified on the other canaries at the full confidence, with m = the certified canaries. (b) is valid
    because, given the selection canaries' bits, the training algorithm is still DP in each certified
    canary, whose bits are still independent fair coins never looked at before the guesses are made; it
    avoids the Bonferroni split, which the theorem's 2 m delta term makes costly (with m = 10^4 Gaussian
    canaries and delta = 1e-5 the grid kept about 2/3 of the attainable bound). ``selection_fraction=0``
    forces (a). Both methods make the same guesses from the same seed, so ``method="fdp"`` certifies an
    epsilon_lower at least the default's on the same scores (the larger of two bounds on one guess count).

    The inclusion mask must be drawn independently, each canary with probability 1/2, before training:
    the theorem's randomness is the canaries' inclusion. The guesses must depend on the scores only:
    equal scores are ordered by a random key drawn from ``seed`` (never by position, which may follow the
    mask, e.g. in a file sorted by inclusion); ``seed`` also draws the selection canaries.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> included = rng.random(1000) < 0.5
        >>> r = audit_one_run(included * 4.0 + rng.normal(size=1000), included, delta=0.0)
        >>> r.correct == r.guesses and r.epsilon_lower > 3.0  # perfect separation
        True
    """
    started = time.perf_counter()
    values = check_scores(scores, "scores")
    mask = check_included(included, values.size)
    delta = check_delta(delta, "delta")
    confidence_level = check_probability(confidence_level, "confidence_level", low_open=True, high_open=True)
    if epsilon is not None:
        epsilon = check_epsilon(epsilon, "epsilon", allow_inf=True)
    seed = check_nonnegative_int(seed, "seed")
    if not isinstance(method, str) or method not in METHODS:
        raise InvalidArgument("method", f"method={method!r} must be one of {', '.join(METHODS)}")
    resolved = None
    if claim is not None:
        if method != "fdp":
            raise InvalidArgument("claim", "claim= is tested by method='fdp' only (Steinke et al.'s bound is for "
                                           "(epsilon, delta) claims: pass epsilon=)")
        from .curve import resolve_claim

        resolved = resolve_claim(claim, None, delta if delta > 0 else None)
    m = values.size
    if mask.all() or not mask.any():
        raise InvalidArgument("included", f"included is {int(mask[0])} for all {m} canaries (one class only): each "
                                          "canary must be included independently with probability 1/2 (all in or all "
                                          f"out has probability 2^-{m}); is the mask the right column?")
    if selection_fraction is None:
        fraction = SELECTION_FRACTION if (guesses is None and delta > 0) else 0.0
    else:
        fraction = check_probability(selection_fraction, "selection_fraction", high_open=True)
        if fraction > 0 and guesses is not None:
            raise InvalidArgument("selection_fraction", "selection_fraction > 0 chooses the guess counts: it cannot be "
                                                         "combined with explicit guesses=")
    error = 1.0 - confidence_level
    tiebreak = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13, 1))).random(m)
    selected = int(round(fraction * m)) if fraction > 0 else 0
    if selected and (selected < 2 or m - selected < 2):
        selected = 0
    if selected:
        permutation = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13, 2))).permutation(m)
        pick, keep = np.sort(permutation[:selected]), np.sort(permutation[selected:])
        certified = keep.size
        choice = _select_guesses(values, mask, pick, keep, tiebreak, delta, error)
        candidates = [choice]
        counts = _guess_counts(values[keep], mask[keep], tiebreak[keep])
    else:
        certified = m
        candidates = _check_guesses(guesses, m)
        counts = _guess_counts(values, mask, tiebreak)
    significance = error / len(candidates)
    rights = np.array([_right(counts, k_plus, k_minus) for k_plus, k_minus in candidates])
    sizes = np.array([k_plus + k_minus for k_plus, k_minus in candidates])
    bounds, pures = _steinke_bounds(certified, sizes, rights, delta, significance)
    index = int(np.argmax(bounds))
    steinke = float(bounds[index])
    fdp_fields: dict[str, Any] = {}
    eps_lower = steinke
    if method == "fdp":
        fdp_fields, fdp_index = _fdp(certified, sizes, rights, pures, delta, significance, resolved)
        fdp_fields["epsilon_steinke"] = steinke
        if fdp_fields["epsilon_fdp"] > steinke:
            eps_lower, index = fdp_fields["epsilon_fdp"], fdp_index
    largest = int(sizes.max())
    ceiling = one_run_epsilon(certified, largest, largest, delta, significance)
    k_plus, k_minus = candidates[index]
    guess_text = (f"guess counts chosen on {selected} selection canaries, certified on the other {certified}"
                  if selected else f"Bonferroni over {len(candidates)} (k+, k-) candidates")
    description = (f"Steinke-Nasr-Jagielski 2023 Thm 3.1 ({'pure DP' if delta == 0 else 'approximate DP'}), exact "
                   f"binomial tails; top-k+/bottom-k- guesses, {guess_text}")
    if method == "fdp":
        description = ("Mahloujifar-Melis-Chaudhuri 2024 f-DP recursion (epsilon-delta and GDP curves"
                       + (", the claim" if resolved is not None else "") + ") and " + description)
    violated = (epsilon is not None and eps_lower > epsilon) or bool(fdp_fields.get("claim_rejected"))
    return OneRunResult(
        epsilon_lower=eps_lower, epsilon=epsilon, delta=delta, violated=bool(violated),
        confidence_level=confidence_level, canaries=m, included=int(mask.sum()), k_plus=k_plus, k_minus=k_minus,
        guesses=k_plus + k_minus, correct=int(rights[index]), candidates=len(candidates), epsilon_ceiling=ceiling,
        method=description, seconds=time.perf_counter() - started, method_name=method, selection_canaries=selected,
        certified_canaries=certified, **fdp_fields)


def _fdp(certified: int, sizes: np.ndarray, rights: np.ndarray, pures: np.ndarray, delta: float, significance: float,
         claim: Any) -> tuple[dict[str, Any], int]:
    """The f-DP fields of :class:`OneRunResult` and the candidate giving epsilon_fdp."""
    epsilons = fdp_epsilon(certified, sizes, rights, delta, significance, pures)
    mus = fdp_mu(certified, sizes, rights, significance, mu_upper_from_pure(pures))
    index = int(np.argmax(epsilons))
    mu_lower = float(mus.max())
    fields_: dict[str, Any] = {"epsilon_fdp": float(epsilons[index]), "mu_lower": mu_lower}
    if delta > 0:
        assumed = 0.0
        if mu_lower > 0:
            from ..accountant import gdp_epsilon

            assumed = round_down(float(gdp_epsilon(mu_lower, delta)) * (1.0 - 1e-7))
        fields_["epsilon_gaussian_assumption"] = assumed
    if claim is not None:
        if claim.mu is not None:
            inverse = gdp_inverse_power(np.full(sizes.size, claim.mu))
        else:
            inverse = claim_inverse_power(claim)
        fields_["claim"] = claim.description
        fields_["claim_rejected"] = bool(claim_rejected(certified, sizes, rights, significance, inverse).any())
    return fields_, index
