"""[[training_audit]] entries with preset = "final_model": parsed, run, reported, exit codes; and the pytest
plugin's dp_audit.final_model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest.importorskip("torch")

from dpaudit.cli import main  # noqa: E402
from dpaudit.gate.config import load_config  # noqa: E402

pytest_plugins = ("pytester",)

ENTRY = """
[[training_audit]]
name = "tiny-final-model"
preset = "final_model"
train = "final_model_stack_for_tests:{train}"
dataset = "final_model_stack_for_tests:dataset"
runs = 32
{claim}
timeout = 300
"""


def write(tmp_path, train="train", claim=""):
    path = tmp_path / "gate.toml"
    shutil.copy(Path(__file__).with_name("final_model_stack.py"), tmp_path / "final_model_stack_for_tests.py")
    path.write_text(ENTRY.format(train=train, claim=claim))
    return path


def test_the_preset_is_parsed_with_its_defaults(tmp_path):
    spec = load_config(write(tmp_path, claim="epsilon = 3.0")).score_audits[0]
    assert spec.preset == "final_model" and spec.canary == "blank" and spec.initialisation == "pretrained"
    assert spec.runs == 32 and spec.epsilon == 3.0


@pytest.mark.parametrize("extra, key", [('initialisation = "zeros"', "initialisation"), ('canary = "mislabelled"', "canary"),
                                        ("canaries = 10", "canaries"), ("public_fraction = 1.5", "public_fraction")])
def test_bad_preset_entries_are_config_errors(tmp_path, extra, key, capsys):
    path = write(tmp_path)
    path.write_text(path.read_text() + extra + "\n")
    assert main(["check", str(path)]) == 2
    assert key in capsys.readouterr().err


def test_preset_keys_need_the_preset(tmp_path, capsys):
    path = write(tmp_path)
    path.write_text(path.read_text().replace('preset = "final_model"\n', 'initialisation = "random"\n'))
    assert main(["check", str(path)]) == 2
    assert "initialisation" in capsys.readouterr().err
    path.write_text(ENTRY.format(train="train", claim="").replace('"final_model"', '"white_box"'))
    assert main(["check", str(path)]) == 2
    assert "preset" in capsys.readouterr().err


def test_a_run_reports_both_numbers_and_a_violation_exits_one(tmp_path, capsys):
    assert main(["check", str(write(tmp_path)), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["score_audits"][0]
    assert row["preset"] == "final_model" and row["threat_model"].startswith("final model only")
    assert "Gaussian" in row["epsilon_gdp_note"] and row["epsilon_last_iterate"] is not None
    assert main(["check", str(write(tmp_path, train="train_leaky", claim="epsilon = 0.2"))]) == 1


SUITE = r"""
from final_model_stack_for_tests import dataset, train, train_leaky

def test_private_stack(dp_audit):
    result = dp_audit.final_model(train, dataset=dataset(), runs=16, check_seed=False)
    assert result.confidence_level == dp_audit.confidence_level and result.threat_model.startswith("final model only")

def test_leaky_stack(dp_audit):
    dp_audit.final_model(train_leaky, dataset=dataset(), runs=64, claim=0.1, check_seed=False)

def test_seed_is_the_plugins(dp_audit):
    dp_audit.final_model(train, dataset=dataset(), runs=32, seed=3)
"""


def test_the_pytest_plugin_audits_the_final_model(pytester):
    from test_pytest_plugin import PLUGIN

    shutil.copy(Path(__file__).with_name("final_model_stack.py"), pytester.path / "final_model_stack_for_tests.py")
    pytester.makepyfile(test_final=SUITE)
    result = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider", "-W", "ignore")
    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str()
    assert "differential privacy VIOLATED by the released model" in output and "seed is set by the plugin" in output
    assert "Traceback" not in output
