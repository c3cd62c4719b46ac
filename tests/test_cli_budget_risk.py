"""`dpaudit budget dpsgd|calibrate --risk`: attack risk at FPR 0.001, 0.01, 0.1 and the advantage."""

from __future__ import annotations

import json

import pytest

from dpaudit.accountant import PLDAccountant, RDPAccountant
from dpaudit.cli import main
from dpaudit.events import Gaussian, PoissonSampled, SelfComposed


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


DPSGD = ["budget", "dpsgd", "--sampling-probability", 0.05, "--steps", 100, "--target-delta", 1e-5]


def test_dpsgd_risk_text_and_json(capsys):
    code, out, _ = run(capsys, *DPSGD, "--noise-multiplier", 1.0, "--risk")
    assert code == 0 and "TPR <= " in out and "at FPR 0.001" in out and "advantage (TPR - FPR) <=" in out
    code, out, _ = run(capsys, *DPSGD, "--noise-multiplier", 1.0, "--risk", "--json")
    risk = json.loads(out)["risk"]
    acct = PLDAccountant().compose(SelfComposed(PoissonSampled(0.05, Gaussian(1.0)), 100))
    assert [row["fpr"] for row in risk["tpr_at_fpr"]] == [0.001, 0.01, 0.1]
    assert [row["tpr_upper"] for row in risk["tpr_at_fpr"]] == list(acct.tpr_at_fpr([0.001, 0.01, 0.1]))
    assert risk["advantage_upper"] == acct.advantage() and risk["accountant"] == "pld"


def test_without_the_flag_nothing_changes(capsys):
    code, out, _ = run(capsys, *DPSGD, "--noise-multiplier", 1.0, "--json")
    assert code == 0 and "risk" not in json.loads(out)


def test_dpsgd_target_epsilon_shows_each_noise_multipliers_risk(capsys):
    code, out, _ = run(capsys, *DPSGD, "--target-epsilon", 3.0, "--risk", "--json")
    rows = json.loads(out)["results"]
    assert code == 0 and {row["accountant"] for row in rows} == {"pld", "rdp"}
    rdp = next(row for row in rows if row["accountant"] == "rdp")
    acct = RDPAccountant().compose(SelfComposed(PoissonSampled(0.05, Gaussian(rdp["noise_multiplier"])), 100))
    assert rdp["risk"]["advantage_upper"] == acct.advantage()


EVENT = "SelfComposed(PoissonSampled(0.05, Gaussian({x})), 100)"


def test_calibrate_to_a_risk_target(capsys):
    code, out, _ = run(capsys, "budget", "calibrate", "--event", EVENT, "--bounds", 0.3, 10, "--accountant", "rdp",
                       "--max-tpr-at-fpr", 0.05, 0.01, "--tolerance", 1e-3, "--risk", "--json")
    data = json.loads(out)
    assert code == 0 and data["tpr_upper"] <= 0.05 and data["max_tpr_at_fpr"] == [0.05, 0.01]
    assert data["risk"]["tpr_at_fpr"][1]["tpr_upper"] == data["tpr_upper"]
    code, out, _ = run(capsys, "budget", "calibrate", "--event", EVENT, "--bounds", 0.3, 10, "--accountant", "rdp",
                       "--max-advantage", 0.2, "--tolerance", 1e-3)
    assert code == 0 and "advantage <= " in out


@pytest.mark.parametrize("extra, fragment", [
    ([], "give a target"),
    (["--max-tpr-at-fpr", 0.001, 0.01], "random guess"),
    (["--max-tpr-at-fpr", 0.0101, 0.01, "--bounds", 0.3, 2], "no parameter value"),
    (["--target-epsilon", 1.0], "target_delta"),
])
def test_calibrate_risk_errors_exit_2_with_one_line(capsys, extra, fragment):
    bounds = [] if "--bounds" in extra else ["--bounds", 0.3, 10]
    code, _, err = run(capsys, "budget", "calibrate", "--event", EVENT, "--accountant", "rdp", *bounds, *extra)
    assert code == 2 and fragment in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_closed_form_results_show_their_worst_case_risk(capsys):
    import math

    code, out, _ = run(capsys, "budget", "basic", "--epsilon", 0.1, "-k", 10, "--risk", "--json")
    risk = json.loads(out)["risk"]
    tprs = [row["tpr_upper"] for row in risk["tpr_at_fpr"]]
    assert code == 0 and tprs == pytest.approx([math.e * f for f in (0.001, 0.01, 0.1)], rel=1e-9)
    assert all(t >= math.e * f for t, f in zip(tprs, (0.001, 0.01, 0.1)))
    assert risk["advantage_upper"] == pytest.approx(math.tanh(0.5), rel=1e-9)
    for argv in (["amplify", "--epsilon", 1.0, "--sampling-probability", 0.1],
                 ["advanced", "--epsilon", 0.1, "-k", 10, "--delta-slack", 1e-5],
                 ["optimal", "--epsilon", 0.1, "-k", 10, "--target-delta", 1e-5]):
        code, out, _ = run(capsys, "budget", *argv, "--risk")
        assert code == 0 and "attack risk ((epsilon, delta) claim" in out
