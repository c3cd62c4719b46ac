"""The documentation site: the generated TOML reference agrees with the parser, and `mkdocs build --strict`
passes (skipped when the docs extra is not installed)."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dpaudit.gate import schema

ROOT = Path(__file__).resolve().parents[1]


def test_config_description_agrees_with_the_parser():
    assert schema.check_against_parser() == []
    text = schema.reference_markdown()
    for header in ("## `[gate]`", "## `[[audit]]`", "## `[[accuracy]]`", "## `[[budget]]`", '### `kind = "dpsgd"`'):
        assert header in text


def test_a_drifted_description_is_caught(monkeypatch):
    """Drop a key the parser accepts and add one it rejects: both are named, and generating fails."""
    gate, audit, *rest = schema.SECTIONS
    keys = tuple(k for k in audit.keys if k.name != "top") + (schema.Key("tpo", "integer", "no", "3", "typo"),)
    monkeypatch.setattr(schema, "SECTIONS", (gate, dataclasses.replace(audit, keys=keys), *rest))
    problems = schema.check_against_parser()
    assert "audit: key 'top' is accepted by the parser but not described" in problems
    assert "audit: key 'tpo' is described but the parser rejects it" in problems
    with pytest.raises(RuntimeError, match="disagrees with its parser"):
        schema.reference_markdown()


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = [p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")]
    assert pages and [p for p in pages if p not in nav] == []


def test_mkdocs_build_strict(tmp_path):
    missing = [m for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"docs extra not installed ({', '.join(missing)}): pip install '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    page = (tmp_path / "site" / "reference" / "config" / "index.html").read_text()
    assert "max_epsilon" in page and "gate-config-reference" not in page
    assert "exit codes" in (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    api = (tmp_path / "site" / "reference" / "api" / "index.html").read_text()
    # lazily imported and module-shadowed names are documented as the functions, not missing or the module
    assert 'id="dpaudit.accountant.closed_form.basic"' in api and 'id="dpaudit.auditor.audit.audit"' in api
    assert 'id="dpaudit.auditor.audit.selection_size"' not in api
