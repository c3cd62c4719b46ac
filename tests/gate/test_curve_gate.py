"""Gate [[audit]] entries that audit the whole privacy curve: claims in TOML, rows, reports and baselines
(the worst certified point is stored and re-certified)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.gate import load_config, run_gate
from dpaudit.gate.curve_entries import baseline_mu_upper

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))  # makes auditor.curve_mechanisms importable by name

ENTRY = """
[gate]
seed = 3
false_alarm_rate = 0.05

[[audit]]
name = "{name}"
mechanism = "auditor.curve_mechanisms:{mechanism}"
d = [0.0]
d_prime = [1.0]
epsilon = 1.0
delta = 1e-5
samples = {samples}
{extra}
"""


def config(tmp_path: Path, mechanism: str, *, name: str = "gauss", samples: int = 60_000, extra: str = "",
           file: str = "gate.toml") -> Path:
    path = tmp_path / file
    path.write_text(ENTRY.format(name=name, mechanism=mechanism, samples=samples, extra=extra))
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_mechanism_with_event_and_one_pair_audits_its_curve(tmp_path, capsys):
    code, out, _ = run(capsys, "check", config(tmp_path, "gaussian"), "--json")
    assert code == 0
    row = json.loads(out)["audits"][0]
    assert row["mode"] == "curve" and row["violated"] is False and row["passed"] is True
    assert row["claim"].startswith("Gaussian(") and 0 < row["mu_lower"] <= 1 / 3.7306 + 1e-9
    # the contract's fields, plus the worst point (what a baseline stores)
    for key in ("name", "epsilon", "delta", "epsilon_lower", "violated", "event", "samples", "confidence_level", "seconds",
                "witness", "count_alpha", "count_beta", "certification_samples", "direction"):
        assert key in row, key
    assert row["confidence_level"] == pytest.approx(0.95)
    assert row["epsilon_lower"] <= 1.0


def test_a_miscalibrated_mechanism_fails_against_its_declared_event(tmp_path, capsys):
    code, out, _ = run(capsys, "check", config(tmp_path, "half_sigma"))
    assert code == 1 and "VIOLATED" in out and "curve vs Gaussian(" in out


@pytest.mark.parametrize("claim,kind", [("claim = 0.2", "gdp"), ("claim = \"Gaussian(3.7306)\"", "gdp"),
                                        ("claim = {epsilon = 0.3, delta = 1e-5}", "guarantee")])
def test_claims_written_in_toml(tmp_path, claim, kind):
    # less_noise has mu = 0.383 and no .event: every one of these claims is too small for it
    result = run_gate(load_config(config(tmp_path, "less_noise", extra=claim)), keep_details=True)
    row = result.audits[0]
    assert row["mode"] == "curve" and row["violated"] is True and row["passed"] is False
    assert result.audit_results["gauss"].claim_kind == kind


def test_curve_false_falls_back_to_the_point_audit(tmp_path):
    row = run_gate(load_config(config(tmp_path, "gaussian", extra="curve = false"))).audits[0]
    assert row.get("mode") != "curve" and "count_p" in row


@pytest.mark.parametrize("extra,match", [
    ("curve = true", "claim"),  # no claim and no .event
    ("claim = -1.0", "claim"),
    ("claim = \"Gaussian(\"", "claim"),
    ("claim = {epsilon = 1.0, sigma = 2.0}", "claim"),
    ("claim = true", "claim"),
])
def test_bad_curve_entries_are_config_errors(tmp_path, extra, match):
    with pytest.raises(ConfigError, match=match):
        load_config(config(tmp_path, "less_noise", extra=extra))


def test_report_has_the_curve_figure(tmp_path, capsys):
    report = tmp_path / "report"
    code, _, _ = run(capsys, "check", config(tmp_path, "gaussian"), "--report", report)
    assert code == 0
    assert (report / "curve-gauss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![gauss curve](curve-gauss.png)" in (report / "report.md").read_text()


# ------------------------------------------------------------------------------------------- baselines
def test_an_unchanged_mechanism_passes_against_its_own_baseline(tmp_path, capsys):
    path = config(tmp_path, "gaussian", extra="claim = 1.0")
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", path, "--write-baseline", baseline)[0] == 0
    stored = json.loads(baseline.read_text())["audits"][0]
    assert stored["mode"] == "curve" and stored["witness"]["event"] and stored["count_alpha"] >= 0
    for seed in range(4):
        code, out, _ = run(capsys, "check", path, "--baseline", baseline, "--seed", seed, "--json")
        row = json.loads(out)["audits"][0]
        assert code == 0 and row["regression"]["status"] == "ok", out
        # the re-certified test is the baseline's worst point
        assert row["regression"]["event"] == stored["event"]
        assert row["regression"]["mu_lower_now"] <= row["regression"]["baseline_mu_upper"]
        # with a baseline the entry's share is halved: half for the audit, half for the regression test
        assert row["confidence_level"] == pytest.approx(1 - 0.05 / 2)


def test_a_leakier_mechanism_is_a_curve_regression_even_inside_the_claim(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config(tmp_path, "gaussian", extra="claim = 1.0"), "--write-baseline", baseline)[0] == 0
    changed = config(tmp_path, "less_noise", extra="claim = 1.0", samples=200_000, file="changed.toml")
    code, out, _ = run(capsys, "check", changed, "--baseline", baseline, "--json")
    row = json.loads(out)["audits"][0]
    assert row["violated"] is False  # mu 0.38 is far inside the claimed 1-GDP
    assert code == 1 and row["regression"]["regressed"] is True and row["passed"] is False
    assert row["regression"]["mu_lower_now"] > row["regression"]["baseline_mu_upper"]


def test_a_point_audit_baseline_is_not_compared_with_a_curve_entry(tmp_path, capsys):
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config(tmp_path, "gaussian", extra="curve = false"), "--write-baseline", baseline)[0] == 0
    code, out, _ = run(capsys, "check", config(tmp_path, "gaussian", file="curve.toml"), "--baseline", baseline, "--json")
    row = json.loads(out)["audits"][0]
    assert code == 0 and "point audit" in row["regression"]["status"]


def test_baseline_mu_upper_is_an_upper_confidence_bound():
    from scipy.stats import norm

    n = 100_000
    record = {"certification_samples": n, "count_alpha": 30_000, "count_beta": 40_000}
    upper = baseline_mu_upper(record, 0.05)
    assert upper > norm.isf(0.3) - norm.ppf(0.4)  # above the point estimate
    assert upper == pytest.approx(norm.isf(0.3) - norm.ppf(0.4), abs=0.03)
    assert baseline_mu_upper({**record, "count_alpha": 0}, 0.05) == math.inf  # no upper bound without errors


def test_the_example_config_audits_curves_for_its_single_pair_event_mechanisms():
    root = HERE.parents[1]
    specs = {spec.name: spec for spec in load_config(root / "examples" / "dpaudit.toml").audits}
    curves = {name for name, spec in specs.items() if spec.audits_curve()}
    assert {"gaussian", "randomized_response", "poisson_subsampled"} <= curves
    assert "laplace" not in curves  # two pairs: the point audit searches them


def test_the_example_gaussian_entry_runs_as_a_curve_audit(tmp_path):
    path = tmp_path / "example.toml"
    path.write_text('[gate]\nseed = 0\n\n[[audit]]\nname = "gaussian"\nexample = "gaussian"\nsamples = 50_000\n')
    row = run_gate(load_config(path)).audits[0]
    assert row["mode"] == "curve" and row["passed"] is True and row["mu_lower"] > 0
