"""The report directory is dpaudit's own: it never deletes or overwrites a file dpaudit did not write."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from dpaudit._io import MANIFEST, atomic_write_text, check_report_directory, report_directory
from dpaudit.cli import main
from dpaudit.errors import ConfigError

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent))

PATTERNS = ("report.md", "audit-*.png")
BUDGET_ONLY = """
[[budget]]
name = "b"
kind = "composition"
epsilon = 0.1
k = 10
theorem = "basic"
delta = 1e-5
max_epsilon = 5.0
"""


def _ours(name: str, text: str) -> str:
    """Content dpaudit recognises as its own (a manifest is trusted only for such files)."""
    return f"# dpaudit report {text}" if name.endswith(".md") else "\x89PNG\r\n\x1a\n\x00tEXtSoftware\x00dpaudit " + text


def _build(target: Path, files: dict[str, str]) -> None:
    with report_directory(target, PATTERNS) as build:
        for name, text in files.items():
            (build / name).write_text(_ours(name, text), encoding="latin-1")


def test_the_issues_reproduction_is_refused_and_nothing_is_touched(tmp_path, capsys):
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "audit-mine.png").write_text("x")
    (out / "sub" / "f").write_text("y")
    (out / MANIFEST).write_text('{"files":["sub"]}')
    (out / "report.md").write_text("my notes")
    config = tmp_path / "gate.toml"
    config.write_text(BUDGET_ONLY)
    code = main(["check", str(config), "--report", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and str(out) in err and "not a dpaudit report directory" in err and "audit-mine.png" in err
    assert (out / "audit-mine.png").read_text() == "x" and (out / "sub" / "f").read_text() == "y"
    assert (out / "report.md").read_text() == "my notes"


@pytest.mark.parametrize("where", ["home", "root", "cwd", "cwd-parent"])
def test_home_root_and_the_working_directory_are_refused(tmp_path, monkeypatch, where):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    path = {"home": str(tmp_path / "home"), "root": "/", "cwd": ".", "cwd-parent": str(tmp_path)}[where]
    with pytest.raises(ConfigError, match="refused"):
        check_report_directory(path, PATTERNS)


def test_a_symlink_is_refused_and_its_target_untouched(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    (real / "keep.txt").write_text("k")
    link = tmp_path / "link"
    link.symlink_to(real)
    for path in (link, str(link) + "/"):
        with pytest.raises(ConfigError, match="symbolic link"):
            check_report_directory(path, PATTERNS)
    assert link.is_symlink() and (real / "keep.txt").read_text() == "k"


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        check_report_directory(tmp_path / "f", PATTERNS)


def test_a_new_or_empty_or_marked_directory_is_accepted_and_stale_files_only_of_ours_removed(tmp_path):
    target = tmp_path / "r"
    _build(target, {"report.md": "1", "audit-a.png": "a"})
    manifest = json.loads((target / MANIFEST).read_text())
    assert manifest["written_by"] == "dpaudit" and manifest["files"] == ["audit-a.png", "report.md"]
    (target / "NOTES.txt").write_text("mine")
    _build(target, {"report.md": "2"})
    assert sorted(p.name for p in target.iterdir()) == ["NOTES.txt", MANIFEST, "report.md"]
    assert (target / "report.md").read_text() == _ours("report.md", "2") and (target / "NOTES.txt").read_text() == "mine"
    empty = tmp_path / "empty"
    empty.mkdir()
    _build(empty, {"report.md": "1"})
    assert (empty / "report.md").exists()


def test_a_forged_manifest_cannot_name_anything_outside_the_report(tmp_path):
    target = tmp_path / "r"
    _build(target, {"report.md": "1"})
    (tmp_path / "victim.txt").write_text("v")
    (target / "sub").mkdir()
    (target / "sub" / "f").write_text("f")
    (target / "audit-dir.png").mkdir()
    (target / MANIFEST).write_text(json.dumps({"written_by": "dpaudit", "files": [
        "../victim.txt", str(tmp_path / "victim.txt"), "sub", "sub/f", "audit-dir.png", "..", "report.md"]}))
    _build(target, {"audit-b.png": "b"})
    assert (tmp_path / "victim.txt").read_text() == "v" and (target / "sub" / "f").read_text() == "f"
    assert (target / "audit-dir.png").is_dir() and not (target / "report.md").exists()


def test_a_users_file_with_a_report_name_is_never_overwritten(tmp_path):
    target = tmp_path / "r"
    _build(target, {"report.md": "1"})
    (target / "audit-mine.png").write_text("user's")
    with pytest.raises(ConfigError, match="audit-mine.png"):
        _build(target, {"report.md": "2", "audit-mine.png": "ours"})
    assert (target / "audit-mine.png").read_text() == "user's" and (target / "report.md").read_text() == _ours("report.md", "1")
    assert not [p for p in target.iterdir() if p.name.startswith(".dpaudit-building")]


def test_a_directory_that_cannot_be_renamed_is_fine_because_it_is_never_renamed(tmp_path):
    parent = tmp_path / "ro"
    target = parent / "r"
    target.mkdir(parents=True)
    parent.chmod(0o555)  # the report directory itself stays writable; its parent does not
    try:
        _build(target, {"report.md": "1"})
        _build(target, {"report.md": "2"})
    finally:
        parent.chmod(0o755)
    assert (target / "report.md").read_text() == _ours("report.md", "2")
    assert sorted(p.name for p in parent.iterdir()) == ["r"]


def test_permissions_follow_the_umask_and_existing_files_keep_their_mode(tmp_path):
    previous = os.umask(0o022)
    try:
        target = tmp_path / "r"
        _build(target, {"report.md": "1"})
        assert stat.S_IMODE(target.stat().st_mode) == 0o755
        assert stat.S_IMODE((target / "report.md").stat().st_mode) == 0o644
        (target / "report.md").chmod(0o640)
        _build(target, {"report.md": "2"})
        assert stat.S_IMODE((target / "report.md").stat().st_mode) == 0o640
        single = tmp_path / "baseline.json"
        atomic_write_text(single, "{}")
        assert stat.S_IMODE(single.stat().st_mode) == 0o644
        single.chmod(0o664)
        atomic_write_text(single, "{}")
        assert stat.S_IMODE(single.stat().st_mode) == 0o664
    finally:
        os.umask(previous)
