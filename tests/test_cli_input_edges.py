"""Edges of what a user gives the command line: --version, a CSV with a byte-order mark, '~' in paths, empty
names, a zero delta, tiny sampling probabilities, deep TOML, tampered baselines, a module named like a
dependency beside the config, memory exhausted inside an accountant; each gives its documented exit code
and one line, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from dpaudit.cli import _classify, main
from dpaudit.errors import UnsupportedEventError

BUDGET = """
[[budget]]
name = "{name}"
kind = "composition"
epsilon = 0.1
k = 10
theorem = "basic"
delta = 1e-5
max_epsilon = 5.0
"""

AUDIT = """
[[audit]]
name = "lap"
example = "laplace"
samples = 2000
"""


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_version(capsys):
    from dpaudit._version import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"dpaudit {__version__}"


def test_a_csv_with_a_byte_order_mark_is_read(tmp_path, capsys):
    rows = "".join(f"{i},{(i % 2) * 3.0 + (i % 7) / 7},{i % 2}\n" for i in range(400))
    plain, marked = tmp_path / "plain.csv", tmp_path / "marked.csv"
    plain.write_text("run,score,included\n" + rows, encoding="utf-8")
    marked.write_text("run,score,included\n" + rows, encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    first, second = (run(capsys, "scores", path, "--json") for path in (plain, marked))
    assert first[0] == second[0] == 0
    assert json.loads(first[1])["epsilon_lower"] == json.loads(second[1])["epsilon_lower"]


def test_a_quoted_tilde_means_the_home_directory(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "gate.toml"
    config.write_text(BUDGET.format(name="b"))
    code, _, err = run(capsys, "check", config, "--report", "~")
    assert code == 2 and "home directory" in err and not (tmp_path / "~").exists()
    code, _, err = run(capsys, "check", config, "--report", "~/out")
    assert code == 0 and (home / "out" / "report.md").is_file() and str(home / "out" / "report.md") in err


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_is_refused(tmp_path, capsys, name):
    config = tmp_path / "gate.toml"
    config.write_text(BUDGET.format(name=name))
    code, _, err = run(capsys, "check", config)
    assert code == 2 and "'name'" in err and "non-empty" in err and str(config) in err


def test_dpsgd_at_delta_zero_says_why(capsys):
    code, _, err = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps",
                       "100", "--target-delta", "0")
    assert code == 2 and "--target-delta 0" in err and "inf" not in err


def test_closed_form_rows_never_print_a_per_step_delta_above_one(capsys):
    code, out, _ = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "1e-12", "--steps",
                       "100", "--target-delta", "1e-5", "--json")
    assert code == 0
    deltas = [float(value) for row in json.loads(out)["results"] for value in re.findall(r"delta0=([0-9.e+-]+)", row["note"])]
    assert len(deltas) == 3 and all(0 < value <= 0.5 for value in deltas)


def test_upper_bounds_are_printed_rounded_up(capsys):
    code, out, _ = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps",
                       "10000", "--target-delta", "1e-5")
    assert code == 0
    from dpaudit.accountant import PLDAccountant
    from dpaudit.events import Gaussian, PoissonSampled, SelfComposed

    exact = PLDAccountant().compose(SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 10_000)).epsilon(1e-5)
    shown = float(re.search(r"tightest sound bound: epsilon_upper = ([0-9.]+)", out).group(1))
    assert exact <= shown <= exact * (1 + 1e-5)


def test_toml_nested_thousands_deep_is_a_config_error_naming_the_file(tmp_path, capsys):
    config = tmp_path / "deep.toml"
    config.write_text("a = " + "[" * 3000 + "]" * 3000 + "\n")
    code, _, err = run(capsys, "check", config)
    assert code == 2 and str(config) in err and "nested too deeply" in err


def test_a_tampered_baseline_witness_is_a_config_error_before_anything_runs(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(AUDIT)
    baseline = tmp_path / "baseline.json"
    assert run(capsys, "check", config, "--write-baseline", baseline)[0] == 0
    document = json.loads(baseline.read_text())
    document["audits"][0]["witness"] = {"kind": "region", "projection": {"kind": "nonsense"}, "low": 0, "high": 1}
    baseline.write_text(json.dumps(document))
    code, out, err = run(capsys, "check", config, "--baseline", baseline)
    assert code == 2 and str(baseline) in err and "witness" in err and "lap" not in out  # nothing ran


def test_a_module_named_like_a_dependency_beside_the_config_does_not_break_the_report(tmp_path):
    import os
    import subprocess
    import sys

    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "matplotlib.py").write_text("raise RuntimeError('the user module, not the plotting library')\n")
    (folder / "mechs.py").write_text("import numpy as np\n\ndef lap(data, size, rng):\n"
                                     "    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)\n")
    config = folder / "gate.toml"
    config.write_text(AUDIT.replace('example = "laplace"', 'mechanism = "mechs:lap"\nd = [0.0]\nd_prime = [1.0]\nepsilon = 2.0'))
    root = str(Path(__file__).resolve().parents[1])  # a fresh interpreter: nothing imported yet
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run([sys.executable, "-m", "dpaudit", "check", str(config), "--report", str(tmp_path / "report")],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "report.html").is_file() and "Traceback" not in done.stderr


def test_memory_exhausted_inside_an_accountant_is_exit_3():
    try:
        try:
            raise MemoryError("grid")
        except MemoryError:
            raise UnsupportedEventError("PLDAccountant cannot discretise this composition") from None
    except UnsupportedEventError as exc:
        code, line = _classify(exc)
    assert code == 3 and "out of memory" in line
    assert _classify(UnsupportedEventError("not supported"))[0] == 2


def test_samples_beyond_the_limit_are_refused_at_validation(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(AUDIT.replace("samples = 2000", "samples = 1e15"))
    code, out, err = run(capsys, "check", config)
    assert code == 2 and "'samples'" in err and str(config) in err and not out
    code, _, err = run(capsys, "audit", "mechs:nothing", "--d", "[0]", "--d-prime", "[1]", "--epsilon", "1", "--samples", "1e15")
    assert code == 2 and "at most" in err


def test_a_training_audit_row_is_labelled_training():
    from dpaudit.cli.check import entry_line

    row = {"name": "opacus", "entry": "training_audit", "violated": False, "epsilon_lower": 0.5, "epsilon": 8.0,
           "delta": 1e-5, "confidence_level": 0.95, "runs": 500, "one_run": True}
    assert entry_line("score_audit", row).startswith("training ")
    assert entry_line("score_audit", {**row, "entry": None}).startswith("scores ")
