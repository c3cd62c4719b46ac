"""Shared test fixtures: the peer-library reference numbers (skipped cleanly when absent)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tests/mp_reference.py and friends

settings.register_profile("dpaudit", max_examples=60, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dpaudit")


def shared_refs_dir() -> Path:
    """``../shared/refs`` beside the project root, or $DPAUDIT_SHARED_REFS."""
    return Path(os.environ.get("DPAUDIT_SHARED_REFS", ROOT.parent / "shared" / "refs"))


@pytest.fixture(autouse=True)
def _workers_start_whatever_the_load(monkeypatch):
    """The process backend starts its workers only while a core is free of other work; the tests of its machinery must
    run them on a loaded machine too (results never depend on it; tests/auditor/test_draw_ahead.py tests the rule)."""
    monkeypatch.setattr("dpaudit.auditor.backends.REQUIRE_FREE_CORE", False)


@pytest.fixture(scope="session")
def reference() -> dict:
    path = shared_refs_dir() / "accounting" / "reference.json"
    if not path.is_file():
        pytest.skip(f"reference numbers not available ({path.name} not found beside the project)")
    return json.loads(path.read_text())
