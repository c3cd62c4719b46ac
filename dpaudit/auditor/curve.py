"""``audit_curve``: test a black-box mechanism against its whole claimed privacy curve.

A mechanism that declares a privacy event (or an (epsilon, delta) guarantee, or mu-GDP) claims a whole
trade-off function f: every test phi of H0 "the input was d" against "it was d'" has type-II error
beta_phi >= f(alpha_phi), alpha_phi its type-I error (Dong, Roth & Su 2022). Procedure:

1. draw a *selection* batch on both inputs; from the witness machinery (``witness_search``: coordinates and a
   learned score for half-lines, atom patterns sorted by likelihood ratio for discrete outputs) build
   nested rejection regions S (tests phi = 1[output in S]) and choose a few, in both directions
   (H0 = d and H0 = d'): the region with the best predicted mu bound (the middle of the curve), the one
   with the best predicted margin below the claim, and a few spread over the curve (for the picture);
2. on fresh *certification* samples, count each region under both inputs and certify one-sided
   Clopper-Pearson upper bounds alpha_u >= P(S) and beta_u >= Q(not S), the error probability split
   (Bonferroni) over every bound of every certified point: each holds together with all others with
   probability >= confidence_level;
3. since f is non-increasing, beta <= beta_u < f(alpha_u) <= f(alpha) contradicts the claim: a point
   wholly below the claimed curve is a **violation**. A certified point also rules out mu'-GDP for every
   mu' < Phi^-1(1 - alpha_u) - Phi^-1(beta_u) (``mu_lower``) and (epsilon, delta)-DP for every
   epsilon < max(ln((1 - delta - beta_u) / alpha_u), ln((1 - delta - alpha_u) / beta_u)) (``epsilon_lower``).
   These hold with no assumption. Reported beside them, labelled as such: the epsilon(delta) that
   mu_lower implies *assuming a Gaussian trade-off curve* (how Nasr et al. 2023 report DP-SGD audits).

This module is over 500 lines because it holds one procedure end to end (claim resolution, region choice,
certification, the result types): its pieces share the claim and the selection batch and have no other
caller. The witness search and the sampling it uses live in ``witness_search`` and ``sampling.py``.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.stats import norm

from .._numeric import round_down
from .._validation import check_choice, check_delta, check_flag, check_nonnegative_int, check_real
from ..accountant import STANDARD_FPRS, tpr_lower_from_tests
from ..accountant.curves import ProfileTradeoff, as_tradeoff, gdp_epsilon, gdp_mu_lower, gdp_tradeoff, tradeoff_from_profile
from ..errors import InvalidArgument, InvalidArgumentType, MechanismError, UnsupportedEventError
from ..events import PrivacyEvent
from ..guarantee import Guarantee
from .._json import json_ready
from ..stats import clopper_pearson_upper
from .audit import DIRECTIONS, _check_mechanism, _Sampler, check_futility, check_run, degenerate_warning, probe_run, selection_size
from .outcomes import shape_outcome
from .backends import Progress, map_both
from .looks import FINAL_SHARE, FUTILITY_FROM, forecast_counts, plan_looks
from .sampling import (
    PHASE_CERTIFY,
    SIDE_D,
    SIDE_D_PRIME,
    block_label,
    block_sizes,
    choose_backend,
    draw_block,
    probe_outcomes,
)
from .witness import PatternSet, PooledPair, ScoreRegion, Witness, witness_from_dict
from .witness_search.atom_sets import find_atoms, pattern_counts
from .witness_search.linear_scores import score_projections
from .witness_search.prediction import conservative_upper

__all__ = ["audit_curve", "CurveAuditResult", "CurvePoint", "Claim", "resolve_claim", "SPREAD_SHARE"]

#: Share of the error probability given to the points spread over the curve for the picture.
SPREAD_SHARE = 0.1
#: Default delta at which epsilon_lower is reported for mu and callable claims.
DEFAULT_DELTA = 1e-5
_GRID_HALF_LINES = 512
_CLAIM_GRID = np.unique(np.concatenate([[0.0], np.logspace(-7, -1, 61), np.linspace(0.0, 1.0, 201)]))


# ----------------------------------------------------------------------------------------- the claim
@dataclass(frozen=True)
class Claim:
    """A claimed trade-off curve: ``function(alphas)`` is a lower bound on the trade-off function the
    claim guarantees (exact for mu-GDP and (epsilon, delta) claims; PLD-pessimistic for events)."""

    kind: str  # "gdp", "event", "guarantee" or "callable"
    description: str
    function: Callable[[np.ndarray], np.ndarray] = field(repr=False)
    delta: float  # where epsilon_lower is reported
    mu: float | None = None  # the claim is exactly mu-GDP

    def __call__(self, alphas: Any) -> np.ndarray:
        alphas = np.clip(np.asarray(alphas, dtype=np.float64), 0.0, 1.0)
        return np.clip(np.asarray(self.function(alphas), dtype=np.float64), 0.0, 1.0)


def _check_tradeoff_callable(function: Callable) -> Callable[[np.ndarray], np.ndarray]:
    """Validate a user trade-off function on a grid: finite, f(0) <= 1, f >= 0, f(alpha) <= 1 - alpha,
    non-increasing and convex."""
    grid = _CLAIM_GRID
    try:
        values = as_tradeoff(function, grid)
    except Exception as exc:
        raise InvalidArgument("claim", f"claim={function!r} could not be evaluated as f(alpha) on [0, 1]: "
                                       f"{type(exc).__name__}: {exc}") from exc
    tol = 1e-9
    if not np.isfinite(values).all():
        raise InvalidArgument("claim", "claim f(alpha) must be a finite number for every alpha in [0, 1]")
    if values[0] > 1.0 + tol:
        raise InvalidArgument("claim", f"claim f(0)={values[0]!r} must be <= 1 (not a trade-off function)")
    if (values < -tol).any():
        bad = int(np.argmax(values < -tol))
        raise InvalidArgument("claim", f"claim f({grid[bad]:g})={values[bad]!r} must be >= 0 (not a trade-off function)")
    if (values > 1.0 - grid + tol).any():
        bad = int(np.argmax(values > 1.0 - grid + tol))
        raise InvalidArgument("claim", f"claim f({grid[bad]:g})={values[bad]!r} must be <= 1 - alpha: no test does "
                                       "worse than guessing (not a trade-off function)")
    steps = np.diff(values)
    if (steps > tol).any():
        bad = int(np.argmax(steps > tol))
        raise InvalidArgument("claim", f"claim must be non-increasing: f({grid[bad]:g})={values[bad]!r} < "
                                       f"f({grid[bad + 1]:g})={values[bad + 1]!r} (not a trade-off function)")
    slopes = steps / np.diff(grid)
    if (np.diff(slopes) < -1e-6 * (1.0 + np.abs(slopes[1:]))).any():
        bad = int(np.argmax(np.diff(slopes) < -1e-6 * (1.0 + np.abs(slopes[1:])))) + 1
        raise InvalidArgument("claim", f"claim must be convex: its slope decreases near alpha={grid[bad]:g} "
                                       "(not a trade-off function)")
    return lambda alphas: as_tradeoff(function, alphas)


@lru_cache(maxsize=64)
def _event_curve(event: PrivacyEvent, neighbouring: str) -> tuple[float | None, ProfileTradeoff | None]:
    """(mu, None) for an exactly mu-GDP event, else (None, the trade-off lower bound from the PLD
    accountant's pessimistic profile on its grid); events are immutable values, so this is cached."""
    from ..accountant import PLDAccountant
    from ..accountant.curves import profile_grid

    accountant = PLDAccountant(neighbouring=neighbouring).compose(event)
    mu = accountant.gaussian_mu()
    if mu is not None:
        return mu, None
    return None, ProfileTradeoff(*profile_grid(accountant))


def _event_claim(event: PrivacyEvent, neighbouring: str, delta: float) -> Claim:
    try:
        try:
            mu, envelope = _event_curve(event, neighbouring)
        except TypeError:  # an unhashable event: no cache
            mu, envelope = _event_curve.__wrapped__(event, neighbouring)
    except UnsupportedEventError as exc:
        raise InvalidArgument("claim", f"claim {event!r} has no curve the PLD accountant can compute: {exc}") from exc
    if mu is not None:
        return Claim("gdp", f"{event!r} (exactly {mu:.6g}-GDP)", lambda x: gdp_tradeoff(mu, x), delta, mu)
    assert envelope is not None
    return Claim("event", f"{event!r} (PLD, pessimistic, {neighbouring})", envelope, delta)


def resolve_claim(claim: Any, mechanism: Any, delta: float | None = None) -> Claim:
    """Turn ``claim`` (None = ``mechanism.event``; a privacy event, a Guarantee, a mu or a callable f) into a
    :class:`Claim`; raises InvalidArgument / InvalidArgumentType naming ``claim``."""
    explicit_delta = delta is not None
    if explicit_delta:
        delta = check_delta(delta, "delta")
    if claim is None:
        claim = getattr(mechanism, "event", None)
        if claim is None:
            raise InvalidArgument("claim", "claim=None needs a mechanism with a privacy event (.event); this one has "
                                           "none: pass claim= an event, a Guarantee, a GDP mu or a trade-off function")
        if not isinstance(claim, PrivacyEvent):
            raise InvalidArgumentType("claim", f"claim=None uses the mechanism's .event, but {claim!r} is a "
                                               f"{type(claim).__name__}, not a privacy event: pass claim= explicitly")
    if isinstance(claim, PrivacyEvent):
        neighbouring = getattr(mechanism, "neighbouring", "add_remove")
        if neighbouring not in ("add_remove", "replace_one"):
            neighbouring = "add_remove"
        if not explicit_delta:
            privacy = getattr(mechanism, "privacy", None)
            delta = privacy.delta if isinstance(privacy, Guarantee) and privacy.delta < 1 else DEFAULT_DELTA
        return _event_claim(claim, neighbouring, delta)
    if isinstance(claim, Guarantee):
        if not explicit_delta:
            delta = claim.delta if claim.delta < 1 else DEFAULT_DELTA
        eps, dlt = claim.epsilon, claim.delta
        return Claim("guarantee", str(claim), lambda x: tradeoff_from_profile(x, np.array([eps]), np.array([dlt])), delta)
    if isinstance(claim, numbers.Real) and not isinstance(claim, bool):
        mu = check_real(claim, "claim")
        if not (mu > 0 and math.isfinite(mu)):
            raise InvalidArgument("claim", f"claim={claim!r} must be a GDP mu > 0 and finite")
        return Claim("gdp", f"{mu:.6g}-GDP", lambda x: gdp_tradeoff(mu, x), delta if explicit_delta else DEFAULT_DELTA, mu)
    if callable(claim):
        function = _check_tradeoff_callable(claim)
        name = getattr(claim, "__name__", type(claim).__name__)
        return Claim("callable", f"trade-off function {name}", function, delta if explicit_delta else DEFAULT_DELTA)
    raise InvalidArgumentType("claim", f"claim={claim!r} must be a privacy event, a Guarantee, a GDP mu (float) or a "
                                       f"trade-off function alpha -> beta, not {type(claim).__name__}")


# ----------------------------------------------------------------------------------------- results
@dataclass(frozen=True)
class CurvePoint:
    """One certified test: reject H0 (the ``direction``'s first input) when the output lies in ``event``.

    ``alpha_upper`` >= its type-I error and ``beta_upper`` >= its type-II error (Clopper-Pearson, with
    ``error_share`` of the error probability for the pair, half per bound). ``claimed_beta`` is the
    claimed curve at alpha_upper; ``below_claim`` means the point is a violation.
    """

    alpha_upper: float
    beta_upper: float
    direction: str  # "d -> d_prime": H0 = d (type I under d), alternative d_prime
    event: str
    witness: dict
    role: str  # "middle" (best predicted mu), "claim" (best predicted margin), "spread", "witness"
    count_alpha: int  # certification outputs under H0 inside the event
    count_beta: int  # certification outputs under the alternative outside the event
    certification_samples: int
    error_share: float
    claimed_beta: float
    mu_bound: float  # Phi^-1(1 - alpha_u) - Phi^-1(beta_u), rounded down (may be < 0: no evidence)
    below_claim: bool

    @property
    def alpha_estimate(self) -> float:
        return self.count_alpha / self.certification_samples

    @property
    def beta_estimate(self) -> float:
        return self.count_beta / self.certification_samples

    @property
    def threshold(self) -> str:
        """The rejection region (a half-line of a score, or a set of outcomes)."""
        return self.event

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["alpha_estimate"], data["beta_estimate"] = self.alpha_estimate, self.beta_estimate
        return json_ready(data)


@dataclass(frozen=True)
class CurveAuditResult:
    """Outcome of :func:`audit_curve`.

    Lower bounds, each holding (all together) with probability >= ``confidence_level``, rounded down:
    ``mu_lower`` (the mechanism is not mu'-GDP for any mu' < mu_lower) and ``epsilon_lower`` (not
    (epsilon', delta)-DP for any epsilon' < epsilon_lower at ``delta``; also at every delta of
    ``epsilon_lower_by_delta``). ``violated``: some certified point lies wholly below the claimed curve.
    ``epsilon_gaussian_assumption`` is NOT assumption-free: the epsilon at ``delta`` of mu_lower-GDP,
    valid only if the mechanism's trade-off curve is Gaussian.
    """

    violated: bool
    mu_lower: float
    epsilon_lower: float
    delta: float
    epsilon_lower_by_delta: tuple[tuple[float, float], ...]
    epsilon_gaussian_assumption: float
    claim: str
    claim_kind: str
    claim_mu: float | None
    points: tuple[CurvePoint, ...]
    worst: CurvePoint | None  # the point closest to (or furthest below) the claim, in probit units
    # Phi^-1(claimed_beta) - Phi^-1(beta_upper) (for a mu-GDP claim: the largest mu bound)
    witness: dict | None  # {"event", "direction"} of the worst point: re-certify with audit_curve(..., witness=...)
    samples: int
    selection_samples: int
    certification_samples: int
    confidence_level: float
    seed: int
    mu_ceiling: float  # the largest mu_lower this budget could certify (perfectly separating test)
    method: str
    seconds: float
    claim_curve: tuple[tuple[float, float], ...] = field(default=(), repr=False)
    warnings: tuple[str, ...] = ()
    samples_used: int | None = None  # per input, selection + certification drawn (a sequential audit may stop early)
    looks: int = 1  # certification looks made
    stopped: str = "budget"  # "violation", "futility" or "budget" (``looks.py``)

    def __post_init__(self) -> None:
        if self.samples_used is None:
            object.__setattr__(self, "samples_used", self.samples)

    @property
    def direction(self) -> str | None:
        return None if self.worst is None else self.worst.direction

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (infinities as strings)."""
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("points", "worst", "claim_curve",
                                                                                      "epsilon_lower_by_delta")}
        data["points"] = [p.to_dict() for p in self.points]
        data["worst"] = None if self.worst is None else self.worst.to_dict()
        data["epsilon_lower_by_delta"] = [{"delta": d, "epsilon_lower": e} for d, e in self.epsilon_lower_by_delta]
        data["claim_curve"] = {"alpha": [a for a, _ in self.claim_curve], "beta": [b for _, b in self.claim_curve]}
        data["bound"] = "lower"
        data["epsilon_gaussian_assumption_note"] = "assuming a Gaussian trade-off curve (not assumption-free)"
        data["attack_tpr_lower"] = self.attack_tpr_lower()
        return json_ready(data)

    def attack_tpr_lower(self, fprs: Any = STANDARD_FPRS) -> dict[str, Any]:
        """The audited curve in attack-risk terms: a lower bound on the true-positive rate the best
        membership attack (on either ordering of the pair) reaches at each false-positive rate, from the
        certified points and their mixtures (holds with the points, at ``confidence_level``)."""
        tpr = tpr_lower_from_tests([p.alpha_upper for p in self.points], [p.beta_upper for p in self.points], fprs)
        return {"bound": "lower (certified attack)", "confidence_level": self.confidence_level,
                "tpr_at_fpr": [{"fpr": float(f), "tpr_lower": float(t)} for f, t in zip(np.ravel(fprs), np.ravel(tpr))]}

    def summary(self) -> str:
        verdict = "VIOLATED" if self.violated else "not violated"
        lines = [f"curve audit against {self.claim}: {verdict} (confidence {self.confidence_level:g})",
                 f"mu >= {self.mu_lower:.4f} (not mu'-GDP for any mu' < it; ceiling {self.mu_ceiling:.3g}); "
                 f"epsilon >= {self.epsilon_lower:.4f} at delta {self.delta:g}"]
        lines.append(f"assuming a Gaussian trade-off curve: epsilon ~ {self.epsilon_gaussian_assumption:.4f} at delta "
                     f"{self.delta:g} (not a certified bound)")
        if self.worst is not None:
            w = self.worst
            lines.append(f"worst of {len(self.points)} certified points: alpha <= {w.alpha_upper:.4g}, beta <= "
                         f"{w.beta_upper:.4g} (claimed curve {w.claimed_beta:.4g}) for {w.event} [{w.direction}]")
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


# ----------------------------------------------------------------------------------------- selection
@dataclass(frozen=True)
class _Family:
    """Nested rejection regions make(k), k = 0..m-1, with their selection counts under d (a) and d' (b);
    ``forward`` None = usable in both directions."""

    make: Callable[[int], Witness]
    count_a: np.ndarray
    count_b: np.ndarray
    forward: bool | None


@dataclass(frozen=True)
class _Choice:
    witness: Witness
    forward: bool
    role: str


def _families(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> list[_Family]:
    families: list[_Family] = []
    atoms = find_atoms(np.concatenate([a, b]))
    patterns, count_a, count_b = pattern_counts(atoms, a, b)
    if patterns.shape[0] >= 2:
        for forward in (True, False):
            p, q = (count_a, count_b) if forward else (count_b, count_a)
            order = np.argsort(-((q + 0.5) / (p + 0.5)), kind="stable")  # S likely under the alternative first
            rows = patterns[order]
            families.append(_Family(lambda k, rows=rows: PatternSet(atoms, rows[: k + 1]),
                                    np.cumsum(count_a[order]), np.cumsum(count_b[order]), forward))
    for projection in score_projections(atoms, a, b, rng):
        score_a, score_b = projection.score(a), projection.score(b)
        score_a, score_b = np.sort(score_a[~np.isnan(score_a)]), np.sort(score_b[~np.isnan(score_b)])
        pooled = np.concatenate([score_a, score_b])
        if pooled.size == 0 or pooled.min() == pooled.max():
            continue
        grid = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _GRID_HALF_LINES), method="inverted_cdf"))
        below = (np.searchsorted(score_a, grid, "right"), np.searchsorted(score_b, grid, "right"))
        above = (score_a.size - np.searchsorted(score_a, grid, "left"), score_b.size - np.searchsorted(score_b, grid, "left"))
        families.append(_Family(lambda k, g=grid, p=projection: ScoreRegion(p, float(g[k]), math.inf), above[0], above[1], None))
        families.append(_Family(lambda k, g=grid, p=projection: ScoreRegion(p, -math.inf, float(g[k])), below[0], below[1], None))
    return families


def _probit_margin(claimed: Any, beta: Any) -> np.ndarray:
    """How far below the claimed curve a point lies, in probit units: Phi^-1(f(alpha)) - Phi^-1(beta)
    (> 0 iff below; for a mu-GDP claim it is the point's mu bound minus mu)."""
    from scipy.special import ndtri

    with np.errstate(divide="ignore", invalid="ignore"):
        value = ndtri(np.asarray(claimed, dtype=np.float64)) - ndtri(np.asarray(beta, dtype=np.float64))
    return np.where(np.isnan(value), -np.inf, value)


def _probit(x: np.ndarray) -> np.ndarray:
    return norm.ppf(np.clip(x, 1e-12, 1 - 1e-12))


def _choose(a: np.ndarray, b: np.ndarray, claim: Claim, n_certify: int, confidence_level: float, spread_points: int,
            rng: np.random.Generator) -> list[_Choice]:
    """Pick the rejection regions to certify, per direction, from the selection batch only."""
    families = _families(a, b, rng)
    n_a, n_b = a.shape[0], b.shape[0]
    focus_per_direction = 1 if claim.mu is not None else 2
    share = (1.0 - confidence_level) * ((1.0 - SPREAD_SHARE) if spread_points else 1.0) / (2 * focus_per_direction)
    z = float(norm.isf(share / 2.0))
    chosen: list[_Choice] = []
    seen: set[tuple[str, bool]] = set()

    def add(witness: Witness, forward: bool, role: str) -> None:
        key = (witness.describe(), forward)
        if key not in seen:
            seen.add(key)
            chosen.append(_Choice(witness, forward, role))

    targets = norm.cdf(np.linspace(-2.3, 0.5, spread_points)) if spread_points else np.array([])
    for forward in (True, False):
        table = []  # (family, alpha_hat, mu_pred, margin_pred)
        for family in families:
            if family.forward is not None and family.forward != forward:
                continue
            count_p, n_p, count_q, n_q = ((family.count_a, n_a, family.count_b, n_b) if forward
                                          else (family.count_b, n_b, family.count_a, n_a))
            alpha_pred = conservative_upper(count_p, n_p, n_certify, z)
            beta_pred = conservative_upper(n_q - count_q, n_q, n_certify, z)
            trivial = ((count_p == n_p) & (count_q == n_q)) | ((count_p == 0) & (count_q == 0))
            mu_pred = np.where(trivial, -np.inf, gdp_mu_lower(alpha_pred, beta_pred))
            margin = np.where(trivial, -np.inf, _probit_margin(claim(alpha_pred), beta_pred)) if claim.mu is None else mu_pred
            table.append((family, count_p / n_p, mu_pred, margin))
        if not table:
            continue
        best_family, best_k = max(((entry, int(np.argmax(entry[2]))) for entry in table), key=lambda t: t[0][2][t[1]])
        if not np.isfinite(best_family[2][best_k]):
            continue
        add(best_family[0].make(best_k), forward, "middle")
        if claim.mu is None:
            claim_family, claim_k = max(((entry, int(np.argmax(entry[3]))) for entry in table), key=lambda t: t[0][3][t[1]])
            if np.isfinite(claim_family[3][claim_k]):
                add(claim_family[0].make(claim_k), forward, "claim")
        family, alpha_hat = best_family[0], best_family[1]
        usable = np.flatnonzero((alpha_hat > 0) & (alpha_hat < 1) & np.isfinite(best_family[2]))
        for target in targets:
            if usable.size == 0:
                break
            k = int(usable[np.argmin(np.abs(_probit(alpha_hat[usable]) - _probit(np.array(target))))])
            add(family.make(k), forward, "spread")
    return chosen


# ----------------------------------------------------------------------------------------- counting
@dataclass(frozen=True)
class _CurveCountTask:
    """Draw one certification block and count each rejection region (a score computed once per
    projection for all its half-lines); picklable for worker processes."""

    mechanism: Callable
    data: Any
    sizes: tuple[int, ...]
    seed: int
    side: int
    witnesses: tuple[Witness, ...]
    width: int | None
    dtypes: tuple[str, ...] = ()  # probed output dtypes (outcomes.py), as audit() draws them
    widths: tuple[int, ...] = ()  # probed output widths (outcomes.py): several are carried as a column

    def __call__(self, block: int) -> np.ndarray:
        where = block_label(self.side, PHASE_CERTIFY, block, self.seed)
        outputs = shape_outcome(draw_block(self.mechanism, self.data, self.sizes[block], self.seed, self.side, PHASE_CERTIFY,
                                           block, self.dtypes), self.widths, where)
        if self.width is not None and outputs.shape[1] != self.width:
            raise MechanismError(f"{where}: the mechanism returned {outputs.shape[1]} values per output, earlier {self.width}")
        scores: dict[int, np.ndarray] = {}
        counts = np.zeros(len(self.witnesses), dtype=np.int64)
        try:
            for i, witness in enumerate(self.witnesses):
                if isinstance(witness, ScoreRegion):
                    key = id(witness.projection)
                    if key not in scores:
                        scores[key] = witness.projection.score(outputs)
                    score = scores[key]
                    counts[i] = int(np.count_nonzero((score >= witness.low) & (score <= witness.high)))
                else:
                    counts[i] = int(witness.indicator(outputs).sum())
        except (IndexError, ValueError) as exc:
            raise MechanismError(f"{where}: the outputs (shape {outputs.shape}) do not fit the witness event: {exc}") from exc
        return counts


def _parse_witness(witness: Any, direction: str | None) -> list[tuple[Witness, bool]]:
    if isinstance(witness, dict) and "event" in witness and "kind" not in witness:
        if direction is None and witness.get("direction") is not None:
            direction = witness["direction"]
        witness = witness["event"]
    if isinstance(witness, dict):
        try:
            witness = witness_from_dict(witness)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidArgument("witness", f"witness is not a valid event description ({exc})") from exc
    elif not isinstance(witness, Witness):
        raise InvalidArgumentType("witness", f"witness={witness!r} must be a Witness, its to_dict() form, or a curve "
                                             "result's .witness")
    if isinstance(witness, PooledPair):
        raise InvalidArgument("witness", "witness is a pooled pair (two events, both directions): it certifies a point "
                                         "bound (dpaudit.audit); a curve audit certifies one event per direction")
    if direction is not None:
        check_choice(direction, "direction", DIRECTIONS)
        return [(witness, direction == DIRECTIONS[0])]
    return [(witness, True), (witness, False)]


# ----------------------------------------------------------------------------------------- the audit
def audit_curve(
    mechanism: Callable,
    d: Any,
    d_prime: Any,
    claim: Any = None,
    samples: int = 1_000_000,
    confidence_level: float = 0.95,
    seed: int = 0,
    *,
    delta: float | None = None,
    deltas: Sequence[float] = (),
    selection_fraction: float = 0.05,
    spread_points: int = 3,
    witness: Any = None,
    direction: str | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    progress: bool | None = None,
    sequential: bool = True,
    looks: Sequence[int] | None = None,
    stop_for_futility: bool = False,
) -> CurveAuditResult:
    """Certify points of ``mechanism``'s trade-off curve on (d, d_prime) and test them against ``claim``.

    Args:
        mechanism: ``mechanism(data, size, rng) -> ndarray`` of ``size`` outputs stacked on axis 0.
        d, d_prime: an adjacent pair of inputs (both directions are tested).
        claim: the claimed curve: a privacy event (its PLD trade-off, pessimistic; exact mu-GDP for
            Gaussians), a :class:`~dpaudit.Guarantee`, a GDP ``mu`` (float), or a trade-off function
            ``f(alpha)`` (convex, non-increasing, f(0) <= 1). Default: ``mechanism.event``.
        samples: runs per input (selection + certification).
        confidence_level: probability with which every certified point (hence every bound and a
            reported violation) holds.
        seed: makes the audit reproducible (independent of ``workers``).
        delta: where ``epsilon_lower`` is reported (default: the Guarantee's delta, the mechanism's
            ``privacy.delta`` for events, 1e-5 for mu and callables); ``deltas``: further deltas.
        selection_fraction: share of the samples used to choose the tests.
        spread_points: tests per direction spread over the curve for the picture (they share 10% of the
            error probability; 0 = none).
        witness: re-certify this event (a result's ``.witness``, a Witness or its ``to_dict()``)
            instead of searching; ``direction`` restricts it to "d -> d_prime" or "d_prime -> d".
        workers: processes that draw the samples, this one included (default: all cores; 1 = this process alone).
            Worker processes start only where the audit is large enough to pay for them and a core is free of
            other work (on a busy machine a second process only adds its costs); the numbers never depend on it.
        scheduler: run the blocks on a Dask cluster (as for :func:`~dpaudit.audit`; same numbers).
        progress: show a progress bar on stderr (default: only on a terminal for long audits).
        sequential: certify in looks and stop early on a point certified below the claim (as for
            :func:`~dpaudit.audit`: ``samples`` is the maximum budget, every look's points hold at once);
            False: the whole budget, one look. ``looks``: samples per input at each look (increasing).
        stop_for_futility: a sequential audit also stops when no point could fall below the claim at the
            full budget (verdict-only use: the gate; the points are then those of a smaller sample). A given
            ``witness`` is never stopped for futility. Needs ``sequential=True``.

    Returns:
        CurveAuditResult: ``violated``, ``mu_lower``, ``epsilon_lower``, the certified ``points``, the
        ``worst`` point and its re-certifiable ``witness``.

    Example:
        >>> def gaussian(data, size, rng):
        ...     return data[0] + rng.normal(0.0, 2.0, size)
        >>> r = audit_curve(gaussian, [0.0], [1.0], claim=0.5, samples=100_000, seed=1, workers=1)
        >>> r.violated, 0.4 < r.mu_lower <= 0.5
        (False, True)
    """
    mechanism = _check_mechanism(mechanism)
    samples, confidence_level, seed, selection_fraction, workers = check_run(samples, confidence_level, seed,
                                                                             selection_fraction, workers)
    spread_points = check_nonnegative_int(spread_points, "spread_points")
    if isinstance(deltas, (str, bytes)) or not isinstance(deltas, (Sequence, np.ndarray)):
        raise InvalidArgumentType("deltas", f"deltas={deltas!r} must be a sequence of deltas")
    extra_deltas = [check_delta(value, "deltas") for value in deltas]
    given = None if witness is None else _parse_witness(witness, direction)
    if witness is None and direction is not None:
        check_choice(direction, "direction", DIRECTIONS)
    resolved = resolve_claim(claim, mechanism, delta)
    sequential = check_flag(sequential, "sequential")
    futility = check_futility(stop_for_futility, sequential) and given is None  # a user's witness: its whole budget

    started = time.perf_counter()
    probe, warnings, workers, scheduler = probe_run(mechanism, d, d_prime, seed, samples, workers, scheduler)
    dtypes, widths = probe_outcomes(mechanism, d, d_prime, seed)
    n_select = 0 if given is not None else selection_size(samples, selection_fraction)
    n_certify = samples - n_select
    plan = plan_looks(n_certify, sequential=sequential, looks=looks, samples=samples, offset=n_select)
    select_sizes, certify_sizes = tuple(block_sizes(n_select)), plan.sizes
    bar = Progress(2 * (len(select_sizes) + len(certify_sizes)), label="curve audit", enabled=progress)
    backend = choose_backend(workers, 2 * samples, mechanism, (d, d_prime), bar, scheduler=scheduler)
    draw = _Sampler(backend, mechanism, d, d_prime, seed, dtypes=dtypes, widths=widths)
    with backend:
        if given is not None:
            choices = [_Choice(w, forward, "witness") for w, forward in given]
            width = None
        else:
            a, b = draw.selection(select_sizes)
            width = a.shape[1]
            degenerate = degenerate_warning(a, b)
            if degenerate:
                warnings.append(degenerate)
            search_rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(2,)))
            choices = _choose(a, b, resolved, n_certify, confidence_level, spread_points, search_rng)
            if direction is not None:
                choices = [c for c in choices if c.forward == (direction == DIRECTIONS[0])]
        unique: list[Witness] = []
        index_of: dict[int, int] = {}
        for choice in choices:
            if id(choice.witness) not in index_of:
                index_of[id(choice.witness)] = len(unique)
                unique.append(choice.witness)
        # Bonferroni weights: focus points share (1 - SPREAD_SHARE), spread points SPREAD_SHARE of the error
        error = 1.0 - confidence_level
        n_spread = sum(c.role == "spread" for c in choices)
        n_focus = len(choices) - n_spread
        spread_total = SPREAD_SHARE * error if n_spread and n_focus else (error if n_spread else 0.0)
        shares = [spread_total / n_spread if c.role == "spread" else (error - spread_total) / n_focus for c in choices]
        points: list[CurvePoint] = []
        made, stopped, n_used = 0, "budget", 0
        if choices:
            counts_d = np.zeros(len(unique), dtype=np.int64)
            counts_dp = np.zeros(len(unique), dtype=np.int64)
            for look, n_look in enumerate(plan.looks):
                blocks = plan.blocks(look)
                under_d, under_dp = map_both(
                    backend, _CurveCountTask(mechanism, d, certify_sizes, seed, SIDE_D, tuple(unique), width, dtypes, widths),
                    _CurveCountTask(mechanism, d_prime, certify_sizes, seed, SIDE_D_PRIME, tuple(unique), width, dtypes, widths),
                    blocks)
                counts_d = counts_d + np.sum(np.array(under_d).reshape(len(blocks), -1), axis=0)
                counts_dp = counts_dp + np.sum(np.array(under_dp).reshape(len(blocks), -1), axis=0)
                made, n_used = look + 1, n_look
                look_shares = [share * plan.shares[look] for share in shares]
                points = _points(choices, look_shares, [index_of[id(c.witness)] for c in choices], counts_d, counts_dp,
                                 n_look, resolved)
                if look == len(plan.looks) - 1:
                    break
                if any(p.below_claim for p in points):
                    stopped = "violation"
                    break
                final = [share * plan.shares[-1] for share in shares]
                if futility and n_look >= FUTILITY_FROM * plan.looks[-1] and not any(
                        p.below_claim for p in _points(choices, final, [index_of[id(c.witness)] for c in choices],
                                                       counts_d, counts_dp, n_look, resolved, plan.looks[-1])):
                    stopped = "futility"
                    break
    mu_lower = max([0.0] + [p.mu_bound for p in points if math.isfinite(p.mu_bound)])
    all_deltas = sorted(set([resolved.delta] + extra_deltas))
    by_delta = tuple((dl, _epsilon_lower(points, dl)) for dl in all_deltas)
    epsilon_lower = dict(by_delta)[resolved.delta]
    assumed = 0.0
    if mu_lower > 0 and resolved.delta > 0:
        assumed = round_down(float(gdp_epsilon(mu_lower, resolved.delta)) * (1.0 - 1e-7))
    elif mu_lower > 0:
        assumed = math.inf
    worst = max(points, key=lambda p: float(_probit_margin(p.claimed_beta, p.beta_upper))) if points else None
    focus_share = (max(shares) if shares else error) * plan.shares[-1]
    tiny = float(clopper_pearson_upper(0, n_certify, focus_share / 2.0))
    ceiling = round_down(float(gdp_mu_lower(tiny, tiny)))
    alphas = _CLAIM_GRID
    curve = tuple(zip(alphas.tolist(), resolved(alphas).tolist()))
    method = (f"selection {n_select} + certification {n_certify} per input; {len(points)} tests (both directions), "
              f"Clopper-Pearson upper bounds on both error types, Bonferroni over all {2 * len(points)} bounds"
              + (f" ({n_spread} spread points share {SPREAD_SHARE:g} of the error)" if n_spread and n_focus else "")
              + (f"; sequential: {len(plan.looks)} looks, error spent {FINAL_SHARE:g} at the last" if len(plan.looks) > 1 else ""))
    if not points:
        warnings.append("no test separated the inputs on the selection batch: nothing was certified")
    return CurveAuditResult(
        violated=any(p.below_claim for p in points),
        mu_lower=mu_lower,
        epsilon_lower=epsilon_lower,
        delta=resolved.delta,
        epsilon_lower_by_delta=by_delta,
        epsilon_gaussian_assumption=assumed,
        claim=resolved.description,
        claim_kind=resolved.kind,
        claim_mu=resolved.mu,
        points=tuple(points),
        worst=worst,
        witness=None if worst is None else {"event": worst.witness, "direction": worst.direction},
        samples=samples,
        selection_samples=n_select,
        certification_samples=n_used if points else n_certify,
        confidence_level=confidence_level,
        seed=seed,
        mu_ceiling=ceiling,
        method=method,
        seconds=time.perf_counter() - started,
        claim_curve=curve,
        warnings=tuple(warnings),
        samples_used=n_select + n_used,
        looks=made,
        stopped=stopped,
    )


