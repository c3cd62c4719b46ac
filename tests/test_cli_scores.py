"""``dpaudit scores FILE``: every format, exit codes 0/1/2/3, and errors naming file, column and row."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dpaudit.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def scores(shift: float, n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    included = np.arange(2 * n) % 2
    return included * shift + rng.normal(size=2 * n), included


def write_csv(path: Path, values: np.ndarray, included: np.ndarray) -> Path:
    path.write_text("run,score,included\n" + "".join(f"{i},{float(v)!r},{int(c)}\n" for i, (v, c) in enumerate(zip(values, included))))
    return path


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".npz", ".npz-split"])
def test_formats_agree_and_exit_codes(tmp_path, capsys, suffix):
    values, included = scores(3.0)
    if suffix == ".csv":
        path = write_csv(tmp_path / "s.csv", values, included)
    elif suffix == ".npy":
        path = tmp_path / "s.npy"
        np.save(path, np.column_stack([values, included]))
    elif suffix == ".npz":
        path = tmp_path / "s.npz"
        np.savez(path, score=values, included=included)
    else:
        path = tmp_path / "split.npz"
        np.savez(path, scores_with=values[included == 1], scores_without=values[included == 0])
    code, out, err = run(capsys, "scores", path, "--epsilon", "1.0", "--json")
    payload = json.loads(out)
    assert code == 1 and payload["violated"] and payload["epsilon_lower"] > 1.0 and payload["file"] == str(path)
    code, out, err = run(capsys, "scores", path, "--epsilon", "50")
    assert code == 0 and "not violated" in out
    reference = json.loads(run(capsys, "scores", write_csv(tmp_path / "r.csv", values, included), "--epsilon", "1.0",
                               "--json")[1])
    assert payload["epsilon_lower"] == reference["epsilon_lower"]


def test_parquet_when_pyarrow_is_present(tmp_path, capsys):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    values, included = scores(3.0)
    path = tmp_path / "s.parquet"
    pq.write_table(pa.table({"score": values, "included": included}), path)
    code, out, _ = run(capsys, "scores", path, "--epsilon", "1", "--json")
    assert code == 1 and json.loads(out)["violated"]
    holes = tmp_path / "holes.parquet"
    pq.write_table(pa.table({"score": [0.1, None, 0.3], "included": [1, 0, 1]}), holes)
    code, _, err = run(capsys, "scores", holes)
    assert code == 2 and "column 'score', row 1: missing value" in err
    words = tmp_path / "words.parquet"
    pq.write_table(pa.table({"score": ["0.1", "x"], "included": [1, 0]}), words)
    code, _, err = run(capsys, "scores", words)
    assert code == 2 and "column 'score', row 1: 'x' is not a number" in err


def test_one_run_mode(tmp_path, capsys):
    rng = np.random.default_rng(1)
    included = (rng.random(1000) < 0.5).astype(int)
    path = write_csv(tmp_path / "one.csv", included * 6.0 + rng.normal(size=1000), included)
    code, out, _ = run(capsys, "scores", path, "--one-run", "--epsilon", "1", "--json")
    payload = json.loads(out)
    assert code == 1 and payload["canaries"] == 1000 and payload["epsilon_lower"] > 1


@pytest.mark.parametrize("content,needle", [
    ("score,included\n0.1,1\nabc,0\n0.3,1\n", "column 'score', line 3: 'abc' is not a number"),
    ("score,included\n0.1,1\nnan,0\n", "column 'score', line 3: nan is not a finite score"),
    ("score,included\n0.1,1\n-inf,0\n", "line 3: -inf"),
    ("score,included\n0.1,1\n0.2,2\n", "column 'included', line 3: 2.0 must be 0 or 1"),
    ("score,included\n0.1,1\n0.2,\n", "column 'included', line 3: missing value"),
    ("score,included\n0.1,1\n\n0.2,0\n", "line 3: empty row"),
    ("score,label\n0.1,1\n", "no column 'included'"),
    ("", "empty file"),
    ("score,included\n", "no scores"),
    ("score,included\n0.1,1\n0.2,1\n0.3,1\n", "0 runs without"),
])
def test_bad_csv_contents_exit_2_naming_file_column_and_row(tmp_path, capsys, content, needle):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    code, out, err = run(capsys, "scores", path)
    assert code == 2 and needle in err and str(path) in err and "Traceback" not in err


def test_bad_binary_files(tmp_path, capsys):
    mismatched = tmp_path / "m.npz"
    np.savez(mismatched, score=np.zeros(5), included=np.zeros(4))
    code, _, err = run(capsys, "scores", mismatched)
    assert code == 2 and "has 5 entries but 'included' has 4" in err
    text = tmp_path / "t.npz"
    np.savez(text, score=np.array(["a", "b"]), included=np.array([0, 1]))
    code, _, err = run(capsys, "scores", text)
    assert code == 2 and "column 'score', index 0: 'a' is not a number" in err
    wrong = tmp_path / "w.npy"
    np.save(wrong, np.zeros((4, 3)))
    code, _, err = run(capsys, "scores", wrong)
    assert code == 2 and "(n, 2)" in err
    corrupt = tmp_path / "c.npy"
    corrupt.write_bytes(b"not numpy")
    code, _, err = run(capsys, "scores", corrupt)
    assert code == 2 and "cannot parse" in err
    code, _, err = run(capsys, "scores", tmp_path / "x.txt")
    assert code == 2 and "unknown format" in err


def test_missing_file_is_a_usage_error_like_a_missing_config(tmp_path, capsys):
    code, _, err = run(capsys, "scores", tmp_path / "absent.csv")
    assert code == 2 and "absent.csv" in err


def test_bad_arguments_exit_2(tmp_path, capsys):
    values, included = scores(1.0, 50)
    path = write_csv(tmp_path / "s.csv", values, included)
    assert run(capsys, "scores", path, "--delta", "2")[0] == 2
    assert run(capsys, "scores", path, "--confidence-level", "1.5")[0] == 2
