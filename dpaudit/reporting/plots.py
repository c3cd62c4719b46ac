"""PNG figures for reports (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

__all__ = ["plot_audit_outputs", "plot_bound_curve", "plot_curves", "plot_curve_audit"]

_D_COLOUR, _DP_COLOUR, _WITNESS_COLOUR = "#1f77b4", "#ff7f0e", "#2ca02c"


def _plain(text: str) -> str:
    """User text as a literal figure title: control characters shown, no mathtext ($...$)."""
    from .text import visible

    return visible(text).replace("$", r"\$")


def _save(figure: Any, path: Path) -> Path:
    """Save as PNG atomically (a temporary file moved into place): a failure leaves no partial image."""
    from .._io import PNG_METADATA, atomic_write

    try:
        figure.tight_layout()
        atomic_write(path, lambda temporary: figure.savefig(temporary, dpi=110, format="png", metadata=PNG_METADATA))
    finally:
        plt.close(figure)
    return Path(path)


def plot_audit_outputs(result: Any, path: Path, title: str) -> Path | None:
    """Outputs on d and d_prime (selection batch) with the witness event shaded.

    Scalar scores (a coordinate or a learned score) are drawn as histograms with the witness region
    shaded; atom patterns as bars of the most frequent outcomes, witness outcomes highlighted.
    """
    from ..auditor.witness import PatternSet, PooledPair, ScoreRegion, Union

    details = getattr(result, "details", None)
    if details is None or details.sample_d is None:
        return None
    witness, pooled_with = details.witness, None
    if isinstance(witness, Union):
        witness = witness.parts[0]
    if isinstance(witness, PooledPair):  # its event likelier under d, shaded with the one likelier under d_prime
        witness, pooled_with = witness.forward, witness.backward
    figure, axis = plt.subplots(figsize=(7, 3.6))
    if isinstance(witness, ScoreRegion):
        score_d = witness.projection.score(details.sample_d)
        score_dp = witness.projection.score(details.sample_d_prime)
        pooled = np.concatenate([score_d, score_dp])
        pooled = pooled[np.isfinite(pooled)]
        low, high = np.quantile(pooled, [0.002, 0.998]) if pooled.size else (0.0, 1.0)
        if low == high:
            low, high = low - 0.5, high + 0.5
        bins = np.linspace(low, high, 80)
        axis.hist(score_d[np.isfinite(score_d)], bins=bins, density=True, histtype="step", linewidth=1.5, color=_D_COLOUR, label="on d")
        axis.hist(score_dp[np.isfinite(score_dp)], bins=bins, density=True, histtype="step", linewidth=1.5, color=_DP_COLOUR, label="on d_prime")
        axis.axvspan(max(witness.low, low), min(witness.high, high), color=_WITNESS_COLOUR, alpha=0.2,
                     label="witness event" if pooled_with is None else "witness event (d -> d_prime)")
        if isinstance(pooled_with, ScoreRegion) and pooled_with.projection.describe() == witness.projection.describe():
            axis.axvspan(max(pooled_with.low, low), min(pooled_with.high, high), color=_WITNESS_COLOUR, alpha=0.45,
                         fill=False, hatch="//", label="pooled with (d_prime -> d)")
        axis.set_xlabel(witness.projection.describe())
        axis.set_ylabel("density")
    elif isinstance(witness, PatternSet):
        from ..auditor.witness import pattern_keys

        codes_d, codes_dp = witness.atoms.codes(details.sample_d), witness.atoms.codes(details.sample_d_prime)
        keys = np.concatenate([pattern_keys(codes_d), pattern_keys(codes_dp)])
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        n_d = codes_d.shape[0]
        freq_d = np.bincount(inverse[:n_d], minlength=unique.size) / n_d
        freq_dp = np.bincount(inverse[n_d:], minlength=unique.size) / codes_dp.shape[0]
        top = np.argsort(-(freq_d + freq_dp))[:12]
        in_witness = np.isin(unique[top], pattern_keys(witness.patterns))
        all_codes = np.concatenate([codes_d, codes_dp])
        labels = []
        for index in top:
            row = all_codes[first[index]]
            parts = [witness.atoms.label(j, int(c)) for j, c in enumerate(row)]
            labels.append(parts[0] if len(parts) == 1 else "".join(p if len(p) == 1 else f"[{p}]" for p in parts))
        x = np.arange(top.size)
        axis.bar(x - 0.2, freq_d[top], 0.4, color=_D_COLOUR, label="on d")
        axis.bar(x + 0.2, freq_dp[top], 0.4, color=_DP_COLOUR, label="on d_prime")
        for position in x[in_witness]:
            axis.axvspan(position - 0.45, position + 0.45, color=_WITNESS_COLOUR, alpha=0.2)
        axis.set_xticks(x, labels, rotation=45, ha="right", fontsize=7)
        axis.set_ylabel("frequency")
        axis.plot([], [], color=_WITNESS_COLOUR, alpha=0.3, linewidth=8, label="witness outcomes")
    else:
        plt.close(figure)
        return None
    axis.set_title(_plain(title), fontsize=10)
    axis.legend(fontsize=8)
    return _save(figure, path)


def plot_bound_curve(result: Any, path: Path, title: str) -> Path | None:
    """The certified lower bound as certification samples accumulate, with the claim and the ceiling."""
    from ..auditor.certify import certification_ceiling, epsilon_lower_bound

    details = getattr(result, "details", None)
    if details is None or details.block_counts_p.size == 0:
        return None
    n = np.cumsum(details.block_sizes)
    count_p, count_q = np.cumsum(details.block_counts_p), np.cumsum(details.block_counts_q)
    bounds = [epsilon_lower_bound(int(a), int(k), int(b), int(k), result.delta, details.alpha)[0] for a, b, k in zip(count_p, count_q, n)]
    ceilings = [certification_ceiling(int(k), result.delta, details.alpha) for k in n]
    figure, axis = plt.subplots(figsize=(7, 3.6))
    axis.plot(n, bounds, marker="o", markersize=3, color=_WITNESS_COLOUR, label="certified lower bound")
    axis.axhline(result.epsilon, color="black", linestyle="--", linewidth=1, label=f"claimed epsilon = {result.epsilon:g}")
    axis.plot(n, ceilings, color="grey", linestyle=":", label="ceiling (largest certifiable)")
    # The table's number is the full-budget bound: it is the curve's last point, or infinity (exact support).
    reported = result.epsilon_lower
    top = max(max(bounds), result.epsilon, ceilings[-1]) * 1.15 + 0.1
    axis.set_ylim(0, top)
    if getattr(result, "support_proof", False) or (isinstance(reported, float) and np.isinf(reported)):
        axis.annotate("epsilon = inf (exact support proof)", xy=(n[-1], top), xytext=(n[-1], top * 0.8), ha="right",
                      fontsize=8, color=_WITNESS_COLOUR, arrowprops=dict(arrowstyle="->", color=_WITNESS_COLOUR))
    else:
        axis.annotate(f"{reported:.4g}", xy=(n[-1], bounds[-1]), xytext=(4, 4), textcoords="offset points", fontsize=8)
    axis.set_xscale("log")
    pooled = getattr(result, "direction", None) == "both, pooled"  # counts out of both inputs' samples
    axis.set_xlabel("certification samples of both inputs (a pooled pair)" if pooled else "certification samples per input")
    axis.set_ylabel("epsilon")
    axis.set_title(_plain(title), fontsize=10)
    axis.legend(fontsize=8)
    return _save(figure, path)


def plot_curves(x: Any, curves: dict[str, Any], path: Path, title: str, xlabel: str, ylabel: str,
                limit: float | None = None, limit_label: str = "", log_x: bool = True) -> Path:
    """Several named curves y(x), with an optional horizontal limit line."""
    figure, axis = plt.subplots(figsize=(7, 3.6))
    for label, y in curves.items():
        axis.plot(x, y, marker="o", markersize=3, label=label)
    if limit is not None:
        axis.axhline(limit, color="black", linestyle="--", linewidth=1, label=limit_label)
    if log_x:
        axis.set_xscale("log")
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.set_title(_plain(title), fontsize=10)
    axis.legend(fontsize=8)
    return _save(figure, path)


def plot_curve_audit(result: Any, path: Path, title: str) -> Path | None:
    """A curve audit (:class:`~dpaudit.auditor.curve.CurveAuditResult`): the claimed trade-off curve, each
    certified rectangle [0, alpha_u] x [0, beta_u] (the true type-I/type-II errors lie inside it), and the
    worst point; a rectangle whose corner lies below the claimed curve is a violation. A second panel shows
    each point's distance below the claim in probit units, Phi^-1(f(alpha_u)) - Phi^-1(beta_u) (> 0: a
    violation; for a mu-GDP claim it is the point's mu bound minus the claimed mu), where small
    differences invisible on the first panel show."""
    from matplotlib.patches import Rectangle
    from scipy.stats import norm

    points = getattr(result, "points", ())
    curve = getattr(result, "claim_curve", ())
    if not curve:
        return None
    alphas = np.array([a for a, _ in curve])
    betas = np.array([b for _, b in curve])
    figure, (axis, margin_axis) = plt.subplots(1, 2, figsize=(10.5, 5.4), gridspec_kw={"width_ratios": [1.15, 1]})
    axis.plot([0, 1], [1, 0], color="grey", linestyle=":", linewidth=1, label="no information (1 - alpha)")
    axis.plot(alphas, betas, color="black", linewidth=1.5, label=f"claimed curve ({getattr(result, 'claim_kind', 'claim')})")
    if getattr(result, "mu_lower", 0.0) > 0:
        grid = np.linspace(0.0, 1.0, 401)
        axis.plot(grid, norm.cdf(norm.isf(grid) - result.mu_lower), color=_WITNESS_COLOUR, linestyle="--", linewidth=1,
                  label=f"G_mu at mu_lower = {result.mu_lower:.4g}")
    colours = {"d -> d_prime": _D_COLOUR, "d_prime -> d": _DP_COLOUR}
    for point in points:
        colour = colours.get(point.direction, "grey")
        axis.add_patch(Rectangle((0.0, 0.0), point.alpha_upper, point.beta_upper, fill=False, edgecolor=colour,
                                 linewidth=0.8, alpha=0.6))
        axis.plot(point.alpha_upper, point.beta_upper, marker="o", markersize=4, color=colour)
    for direction, colour in colours.items():
        if any(p.direction == direction for p in points):
            axis.plot([], [], marker="o", color=colour, linewidth=0.8, label=f"certified ({direction})")
    worst = getattr(result, "worst", None)
    if worst is not None:
        axis.plot(worst.alpha_upper, worst.beta_upper, marker="*", markersize=14, color="red" if worst.below_claim else "black",
                  linestyle="none", label="worst point" + (" (below the claim: violation)" if worst.below_claim else ""))
    axis.set_xlim(0, 1)
    axis.set_ylim(0, 1)
    axis.set_aspect("equal")
    axis.set_xlabel("type I error alpha (upper bound)")
    axis.set_ylabel("type II error beta (upper bound)")
    axis.set_title(_plain(title), fontsize=10)
    axis.legend(fontsize=7, loc="upper right", framealpha=0.9)  # above the no-information line: always empty
    if points:
        with np.errstate(divide="ignore", invalid="ignore"):
            margins = np.array([norm.ppf(p.claimed_beta) - norm.ppf(p.beta_upper) for p in points])
        margins = np.where(np.isfinite(margins), margins, np.nan)
        x = np.arange(len(points))
        margin_axis.bar(x, np.nan_to_num(margins, nan=0.0), color=[colours.get(p.direction, "grey") for p in points])
        margin_axis.axhline(0.0, color="black", linewidth=1)
        margin_axis.set_xticks(x, [f"{p.role}\nalpha<={p.alpha_upper:.2g}" for p in points], rotation=60, ha="right", fontsize=7)
        margin_axis.set_ylabel("Phi^-1(claimed f(alpha_u)) - Phi^-1(beta_u)   (> 0: violation)")
        margin_axis.set_title("distance below the claimed curve (probit units)", fontsize=10)
    return _save(figure, path)
