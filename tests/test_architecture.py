"""The package's import contracts (pyproject.toml [tool.importlinter]): layers run one way, no circles."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("importlinter")

LINT = ("import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True))")


def _lint(project: Path) -> subprocess.CompletedProcess:
    """import-linter run in a fresh interpreter on the package found at ``project``."""
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run([sys.executable, "-c", LINT], cwd=project, env=env, capture_output=True, text=True,
                          timeout=300)


def test_import_contracts_hold():
    """Every contract is kept; a broken one fails here with import-linter's report."""
    run = _lint(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "0 broken" in run.stdout


def test_a_contract_breaks_when_an_import_runs_up(tmp_path):
    """The contracts are live: a copy of the package with one upward import fails them."""
    shutil.copytree(ROOT / "dpaudit", tmp_path / "dpaudit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "dpaudit" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom .auditor import audit as _upward  # noqa: E402\n")
    run = _lint(tmp_path)
    assert run.returncode == 1
    assert "dpaudit.errors is not allowed to import dpaudit.auditor" in " ".join(run.stdout.split())
