"""``replay = true`` on ``[[audit]]`` entries: a replay row before the audit, its findings and errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.gate import load_config

MECHANISMS = '''
import random
import numpy as np
from dpaudit.mechanisms.sensitivity_bugs import ClippedMean, MeanDividedByWrongCount, NoiseDrawsPerRecord

clipped_mean = ClippedMean(1.0)
wrong_count = MeanDividedByWrongCount(1.0)
draws_per_record = NoiseDrawsPerRecord(1.0)

def os_noise(data, size, rng):
    """A private clipped sum whose Laplace(1) noise comes from the random module (not instrumentable)."""
    value = float(np.clip(np.sum(data), 0.0, 1.0))
    return value + np.array([random.expovariate(1.0) - random.expovariate(1.0) for _ in range(size)])
'''

GATE = '''
[gate]
samples = 2000
workers = 1
'''


def _entry(name: str, mechanism: str, d: str, d_prime: str, replay: str = "true") -> str:
    return (f'[[audit]]\nname = "{name}"\nmechanism = "replay_key_mechanisms:{mechanism}"\nd = {d}\n'
            f'd_prime = {d_prime}\nepsilon = 1.0\nreplay = {replay}\n')


def _run(tmp_path: Path, capsys, *entries: str) -> tuple[int, dict]:
    (tmp_path / "replay_key_mechanisms.py").write_text(MECHANISMS)
    path = tmp_path / "gate.toml"
    path.write_text(GATE + "\n".join(entries))
    code = main(["check", str(path), "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_correct_mechanism_passes_with_a_replay_row(tmp_path, capsys):
    code, document = _run(tmp_path, capsys, _entry("mean", "clipped_mean", "[0.0, 0.5]", "[1.0, 0.5]"))
    assert code == 0
    (row,) = document["replays"]
    assert row["name"] == "mean (replay)" and row["passed"] and not row["violated"]
    assert row["claim"] == "epsilon 1, delta 0"
    assert [audit["name"] for audit in document["audits"]] == ["mean"]


def test_sensitivity_bug_is_a_replay_finding(tmp_path, capsys):
    code, document = _run(tmp_path, capsys, _entry("mean", "wrong_count", "[0.0, 0.5]", "[1.0, 0.5]"))
    assert code == 1
    (row,) = document["replays"]
    assert row["name"] == "mean (replay)" and row["violated"] and row["status"] == "FAILED"
    assert row["epsilon_lower"] > 1.0
    assert [audit["name"] for audit in document["audits"]] == ["mean"]  # the statistical audit still ran


def test_diverging_draws_hand_the_entry_to_the_audit(tmp_path, capsys):
    code, document = _run(tmp_path, capsys, _entry("draws", "draws_per_record", "[1.0]", "[1.0, 0.0]"))
    (row,) = document["replays"]
    assert row["control_flow_diverges"] and not row["violated"]
    assert document["audits"][0]["name"] == "draws" and not document["audits"][0].get("error")
    assert code == (0 if document["audits"][0]["passed"] else 1)


def test_uninstrumentable_mechanism_is_an_error(tmp_path, capsys):
    code, document = _run(tmp_path, capsys, _entry("os", "os_noise", "[0]", "[1]"))
    assert code == 3
    (row,) = document["replays"]
    assert row["status"] == "ERROR" and "UninstrumentableMechanism" in json.dumps(row["error"])


def test_without_the_key_no_replay_runs(tmp_path, capsys):
    code, document = _run(tmp_path, capsys, _entry("mean", "wrong_count", "[0.0, 0.5]", "[1.0, 0.5]", replay="false"))
    assert not document.get("replays")


def test_replay_key_must_be_a_boolean_and_its_row_name_unique(tmp_path):
    (tmp_path / "replay_key_mechanisms.py").write_text(MECHANISMS)
    path = tmp_path / "gate.toml"
    path.write_text(GATE + _entry("mean", "clipped_mean", "[0.0]", "[1.0]", replay='"yes"'))
    with pytest.raises(ConfigError, match="replay"):
        load_config(path)
    path.write_text(GATE + _entry("mean", "clipped_mean", "[0.0]", "[1.0]")
                    + '[[replay]]\nname = "mean (replay)"\nexample = "laplace"\n')
    with pytest.raises(ConfigError, match="used more than once"):
        load_config(path)
