"""mkdocs hooks: pages generated from the code, so they cannot drift from it.

- ``reference/config.md``: the marker ``<!-- gate-config-reference -->`` is replaced by the tables of
  :func:`dpaudit.gate.schema.reference_markdown`, which first checks the description against the parser
  and fails the build on any difference;
- ``reference/cli.md``: ``<!-- cli-help: COMMAND -->`` markers are replaced by ``dpaudit COMMAND --help``;
- every page: a mkdocstrings identifier ``::: package.name`` of a name the package imports lazily (its
  ``_LAZY`` table, read statically by no documentation tool) is pointed at the module that defines it.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import io
import re
import sys


def _help(command: str) -> str:
    from dpaudit.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main([*command.split(), "--help"])
    return "```text\n" + out.getvalue().rstrip() + "\n```"


def _defining_module(identifier: str) -> str:
    """``package.name`` -> ``module.name`` when documentation tools would not find ``name`` in ``package``:
    ``package`` imports it lazily from ``module`` (its ``_LAZY`` table), or a submodule ``package.name``
    shadows it (``dpaudit.auditor.audit`` is both a module and the function it exports)."""
    package, _, name = identifier.rpartition(".")
    try:
        module = importlib.import_module(package) if package else None
    except ImportError:
        return identifier
    lazy = getattr(module, "_LAZY", {})
    if name in lazy:
        return f"{lazy[name]}.{name}"
    value = getattr(module, name, None)
    if value is not None and not inspect.ismodule(value) and f"{package}.{name}" in sys.modules:
        return f"{value.__module__}.{name}"
    return identifier


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (mkdocs hook signature)
    if "<!-- gate-config-reference -->" in markdown:
        from dpaudit.gate.schema import reference_markdown

        markdown = markdown.replace("<!-- gate-config-reference -->", reference_markdown())
    markdown = re.sub(r"^::: ([\w.]+)$", lambda m: "::: " + _defining_module(m.group(1)), markdown, flags=re.M)
    return re.sub(r"<!-- cli-help: ?([a-z ]*) -->", lambda m: _help(m.group(1).strip()), markdown)
