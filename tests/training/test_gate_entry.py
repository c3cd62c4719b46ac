"""[[training_audit]] gate entries: parsed, run in the false-alarm budget, reported, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dpaudit.cli import main
from dpaudit.gate.config import load_config

ENTRY = """
[[training_audit]]
name = "tiny-opacus"
train = "gate_stack_for_tests:{train}"
dataset = "gate_stack_for_tests:dataset"
canaries = 40
{claim}
timeout = 300
"""


def write(tmp_path, train="train", claim=""):
    path = tmp_path / "gate.toml"
    shutil.copy(Path(__file__).with_name("gate_stack.py"), tmp_path / "gate_stack_for_tests.py")
    path.write_text(ENTRY.format(train=train, claim=claim))
    return path


def test_entries_are_parsed_and_counted_in_the_budget(tmp_path):
    config = load_config(write(tmp_path, claim="epsilon = 3.0"))
    assert config.check_count == 1
    spec = config.score_audits[0]
    assert spec.canary == "dirac_gradient" and spec.canaries == 40 and spec.epsilon == 3.0 and spec.one_run


@pytest.mark.parametrize("extra, key", [("runs = 10", "runs"), ('canary = "nope"', "canary"), ("epsilon = -1", "epsilon"),
                                        ("colour = 1", "colour")])
def test_bad_entries_are_config_errors(tmp_path, extra, key, capsys):
    path = write(tmp_path)
    path.write_text(path.read_text() + extra + "\n")
    assert main(["check", str(path)]) == 2
    assert key in capsys.readouterr().err


def test_a_run_reports_its_row_and_a_violation_exits_one(tmp_path, capsys):
    pytest.importorskip("opacus")
    assert main(["check", str(write(tmp_path)), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["score_audits"][0]
    assert row["entry"] == "training_audit" and "white-box" in row["threat_model"]
    assert row["epsilon_lower"] <= row["epsilon"] and row["epsilon_opacus"] is not None
    assert main(["check", str(write(tmp_path, train="train_leaky", claim="epsilon = 0.01")), "--report",
                 str(tmp_path / "report")]) == 1
    report = (tmp_path / "report" / "report.md").read_text()
    assert "tiny-opacus" in report
    # a claim below the engine's own figure is a warning on the console and in the report
    assert "below the engine's own figure" in capsys.readouterr().out and "below the engine" in report


def test_the_update_scale_check_fails_the_entry_and_the_correct_stack_passes(tmp_path, capsys):
    """Normalising by the realised batch size is invisible to the Dirac score; the entry fails through the
    update-scale check (exit 1, its own verdict in the row and the report), the correct stack passes."""
    pytest.importorskip("opacus")
    config = ENTRY.replace("canaries = 40", "canaries = 300").replace("gate_stack_for_tests:dataset",
                                                                       "gate_stack_for_tests:corpus_dataset")
    path = write(tmp_path)
    path.write_text(config.format(train="train_actual_batch_size", claim=""))
    assert main(["check", str(path), "--json", "--report", str(tmp_path / "report")]) == 1
    captured = capsys.readouterr()
    row = json.loads(captured.out)["score_audits"][0]
    assert not row["passed"] and not row["violated"] and row["update_scale"].startswith("FLAGGED")
    # the console row says which checks failed (not "pass"), each finding on a line of its own
    assert "FAILED (failed: update_scale, noise_level)" in captured.err and "\n         noise_level: " in captured.err
    assert len(row["checks"]) == 9 and all(check["sentence"] for check in row["checks"])
    assert "update_scale" in row["failed"] and "noise_level" in row["failed"]  # the witnessed run sees it too
    assert "FLAGGED (update_scale" in (tmp_path / "report" / "report.md").read_text()
    path.write_text(config.format(train="train_corpus_correct", claim=""))
    assert main(["check", str(path), "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["score_audits"][0]
    assert row["passed"] and row["update_scale"].startswith("as declared")


def test_a_crashing_stack_could_not_be_completed(tmp_path, capsys):
    pytest.importorskip("opacus")
    assert main(["check", str(write(tmp_path, train="train_broken"))]) == 3
    assert "the training crashed" in capsys.readouterr().out + capsys.readouterr().err


def test_the_example_gate_file_is_valid():
    config = load_config(Path(__file__).resolve().parents[2] / "examples" / "opacus" / "opacus.toml")
    assert [spec.name for spec in config.score_audits] == ["opacus-mlp-white-box"]
