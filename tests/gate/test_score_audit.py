"""[[score_audit]] gate entries: parsing (errors name file, entry and key), running, exit codes, reports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.errors import ConfigError
from dpaudit.gate import load_config, run_gate


def write_scores(directory: Path, shift: float, name: str = "runs.csv", n: int = 2000) -> Path:
    rng = np.random.default_rng(0)
    included = np.arange(2 * n) % 2
    values = included * shift + rng.normal(size=2 * n)
    path = directory / name
    path.write_text("score,included\n" + "".join(f"{float(v)!r},{c}\n" for v, c in zip(values, included)))
    return path


def config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(body)
    return path


def test_leaky_training_fails_the_gate_and_private_passes(tmp_path, capsys):
    write_scores(tmp_path, 4.0, "leaky.csv")
    write_scores(tmp_path, 0.2, "private.csv")
    path = config(tmp_path, """
[gate]
confidence_level = 0.95
[[score_audit]]
name = "leaky"
scores = "leaky.csv"
epsilon = 1.0
delta = 1e-5
[[score_audit]]
name = "private"
scores = "private.csv"
event = "SelfComposed(PoissonSampled(0.1, Gaussian(1.0)), 20)"
delta = 1e-5
""")
    loaded = load_config(path)
    assert [s.name for s in loaded.score_audits] == ["leaky", "private"] and loaded.score_audits[1].epsilon > 1
    code = main(["check", str(path), "--json", "--report", str(tmp_path / "report")])
    out, err = capsys.readouterr()
    payload = json.loads(out)
    rows = {row["name"]: row for row in payload["score_audits"]}
    assert code == 1 and not payload["passed"]
    assert rows["leaky"]["violated"] and not rows["private"]["violated"] and rows["private"]["passed"]
    assert "scores" in err and "leaky" in err
    report = (tmp_path / "report" / "index.md").read_text() if (tmp_path / "report" / "index.md").exists() else \
        "\n".join(p.read_text() for p in (tmp_path / "report").glob("*.md"))
    assert "Score audits" in report and "leaky" in report


def test_one_run_entry_and_false_alarm_split(tmp_path):
    rng = np.random.default_rng(2)
    included = (rng.random(1000) < 0.5).astype(int)
    path = tmp_path / "one.npz"
    np.savez(path, score=included * 6.0 + rng.normal(size=1000), included=included)
    cfg = config(tmp_path, """
[gate]
false_alarm_rate = 0.02
[[score_audit]]
name = "one"
scores = "one.npz"
one_run = true
epsilon = 8.0
delta = 0.0
""")
    result = run_gate(load_config(cfg))
    row = result.score_audits[0]
    assert result.passed and row["one_run"] and 2.0 < row["epsilon_lower"] < 8.0
    assert row["confidence_level"] == pytest.approx(0.98) and result.false_alarm_bound == pytest.approx(0.02)


def test_bad_file_contents_are_an_entry_error_not_a_crash(tmp_path):
    (tmp_path / "bad.csv").write_text("score,included\n0.1,1\nx,0\n")
    result = run_gate(load_config(config(tmp_path, '[[score_audit]]\nname = "bad"\nscores = "bad.csv"\nepsilon = 1.0\n')))
    row = result.score_audits[0]
    assert row["status"] == "ERROR" and "line 3" in row["error"]["message"] and result.status == "ERROR"


def test_check_exit_codes_pass_config_error_and_unreadable_file(tmp_path, capsys):
    """dpaudit check: 0 when every score audit passes, 2 on a bad entry, 3 when a file cannot be read or parsed."""
    write_scores(tmp_path, 0.2, "private.csv")
    entry = '[[score_audit]]\nname = "{name}"\nscores = "{file}"\nepsilon = {eps}\n'
    ok = config(tmp_path, entry.format(name="private", file="private.csv", eps=3.0))
    assert main(["check", str(ok)]) == 0
    bad = config(tmp_path, entry.format(name="private", file="private.csv", eps=-3.0))
    assert main(["check", str(bad)]) == 2
    missing = config(tmp_path, entry.format(name="gone", file="absent.csv", eps=3.0))
    assert main(["check", str(missing)]) == 3
    (tmp_path / "one_class.csv").write_text("score,included\n0.1,1\n0.2,1\n0.3,1\n")
    one_class = config(tmp_path, entry.format(name="one-class", file="one_class.csv", eps=3.0))
    capsys.readouterr()
    assert main(["check", str(one_class), "--json"]) == 3
    out, err = capsys.readouterr()
    row = json.loads(out)["score_audits"][0]
    assert row["status"] == "ERROR" and "0 runs without" in row["error"]["message"] and "Traceback" not in err


@pytest.mark.parametrize("body,needle", [
    ('name = "a"\nscores = "s.csv"\n', "give exactly one of epsilon"),
    ('name = "a"\nscores = "s.csv"\nepsilon = 1.0\nevent = "Gaussian(1.0)"\n', "give exactly one of epsilon"),
    ('name = "a"\nscores = "s.csv"\nevent = "Gaussian(1.0"\n', "key 'event'"),
    ('name = "a"\nscores = "s.csv"\nepsilon = -1.0\n', "key 'epsilon'"),
    ('name = "a"\nscores = "s.csv"\nepsilon = 1.0\nfile = "x"\n', "unknown key"),
    ('name = "a"\nepsilon = 1.0\n', "key 'scores': is required"),
    ('name = "a"\nscores = "s.csv"\nepsilon = 1.0\none_run = "yes"\n', "key 'one_run'"),
])
def test_config_errors_name_file_entry_and_key(tmp_path, body, needle):
    path = config(tmp_path, "[[score_audit]]\n" + body)
    with pytest.raises(ConfigError, match="score_audit") as info:
        load_config(path)
    assert needle in str(info.value) and str(path) in str(info.value)


def test_training_example_trains_audits_and_gates(tmp_path, monkeypatch, capsys):
    """examples/training/train_and_audit.py end to end (small): the leaky job fails the gate."""
    import runpy

    script = Path(__file__).resolve().parents[2] / "examples" / "training" / "train_and_audit.py"
    if not script.exists():
        pytest.skip("examples/ not present")
    monkeypatch.setattr("sys.argv", [str(script), "--runs", "400", "--canaries", "200", "--out", str(tmp_path)])
    with pytest.raises(SystemExit) as info:
        runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    assert info.value.code == 0 and "dpaudit check exit code: 1" in out
    assert {p.name for p in tmp_path.iterdir()} >= {"correct_runs.csv", "leaky_runs.csv", "one_run.npz", "training_gate.toml"}
    assert "VIOLATED" in out.split("--- leaky")[1].split("---")[0]
