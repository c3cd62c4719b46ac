"""The safe event-string parser: round trips of every event's repr, and errors that point at the column."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.errors import InvalidArgument, InvalidArgumentType
from dpaudit.events import (
    ApproxDP,
    BoundedRange,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    MixtureOfGaussians,
    PoissonSampled,
    PureDP,
    RandomizedResponse,
    RepeatAndSelect,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    TruncatedSubsampledGaussian,
    ZCDP,
)
from dpaudit.events_parser import EventParseError, parse_event

_positive = st.floats(0.01, 100.0)
_leaves = st.one_of(
    st.builds(Gaussian, _positive), st.builds(Laplace, _positive), st.builds(PureDP, st.floats(0.0, 5.0)),
    st.builds(RandomizedResponse, st.floats(0.0, 5.0), st.integers(2, 10)),
    st.builds(DiscreteGaussian, _positive, st.integers(1, 5)), st.builds(DiscreteLaplace, _positive, st.integers(1, 5)),
    st.builds(ZCDP, _positive), st.builds(ApproxDP, st.floats(0.0, 5.0), st.floats(0.0, 0.5)),
    st.builds(BoundedRange, st.floats(0.0, 5.0)), st.builds(TreeAggregation, _positive, st.integers(1, 10**6)))
_trees = st.recursive(_leaves, lambda inner: st.one_of(
    st.builds(SelfComposed, inner, st.integers(1, 10**6)),
    st.builds(PoissonSampled, st.floats(0.001, 1.0), inner),
    st.builds(lambda e, m: SampledWithoutReplacement(1000, m, e), inner, st.integers(1, 1000)),
    st.lists(inner, min_size=1, max_size=4).map(Composed)), max_leaves=12)


@given(_trees)
def test_every_tree_round_trips_through_its_repr(tree):
    assert parse_event(repr(tree)) == tree


@pytest.mark.parametrize("text, expected", [
    ("SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)", SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)),
    ("Composed([Gaussian(2), PureDP(epsilon=0.5)])", Composed([Gaussian(2.0), PureDP(0.5)])),
    ("Composed(Gaussian(2), PureDP(0.5))", Composed([Gaussian(2.0), PureDP(0.5)])),
    ("  TreeAggregation(noise_multiplier=1.0, steps=1_000)  ", TreeAggregation(1.0, 1000)),
    ("ApproxDP(1, 1e-6)", ApproxDP(1.0, 1e-6)),
    ("MixtureOfGaussians(1.0, [0, 1.5], (0.9, 0.1))", MixtureOfGaussians(1.0, [0.0, 1.5], [0.9, 0.1])),
    ("RepeatAndSelect(Gaussian(2.0), mean=5, shape=inf)", RepeatAndSelect(Gaussian(2.0), 5.0)),
    ("RepeatAndSelect(Gaussian(2.0), 5, 1)", RepeatAndSelect(Gaussian(2.0), 5.0, 1.0)),
    ("TruncatedSubsampledGaussian(1000, 0.1, 120, 1.0)", TruncatedSubsampledGaussian(1000, 0.1, 120, 1.0)),
])
def test_positional_keyword_and_list_forms(text, expected):
    assert parse_event(text) == expected


@pytest.mark.parametrize("text, column, fragment", [
    ("Gausian(1.0)", 1, "unknown event 'Gausian'"),
    ("SelfComposed(Gaussian(-1.0), 10)", 14, "noise_multiplier=-1.0 must be > 0"),
    ("SelfComposed(Gaussian(1.0), 0)", 1, "count=0"),
    ("Gaussian(__import__('os').system('true'))", 10, "expected an event name"),
    ("Gaussian(x)", 10, "the name 'x'"),
    ("Gaussian('1.0')", 10, "str '1.0'"),
    ("Gaussian(True)", 10, "bool True"),
    ("Gaussian(1.0) + PureDP(1.0)", 1, "type BinOp"),
    ("Gaussian(1.0", 9, "never closed"),
    ("PoissonSampled(0.5, [Gaussian(1.0)])", 1, "must be a PrivacyEvent"),
    ("ZCDP(rho=0)", 1, "rho=0 must be > 0"),
    ("TreeAggregation(1.0, 0)", 1, "steps=0"),
    ("MixtureOfGaussians(1.0, [1.0, Gaussian(1.0)], [1.0])", 26, "expected an event"),
    ("MixtureOfGaussians(1.0, [1.0], [0.5])", 1, "sum to 1"),
    ("RepeatAndSelect(Gaussian(1.0), mean=-inf)", 1, "mean=-inf"),
    ("Gaussian(inf)", 1, "must be finite"),
    ("DiscreteGaussian(float('nan'))", 18, "unknown event 'float'"),
    ("Gaussian(noise_multiplier=1.0, noise_multiplier=2.0)", 49, "given twice"),
    ("Gaussian(1e999)", 1, "must be finite"),
    ("", 1, "empty"),
    ("Gaussian(1.0)\nPureDP(1.0)", None, "one line"),
])
def test_errors_point_at_the_column(text, column, fragment):
    with pytest.raises(EventParseError) as info:
        parse_event(text)
    assert isinstance(info.value, InvalidArgument)
    if column is not None:
        assert info.value.column == column and f"column {column}" in str(info.value)
    assert fragment in str(info.value)


def test_never_evaluates_and_bounds_its_input():
    with pytest.raises(InvalidArgumentType):
        parse_event(42)  # type: ignore[arg-type]
    with pytest.raises(EventParseError, match="at most"):
        parse_event("Gaussian(1.0)" + " " * 200_000)
    with pytest.raises(EventParseError, match="nested"):
        parse_event("Composed(" * 400 + "PureDP(1)" + ")" * 400)
    with pytest.raises(EventParseError):
        parse_event("(lambda: 1)()")
    with pytest.raises(EventParseError):
        parse_event("[Gaussian(1.0)][0]")
