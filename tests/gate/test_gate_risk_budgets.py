"""Gate budgets that also assert attack risk: `max_tpr_at_fpr = [tpr, fpr]` and `max_advantage`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpaudit.accountant import RDPAccountant
from dpaudit.cli import main
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

EVENT = '''
[[budget]]
name = "dpsgd-risk"
event = "SelfComposed(PoissonSampled(0.05, Gaussian(1.0)), 100)"
accountant = "rdp"
delta = 1e-5
max_epsilon = 10.0
{risk}
'''
DPSGD = '''
[[budget]]
name = "dpsgd-kind"
kind = "dpsgd"
noise_multiplier = 1.0
sampling_probability = 0.05
steps = 100
delta = 1e-5
accountant = "rdp"
max_epsilon = 10.0
{risk}
'''


def gate(tmp_path: Path, capsys, text: str) -> tuple[int, str, str]:
    path = tmp_path / "gate.toml"
    path.write_text(text)
    code = main(["check", str(path), "--json"])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("template", [EVENT, DPSGD])
def test_risk_targets_pass_and_fail_by_the_accountant_bound(tmp_path, capsys, template):
    acct = RDPAccountant().compose(SelfComposed(PoissonSampled(0.05, Gaussian(1.0)), 100))
    tpr, advantage = acct.tpr_at_fpr(0.01), acct.advantage()
    code, out, _ = gate(tmp_path, capsys, template.format(risk=f"max_tpr_at_fpr = [{tpr * 1.01!r}, 0.01]\n"
                                                                   f"max_advantage = {advantage * 1.01!r}"))
    row = json.loads(out)["budgets"][0]
    assert code == 0 and row["passed"] and [c["target"] for c in row["risk"]] == ["max_tpr_at_fpr", "max_advantage"]
    assert row["risk"][0]["tpr_upper"] == tpr and row["risk"][1]["advantage_upper"] == advantage
    code, out, _ = gate(tmp_path, capsys, template.format(risk=f"max_tpr_at_fpr = [{tpr * 0.99!r}, 0.01]"))
    row = json.loads(out)["budgets"][0]
    assert code == 1 and not row["passed"] and row["epsilon_upper"] <= 10.0 and not row["risk"][0]["passed"]


def test_risk_only_shows_in_the_text_line(tmp_path, capsys):
    path = tmp_path / "gate.toml"
    path.write_text(EVENT.format(risk="max_tpr_at_fpr = [0.9, 0.01]"))
    assert main(["check", str(path)]) == 0
    assert "TPR at FPR 0.01 <= " in capsys.readouterr().out


@pytest.mark.parametrize("risk, fragment", [
    ("max_tpr_at_fpr = [0.001, 0.01]", "random guess"),
    ("max_tpr_at_fpr = [0.5]", "pair"),
    ("max_tpr_at_fpr = 0.5", "must be list"),
    ("max_tpr_at_fpr = [0.5, 1.0]", "0 < fpr < 1"),
    ("max_advantage = 1.0", "in [0, 1)"),
])
def test_bad_risk_targets_exit_2_naming_the_key(tmp_path, capsys, risk, fragment):
    code, _, err = gate(tmp_path, capsys, EVENT.format(risk=risk))
    assert code == 2 and risk.split(" ")[0] in err and fragment in err and "Traceback" not in err


def test_composition_budgets_refuse_risk_keys(tmp_path, capsys):
    text = '[[budget]]\nname = "c"\nepsilon = 0.1\nk = 10\ndelta = 1e-5\nmax_epsilon = 5.0\nmax_advantage = 0.5\n'
    code, _, err = gate(tmp_path, capsys, text)
    assert code == 2 and "max_advantage" in err


def test_reports_carry_the_risk_lines(tmp_path, capsys):
    path = tmp_path / "gate.toml"
    path.write_text(EVENT.format(risk="max_tpr_at_fpr = [0.9, 0.01]\nmax_advantage = 0.99"))
    assert main(["check", str(path), "--report", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    report = (tmp_path / "out" / "report.md").read_text()
    assert "dpsgd-risk: attack risk pass: TPR at FPR 0.01 <= " in report and "advantage <= " in report
    assert "attack risk pass: TPR at FPR 0.01" in (tmp_path / "out" / "report.html").read_text()
