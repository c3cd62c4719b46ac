"""A mechanism that changes its input is an error of its entry, never a finding."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from dpaudit.cli import main
from dpaudit.errors import MechanismError
from dpaudit.gate.read_only_inputs import ReadOnlyInputs, read_only_inputs, same_value

MECHANISMS = '''
import numpy as np

def appends(data, size, rng):
    data.append(1.0)
    return float(np.sum(data)) + rng.laplace(0.0, 1.0, size)

def adds_in_place(data, size, rng):
    data += 1.0
    return float(data[0]) + rng.laplace(0.0, 1.0, size)

def array_pairs():
    return [(np.array([0.0]), np.array([1.0]))]

def laplace(data, size, rng):
    return float(np.sum(data)) + rng.laplace(0.0, 1.0, size)
'''


def _entry(name: str, mechanism: str, pairs: str = "d = [0.0]\nd_prime = [1.0]") -> str:
    return f'[[audit]]\nname = "{name}"\nmechanism = "mutating:{mechanism}"\n{pairs}\nepsilon = 0.5\nsamples = 20000\n'


def test_mutating_mechanisms_are_error_rows_naming_the_entry(tmp_path, capsys):
    (tmp_path / "mutating.py").write_text(MECHANISMS)
    config = tmp_path / "gate.toml"
    config.write_text("[gate]\nworkers = 1\n" + _entry("list-append", "appends")
                      + _entry("array-in-place", "adds_in_place", 'neighbours = "mutating:array_pairs"'))
    assert main(["check", str(config), "--json"]) == 3  # errors only: no finding
    out = capsys.readouterr().out
    import json

    rows = json.loads(out)["audits"]
    assert [row["violated"] for row in rows] == [False, False]
    assert "changed its input" in rows[0]["error"]["message"] and "list-append" in rows[0]["error"]["message"]
    assert "read-only" in rows[1]["error"]["message"] or "changed its input" in rows[1]["error"]["message"]


def test_the_guard_passes_a_fresh_copy_and_keeps_attributes_and_pickling():
    seen = []

    def mechanism(data, size, rng):
        seen.append(data)
        return np.zeros(size)

    mechanism.event = "Laplace(1.0)"
    guarded = read_only_inputs(mechanism, "m")
    original = [1.0, [2.0, float("nan")]]
    guarded(original, 3, None)
    assert seen[0] == [1.0, [2.0, seen[0][1][1]]] and seen[0] is not original and guarded.event == "Laplace(1.0)"
    array = np.arange(3.0)
    guarded(array, 3, None)
    assert not seen[1].flags.writeable and seen[1] is not array
    assert read_only_inputs(guarded, "again") is guarded
    assert isinstance(pickle.loads(pickle.dumps(ReadOnlyInputs(np.add, "m"))), ReadOnlyInputs)

    def sneaky(data, size, rng):
        data[1][0] = 5.0
        return np.zeros(size)

    with pytest.raises(MechanismError, match="changed its input"):
        read_only_inputs(sneaky, "entry 'x'")(original, 3, None)
    assert original[1][0] == 2.0


@pytest.mark.parametrize("a, b, same", [([1, 2], [1, 2], True), ([1, 2], [1, 3], False), ((1,), [1], False),
                                        ({"a": np.nan}, {"a": np.nan}, True), (np.zeros(2), np.zeros(3), False),
                                        (np.array(["x"]), np.array(["x"]), True), ("ab", "ab", True)])
def test_same_value(a, b, same):
    assert same_value(a, b) is same
