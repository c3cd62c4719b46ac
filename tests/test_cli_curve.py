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


# ------------------------------------------------------------------------------------ --scheduler
def _numbers(payload: dict) -> dict:
    payload = dict(payload)
    payload.pop("seconds")
    return payload


def test_scheduler_runs_the_curve_audit_on_a_cluster_with_the_same_numbers(capsys):
    distributed = pytest.importorskip("distributed")
    argv = ["audit", "auditor.curve_mechanisms:half_sigma", "--d", "[0]", "--d-prime", "[1]", "--samples", "60000",
            "--curve", "--json", "--seed", "4"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None,
                                  silence_logs=50) as cluster:
        remote_code = main([*argv, "--scheduler", cluster.scheduler_address])
        remote = json.loads(capsys.readouterr().out)
    local_code = main([*argv, "--workers", "1"])
    local = json.loads(capsys.readouterr().out)
    assert remote_code == local_code == 1 and _numbers(remote) == _numbers(local)


def test_unreachable_scheduler_exits_3_in_one_line(capsys, monkeypatch):
    pytest.importorskip("distributed")
    import dpaudit.auditor.dask_backend as backend

    monkeypatch.setattr(backend, "CONNECT_TIMEOUT", 2.0)
    code = main(["audit", "auditor.curve_mechanisms:gaussian", *PAIR, "--curve", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 3 and "cannot reach the Dask scheduler" in err and err.count("\n") == 1


def test_scheduler_false_stays_local_whatever_the_environment(monkeypatch):
    from dpaudit.auditor.curve import audit_curve
    from auditor.curve_mechanisms import gaussian

    monkeypatch.setenv("DPAUDIT_SCHEDULER", "tcp://127.0.0.1:9")  # would fail if it were used
    local = audit_curve(gaussian, [0.0], [1.0], samples=20_000, seed=1, workers=1, scheduler=False)
    monkeypatch.delenv("DPAUDIT_SCHEDULER")
    assert local.points == audit_curve(gaussian, [0.0], [1.0], samples=20_000, seed=1, workers=1).points
    with pytest.raises(ValueError, match="scheduler"):
        audit_curve(gaussian, [0.0], [1.0], samples=20_000, workers=1, scheduler=42)
