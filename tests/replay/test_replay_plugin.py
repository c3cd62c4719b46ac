"""The ``dp_replay`` fixture of the pytest plugin, in a pytester sandbox."""

from __future__ import annotations

import os
from importlib import metadata

import numpy  # noqa: F401  (loaded once: pytester's in-process runs must not re-import it)
import pytest

import dpaudit.replay  # noqa: F401

pytest_plugins = ("pytester",)

AUTOLOADED = (any(ep.value == "dpaudit.pytest_plugin" for ep in metadata.entry_points(group="pytest11"))
              and not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"))
PLUGIN = () if AUTOLOADED else ("-p", "dpaudit.pytest_plugin")

SUITE = """
import numpy as np

def unclipped_sum(data, size, rng):
    return np.sum(data) + rng.laplace(0.0, 1.0, size)

def test_small_record(dp_replay):
    result = dp_replay(unclipped_sum, [0.5], [0.5, 1.0], epsilon=1.0)
    assert not result.violated

def test_outlier(dp_replay):
    dp_replay.pairs(unclipped_sum, [([0.5], [0.5, 0.9]), ([0.5], [0.5, 7.0])], epsilon=1.0)
"""


def test_dp_replay_fixture_fails_only_the_violating_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sandbox=SUITE)
    result = pytester.runpytest_inprocess(*PLUGIN, "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*VIOLATED (record/replay)*implied epsilon >= 7*"])
