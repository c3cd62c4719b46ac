"""`dpaudit --help` and the closed-form `budget` commands start without the heavy libraries (scipy.optimize,
sympy, statsmodels, matplotlib); they are imported by the commands that use them. Checked by the modules a
fresh interpreter has loaded, never by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("sympy", "statsmodels", "matplotlib", "scipy.optimize", "distributed")

PROBE = """
import json, runpy, sys
import dpaudit.cli
dpaudit.cli.isolation_available = lambda: False  # the command runs here: its own imports are the ones counted
sys.argv = ["dpaudit", *json.loads(sys.argv[1])]
try:
    runpy.run_module("dpaudit", run_name="__main__")
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m in {heavy})), file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [["--help"], ["budget", "--help"], ["budget", "basic", "--epsilon", "1", "-k", "10"],
                                  ["budget", "advanced", "--epsilon", "0.1", "-k", "100", "--target-delta", "1e-5"],
                                  ["check", "--help"], ["audit", "--help"]])
def test_command_starts_without_heavy_libraries(argv):
    probe = PROBE.replace("{heavy}", repr(set(HEAVY)))
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(argv)], capture_output=True, text=True, timeout=120)
    loaded = json.loads(done.stderr.strip().splitlines()[-1])
    assert loaded == [], f"dpaudit {' '.join(argv)} imported {loaded} at start"


def test_import_dpaudit_is_light():
    code = f"import dpaudit, sys; print([m for m in {HEAVY!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]"
