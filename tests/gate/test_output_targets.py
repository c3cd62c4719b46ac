"""No output flag replaces the config being run, a baseline being read, another output or a file dpaudit
did not write: each is refused before anything runs (exit 2 naming the path); figure names are unique."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpaudit._io import MANIFEST, written_by_dpaudit
from dpaudit.cli import main
from dpaudit.reporting.text import unique_slugs

BUDGET = """
[[budget]]
name = "{name}"
kind = "composition"
epsilon = {epsilon}
k = 10
theorem = "basic"
delta = 1e-5
max_epsilon = 5.0
"""


def _config(tmp_path: Path, *names: tuple[str, float]) -> Path:
    config = tmp_path / "victim.toml"
    config.write_text("".join(BUDGET.format(name=name, epsilon=epsilon) for name, epsilon in names or [("b", 0.1)]))
    return config


@pytest.mark.parametrize("flag", ["--junit", "--write-baseline"])
def test_an_output_onto_the_config_is_refused_and_the_config_kept(tmp_path, capsys, flag):
    config = _config(tmp_path)
    text = config.read_text()
    assert main(["check", str(config), flag, str(config)]) == 2
    err = capsys.readouterr().err
    assert "the config being run" in err and str(config) in err and "Traceback" not in err
    assert config.read_text() == text


def test_outputs_onto_a_users_file_each_other_or_the_baseline_being_read_are_refused(tmp_path, capsys):
    config = _config(tmp_path)
    user = tmp_path / "notes.xml"
    user.write_text("mine")
    assert main(["check", str(config), "--junit", str(user)]) == 2
    assert "dpaudit did not write it" in capsys.readouterr().err and user.read_text() == "mine"
    same = tmp_path / "out.json"
    assert main(["check", str(config), "--junit", str(same), "--write-baseline", str(same)]) == 2
    assert "writes the same file" in capsys.readouterr().err and not same.exists()
    baseline = tmp_path / "baseline.json"
    assert main(["check", str(config), "--write-baseline", str(baseline)]) == 0
    before = baseline.read_text()
    assert written_by_dpaudit(baseline)
    assert main(["check", str(config), "--baseline", str(baseline), "--write-baseline", str(baseline)]) == 2
    assert "the baseline being read" in capsys.readouterr().err and baseline.read_text() == before
    report = tmp_path / "report"
    assert main(["check", str(config), "--report", str(report)]) == 0
    assert main(["check", str(config), "--baseline", str(report / "baseline.json"), "--report", str(report)]) == 2
    assert "the baseline being read" in capsys.readouterr().err
    assert main(["check", str(config), "--report", str(report), "--junit", str(report / "report.json")]) == 2
    assert "inside the --report directory" in capsys.readouterr().err


def test_dpaudits_own_outputs_are_replaced_on_the_next_run(tmp_path, capsys):
    config = _config(tmp_path)
    junit, baseline = tmp_path / "junit.xml", tmp_path / "b.json"
    junit.touch()  # an empty file (mktemp in a CI script) holds nothing to lose
    for _ in range(2):
        assert main(["check", str(config), "--junit", str(junit), "--write-baseline", str(baseline)]) == 0
    assert written_by_dpaudit(junit) and written_by_dpaudit(baseline)


def test_budget_plot_onto_a_users_file_is_refused_and_its_own_plot_replaced(tmp_path, capsys):
    target = tmp_path / "settings.toml"
    target.write_text("x = 1\n")
    argv = ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "2",
            "--target-delta", "1e-5", "--plot"]
    assert main([*argv, str(target)]) == 2
    assert "dpaudit did not write it" in capsys.readouterr().err and target.read_text() == "x = 1\n"
    plot = tmp_path / "eps.png"
    plot.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\x16tEXtSoftware\x00dpaudit")  # one of dpaudit's own: replaced
    assert main([*argv, str(plot)]) == 0 and written_by_dpaudit(plot) and plot.stat().st_size > 100


def test_a_forged_manifest_hands_over_no_users_file(tmp_path, capsys):
    config = _config(tmp_path)
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.md").write_text("my notes")
    (report / "budget-b.png").write_text("my picture")
    (report / MANIFEST).write_text(json.dumps({"written_by": "dpaudit", "files": ["report.md", "budget-b.png"]}))
    assert main(["check", str(config), "--report", str(report)]) == 2
    err = capsys.readouterr().err
    assert "budget-b.png" in err and "nothing was run" in err
    assert (report / "report.md").read_text() == "my notes" and (report / "budget-b.png").read_text() == "my picture"


def test_entries_whose_names_share_a_slug_get_their_own_figures(tmp_path, capsys):
    config = _config(tmp_path, ("a b", 0.1), ("a-b", 1.0))
    report = tmp_path / "report"
    assert main(["check", str(config), "--report", str(report)]) == 1  # "a-b": 10 x 1.0 > 5: EXCEEDED
    figures = sorted(p.name for p in report.glob("budget-*.png"))
    assert len(figures) == 2 and all(written_by_dpaudit(report / name) for name in figures)
    markdown = (report / "report.md").read_text()
    assert all(f"({name})" in markdown for name in figures)


def test_unique_slugs_never_share_a_file_name():
    names = ["a b", "a-b", "A-B", "a/b", "x", "a-b-" + unique_slugs(["a b", "a-b"])["a b"].split("-")[-1]]
    slugs = unique_slugs(names)
    assert len({slug.lower() for slug in slugs.values()}) == len(names)
    assert slugs["x"] == "x"
    assert all(set(slug) <= set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") for slug in slugs.values())
