"""The dpaudit pytest plugin, run in pytester sandboxes: run-wide false-alarm split, node-id seeds, the
failure message, and usage errors for bad markers and options."""

from __future__ import annotations

import os
import re
from importlib import metadata

import numpy  # noqa: F401  (loaded once here: pytester's in-process runs must not re-import it)
import pytest

import dpaudit.auditor  # noqa: F401

pytest_plugins = ("pytester",)

# The plugin is loaded through its pytest11 entry point once dpaudit is installed with it; otherwise by -p.
AUTOLOADED = (any(ep.value == "dpaudit.pytest_plugin" for ep in metadata.entry_points(group="pytest11"))
              and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"))
PLUGIN = () if AUTOLOADED else ("-p", "dpaudit.pytest_plugin")

MECHANISMS = """
import numpy as np

def laplace(data, size, rng):
    return np.asarray(data, float)[0] + rng.laplace(0.0, 1.0, size)

def laplace_half_scale(data, size, rng):   # claims epsilon 1, is epsilon 2
    return np.asarray(data, float)[0] + rng.laplace(0.0, 0.5, size)
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(plugin_sandbox_mechanisms=MECHANISMS)
    return pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider", *args)


SUITE = """
import pytest
from plugin_sandbox_mechanisms import laplace

@pytest.mark.parametrize("case", range(50))
def test_correct(dp_audit, case):
    result = dp_audit(laplace, [0.0], [1.0], epsilon=1.0)
    assert dp_audit.confidence_level == 1 - RATE / 50
    assert result.confidence_level == dp_audit.confidence_level and not result.violated
    print(f"SEED {case} {result.seed} {result.epsilon_lower!r}")

def test_not_a_dp_test():
    assert True
"""


def _seeds(result: pytest.RunResult) -> dict[str, tuple[str, str]]:
    return {m.group(1): (m.group(2), m.group(3)) for m in re.finditer(r"SEED (\d+) (\d+) (\S+)", result.stdout.str())}


def test_fifty_correct_audits_share_the_run_wide_false_alarm_rate_and_are_reproducible(pytester):
    pytester.makepyfile(test_suite=SUITE.replace("RATE", "0.02"))
    first = run(pytester, "--dp-false-alarm-rate", "0.02", "--dp-samples", "1000", "-s")
    first.assert_outcomes(passed=51)
    first.stdout.fnmatch_lines(["*50 DP audit(s) run of 50 declared in 50 DP test(s); each at confidence 0.9996*<= 0.02*"])
    again = run(pytester, "--dp-false-alarm-rate", "0.02", "--dp-samples", "1000", "-s")
    seeds = _seeds(first)
    assert len(seeds) == 50 and seeds == _seeds(again)  # the same seeds and bounds on a rerun
    assert len({seed for seed, _ in seeds.values()}) == 50  # every test its own seed (from its node id)
    other = run(pytester, "--dp-false-alarm-rate", "0.02", "--dp-samples", "1000", "-s", "--dp-seed", "7")
    assert {s for s, _ in _seeds(other).values()}.isdisjoint({s for s, _ in seeds.values()})


def test_deselected_tests_are_not_counted(pytester):
    pytester.makepyfile(test_suite=SUITE.replace("RATE / 50", "RATE / 5").replace("RATE", "0.01"))
    result = run(pytester, "--dp-samples", "1000", *[f"test_suite.py::test_correct[{i}]" for i in range(5)])
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["*5 DP audit(s) run of 5 declared in 5 DP test(s); each at confidence 0.998*"])


def test_a_violation_fails_with_verdict_witness_and_counts_and_no_plugin_frames(pytester):
    pytester.makepyfile(test_leak="""
from plugin_sandbox_mechanisms import laplace_half_scale

def test_leaky(dp_audit):
    dp_audit(laplace_half_scale, [0.0], [1.0], epsilon=1.0)
""")
    result = run(pytester, "--dp-samples", "20000")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "differential privacy VIOLATED on d=[0.0], d_prime=[1.0]" in output
    for part in ("verdict: epsilon >= ", "claimed epsilon 1", "witness: ", "counts: ", "certification samples", "<= 0.01"):
        assert part in output
    assert "pytest_plugin.py" not in output and "def __call__" not in output and "Traceback" not in output
    assert "VIOLATED test_leak.py::test_leaky: epsilon >= " in output  # the terminal summary


def test_marker_declares_several_audits_and_their_samples(pytester, monkeypatch):
    pytester.makepyfile(test_two="""
import os
import pytest
from plugin_sandbox_mechanisms import laplace

@pytest.mark.dp_audit(audits=3, samples=600)
def test_three(dp_audit):
    results = [dp_audit(laplace, [0.0], [1.0], epsilon=1.0) for _ in range(3)]
    assert [r.samples for r in results] == [600] * 3
    assert len({r.seed for r in results}) == 3
    assert dp_audit.confidence_level == 1 - 0.01 / int(os.environ["DECLARED"])

def test_one(dp_audit):
    dp_audit(laplace, [0.0], [1.0], epsilon=1.0, samples=500)

@pytest.mark.dp_audit
def test_too_many(dp_audit):
    dp_audit(laplace, [0.0], [1.0], epsilon=1.0, samples=500)
    dp_audit(laplace, [0.0], [1.0], epsilon=1.0, samples=500)
""")
    monkeypatch.setenv("DECLARED", "4")  # 3 + 1 audits selected
    result = run(pytester, "-k", "three or one")
    result.assert_outcomes(passed=2)
    monkeypatch.setenv("DECLARED", "5")
    result = run(pytester)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*dp_audit was called 2 times but the test declares audits=1*"])


@pytest.mark.parametrize("marker, message", [
    ("dp_audit(epsilon=1.0)", "unknown argument 'epsilon' (allowed: audits, samples)"),
    ("dp_audit(2)", "takes keyword arguments only"),
    ("dp_audit(audits=0)", "audits=0 must be an integer >= 1"),
    ("dp_audit(audits=True)", "audits=True must be an integer >= 1"),
    ("dp_audit(samples=10)", "samples=10 must be an integer >= 200"),
])
def test_invalid_marker_arguments_are_a_usage_error_naming_test_and_argument(pytester, marker, message):
    pytester.makepyfile(test_bad=f"""
import pytest

@pytest.mark.{marker}
def test_bad(dp_audit):
    pass
""")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*test_bad.py::test_bad: @pytest.mark.dp_audit*{message}*"])


@pytest.mark.parametrize("args, message", [
    (("--dp-false-alarm-rate", "1.5"), "--dp-false-alarm-rate=1.5 must be in (0, 1)"),
    (("--dp-samples", "10"), "--dp-samples=10 must be >= 200"),
    (("--dp-seed", "-1"), "--dp-seed=-1 must be >= 0"),
])
def test_invalid_options_are_usage_errors(pytester, args, message):
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_ini_settings_apply_and_the_command_line_wins(pytester):
    pytester.makeini("[pytest]\ndp_false_alarm_rate = 0.05\ndp_samples = 800\n")
    pytester.makepyfile(test_ini="""
from plugin_sandbox_mechanisms import laplace

def test_ini(dp_audit):
    assert dp_audit.confidence_level == 1 - RATE
    assert dp_audit(laplace, [0.0], [1.0], epsilon=1.0).samples == 800
""".replace("RATE", "0.05"))
    run(pytester).assert_outcomes(passed=1)
    run(pytester, "--dp-false-alarm-rate", "0.05").assert_outcomes(passed=1)
    run(pytester, "--dp-false-alarm-rate", "0.1").assert_outcomes(failed=1)
    pytester.makeini("[pytest]\ndp_false_alarm_rate = often\n")
    assert run(pytester).ret == pytest.ExitCode.USAGE_ERROR


def test_the_plugin_sets_confidence_and_seed_itself(pytester):
    pytester.makepyfile(test_override="""
from plugin_sandbox_mechanisms import laplace

def test_override(dp_audit):
    dp_audit(laplace, [0.0], [1.0], epsilon=1.0, seed=3)
""")
    result = run(pytester, "--dp-samples", "500")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*seed is set by the plugin*"])


LOAD_CHECK = """
def test_loaded(dp_audit):
    assert 0 < dp_audit.confidence_level < 1
"""


def test_the_plugin_loads_by_its_entry_point_or_by_name_when_autoloading_is_off(pytester, monkeypatch):
    if not AUTOLOADED:
        pytest.skip("dpaudit is not installed with its pytest11 entry point (pip install -e .)")
    pytester.makepyfile(test_load=LOAD_CHECK)
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)  # the entry point alone
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "dpaudit").assert_outcomes(passed=1)  # named as well
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    off = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    off.assert_outcomes(errors=1)
    off.stdout.fnmatch_lines(["*fixture 'dp_audit' not found*"])
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "dpaudit").assert_outcomes(passed=1)


def test_a_dynamically_requested_fixture_must_be_declared(pytester):
    pytester.makepyfile(test_dynamic="""
import pytest
from plugin_sandbox_mechanisms import laplace

def test_undeclared(request):
    request.getfixturevalue("dp_audit")

@pytest.mark.dp_audit
def test_declared(request):
    dp_audit = request.getfixturevalue("dp_audit")
    assert dp_audit.confidence_level == 1 - 0.01
    dp_audit(laplace, [0.0], [1.0], epsilon=1.0, samples=500)
""")
    result = run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*requests the dp_audit fixture dynamically*mark the test @pytest.mark.dp_audit*"])


FIXED_BUDGET_SUITE = """
import pytest
from plugin_sandbox_mechanisms import laplace_half_scale

def test_budget(dp_audit):
    with pytest.raises(pytest.fail.Exception):
        dp_audit(laplace_half_scale, [0.0], [1.0], epsilon=1.0, samples=400_000)
    result = dp_audit.results[0]
    print(f"USED {result.samples_used} {result.stopped}")
"""


def test_audits_stop_early_unless_the_fixed_budget_is_asked(pytester):
    pytester.makepyfile(test_budget=FIXED_BUDGET_SUITE)
    sequential = run(pytester, "-s")
    sequential.assert_outcomes(passed=1)
    used, stopped = re.search(r"USED (\d+) (\w+)", sequential.stdout.str()).groups()
    assert int(used) < 400_000 and stopped == "violation"
    assert "sequential (stop early)" in sequential.stdout.str()
    fixed = run(pytester, "-s", "--dp-fixed-budget")
    fixed.assert_outcomes(passed=1)
    assert re.search(r"USED (\d+) (\w+)", fixed.stdout.str()).groups() == ("400000", "budget")
    assert "fixed budget" in fixed.stdout.str()


FUTILITY_SUITE = """
from plugin_sandbox_mechanisms import laplace

def test_far_below(dp_audit):
    result = dp_audit(laplace, [0.0], [1.0], epsilon=4.0, samples=400_000)
    print(f"USED {result.samples_used} {result.stopped}")
"""


def test_a_test_reads_the_verdict_only_so_its_audits_also_stop_for_futility(pytester):
    pytester.makepyfile(test_far=FUTILITY_SUITE)
    result = run(pytester, "-s")
    result.assert_outcomes(passed=1)
    used, stopped = re.search(r"USED (\d+) (\w+)", result.stdout.str()).groups()
    assert int(used) < 400_000 and stopped == "futility"
