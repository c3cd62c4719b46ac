"""``dpaudit budget``: tables, JSON, symbolic output and exit codes."""

from __future__ import annotations

import json

import pytest

from dpaudit.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_marks_the_tightest_and_says_upper_bound(capsys):
    code, out, _ = run(capsys, "budget", "compare", "--epsilon", "0.1", "-k", "1000", "--delta", "1e-5")
    assert code == 0
    assert "upper bound" in out
    optimal_line = next(line for line in out.splitlines() if line.startswith("optimal"))
    assert "17.7872" in optimal_line and "tightest" in optimal_line  # an upper bound, rounded up


def test_compare_json_with_sampling(capsys):
    code, out, _ = run(capsys, "budget", "compare", "--epsilon", "1", "-k", "100", "--delta", "1e-5",
                       "--sampling-probability", "0.01", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["bound"] == "upper"
    assert len(payload["results"]) == 6
    tightest = [r for r in payload["results"] if r["tightest"]]
    assert [r["theorem"] for r in tightest] == ["optimal", "optimal"]
    assert tightest[1]["epsilon_upper"] < tightest[0]["epsilon_upper"]


@pytest.mark.parametrize(("argv", "expected"), [
    (["basic", "--epsilon", "0.25", "0.5"], 0.75),
    (["basic", "--epsilon", "0.5", "-k", "4"], 2.0),
    (["advanced", "--epsilon", "0.1", "-k", "100", "--delta-slack", "1e-5"], 5.850235093),
    (["optimal", "--epsilon", "1", "-k", "1000", "--target-delta", "1e-5"], 577.8332067),
    (["amplify", "--epsilon", "1", "--sampling-probability", "0.1"], 0.158565079),
])
def test_each_theorem_json(capsys, argv, expected):
    code, out, _ = run(capsys, "budget", *argv, "--json")
    assert code == 0
    assert json.loads(out)["result"]["epsilon"] == pytest.approx(expected, rel=1e-4)


def test_per_step_table_and_json(capsys):
    code, out, _ = run(capsys, "budget", "per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", "1000", "--json")
    assert code == 0
    results = {r["theorem"]: r for r in json.loads(out)["results"]}
    assert results["optimal"]["largest"] and results["optimal"]["per_step_epsilon_lower"] == pytest.approx(0.008487078, rel=1e-6)


def test_symbolic_prints_pretty_and_latex(capsys):
    code, out, _ = run(capsys, "budget", "advanced", "--epsilon", "0.1", "-k", "10", "--delta-slack", "1e-5", "--symbolic")
    assert code == 0
    assert "LaTeX:" in out and "\\sqrt" in out


@pytest.mark.parametrize("argv", [
    ["budget", "optimal", "--epsilon", "-1", "-k", "10", "--target-delta", "1e-5"],
    ["budget", "optimal", "--epsilon", "1", "-k", "0", "--target-delta", "1e-5"],
    ["budget", "amplify", "--epsilon", "1", "--sampling-probability", "2"],
    ["budget", "compare", "--epsilon", "nan", "-k", "3", "--delta", "1e-5"],
    ["budget", "advanced", "--epsilon", "1"],
    ["budget", "nonsense"],
])
def test_bad_arguments_exit_2_with_a_message(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert err.strip()


# ---- one meaning of --delta (per-step) and --target-delta (total) in every sub-command -------------

def test_compare_target_delta_is_total_and_delta_is_per_step(capsys):
    code, out, err = run(capsys, "budget", "compare", "--epsilon", "0.1", "-k", "1000", "--target-delta", "1e-5",
                         "--delta", "1e-9", "--json")
    assert code == 0 and "deprecated" not in err
    payload = json.loads(out)
    assert payload["inputs"]["target_delta"] == 1e-5 and payload["inputs"]["delta"] == 1e-9
    rows = {r["theorem"]: r for r in payload["results"]}
    assert rows["basic"]["delta"] == pytest.approx(1e-6)  # k * per-step delta
    assert rows["optimal"]["delta"] == 1e-5


def test_compare_old_spellings_still_work_with_a_one_line_note(capsys):
    new = run(capsys, "budget", "compare", "--epsilon", "0.1", "-k", "100", "--target-delta", "1e-5", "--delta", "1e-9", "--json")
    old = run(capsys, "budget", "compare", "--epsilon", "0.1", "-k", "100", "--delta", "1e-5", "--step-delta", "1e-9", "--json")
    assert old[0] == new[0] == 0
    assert json.loads(old[1])["results"] == json.loads(new[1])["results"]
    notes = old[2].strip().splitlines()
    assert len(notes) == 2 and all("deprecated" in line and "use --" in line for line in notes)
    code, _, err = run(capsys, "budget", "compare", "--epsilon", "0.1", "-k", "100", "--target-delta", "1e-5", "--step-delta", "1e-9")
    assert code == 0 and err.count("deprecated") == 1


@pytest.mark.parametrize("argv", [
    ["budget", "compare", "--epsilon", "0.1", "-k", "10"],                                      # no total delta
    ["budget", "compare", "--epsilon", "0.1", "-k", "10", "--target-delta", "1e-5", "--delta", "0", "--step-delta", "0"],
    ["budget", "advanced", "--epsilon", "0.1", "-k", "10"],                                     # no slack, no total
    ["budget", "advanced", "--epsilon", "0.1", "-k", "10", "--delta-slack", "1e-5", "--target-delta", "1e-4"],
    ["budget", "advanced", "--epsilon", "0.1", "-k", "10", "--target-delta", "1e-6", "--delta", "1e-7"],  # no slack left
    ["budget", "basic", "--epsilon", "0.1", "0.2", "-k", "5"],                                  # -k with several epsilons
    ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "10"],
    ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "10",
     "--target-delta", "1e-5", "--delta", "1e-5"],
    ["budget", "optimal", "--epsilon", "1", "-k", "1.5", "--target-delta", "1e-5"],
])
def test_missing_or_conflicting_delta_flags_exit_2_with_one_line(capsys, argv):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert "Traceback" not in err and err.strip()


