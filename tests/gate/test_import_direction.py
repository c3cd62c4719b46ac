"""The gate, reporting and command-line packages import one way: down the layers, never in a cycle."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dpaudit"
LAYERS = ["errors", "_validation", "events", "stats", "accountant", "mechanisms", "auditor", "training", "replay",
          "reporting", "gate", "cli"]


def _imports(path: Path) -> set[str]:
    """dpaudit modules imported anywhere in ``path`` (also inside functions), as dotted names."""
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("dpaudit")}


def _layer(module: str) -> int | None:
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else None


def test_gate_reporting_and_cli_never_import_upward():
    upward = []
    for package in ("reporting", "gate", "cli"):
        own = LAYERS.index(package)
        for path in (PACKAGE / package).glob("*.py"):
            for module in _imports(path):
                layer = _layer(module)
                if layer is not None and layer > own:
                    upward.append(f"{path.relative_to(PACKAGE)} imports {module}")
    assert upward == []


def test_no_import_cycle_inside_gate_or_reporting():
    for package in ("gate", "reporting"):
        graph = {path.stem: {m.split(".")[2] for m in _imports(path) if m.startswith(f"dpaudit.{package}.") and len(m.split(".")) > 2}
                 for path in (PACKAGE / package).glob("*.py")}
        for start in graph:
            seen, stack = set(), list(graph[start])
            while stack:
                module = stack.pop()
                assert module != start, f"dpaudit.{package}.{start} is in an import cycle"
                if module not in seen:
                    seen.add(module)
                    stack.extend(graph.get(module, ()))
