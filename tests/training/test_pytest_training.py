"""Training audits from the pytest plugin (``dp_audit.training``): the gate's [[training_audit]] semantics in
a test, with the run-wide false-alarm split and node-id seeds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_pytest_plugin import PLUGIN

pytest.importorskip("opacus")

pytest_plugins = ("pytester",)

SUITE = r"""
import pytest
from gate_stack_for_tests import corpus_dataset, dataset, train, train_actual_batch_size, train_leaky

def test_correct_stack(dp_audit):
    result = dp_audit.training(train, dataset=dataset(), canaries=40)
    # a white-box audit runs five statistical checks (the audit, the update-scale check, the witness's three),
    # each at a fifth of the test's false-alarm share
    assert result.confidence_level == pytest.approx(1 - (1 - dp_audit.confidence_level) / 5)
    assert result.update_scale.false_alarm_rate == pytest.approx((1 - dp_audit.confidence_level) / 5)
    assert result.false_alarm_rate == pytest.approx(1 - dp_audit.confidence_level) and not result.flagged
    assert result.epsilon_upper == pytest.approx(result.epsilon_opacus, rel=0.01)  # the claim read from the engine
    with open("seeds.txt", "a") as seeds:
        seeds.write(f"{result.seed}\n")

def test_leaky_stack(dp_audit):
    dp_audit.training(train_leaky, dataset=dataset(), canaries=40, claim=0.01)

def test_batch_size_bug(dp_audit):
    dp_audit.training(train_actual_batch_size, dataset=corpus_dataset(), canaries=300)

def test_seed_is_the_plugins(dp_audit):
    dp_audit.training(train, dataset=dataset(), canaries=40, seed=3)
"""


@pytest.fixture(scope="module")
def warm() -> None:
    """One training audit in this process first: pytester's in-process runs drop the modules they import, and
    torch's operator registry must not see them imported twice."""
    from dpaudit.training import audit_opacus

    from . import gate_stack

    audit_opacus(gate_stack.train, dataset=gate_stack.dataset(), canaries=16, check_seed=False)


@pytest.mark.filterwarnings("ignore")
def test_training_audits_share_the_run_and_a_violation_fails_with_the_verdict(pytester, warm):
    shutil.copy(Path(__file__).with_name("gate_stack.py"), pytester.path / "gate_stack_for_tests.py")
    pytester.makepyfile(test_training=SUITE)
    result = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider", "-W", "ignore")
    result.assert_outcomes(passed=1, failed=3)
    output = result.stdout.str()
    assert "differential privacy VIOLATED by the training stack" in output and "threat model: white-box" in output
    assert "claimed epsilon <= 0.0100 (given epsilon)" in output
    assert "seed is set by the plugin" in output
    assert "VIOLATED test_training.py::test_leaky_stack: training epsilon >= " in output
    assert "Traceback" not in output
    assert "test_training.py::test_batch_size_bug: flagged by update_scale" in output
    assert "3 DP audit(s) run of 4 declared in 4 DP test(s); each at confidence 0.9975" in output
    again = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider", "-W", "ignore",
                                         "test_training.py::test_correct_stack")
    again.assert_outcomes(passed=1)
    first, second = (pytester.path / "seeds.txt").read_text().split()
    assert first == second  # the same node id and --dp-seed: the same audit
