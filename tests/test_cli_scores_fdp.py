"""``dpaudit scores --one-run --method fdp``: the f-DP test against --claim-mu / --claim-event, exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpaudit.cli import main


def one_run_file(tmp_path, shift: float, m: int = 1000, seed: int = 0):
    rng = np.random.default_rng(seed)
    included = (rng.random(m) < 0.5).astype(int)
    path = tmp_path / "canaries.npy"
    np.save(path, np.column_stack([included * shift + rng.normal(size=m), included]))
    return path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_fdp_claims_pass_and_fail(tmp_path, capsys):
    path = one_run_file(tmp_path, 4.0)
    code, out, _ = run(capsys, "scores", path, "--one-run", "--method", "fdp", "--claim-mu", 1.0, "--delta", 1e-5, "--json")
    data = json.loads(out)
    assert code == 1 and data["claim_rejected"] and data["method_name"] == "fdp" and data["mu_lower"] > 1.0
    code, out, _ = run(capsys, "scores", path, "--one-run", "--method", "fdp", "--claim-event", "Gaussian(0.1)",
                       "--delta", 1e-5, "--json")
    assert code == 0 and json.loads(out)["claim_rejected"] is False
    code, out, _ = run(capsys, "scores", path, "--one-run", "--method", "fdp", "--delta", 1e-5)
    assert code == 0 and "f-DP" in out


@pytest.mark.parametrize("extra,needle", [
    (["--method", "fdp"], "--one-run"),
    (["--one-run", "--claim-mu", "1.0"], "--method fdp"),
    (["--one-run", "--method", "fdp", "--claim-mu", "1.0", "--claim-event", "Gaussian(1.0)"], "not both"),
    (["--one-run", "--method", "fdp", "--claim-event", "Gaussian(1.0"], "claim-event"),
    (["--one-run", "--method", "fdp", "--claim-mu", "-2"], "claim"),
])
def test_bad_claims_are_usage_errors(tmp_path, capsys, extra, needle):
    path = one_run_file(tmp_path, 1.0)
    code, _, err = run(capsys, "scores", path, *extra)
    assert code == 2 and needle in err and "Traceback" not in err
