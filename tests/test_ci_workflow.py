"""The example CI workflow installs dpaudit from a checkout and calls the gate with flags that exist."""

from __future__ import annotations

import shlex
from pathlib import Path

from dpaudit.cli import build_parser

WORKFLOW = Path(__file__).resolve().parents[1] / "examples" / "ci-workflow.yml"


def _run_lines() -> list[str]:
    lines, block = [], False
    for raw in WORKFLOW.read_text().splitlines():
        text = raw.strip()
        if text.startswith("run: |"):
            block = True
            continue
        if text.startswith("run:"):
            lines.append(text[4:].strip())
            block = False
        elif block and text and not text.startswith(("- ", "uses:", "with:", "if:", "name:")):
            lines.append(text)
        else:
            block = False
    return lines


def test_dpaudit_is_installed_from_a_checkout_never_by_name():
    installs = [line for line in _run_lines() if "pip install" in line]
    assert installs
    for line in installs:
        targets = [word for word in shlex.split(line)[4:] if not word.startswith("-")]
        assert targets and all(t.startswith(".") for t in targets), line


def test_gate_commands_parse():
    commands = [line for line in _run_lines() if line.startswith("dpaudit ")]
    assert commands
    for line in commands:
        args = build_parser().parse_args(shlex.split(line)[1:])
        assert args.command == "check" and args.report and args.baseline and args.timeout
