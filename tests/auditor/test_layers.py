"""The auditor's import layers: no cycles, no upward imports, witness families independent of each other."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")
networkx = pytest.importorskip("networkx")

SCOPE = ("dpaudit.auditor", "dpaudit.stats")
BELOW_AUDITOR = ("dpaudit.auditor", "dpaudit.accountant", "dpaudit.mechanisms", "dpaudit.events", "dpaudit.stats",
                 "dpaudit.guarantee", "dpaudit._validation", "dpaudit._numeric", "dpaudit.errors", "dpaudit._json",
                 "dpaudit._version", "dpaudit._io")
BELOW_STATS = ("dpaudit.stats", "dpaudit.errors", "dpaudit._validation", "dpaudit._numeric")
SEARCH = "dpaudit.auditor.witness_search"


@pytest.fixture(scope="module")
def imports() -> dict[str, set[str]]:
    graph = grimp.build_graph("dpaudit")  # module-level and function-level imports alike
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def test_no_import_cycle_touches_the_auditor_or_stats(imports):
    graph = networkx.DiGraph([(m, i) for m, targets in imports.items() for i in targets])
    cycles = [sorted(c) for c in networkx.strongly_connected_components(graph)
              if len(c) > 1 and any(_within(m, SCOPE) for m in c)]
    assert cycles == []


def test_the_auditor_and_stats_import_only_lower_layers(imports):
    upward = [(m, i) for m, targets in imports.items() for i in targets
              if (_within(m, ("dpaudit.auditor",)) and not _within(i, BELOW_AUDITOR))
              or (_within(m, ("dpaudit.stats",)) and not _within(i, BELOW_STATS))]
    assert upward == []  # never reporting, gate, cli, training, replay, nor the top-level package


def test_witness_families_know_nothing_of_each_other(imports):
    families = {m for m in imports if m.startswith(SEARCH + ".family_")}
    assert len(families) >= 5
    crossing = [(m, i) for m in families for i in imports[m] if i in families or i in (SEARCH + ".registry", SEARCH + ".selector")]
    assert crossing == []
    below = [(m, i) for m in imports if m.startswith(SEARCH + ".") and m not in families
             and m not in (SEARCH + ".registry", SEARCH + ".selector") for i in imports[m] if i in families]
    assert below == []  # shared pieces sit below the families; only the registry lists them