def _points(choices: Sequence[_Choice], shares: Sequence[float], indices: Sequence[int], counts_d: np.ndarray,
            counts_dp: np.ndarray, n: int, claim: Claim, final: int | None = None) -> list[CurvePoint]:
    """The certified points of ``choices`` from their counts in ``n`` certification samples per input, each point's
    two bounds at error share / 2. ``final``: instead, the points forecast at ``final`` samples with both error
    counts taken in the audit's favour (``looks.forecast_counts``; the futility rule)."""
    points = []
    for choice, share, i in zip(choices, shares, indices):
        in_d, in_dp = int(counts_d[i]), int(counts_dp[i])
        count_alpha, count_in_q = (in_d, in_dp) if choice.forward else (in_dp, in_d)
        count_beta, size = n - count_in_q, n
        if final is not None:
            count_alpha = int(forecast_counts(count_alpha, n, final, "down"))
            count_beta = int(forecast_counts(count_beta, n, final, "down"))
            size = final
        alpha_u = float(clopper_pearson_upper(count_alpha, size, share / 2.0))
        beta_u = float(clopper_pearson_upper(count_beta, size, share / 2.0))
        claimed = float(claim(np.array([alpha_u]))[0])
        mu_bound = float(gdp_mu_lower(alpha_u, beta_u))
        points.append(CurvePoint(alpha_u, beta_u, DIRECTIONS[0] if choice.forward else DIRECTIONS[1],
                                 choice.witness.describe(), choice.witness.to_dict(), choice.role, count_alpha,
                                 count_beta, size, share, claimed,
                                 round_down(mu_bound) if math.isfinite(mu_bound) else mu_bound, beta_u < claimed))
    return points


def _epsilon_lower(points: Sequence[CurvePoint], delta: float) -> float:
    """max over points of ln((1 - delta - beta_u)/alpha_u) and ln((1 - delta - alpha_u)/beta_u), >= 0,
    rounded down: (epsilon, delta)-DP forces beta >= 1 - delta - e^eps alpha and beta >= e^-eps (1 - delta - alpha)."""
    best = 0.0
    for p in points:
        for top, bottom in ((1.0 - delta - p.beta_upper, p.alpha_upper), (1.0 - delta - p.alpha_upper, p.beta_upper)):
            if top > 0 and bottom > 0:
                value = math.log(top) - math.log(bottom)
                best = max(best, value - 1e-12 * max(1.0, abs(value)))
    return round_down(best)
