"""mkdocs hooks: pages generated from the code, so they cannot drift from it.

- ``reference/config.md``: the marker ``<!-- gate-config-reference -->`` is replaced by the tables of
  :func:`dpaudit.gate.schema.reference_markdown`, which first checks the description against the parser
  and fails the build on any difference;
- ``reference/cli.md``: ``<!-- cli-help: COMMAND -->`` markers are replaced by ``dpaudit COMMAND --help``.
"""

from __future__ import annotations

import contextlib
import io
import re


def _help(command: str) -> str:
    from dpaudit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*command.split(), "--help"])
    return "```text\n" + out.getvalue().rstrip() + "\n```"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (mkdocs hook signature)
    if "<!-- gate-config-reference -->" in markdown:
        from dpaudit.gate.schema import reference_markdown

        markdown = markdown.replace("<!-- gate-config-reference -->", reference_markdown())
    return re.sub(r"<!-- cli-help: ?([a-z ]*) -->", lambda m: _help(m.group(1).strip()), markdown)
