"""[[score_audit]] one-run entries with method = "fdp": a claimed GDP mu or the event's whole curve."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dpaudit.errors import ConfigError
from dpaudit.gate import load_config, run_gate


def canaries(tmp_path: Path, shift: float) -> None:
    rng = np.random.default_rng(3)
    included = (rng.random(1000) < 0.5).astype(int)
    np.savez(tmp_path / "one.npz", score=included * shift + rng.normal(size=1000), included=included)


def gate(tmp_path: Path, claim: str):
    path = tmp_path / "gate.toml"
    path.write_text(f'[[score_audit]]\nname = "fdp"\nscores = "one.npz"\none_run = true\nmethod = "fdp"\n'
                    f'delta = 1e-5\n{claim}\n')
    return run_gate(load_config(path))


def test_fdp_entries_fail_on_a_rejected_curve_and_pass_otherwise(tmp_path):
    canaries(tmp_path, 4.0)
    leaky = gate(tmp_path, "epsilon = 50.0\nmu = 1.0")
    row = leaky.score_audits[0]
    assert not leaky.passed and row["claim_rejected"] and row["epsilon_steinke"] <= row["epsilon_lower"]
    private = gate(tmp_path, 'event = "Gaussian(0.1)"')
    assert private.passed and private.score_audits[0]["claim_rejected"] is False


@pytest.mark.parametrize("body,needle", [
    ('one_run = true\nmethod = "exact"\nepsilon = 1.0\n', "key 'method'"),
    ('method = "fdp"\nepsilon = 1.0\n', "one_run = true"),
    ('one_run = true\nepsilon = 1.0\nmu = 1.0\n', "key 'mu'"),
    ('one_run = true\nmethod = "fdp"\nepsilon = 1.0\nmu = -1.0\n', "key 'mu'"),
])
def test_fdp_config_errors_name_the_key(tmp_path, body, needle):
    path = tmp_path / "gate.toml"
    path.write_text('[[score_audit]]\nname = "a"\nscores = "s.npz"\n' + body)
    with pytest.raises(ConfigError, match="score_audit") as info:
        load_config(path)
    assert needle in str(info.value)
