"""``dpaudit budget dpsgd``: table, JSON, calibration form, plot and exit codes."""

from __future__ import annotations

import json

import pytest

from dpaudit.cli import main

ARGS = ["budget", "dpsgd", "--sampling-probability", "0.01", "--steps", "1000", "--delta", "1e-5"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_says_upper_bound_and_shows_all_methods(capsys):
    code, out, _ = run(capsys, *ARGS, "--noise-multiplier", "1")
    assert code == 0
    assert "upper bound" in out
    for method in ("pld", "rdp", "basic composition", "advanced composition", "optimal composition"):
        assert method in out
    pld_line = next(line for line in out.splitlines() if line.startswith("pld"))
    assert "1.828" in pld_line


def test_json_is_ordered_pld_rdp_closed(capsys):
    code, out, _ = run(capsys, *ARGS, "--noise-multiplier", "1", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["bound"] == "upper"
    values = {r["label"]: r["epsilon_upper"] for r in payload["results"]}
    assert values["pld"] == pytest.approx(1.8282, rel=0.01)
    assert values["pld"] <= values["rdp"] <= min(values["basic (closed form)"], values["optimal (closed form)"])
    pld = payload["results"][0]
    assert pld["epsilon_lower"] <= pld["epsilon_upper"]


def test_replace_one_marks_unsupported_methods(capsys):
    code, out, _ = run(capsys, *ARGS, "--noise-multiplier", "1", "--neighbouring", "replace_one", "--json")
    assert code == 0
    results = json.loads(out)["results"]
    assert results[0]["epsilon_upper"] == pytest.approx(2.8434, rel=0.01)
    # RDP has a (looser) replace-one Poisson bound (Wang, Balle & Kasiviswanathan 2019, Thm 9); the closed forms do not
    assert results[1]["epsilon_upper"] >= results[0]["epsilon_upper"]
    assert results[2]["epsilon_upper"] is None and "replace" in results[2]["note"]


def test_calibration_form(capsys):
    code, out, _ = run(capsys, *ARGS, "--target-epsilon", "3", "--json")
    assert code == 0
    rows = {r["accountant"]: r["noise_multiplier"] for r in json.loads(out)["results"]}
    assert rows["pld"] == pytest.approx(0.8136, rel=0.01) and rows["rdp"] == pytest.approx(0.8647, rel=0.01)


def test_plot_writes_png(capsys, tmp_path):
    target = tmp_path / "eps.png"
    code, out, _ = run(capsys, "budget", "dpsgd", "--sampling-probability", "0.05", "--steps", "50", "--delta", "1e-5",
                       "--noise-multiplier", "1.5", "--plot", str(target))
    assert code == 0 and "plot written" in out
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("extra", [["--noise-multiplier", "-1"], ["--noise-multiplier", "1", "--delta", "2"]])
def test_bad_values_exit_2(capsys, extra):
    argv = ARGS + extra
    code, _, err = run(capsys, *argv)
    assert code == 2 and "error" in err


def test_missing_noise_is_a_usage_error(capsys):
    code, _, _ = run(capsys, *ARGS)
    assert code == 2
