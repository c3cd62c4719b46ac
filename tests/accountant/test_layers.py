"""The accountant and the events import one way down their layers, with no import circle (read with grimp)."""

from __future__ import annotations

import pytest

grimp = pytest.importorskip("grimp")

# inside dpaudit.accountant, lowest first: a module imports only from its own layer or the ones before it
ACCOUNTANT_LAYERS = (
    ("dpaudit.accountant.leaf", "dpaudit.accountant.registry", "dpaudit.accountant._rdp_formulas",
     "dpaudit.accountant._binomial", "dpaudit.accountant.pld_core"),
    ("dpaudit.accountant.leaf_plds", "dpaudit.accountant.leaf_measures"),
    ("dpaudit.accountant.families",),
    ("dpaudit.accountant.event_tree",),
)
OUTSIDE_ALLOWED = {
    "dpaudit.accountant": ("dpaudit.events", "dpaudit.guarantee", "dpaudit.tradeoff", "dpaudit._validation",
                           "dpaudit._numeric", "dpaudit.errors", "dpaudit.stats"),
    "dpaudit.events": ("dpaudit._validation", "dpaudit._numeric", "dpaudit.errors"),
    "dpaudit.interop": ("dpaudit.events",),
    "dpaudit.guarantee": ("dpaudit.tradeoff", "dpaudit._validation", "dpaudit._numeric", "dpaudit.errors"),
    "dpaudit.tradeoff": ("dpaudit._validation", "dpaudit._numeric", "dpaudit.errors"),
    "dpaudit.events_parser": ("dpaudit.events", "dpaudit.errors"),
}


@pytest.fixture(scope="module")
def graph():
    return grimp.build_graph("dpaudit")


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def _layer(module: str) -> int:
    for index, layer in enumerate(ACCOUNTANT_LAYERS):
        if any(_within(module, prefix) for prefix in layer):
            return index
    return len(ACCOUNTANT_LAYERS)  # the accountants themselves


def test_no_import_runs_up_out_of_the_accountant_or_the_events(graph):
    upward = []
    for module in sorted(graph.modules):
        home = next((p for p in OUTSIDE_ALLOWED if _within(module, p)), None)
        if home is None:
            continue
        for imported in graph.find_modules_directly_imported_by(module):
            if _within(imported, home):
                continue
            if not any(_within(imported, allowed) for allowed in OUTSIDE_ALLOWED[home]):
                upward.append((module, imported))
    assert upward == []


def test_accountant_layers_import_downwards_only(graph):
    upward = [(module, imported) for module in sorted(graph.modules) if _within(module, "dpaudit.accountant")
              for imported in graph.find_modules_directly_imported_by(module)
              if _within(imported, "dpaudit.accountant") and _layer(imported) > _layer(module)]
    assert upward == []


def test_no_import_circle_in_the_accountant_or_the_events(graph):
    scope = [m for m in graph.modules if any(_within(m, p) for p in OUTSIDE_ALLOWED)]
    circles = []
    for module in scope:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported in scope and graph.find_shortest_chain(importer=imported, imported=module):
                circles.append((module, imported))
    assert circles == []
