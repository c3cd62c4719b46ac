"""Audits of real third-party libraries through the adapters in examples/third_party (skipped when the
libraries are not installed)."""

from __future__ import annotations

import sys

import pytest

from conftest import ROOT

import dpaudit

sys.path.insert(0, str(ROOT / "examples" / "third_party"))


def _case(module, name):
    return next(case for case in module.cases() if case.name == name)


def test_diffprivlib_laplace_passes():
    # tools.mean under add/remove (pair [0] vs [0, 1], pair epsilon about 1.19) is caught in
    # benchmarks/bench_third_party.py (reports/third_party.md): 30 s of a slow library's calls, too slow for the tests
    module = pytest.importorskip("diffprivlib_adapter", exc_type=ImportError)
    laplace = _case(module, "diffprivlib Laplace")
    result = dpaudit.audit(laplace.mechanism, *laplace.pairs[0], laplace.epsilon, samples=40_000, seed=0, workers=1,
                           sequential=False)  # how tight the whole budget gets (a futility stop reports less)
    assert not result.violated and result.epsilon_lower > 0.8


def test_opendp_laplace_matches_its_privacy_map():
    module = pytest.importorskip("opendp_adapter", exc_type=ImportError)
    laplace = _case(module, "OpenDP make_laplace")
    result = dpaudit.audit(laplace.mechanism, *laplace.pairs[0], laplace.epsilon, samples=40_000, seed=0, workers=1,
                           sequential=False)  # how tight the whole budget gets (a futility stop reports less)
    assert not result.violated and result.epsilon_lower > 0.8
