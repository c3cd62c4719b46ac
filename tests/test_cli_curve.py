"""``dpaudit audit --curve``: the whole trade-off curve on the command line (exit codes, JSON)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main

sys.path.insert(0, str(Path(__file__).parent))  # makes auditor.curve_mechanisms importable

PAIR = ["--d", "[0]", "--d-prime", "[1]", "--samples", "20000", "--workers", "1"]


def test_declared_event_passes_with_json(capsys):
    code = main(["audit", "auditor.curve_mechanisms:gaussian", *PAIR, "--curve", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    payload = json.loads(captured.out)
    assert payload["violated"] is False and payload["bound"] == "lower" and payload["claim_kind"] == "gdp"
    assert 0 < payload["mu_lower"] <= payload["claim_mu"]
    assert "assuming a Gaussian trade-off curve" in captured.err


def test_miscalibration_against_the_declared_event_exits_1(capsys):
    code = main(["audit", "auditor.curve_mechanisms:half_sigma", *PAIR, "--curve"])
    out = capsys.readouterr().out
    assert code == 1 and "VIOLATED" in out


def test_mu_and_guarantee_claims(capsys):
    assert main(["audit", "auditor.mechanisms_for_tests:gaussian_half_sigma", *PAIR, "--curve", "--mu", "0.2"]) == 1
    assert main(["audit", "auditor.mechanisms_for_tests:laplace_unit", *PAIR, "--curve", "--epsilon", "1"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("argv", [
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", *PAIR, "--curve"],  # no .event and no claim
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", *PAIR, "--curve", "--mu", "-1"],
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", *PAIR, "--curve", "--mu", "1", "--epsilon", "1"],
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", "--statdp", "3", "--curve", "--mu", "1"],
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", *PAIR],  # a point audit needs --epsilon
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip()
