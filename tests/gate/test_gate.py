"""The CI gate: configs, exit codes, reports, baselines and false alarms."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.gate import load_config, run_gate

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))  # makes gate.gate_mechanisms importable by name

GOOD = """
[gate]
seed = 1
false_alarm_rate = 0.01
samples = 100_000

[[audit]]
name = "laplace"
mechanism = "gate.gate_mechanisms:laplace"
neighbours = "gate.gate_mechanisms:pairs"
epsilon = 1.5

[[accuracy]]
name = "laplace-tail"
mechanism = "gate.gate_mechanisms:laplace"
data = [0.0]
alpha = 2.995732273553991   # ln(1/0.05): P[|Lap(1)| > alpha] = 0.05 exactly
beta = 0.05
error = "gate.gate_mechanisms:max_abs_error"
samples = 20_000

[[budget]]
name = "optimal-budget"
epsilon = 0.1
k = 1000
delta = 1e-5
max_epsilon = 20
"""


def write(tmp_path: Path, text: str, name: str = "gate.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_passing_config_exits_0_with_contract_json(tmp_path, capsys):
    code, out, _ = run(capsys, "check", write(tmp_path, GOOD), "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["passed"] is True and payload["false_alarm_bound"] == pytest.approx(0.01)
    row = payload["audits"][0]
    for key in ("name", "epsilon", "delta", "epsilon_lower", "violated", "event", "samples", "confidence_level", "seconds"):
        assert key in row
    assert payload["accuracy"][0]["holds"] is True and payload["budgets"][0]["passed"] is True


def test_violation_exits_1(tmp_path, capsys):
    config = """
