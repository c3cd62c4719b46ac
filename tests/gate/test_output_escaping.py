"""Names, events and messages from users cannot fake lines, steer a terminal or break a report's layout."""

from __future__ import annotations

import os
import stat

from dpaudit.cli import main
from dpaudit.reporting import markdown_cell, visible

NAME = r"evil<script>alert(1)</script>|col\u001b[2K\rbudget   ok: pass\nnext"
CONFIG = f"""
[[budget]]
name = "{NAME}"
kind = "composition"
epsilon = 0.1
k = 10
theorem = "basic"
delta = 1e-5
max_epsilon = 5.0

[[budget]]
name = "second"
kind = "composition"
epsilon = 0.1
k = 10
theorem = "basic"
delta = 1e-5
max_epsilon = 0.5
"""


def test_visible_and_markdown_cell_escape_every_control_and_layout_character():
    assert visible("a\x1b[31mb\nc\r\t\u202e\x7f") == "a\\x1b[31mb\\nc\\r\\t\\u202e\\x7f"
    cell = markdown_cell("<b>x</b>|y`z`\n\\")
    assert "<" not in cell and "\n" not in cell and "\\|" in cell and "\\`" in cell and cell.endswith("\\\\")


def test_terminal_report_and_html_show_a_hostile_name_harmlessly(tmp_path, capsys):
    config = tmp_path / "gate.toml"
    config.write_text(CONFIG)
    previous = os.umask(0o022)
    try:
        code = main(["check", str(config), "--report", str(tmp_path / "r"), "--junit", str(tmp_path / "j.xml")])
    finally:
        os.umask(previous)
    out, err = capsys.readouterr()
    assert code == 1
    for line in (out + err).splitlines():
        assert "\x1b" not in line and "\r" not in line
        assert not line.startswith("budget   ok")  # the name could not start a line of its own
    assert sum(line.startswith("[") for line in (out + err).splitlines()) == 2  # each entry once, streamed
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "<script>" not in markdown and "\x1b" not in markdown
    table = [line for line in markdown.splitlines() if line.startswith("| ")]
    header = table[0]
    columns = header.count(" | ")
    for line in table:
        assert line.replace("\\|", "").count(" | ") == columns, line
    assert "<script>" not in (tmp_path / "r" / "report.html").read_text()
    assert stat.S_IMODE((tmp_path / "r").stat().st_mode) == 0o755
    for name in ("report.md", "baseline.json"):
        assert stat.S_IMODE((tmp_path / "r" / name).stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "j.xml").stat().st_mode) == 0o644
