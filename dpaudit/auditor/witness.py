"""Witness events: measurable sets of outputs, as picklable predicates over canonical output rows.

An event is chosen on one batch of samples and then evaluated (``indicator``) on fresh samples, so it
must be a fixed function of the output: thresholds, atom tables and regression weights are frozen in it.

Every event and projection type lives in this one module (over 500 lines on purpose): :func:`witness_from_dict`
must know each of them to re-read a witness from a report or a baseline, and the types are small, flat
dataclasses with no logic beyond ``indicator``/``score``, ``describe`` and ``to_dict``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "Witness", "ColumnAtoms", "pattern_keys", "PatternSet", "Projection", "Column", "Linear", "ScoreRegion", "Union",
    "PooledPair", "witness_from_dict",
]


def _encode(values) -> list:
    """Floats to JSON-safe values (exact: Python's float repr round-trips); inf/nan as strings."""
    return [v if np.isfinite(v) else ("nan" if np.isnan(v) else ("inf" if v > 0 else "-inf")) for v in np.asarray(values, float).ravel().tolist()]


def _decode(values) -> np.ndarray:
    return np.array([float(v) for v in values], dtype=np.float64)


class Witness:
    """An event S of the output space."""

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        """Boolean array: which rows of ``outputs`` (canonical, shape (n, d)) lie in S."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def to_dict(self) -> dict:
        """JSON-ready form, read back by :func:`witness_from_dict` (for baselines)."""
        raise NotImplementedError


@dataclass(frozen=True)
class ColumnAtoms:
    """Per-column tables of atom values (values that recur); other values code as -1 ("continuous")."""

    values: tuple[np.ndarray, ...]  # sorted finite-or-inf atom values per column (NaN excluded)
    has_nan: tuple[bool, ...]  # whether NaN is an atom of the column

    def codes(self, outputs: np.ndarray) -> np.ndarray:
        """Integer code per cell: index of the atom (NaN is the last index), or -1 for a non-atom."""
        codes = np.full(outputs.shape, -1, dtype=np.int32)
        for j, (atoms, nan_atom) in enumerate(zip(self.values, self.has_nan)):
            column = outputs[:, j]
            if atoms.size:
                position = np.searchsorted(atoms, column)
                inside = position < atoms.size
                hit = np.zeros(column.shape, dtype=bool)
                hit[inside] = atoms[position[inside]] == column[inside]
                codes[hit, j] = position[hit]
            if nan_atom:
                codes[np.isnan(column), j] = atoms.size
        return codes

    def to_dict(self) -> dict:
        return {"values": [_encode(v) for v in self.values], "has_nan": list(self.has_nan)}

    @classmethod
    def from_dict(cls, data: dict) -> ColumnAtoms:
        return cls(tuple(_decode(v) for v in data["values"]), tuple(bool(b) for b in data["has_nan"]))

    def label(self, j: int, code: int) -> str:
        if code < 0:
            return "~"  # any non-atom value
        if code == self.values[j].size:
            return "nan"
        return f"{self.values[j][code]:.6g}"


def pattern_keys(codes: np.ndarray) -> np.ndarray:
    """One hashable key (bytes) per row of integer codes."""
    codes = np.ascontiguousarray(codes, dtype=np.int32)
    return codes.view(np.dtype((np.void, codes.dtype.itemsize * codes.shape[1]))).ravel()


@dataclass(frozen=True)
class PatternSet(Witness):
    """Outputs whose atom pattern is one of ``patterns`` (each a row of atom codes; -1 = any non-atom)."""

    atoms: ColumnAtoms
    patterns: np.ndarray  # (m, d) int32 codes
    _keys: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_keys", pattern_keys(self.patterns))

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        return np.isin(pattern_keys(self.atoms.codes(outputs)), self._keys)

    def describe(self, limit: int = 4) -> str:
        shown = []
        for row in self.patterns[:limit]:
            labels = [self.atoms.label(j, int(c)) for j, c in enumerate(row)]
            shown.append(labels[0] if len(labels) == 1 else "(" + ", ".join(labels) + ")")
        more = "" if len(self.patterns) <= limit else f", ... ({len(self.patterns)} outcomes)"
        return "output in {" + ", ".join(shown) + more + "}" + (" where ~ is any non-atom value" if (self.patterns < 0).any() else "")

    def to_dict(self) -> dict:
        return {"kind": "patterns", "atoms": self.atoms.to_dict(), "patterns": np.asarray(self.patterns).tolist()}

    def exact_outputs(self) -> np.ndarray | None:
        """The event's outputs as rows (shape (m, d)) when it is a finite set of exact atoms; None when a
        pattern admits any non-atom value."""
        if (self.patterns < 0).any():
            return None
        rows = np.empty(self.patterns.shape, dtype=np.float64)
        for j, atoms in enumerate(self.atoms.values):
            codes = self.patterns[:, j]
            padded = np.append(atoms, np.nan)  # code == len(atoms) is the NaN atom
            rows[:, j] = padded[codes]
        return rows


class Projection:
    """A real score of an output row."""

    def score(self, outputs: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def to_dict(self) -> dict:
        raise NotImplementedError


@dataclass(frozen=True)
class Column(Projection):
    """The value of one output coordinate (NaN scores fall in no region)."""

    index: int
    width: int

    def score(self, outputs: np.ndarray) -> np.ndarray:
        return outputs[:, self.index]

    def describe(self) -> str:
        return "y" if self.width == 1 else f"y[{self.index}]"

    def to_dict(self) -> dict:
        return {"kind": "column", "index": self.index, "width": self.width}


@dataclass(frozen=True)
class Linear(Projection):
    """A learned linear score over features: the coordinates (atoms and NaN set to 0) and indicators of
    each column's atoms; ``weights`` are frozen after fitting on the selection batch."""

    atoms: ColumnAtoms
    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    label: str = "logistic-regression score"

    @staticmethod
    def features(atoms: ColumnAtoms, outputs: np.ndarray) -> np.ndarray:
        codes = atoms.codes(outputs)
        values = np.where((codes >= 0) | np.isnan(outputs) | np.isinf(outputs), 0.0, outputs)
        parts = [values]
        for j, (column_atoms, nan_atom) in enumerate(zip(atoms.values, atoms.has_nan)):
            count = column_atoms.size + int(nan_atom)
            if count:
                parts.append((codes[:, j : j + 1] == np.arange(count)[None, :]).astype(np.float64))
        return np.hstack(parts)

    def score(self, outputs: np.ndarray) -> np.ndarray:
        # ((features - mean) / scale) @ weights, folded into one matrix product (no n x k temporaries)
        folded = self.weights / self.scale
        return self.features(self.atoms, outputs) @ folded - float(self.mean @ folded)

    def describe(self) -> str:
        return f"{self.label}(y)"

    def to_dict(self) -> dict:
        return {"kind": "linear", "atoms": self.atoms.to_dict(), "weights": _encode(self.weights),
                "mean": _encode(self.mean), "scale": _encode(self.scale), "label": self.label}


@dataclass(frozen=True)
class ScoreRegion(Witness):
    """low <= score(y) <= high (either end may be infinite: a half-line)."""

    projection: Projection
    low: float
    high: float

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        score = self.projection.score(outputs)
        return (score >= self.low) & (score <= self.high)

    def describe(self) -> str:
        name = self.projection.describe()
        if np.isinf(self.low):
            return f"{name} <= {self.high:.6g}"
        if np.isinf(self.high):
            return f"{name} >= {self.low:.6g}"
        return f"{self.low:.6g} <= {name} <= {self.high:.6g}"

    def to_dict(self) -> dict:
        return {"kind": "region", "projection": self.projection.to_dict(), "low": _encode([self.low])[0],
                "high": _encode([self.high])[0]}


@dataclass(frozen=True)
class Union(Witness):
    """The union of several events."""

    parts: tuple[Witness, ...]

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        result = np.zeros(outputs.shape[0], dtype=bool)
        for part in self.parts:
            result |= part.indicator(outputs)
        return result

    def describe(self) -> str:
        return " or ".join(part.describe() for part in self.parts)

    def to_dict(self) -> dict:
        return {"kind": "union", "parts": [part.to_dict() for part in self.parts]}


@dataclass(frozen=True)
class PooledPair(Witness):
    """Two events certified as one, in both directions at once: ``forward`` is likelier under d, ``backward``
    under d_prime; their counts are pooled over both inputs (``certify.pooled_epsilon_lower_bound``).

    It is not one set of outputs: it is counted part by part (``parts``), never through ``indicator``."""

    forward: Witness
    backward: Witness

    @property
    def parts(self) -> tuple[Witness, Witness]:
        """(forward, backward): the events counted under each input."""
        return self.forward, self.backward

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        raise TypeError("a pooled pair is counted part by part (its parts: forward, backward), not as one event")

    def describe(self) -> str:
        return (f"{self.forward.describe()} [d -> d_prime] pooled with {self.backward.describe()} [d_prime -> d]")

    def to_dict(self) -> dict:
        return {"kind": "pooled", "forward": self.forward.to_dict(), "backward": self.backward.to_dict()}


def _projection_from_dict(data: dict) -> Projection:
    if data["kind"] == "column":
        return Column(int(data["index"]), int(data["width"]))
    if data["kind"] == "linear":
        return Linear(ColumnAtoms.from_dict(data["atoms"]), _decode(data["weights"]), _decode(data["mean"]),
                      _decode(data["scale"]), str(data.get("label", "logistic-regression score")))
    return _structural_projection_from_dict(data)


def witness_from_dict(data: dict) -> Witness:
    """Rebuild a witness event from :meth:`Witness.to_dict` output.

    Example:
        >>> event = ScoreRegion(Column(0, 1), -np.inf, 0.5)
        >>> witness_from_dict(event.to_dict()).describe()
        'y <= 0.5'
    """
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind == "patterns":
        return PatternSet(ColumnAtoms.from_dict(data["atoms"]), np.asarray(data["patterns"], dtype=np.int32).reshape(len(data["patterns"]), -1))
    if kind == "region":
        return ScoreRegion(_projection_from_dict(data["projection"]), float(data["low"]), float(data["high"]))
    if kind == "union":
        return Union(tuple(witness_from_dict(part) for part in data["parts"]))
    if kind == "pooled":
        return PooledPair(witness_from_dict(data["forward"]), witness_from_dict(data["backward"]))
    if kind in ("derived_patterns", "intersection"):
        return _structural_witness_from_dict(data)
    raise ValueError(f"not a witness event description: {data!r}")


# ------------------------------------------------------------------------------------------------------
# Structural events: derived features of the output (float structure), products of events,
# memory-bounded learned scores. Each is a fixed function of the output, frozen at selection.

#: Codes of the ``special`` feature: the class of a float value.
SPECIAL_CODES = {"finite": 0.0, "+0": 1.0, "-0": 2.0, "nan": 3.0, "+inf": 4.0, "-inf": 5.0}
_RESIDUE_STEPS = 1 << 16


@dataclass(frozen=True)
class Derived(Projection):
    """A structural feature of one output coordinate y = outputs[:, index]:

    - ``special``: the class of y (finite nonzero, +0, -0, NaN, +inf, -inf; codes in SPECIAL_CODES);
    - ``residue``: (y / grid) mod 1, rounded to 2^-16 (a lattice offset: noise snapped to a grid and added
      to a value off the grid leaves the value's residue in every output, Mironov 2012);
    - ``exponent``: the binary exponent of y (``numpy.frexp``);
    - ``mantissa``: the ``bits`` lowest bits of y's float64 mantissa (Mironov 2012: the low-order bits of a
      textbook floating-point Laplace sample depend on the input).
    Non-finite y map to NaN for every kind except ``special``.
    """

    kind: str
    index: int
    width: int
    grid: float = 1.0
    bits: int = 8

    def score(self, outputs: np.ndarray) -> np.ndarray:
        y = np.asarray(outputs[:, self.index], dtype=np.float64)
        finite = np.isfinite(y)
        if self.kind == "special":
            out = np.zeros(y.shape)
            out[y == 0] = np.where(np.signbit(y[y == 0]), SPECIAL_CODES["-0"], SPECIAL_CODES["+0"])
            out[np.isnan(y)] = SPECIAL_CODES["nan"]
            out[y == np.inf] = SPECIAL_CODES["+inf"]
            out[y == -np.inf] = SPECIAL_CODES["-inf"]
            return out
        out = np.full(y.shape, np.nan)
        if self.kind == "residue":
            scaled = y[finite] / self.grid
            steps = np.round((scaled - np.floor(scaled)) * _RESIDUE_STEPS) % _RESIDUE_STEPS
            out[finite] = steps / _RESIDUE_STEPS
        elif self.kind == "exponent":
            out[finite] = np.frexp(y[finite])[1]
        elif self.kind == "mantissa":
            out[finite] = (np.ascontiguousarray(y[finite]).view(np.uint64) & np.uint64((1 << self.bits) - 1)).astype(np.float64)
        else:
            raise ValueError(f"unknown derived feature {self.kind!r}")
        return out

    def describe(self) -> str:
        name = "y" if self.width == 1 else f"y[{self.index}]"
        return {"special": f"class({name})", "residue": f"({name} / {self.grid:.6g}) mod 1",
                "exponent": f"exponent({name})", "mantissa": f"low{self.bits}bits({name})"}[self.kind]

    def to_dict(self) -> dict:
        return {"kind": "derived", "feature": self.kind, "index": self.index, "width": self.width,
                "grid": _encode([self.grid])[0], "bits": self.bits}


@dataclass(frozen=True)
class DerivedPatternSet(Witness):
    """Outputs whose derived feature value (``feature.score``) is one of the atoms in ``patterns`` (codes
    into ``atoms``, a one-column table of feature values)."""

    feature: Derived
    atoms: ColumnAtoms
    patterns: np.ndarray

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        return PatternSet(self.atoms, self.patterns).indicator(self.feature.score(outputs)[:, None])

    def describe(self, limit: int = 4) -> str:
        inner = PatternSet(self.atoms, self.patterns).describe(limit)
        return inner.replace("output in", f"{self.feature.describe()} in", 1)

    def to_dict(self) -> dict:
        return {"kind": "derived_patterns", "feature": self.feature.to_dict(), "atoms": self.atoms.to_dict(),
                "patterns": np.asarray(self.patterns).tolist()}


@dataclass(frozen=True)
class Intersection(Witness):
    """The intersection of several events (a product event: one condition per coordinate)."""

    parts: tuple[Witness, ...]

    def indicator(self, outputs: np.ndarray) -> np.ndarray:
        result = np.ones(outputs.shape[0], dtype=bool)
        for part in self.parts:
            result &= part.indicator(outputs)
        return result

    def describe(self) -> str:
        return " and ".join(part.describe() for part in self.parts)

    def to_dict(self) -> dict:
        return {"kind": "intersection", "parts": [part.to_dict() for part in self.parts]}


def atom_log_ratios(atoms: ColumnAtoms, codes_a: np.ndarray, codes_b: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per column, the shrunken log ratio ln((count_a + 1/2) / (count_b + 1/2)) of each atom code (NaN last)."""
    tables = []
    for j, (values, nan_atom) in enumerate(zip(atoms.values, atoms.has_nan)):
        count = values.size + int(nan_atom)
        in_a = np.bincount(codes_a[:, j][codes_a[:, j] >= 0], minlength=count)[:count]
        in_b = np.bincount(codes_b[:, j][codes_b[:, j] >= 0], minlength=count)[:count]
        scale = max(codes_b.shape[0], 1) / max(codes_a.shape[0], 1)
        tables.append(np.log((in_a * scale + 0.5) / (in_b + 0.5)))
    return tuple(tables)


@dataclass(frozen=True)
class EncodedLinear(Projection):
    """A learned linear score whose atom features are encoded densely, not one-hot: per column the value
    (0 for atoms, NaN and inf), the atom's log likelihood ratio looked up in ``ratios`` (fixed at
    selection; 0 for non-atoms) and an is-atom indicator. Memory is O(rows x columns), independent of the
    number of atoms (target encoding of categorical features, Micci-Barreca 2001)."""

    atoms: ColumnAtoms
    ratios: tuple[np.ndarray, ...]
    weights: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    label: str = "logistic-regression score (encoded atoms)"

    @staticmethod
    def features(atoms: ColumnAtoms, ratios: tuple[np.ndarray, ...], outputs: np.ndarray) -> np.ndarray:
        codes = atoms.codes(outputs)
        values = np.where((codes >= 0) | ~np.isfinite(outputs), 0.0, outputs)
        lookup = np.zeros(outputs.shape)
        for j, table in enumerate(ratios):
            hit = codes[:, j] >= 0
            if table.size:
                lookup[hit, j] = table[codes[hit, j]]
        return np.hstack([values, lookup, (codes >= 0).astype(np.float64)])

    def score(self, outputs: np.ndarray) -> np.ndarray:
        return ((self.features(self.atoms, self.ratios, outputs) - self.mean) / self.scale) @ self.weights

    def describe(self) -> str:
        return f"{self.label}(y)"

    def to_dict(self) -> dict:
        return {"kind": "encoded_linear", "atoms": self.atoms.to_dict(), "ratios": [_encode(r) for r in self.ratios],
                "weights": _encode(self.weights), "mean": _encode(self.mean), "scale": _encode(self.scale),
                "label": self.label}


@dataclass(frozen=True)
class TreeEnsemble(Projection):
    """A learned nonlinear score: the sum of regression trees (a gradient-boosted classifier's decision
    function, Friedman 2001), frozen as plain arrays so it is evaluated without the library that fit it.
    Per tree and node: ``feature``, ``threshold`` (go left when x <= threshold), ``missing_left`` (NaN goes
    left), ``left``/``right`` child indices (-1 at a leaf) and the leaf ``value``."""

    trees: tuple[dict, ...]
    baseline: float
    label: str = "gradient-boosting score"

    def score(self, outputs: np.ndarray) -> np.ndarray:
        x = np.asarray(outputs, dtype=np.float64)
        columns = [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]
        total = np.full(x.shape[0], self.baseline)
        for tree in self.trees:  # route row indices down each tree: work O(rows x depth) per tree
            left, right, feature = tree["left"], tree["right"], tree["feature"]
            threshold, missing_left, value = tree["threshold"], tree["missing_left"], tree["value"]
            stack = [(0, np.arange(x.shape[0]))]
            while stack:
                node, rows = stack.pop()
                if left[node] < 0:
                    total[rows] += value[node]
                    continue
                v = columns[int(feature[node])][rows]
                go_left = (v <= threshold[node]) | (np.isnan(v) & bool(missing_left[node]))
                stack.append((int(left[node]), rows[go_left]))
                stack.append((int(right[node]), rows[~go_left]))
        return total

    def describe(self) -> str:
        return f"{self.label}(y)"

    def to_dict(self) -> dict:
        trees = [{"feature": np.asarray(t["feature"]).tolist(), "threshold": _encode(t["threshold"]),
                  "missing_left": np.asarray(t["missing_left"], dtype=bool).tolist(), "left": np.asarray(t["left"]).tolist(),
                  "right": np.asarray(t["right"]).tolist(), "value": _encode(t["value"])} for t in self.trees]
        return {"kind": "trees", "trees": trees, "baseline": self.baseline, "label": self.label}


@dataclass(frozen=True)
class SignVote(Projection):
    """A weighted vote of coordinate signs: sum_j weights[j] * 1[y_j > centres[j]] (NaN votes 0). For
    independent heavy-tailed noise (Laplace) the log likelihood ratio of a small shift is close to such a
    vote, while a linear score is dominated by the tails; ``centres`` and ``weights`` are fixed on the
    build half of the selection batch."""

    centres: np.ndarray
    weights: np.ndarray
    label: str = "sign-vote score"

    def score(self, outputs: np.ndarray) -> np.ndarray:
        return (np.asarray(outputs[:, : self.centres.size]) > self.centres).astype(np.float64) @ self.weights

    def describe(self) -> str:
        return f"{self.label}(y)"

    def to_dict(self) -> dict:
        return {"kind": "sign_vote", "centres": _encode(self.centres), "weights": _encode(self.weights), "label": self.label}


@dataclass(frozen=True)
class ProductLikelihood(Projection):
    """A product-likelihood ("naive Bayes") score: sum_j tables[j][bin_j(y[columns[j]])], where bin_j(y) is
    the number of ``edges[j]`` <= y (0 .. len(edges[j])) and NaN takes the last entry of ``tables[j]``. For
    independent coordinates the log likelihood ratio of the output is the sum of the coordinates' log density
    ratios (the Neyman-Pearson statistic); ``tables`` hold per-bin estimates of them, fixed on the build half
    of the selection batch (``witness_search.family_learned.fit_product_likelihood``)."""

    columns: tuple[int, ...]
    edges: tuple[np.ndarray, ...]
    tables: tuple[np.ndarray, ...]
    label: str = "product-likelihood score"

    def score(self, outputs: np.ndarray) -> np.ndarray:
        total = np.zeros(outputs.shape[0])
        for j, edges, table in zip(self.columns, self.edges, self.tables):
            y = np.asarray(outputs[:, j], dtype=np.float64)
            code = np.searchsorted(edges, y, side="right")
            code[np.isnan(y)] = edges.size + 1
            total += table[code]
        return total

    def describe(self) -> str:
        return f"{self.label}(y)"

    def to_dict(self) -> dict:
        return {"kind": "product_likelihood", "columns": list(self.columns), "edges": [_encode(e) for e in self.edges],
                "tables": [_encode(t) for t in self.tables], "label": self.label}


def _structural_projection_from_dict(data: dict) -> Projection:
    kind = data["kind"]
    if kind == "product_likelihood":
        return ProductLikelihood(tuple(int(j) for j in data["columns"]), tuple(_decode(e) for e in data["edges"]),
                                 tuple(_decode(t) for t in data["tables"]), str(data.get("label", "product-likelihood score")))
    if kind == "sign_vote":
        return SignVote(_decode(data["centres"]), _decode(data["weights"]), str(data.get("label", "sign-vote score")))
    if kind == "derived":
        return Derived(str(data["feature"]), int(data["index"]), int(data["width"]), float(data["grid"]), int(data["bits"]))
    if kind == "encoded_linear":
        return EncodedLinear(ColumnAtoms.from_dict(data["atoms"]), tuple(_decode(r) for r in data["ratios"]),
                             _decode(data["weights"]), _decode(data["mean"]), _decode(data["scale"]), str(data["label"]))
    if kind == "trees":
        trees = tuple({"feature": np.asarray(t["feature"], dtype=np.int64), "threshold": _decode(t["threshold"]),
                       "missing_left": np.asarray(t["missing_left"], dtype=bool), "left": np.asarray(t["left"], dtype=np.int64),
                       "right": np.asarray(t["right"], dtype=np.int64), "value": _decode(t["value"])} for t in data["trees"])
        return TreeEnsemble(trees, float(data["baseline"]), str(data.get("label", "gradient-boosting score")))
    raise ValueError(f"unknown projection kind {kind!r}")


def _structural_witness_from_dict(data: dict) -> Witness:
    kind = data["kind"]
    if kind == "derived_patterns":
        patterns = np.asarray(data["patterns"], dtype=np.int32).reshape(len(data["patterns"]), -1)
        return DerivedPatternSet(_structural_projection_from_dict(data["feature"]), ColumnAtoms.from_dict(data["atoms"]), patterns)
    if kind == "intersection":
        return Intersection(tuple(witness_from_dict(part) for part in data["parts"]))
    raise ValueError(f"not a witness event description: {data!r}")


__all__ += ["Derived", "DerivedPatternSet", "Intersection", "EncodedLinear", "TreeEnsemble", "SignVote", "ProductLikelihood",
            "atom_log_ratios", "SPECIAL_CODES"]