[[audit]]
name = "noisy-max-value"
mechanism = "gate.gate_mechanisms:noisy_max_value"
d = [0, 0, 0, 0, 0]
d_prime = [1, 1, 1, 1, 1]
epsilon = 1.0
samples = 100_000
"""
    code, out, _ = run(capsys, "check", write(tmp_path, config))
    assert code == 1 and "VIOLATED" in out and "FAILED" in out


def test_exceeded_budget_exits_1(tmp_path, capsys):
    config = '[[budget]]\nname = "tight"\nepsilon = 0.1\nk = 1000\ndelta = 1e-5\nmax_epsilon = 10\n'
    code, out, _ = run(capsys, "check", write(tmp_path, config))
    assert code == 1 and "EXCEEDED" in out


def test_report_directory(tmp_path, capsys):
    report = tmp_path / "report"
    code, _, err = run(capsys, "check", write(tmp_path, GOOD), "--report", report)
    assert code == 0 and "report written" in err
    for name in ("report.md", "report.json", "baseline.json", "audit-laplace-outputs.png", "audit-laplace-bound.png",
                 "budget-optimal-budget.png"):
        assert (report / name).is_file(), name
    text = (report / "report.md").read_text()
    assert "lower bounds" in text and "![laplace outputs](audit-laplace-outputs.png)" in text


def test_unchanged_mechanism_passes_against_its_own_baseline_on_every_seed(tmp_path, capsys):
    config = write(tmp_path, GOOD)
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config, "--write-baseline", baseline)[0] == 0
    for seed in range(5):
        code, out, _ = run(capsys, "check", config, "--baseline", baseline, "--seed", seed)
        assert code == 0, out
        assert "[baseline: ok]" in out


def test_a_leakier_mechanism_is_a_regression_even_below_the_claim(tmp_path, capsys):
    config = write(tmp_path, GOOD)
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config, "--write-baseline", baseline)[0] == 0
    changed = write(tmp_path, GOOD.replace("gate.gate_mechanisms:laplace\"\nneighbours", "gate.gate_mechanisms:laplace_less_noise\"\nneighbours")
                    .replace("samples = 100_000", "samples = 1_000_000"), "changed.toml")
    code, out, _ = run(capsys, "check", changed, "--baseline", baseline, "--json")
    payload = json.loads(out)
    row = payload["audits"][0]
    assert code == 1 and row["violated"] is False and row["regression"]["regressed"] is True
    assert row["regression"]["epsilon_lower_now"] > row["regression"]["baseline_upper"]
    assert row["epsilon_lower"] < 1.5  # still below the claim: only the baseline catches it


def test_false_alarm_rate_is_split_over_checks(tmp_path):
    result = run_gate(load_config(write(tmp_path, GOOD)))
    assert result.false_alarm_bound == pytest.approx(0.01)
    assert result.audits[0]["confidence_level"] == pytest.approx(1 - 0.01 / 2)


def test_example_entries_resolve_from_the_library(tmp_path):
    pytest.importorskip("dpaudit.mechanisms.examples")
    config = load_config(write(tmp_path, '[[audit]]\nname = "lap"\nexample = "laplace"\nsamples = 1000\n'))
    assert config.audits[0].pairs and math.isfinite(config.audits[0].epsilon)


BAD_CONFIGS = [
    ("not toml [", "not valid TOML"),
    ("[[audit]]\nname = 'x'\n", "key 'mechanism'"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nd_prime = [1.0]\n", "key 'epsilon': is required"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nd_prime = [1.0]\nepsilon = -1\n", "key 'epsilon'"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1\nepsilom = 2\n", "key 'epsilom': unknown key"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:nothing'\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1\n", "has no attribute"),
    ("[[audit]]\nname = 'x'\nmechanism = 'no_module_here:f'\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1\n", "cannot import"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nepsilon = 1\n", "key 'd_prime'"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1\nsamples = 'many'\n", "key 'samples': must be int"),
    ("[[audit]]\nname = 'x'\nmechanism = 'gate.gate_mechanisms:laplace'\nd = [0.0]\nd_prime = [1.0]\nepsilon = 1\nconfidence_level = 1.5\n", "key 'confidence_level'"),
    ("[audit]\nname = 'x'\n", "array of tables"),
    ("[gate]\nseeds = 3\n[[budget]]\nname='b'\nepsilon=1\nk=2\ndelta=0.1\nmax_epsilon=3\n", "[gate], key 'seeds'"),
    ("[[budget]]\nname = 'b'\nkind = 'magic'\nmax_epsilon = 1\n", "key 'kind'"),
    ("[[budget]]\nname = 'b'\nepsilon = 0.1\nk = 0\ndelta = 1e-5\nmax_epsilon = 1\n", "key 'k'"),
    ("[[budget]]\nname = 'b'\nepsilon = 0.1\nk = 10\ndelta = 1e-5\nmax_epsilon = 1\n[[budget]]\nname = 'b'\nepsilon = 0.1\nk = 10\ndelta = 1e-5\nmax_epsilon = 1\n", "more than once"),
    ("[[accuracy]]\nname = 'a'\nmechanism = 'gate.gate_mechanisms:laplace'\ndata = [0.0]\nbeta = 0.05\n", "key 'alpha'"),
    ("[surprise]\nx = 1\n", "unknown section"),
    ("", "no [[audit]]"),
]


@pytest.mark.parametrize(("text", "message"), BAD_CONFIGS)
def test_malformed_configs_exit_2_naming_file_entry_and_key(tmp_path, capsys, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=None) as info:
        load_config(path)
    assert message in str(info.value) and str(path) in str(info.value)
    code, out, err = run(capsys, "check", path)
    assert code == 2 and message in err and "Traceback" not in err


def test_missing_config_and_missing_baseline_exit_2(tmp_path, capsys):
    assert run(capsys, "check", tmp_path / "absent.toml")[0] == 2
    code, _, err = run(capsys, "check", write(tmp_path, GOOD), "--baseline", tmp_path / "absent.json")
    assert code == 2 and "baseline file not found" in err


def test_audits_are_sequential_unless_the_fixed_budget_is_asked(tmp_path, capsys):
    text = GOOD.replace("epsilon = 1.5", "epsilon = 1.0").replace('"gate.gate_mechanisms:laplace"\nneighbours',
                                                                   '"gate.gate_mechanisms:laplace_less_noise"\nneighbours')
    code, out, _ = run(capsys, "check", write(tmp_path, text), "--json")
    row = json.loads(out)["audits"][0]
    assert code == 1 and row["stopped"] == "violation" and row["samples_used"] < row["samples"]
    for fixed in (["--fixed-budget"], []):
        config = text if fixed else text.replace("samples = 100_000", "samples = 100_000\nsequential = false", 1)
        code, out, _ = run(capsys, "check", write(tmp_path, config, "fixed.toml"), "--json", *fixed)
        row = json.loads(out)["audits"][0]
        assert code == 1 and row["stopped"] == "budget" and row["samples_used"] == row["samples"] == 100_000
    with pytest.raises(ConfigError, match="sequential"):
        load_config(write(tmp_path, GOOD.replace("samples = 100_000", "samples = 100_000\nsequential = 1", 1), "bad.toml"))


def test_gate_audits_read_the_verdict_only_so_they_also_stop_for_futility(tmp_path, capsys):
    text = GOOD.replace("epsilon = 1.5", "epsilon = 4.0").replace("samples = 100_000", "samples = 400_000", 1)
    code, out, _ = run(capsys, "check", write(tmp_path, text), "--json")
    row = json.loads(out)["audits"][0]
    assert code == 0 and row["stopped"] == "futility" and row["samples_used"] < row["samples"]