def test_advanced_target_delta_leaves_the_right_slack(capsys):
    code, out, _ = run(capsys, "budget", "advanced", "--epsilon", "0.1", "-k", "100", "--target-delta", "2e-5",
                       "--delta", "1e-7", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["inputs"]["delta_slack"] == pytest.approx(1e-5, rel=1e-12)
    assert payload["result"]["delta"] <= 2e-5
    slack_form = run(capsys, "budget", "advanced", "--epsilon", "0.1", "-k", "100", "--delta-slack",
                     str(payload["inputs"]["delta_slack"]), "--delta", "1e-7", "--json")
    assert json.loads(slack_form[1])["result"] == payload["result"]


def test_basic_delta_is_per_step_and_k_repeats(capsys):
    code, out, _ = run(capsys, "budget", "basic", "--epsilon", "0.5", "-k", "4", "--delta", "1e-6", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["result"]["epsilon"] == 2.0 and payload["result"]["delta"] == pytest.approx(4e-6)
    assert payload["inputs"] == {"epsilons": [0.5], "k": 4, "delta": 1e-6}


def test_amplify_delta_is_the_mechanisms_per_step_delta(capsys):
    code, out, _ = run(capsys, "budget", "amplify", "--epsilon", "1", "--delta", "1e-4", "--sampling-probability", "0.5", "--json")
    assert code == 0 and json.loads(out)["result"]["delta"] == pytest.approx(5e-5)


def test_dpsgd_target_delta_and_deprecated_delta_agree(capsys):
    base = ["budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "100", "--json"]
    new = run(capsys, *base, "--target-delta", "1e-5")
    old = run(capsys, *base, "--delta", "1e-5")
    assert new[0] == old[0] == 0 and "deprecated" not in new[2]
    assert json.loads(new[1])["results"] == json.loads(old[1])["results"]
    assert old[2].count("\n") == 1 and "deprecated" in old[2] and "--target-delta" in old[2]


# ---- huge k on the command line: computed in bounded memory, or refused with exit 2 ----------------

@pytest.mark.parametrize("k", ["1000000000", "1e12"])
def test_huge_k_is_computed_without_o_k_work(capsys, k):
    code, out, _ = run(capsys, "budget", "basic", "--epsilon", "0.5", "-k", k, "--delta", "1e-20", "--json")
    assert code == 0 and json.loads(out)["result"]["epsilon"] == 0.5 * float(k)
    code, out, _ = run(capsys, "budget", "advanced", "--epsilon", "1e-4", "-k", k, "--target-delta", "1e-5", "--json")
    assert code == 0 and json.loads(out)["result"]["delta"] <= 1e-5
    code, out, _ = run(capsys, "budget", "optimal", "--epsilon", "10", "-k", k, "--target-delta", "1e-5", "--json")
    assert code == 0 and 0 < json.loads(out)["result"]["epsilon"] <= 10 * float(k)
    code, out, _ = run(capsys, "budget", "compare", "--epsilon", "10", "-k", k, "--target-delta", "1e-5", "--json")
    assert code == 0 and [r["tightest"] for r in json.loads(out)["results"]] == [False, False, True]
    code, out, _ = run(capsys, "budget", "per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", k,
                       "--theorem", "advanced", "--json")
    assert code == 0 and json.loads(out)["results"][0]["per_step_epsilon_lower"] > 0


def test_per_step_all_at_k_1e12_notes_the_optimal_limit(capsys):
    code, out, _ = run(capsys, "budget", "per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", "1e12", "--json")
    assert code == 0
    rows = {r["theorem"]: r for r in json.loads(out)["results"]}
    assert rows["optimal"]["per_step_epsilon_lower"] is None and "1e+09" in rows["optimal"]["note"]
    assert rows["advanced"]["largest"]


@pytest.mark.parametrize("argv", [
    ["optimal", "--epsilon", "0.01", "-k", "1e13", "--target-delta", "1e-5"],
    ["per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", "1e12", "--theorem", "optimal"],
])
def test_k_beyond_a_limit_exits_2_with_one_line_naming_it(capsys, argv):
    code, out, err = run(capsys, "budget", *argv)
    assert code == 2 and not out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "k=" in lines[0] and "e+" in lines[0]


def test_dpsgd_at_1e9_steps_runs_closed_forms_and_rdp_and_says_why_pld_is_skipped(capsys):
    code, out, _ = run(capsys, "budget", "dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01",
                       "--steps", "1e9", "--target-delta", "1e-5", "--json")
    assert code == 0
    rows = {r["label"]: r for r in json.loads(out)["results"]}
    assert rows["pld"]["epsilon_upper"] is None and "1e+07" in rows["pld"]["note"]
    assert rows["optimal (closed form)"]["epsilon_upper"] <= rows["basic (closed form)"]["epsilon_upper"]
    assert rows["rdp"]["epsilon_upper"] < rows["optimal (closed form)"]["epsilon_upper"]


def test_the_readme_budget_examples_run_without_deprecation_notes(capsys):
    import re
    import shlex
    from pathlib import Path

    readme = Path(__file__).resolve().parents[1] / "README.md"
    lines = [line for line in readme.read_text().splitlines() if line.startswith("dpaudit budget ")]
    assert len(lines) >= 3
    for line in lines:
        command = re.sub(r"\[[^\]]*\]", "", line.split("#")[0])  # drop optional parts and comments
        code, out, err = run(capsys, *shlex.split(command)[1:])
        assert code == 0, (line, err)
        assert out and "deprecated" not in err, line


@pytest.mark.parametrize(("argv", "name"), [
    (["dpsgd", "--target-epsilon", "-1", "--sampling-probability", "0.01", "--steps", "10", "--target-delta", "1e-5"], "target_epsilon"),
    (["dpsgd", "--target-epsilon", "inf", "--sampling-probability", "0.01", "--steps", "10", "--target-delta", "1e-5"], "target_epsilon"),
    (["dpsgd", "--target-epsilon", "1", "--sampling-probability", "1.5", "--steps", "10", "--target-delta", "1e-5"], "sampling_probability"),
    (["dpsgd", "--target-epsilon", "1", "--sampling-probability", "0.01", "--steps", "10", "--target-delta", "1.5"], "target_delta"),
    (["dpsgd", "--noise-multiplier", "1", "--sampling-probability", "0.01", "--steps", "0", "--target-delta", "1e-5"], "steps"),
    (["per-step", "--target-epsilon", "-1", "--target-delta", "1e-5", "-k", "10"], "target_epsilon"),
    (["per-step", "--target-epsilon", "1", "--target-delta", "2", "-k", "10"], "target_delta"),
    (["per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", "0"], "k"),
    (["per-step", "--target-epsilon", "1", "--target-delta", "1e-5", "-k", "10", "--sampling-probability", "2"], "sampling_probability"),
])
def test_out_of_domain_numbers_exit_2_naming_the_argument(capsys, argv, name):
    code, out, err = run(capsys, "budget", *argv)
    assert code == 2
    assert name in err and "Traceback" not in err
    assert out == ""
