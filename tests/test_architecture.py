"""The package's import contracts (pyproject.toml [tool.importlinter]): layers run one way, no circles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold(monkeypatch, capsys):
    """Every contract is checked by import-linter; a broken one fails here with its report."""
    cli = pytest.importorskip("importlinter.cli")
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("PYTHONPATH", str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True)
    report = capsys.readouterr().out
    assert code == 0, report


def test_a_contract_breaks_when_an_import_runs_up(tmp_path, monkeypatch, capsys):
    """The layers contract is live: a copy of the package with one upward import fails it."""
    cli = pytest.importorskip("importlinter.cli")
    import shutil
    shutil.copytree(ROOT / "dpaudit", tmp_path / "dpaudit", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    errors = tmp_path / "dpaudit" / "errors.py"
    errors.write_text(errors.read_text() + "\nfrom .auditor import audit as _upward  # noqa\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    code = cli.lint_imports(config_filename=str(tmp_path / "pyproject.toml"), no_cache=True)
    assert code == 1
    assert "dpaudit.errors is not allowed to import dpaudit.auditor" in capsys.readouterr().out.replace("\n", " ")
