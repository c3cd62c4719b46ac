"""The audit progress bar: tqdm when installed, a plain bar otherwise, silent unless enabled."""

from __future__ import annotations

import pickle
import sys

import pytest

from dpaudit.auditor.sampling import Progress


def test_disabled_progress_writes_nothing(capsys):
    bar = Progress(5, enabled=False)
    for _ in range(5):
        bar.advance()
    assert bar.done == 5 and capsys.readouterr().err == ""


def test_tqdm_bar_when_installed(capsys):
    pytest.importorskip("tqdm")
    bar = Progress(4, label="audit", enabled=True)
    assert bar._bar is not None
    for _ in range(4):
        bar.advance()
    assert bar._bar is None  # closed at the last block
    err = capsys.readouterr().err
    assert "audit:" in err and "/4 [" in err  # tqdm's format (it throttles redraws)


def test_plain_bar_without_tqdm(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import fails as if tqdm were absent
    bar = Progress(2, label="curve audit", enabled=True)
    bar.advance()
    bar.advance()
    err = capsys.readouterr().err
    assert "curve audit [" in err and "2/2 blocks" in err and err.endswith("\n")


def test_a_progress_bar_pickles_without_its_terminal_state():
    bar = Progress(3, enabled=True)
    copy = pickle.loads(pickle.dumps(bar))
    assert copy.total == 3 and copy._bar is None
    bar.close()


def test_an_audit_with_progress_draws_the_bar_and_closes_it(capsys):
    import numpy as np

    import dpaudit

    def laplace(data, size, rng):
        return data[0] + rng.laplace(0.0, 1.0, size)

    result = dpaudit.audit(laplace, [0.0], [1.0], epsilon=1.0, samples=2000, workers=1, progress=True)
    err = capsys.readouterr().err
    assert not result.violated and "audit" in err and ("block" in err)
    assert np.isfinite(result.epsilon_lower)
