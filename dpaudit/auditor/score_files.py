"""Reading score files written by a training job, for score audits.

One score per run (or per canary) and a 0/1 column saying whether the canary was in. Formats: ``.csv`` (a header row), ``.npy`` (an (n, 2) array: score, included),
``.npz`` (arrays ``score`` and ``included``, or ``scores_with`` and ``scores_without``) and ``.parquet``
(needs pyarrow). Every problem raises InvalidArgument naming the file, the column and the row; no row is
ever dropped. I/O failures raise OSError (the command line's exit code 3).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidArgument

__all__ = ["ScoreFile", "read_score_file", "FORMATS"]

FORMATS: tuple[str, ...] = (".csv", ".npy", ".npz", ".parquet")


@dataclass(frozen=True)
class ScoreFile:
    """The scores of a file and the 0/1 inclusion of the canary for each."""

    path: str
    scores: np.ndarray
    included: np.ndarray  # bool

    @property
    def scores_with(self) -> np.ndarray:
        return self.scores[self.included]

    @property
    def scores_without(self) -> np.ndarray:
        return self.scores[~self.included]


def _bad(path: str, message: str) -> InvalidArgument:
    return InvalidArgument("file", f"{path}: {message}")


def _check(path: str, scores: np.ndarray, included: np.ndarray, score_column: str, label_column: str,
           first_row: int = 0, what: str = "row") -> ScoreFile:
    if scores.size == 0:
        raise _bad(path, "no scores (the file has no rows)")
    bad = ~np.isfinite(scores)
    if bad.any():
        row = int(np.argmax(bad))
        raise _bad(path, f"column {score_column!r}, {what} {row + first_row}: {float(scores[row])!r} is not a finite score")
    bad = ~((included == 0) | (included == 1))
    if bad.any():
        row = int(np.argmax(bad))
        raise _bad(path, f"column {label_column!r}, {what} {row + first_row}: {included[row].item()!r} must be 0 or 1")
    return ScoreFile(path, scores.astype(np.float64), included == 1)


def _numeric(path: str, values: np.ndarray, column: str, what: str = "row", first_row: int = 0) -> np.ndarray:
    if values.dtype == bool:
        return values.astype(np.float64)
    if np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.floating):
        return values.astype(np.float64)
    for row, value in enumerate(values.reshape(-1).tolist()):
        try:
            float(value)
        except (TypeError, ValueError):
            raise _bad(path, f"column {column!r}, {what} {row + first_row}: {value!r} is not a number") from None
    raise _bad(path, f"column {column!r} has dtype {values.dtype}, not numbers")


def _read_csv(path: str, score_column: str, label_column: str) -> ScoreFile:
    with open(path, newline="", encoding="utf-8-sig") as handle:  # a byte-order mark (spreadsheet programs) is dropped
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise _bad(path, "empty file (expected a header row with columns "
                             f"{score_column!r} and {label_column!r})")
        header = [h.strip() for h in header]
        for column in (score_column, label_column):
            if column not in header:
                raise _bad(path, f"no column {column!r} in the header (columns: {', '.join(header)})")
        i_score, i_label = header.index(score_column), header.index(label_column)
        scores, labels = [], []
        for line, row in enumerate(reader, start=2):
            if not row or all(not cell.strip() for cell in row):
                raise _bad(path, f"line {line}: empty row (rows are never skipped)")
            values = []
            for column, index in ((score_column, i_score), (label_column, i_label)):
                if index >= len(row) or not row[index].strip():
                    raise _bad(path, f"column {column!r}, line {line}: missing value")
                try:
                    values.append(float(row[index]))
                except ValueError:
                    raise _bad(path, f"column {column!r}, line {line}: {row[index]!r} is not a number") from None
            scores.append(values[0])
            labels.append(values[1])
    return _check(path, np.array(scores, dtype=np.float64), np.array(labels, dtype=np.float64), score_column,
                  label_column, first_row=2, what="line")


def _read_npz(path: str, score_column: str, label_column: str) -> ScoreFile:
    with np.load(path, allow_pickle=False) as archive:
        keys = set(archive.files)
        if {"scores_with", "scores_without"} <= keys:
            parts = {k: _numeric(path, np.asarray(archive[k]).reshape(-1), k) for k in ("scores_with", "scores_without")}
            scores = np.concatenate([parts["scores_with"], parts["scores_without"]])
            included = np.concatenate([np.ones(parts["scores_with"].size), np.zeros(parts["scores_without"].size)])
            for k in ("scores_with", "scores_without"):
                if parts[k].size == 0:
                    raise _bad(path, f"array {k!r} is empty")
                _check(path, parts[k], np.ones(parts[k].size), k, k, what="index")
            return ScoreFile(path, scores, included == 1)
        for column in (score_column, label_column):
            if column not in keys:
                raise _bad(path, f"no array {column!r} (arrays: {', '.join(sorted(keys))}; expected {score_column!r} and "
                                 f"{label_column!r}, or 'scores_with' and 'scores_without')")
        scores = np.asarray(archive[score_column])
        labels = np.asarray(archive[label_column])
    if scores.ndim != 1 or labels.ndim != 1:
        raise _bad(path, f"arrays {score_column!r} and {label_column!r} must be 1-d, got shapes {scores.shape} and {labels.shape}")
    if scores.size != labels.size:
        raise _bad(path, f"array {score_column!r} has {scores.size} entries but {label_column!r} has {labels.size}")
    return _check(path, _numeric(path, scores, score_column, "index"), _numeric(path, labels, label_column, "index"),
                  score_column, label_column, what="index")


def _read_npy(path: str, score_column: str, label_column: str) -> ScoreFile:
    array = np.load(path, allow_pickle=False)
    if array.ndim != 2 or array.shape[1] != 2:
        raise _bad(path, f"expected an (n, 2) array (column 0 the score, column 1 the 0/1 inclusion), got shape {array.shape}")
    names = ("column 0 (score)", "column 1 (included)")
    return _check(path, _numeric(path, array[:, 0], names[0]), _numeric(path, array[:, 1], names[1]), names[0], names[1])


def _read_parquet(path: str, score_column: str, label_column: str) -> ScoreFile:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise _bad(path, "reading .parquet needs pyarrow (pip install pyarrow), or write .csv/.npz") from None
    table = pq.read_table(path)
    for column in (score_column, label_column):
        if column not in table.column_names:
            raise _bad(path, f"no column {column!r} (columns: {', '.join(table.column_names)})")
    columns = {}
    for column in (score_column, label_column):
        chunk = table.column(column)
        if chunk.null_count:
            values = chunk.to_pylist()
            row = next(i for i, v in enumerate(values) if v is None)
            raise _bad(path, f"column {column!r}, row {row}: missing value")
        columns[column] = _numeric(path, np.asarray(chunk.to_numpy(zero_copy_only=False)), column)
    return _check(path, columns[score_column], columns[label_column], score_column, label_column)


def read_score_file(path: str | Path, score_column: str = "score", label_column: str = "included") -> ScoreFile:
    """Read a score file (format from the suffix); raises InvalidArgument naming file, column and row."""
    path = str(path)
    suffix = Path(path).suffix.lower()
    readers = {".csv": _read_csv, ".npy": _read_npy, ".npz": _read_npz, ".parquet": _read_parquet}
    if suffix not in readers:
        raise _bad(path, f"unknown format {suffix or '(no suffix)'!r}; use one of {', '.join(FORMATS)}")
    try:
        return readers[suffix](path, score_column, label_column)
    except (OSError, InvalidArgument):
        raise
    except (ValueError, EOFError) as exc:  # corrupt .npy/.npz, undecodable text (UnicodeDecodeError)
        raise _bad(path, f"cannot parse as {suffix}: {exc}") from None
