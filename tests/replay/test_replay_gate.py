"""``[[replay]]`` gate entries: exit codes, report rows in every format, configuration errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.gate import load_config
from dpaudit.gate.schema import check_against_parser

MECHANISMS = '''
import random
import numpy as np

def unclipped_sum(data, size, rng):
    return np.sum(data) + rng.laplace(0.0, 1.0, size)

def os_noise(data, size, rng):
    return np.sum(data) + np.array([random.random() for _ in range(size)])
'''

PASSING = '''
[[replay]]
name = "laplace-example"
example = "laplace"
'''

VIOLATING = PASSING + '''
[[replay]]
name = "unclipped"
mechanism = "replay_gate_mechanisms:unclipped_sum"
generated = "datasets"
count = 20
epsilon = 1.0
'''

UNINSTRUMENTABLE = PASSING + '''
[[replay]]
name = "os-noise"
mechanism = "replay_gate_mechanisms:os_noise"
d = [0]
d_prime = [1]
epsilon = 1.0
'''


def _config(tmp_path: Path, text: str) -> Path:
    (tmp_path / "replay_gate_mechanisms.py").write_text(MECHANISMS)
    path = tmp_path / "gate.toml"
    path.write_text(text)
    return path


def test_passing_replay_exits_zero(tmp_path, capsys):
    assert main(["check", str(_config(tmp_path, PASSING)), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["replays"][0]["name"] == "laplace-example" and document["replays"][0]["passed"]


def test_violation_exits_one_with_rows_in_every_report(tmp_path, capsys):
    report, junit = tmp_path / "report", tmp_path / "junit.xml"
    assert main(["check", str(_config(tmp_path, VIOLATING)), "--report", str(report), "--junit", str(junit)]) == 1
    markdown = (report / "report.md").read_text()
    assert "## Record/replay" in markdown and "| unclipped |" in markdown and "VIOLATED" in markdown
    assert "unclipped" in (report / "report.html").read_text()
    assert json.loads((report / "report.json").read_text())["replays"][1]["violated"] is True
    assert 'classname="dpaudit.replay"' in junit.read_text() and "PrivacyViolation" in junit.read_text()


def test_uninstrumentable_mechanism_is_an_error(tmp_path, capsys):
    assert main(["check", str(_config(tmp_path, UNINSTRUMENTABLE))]) == 3
    captured = capsys.readouterr()
    assert "UninstrumentableMechanism" in captured.out + captured.err


@pytest.mark.parametrize("body, key", [
    ('mechanism = "replay_gate_mechanisms:unclipped_sum"\nd = [0]\nd_prime = [1]\n', "claim is missing"),
    ('example = "laplace"\nepsilon = 1.0\nevent = "Laplace(1.0)"\n', "not both"),
    ('example = "laplace"\ngenerated = "graphs"\n', "generated"),
    ('example = "laplace"\nseeds = 1\n', "seeds"),
])
def test_config_errors_name_the_key(tmp_path, body, key):
    with pytest.raises(ConfigError, match=key):
        load_config(_config(tmp_path, f'[[replay]]\nname = "r"\n{body}'))


def test_schema_describes_the_replay_section():
    assert check_against_parser() == []
