"""``dpaudit audit`` on the command line: exit codes and JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from dpaudit.cli import main

sys.path.insert(0, str(Path(__file__).parent))  # makes auditor.mechanisms_for_tests importable


def test_violation_exits_1(capsys):
    code = main(["audit", "auditor.mechanisms_for_tests:noisy_max_value", "--d", "[0,0,0,0,0]", "--d-prime", "[1,1,1,1,1]",
                 "--epsilon", "1", "--samples", "100000", "--workers", "1"])
    out = capsys.readouterr().out
    assert code == 1 and "VIOLATED" in out and "lower bound" in out


def test_pass_exits_0_and_json_on_stdout(capsys):
    code = main(["audit", "auditor.mechanisms_for_tests:laplace_unit", "--d", "[0]", "--d-prime", "[1]",
                 "--epsilon", "1", "--samples", "100000", "--workers", "1", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    payload = json.loads(captured.out)
    assert payload["violated"] is False and payload["bound"] == "lower"
    assert "epsilon >=" in captured.err


def test_statdp_search(capsys):
    code = main(["audit", "auditor.mechanisms_for_tests:noisy_max_value", "--statdp", "5", "--epsilon", "1",
                 "--samples", "50000", "--workers", "1"])
    assert code == 1 and "best of" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["audit", "auditor.mechanisms_for_tests:missing", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1"],
    ["audit", "no_such_module_x:thing", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1"],
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", "--d", "[0", "--d-prime", "[1]", "--epsilon", "1"],
    ["audit", "auditor.mechanisms_for_tests:laplace_unit", "--epsilon", "1"],
])
def test_usage_errors_exit_2(capsys, argv):
    assert main(argv) == 2
    assert "error" in capsys.readouterr().err


def test_crashing_mechanism_exits_3_with_one_line(capsys):
    code = main(["audit", "auditor.mechanisms_for_tests:crashes", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1",
                 "--samples", "1000"])
    err = capsys.readouterr().err
    assert code == 3
    assert err.count("\n") == 1 and "ZeroDivisionError: boom" in err and "block 0, seed 0" in err and "Traceback" not in err


def test_samples_accept_scientific_notation(capsys):
    code = main(["audit", "auditor.mechanisms_for_tests:laplace_unit", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1",
                 "--samples", "2e3", "--workers", "1", "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["samples"] == 2000


@pytest.mark.parametrize("extra", [["--neighbours", "gate.gate_mechanisms:pairs"], ["--statdp", "3"]])
def test_conflicting_pair_flags_are_refused(capsys, extra):
    code = main(["audit", "auditor.mechanisms_for_tests:laplace_unit", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1", *extra])
    err = capsys.readouterr().err
    assert code == 2 and "conflict" in err
