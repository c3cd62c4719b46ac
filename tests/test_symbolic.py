"""The sympy closed forms are the reference: the float path agrees with them."""

from __future__ import annotations

import functools
import math

import mpmath as mp
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dpaudit.accountant import advanced, amplify, basic, optimal_delta, symbolic
from dpaudit.symbolic import SYMBOLS, THEOREMS

eps = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
small_eps = st.floats(min_value=1e-6, max_value=1.0)
ks = st.integers(min_value=1, max_value=10_000)
slacks = st.floats(min_value=1e-30, max_value=0.5)
qs = st.floats(min_value=1e-6, max_value=1.0)


def _exact(theorem: str, **values) -> mp.mpf:
    """Evaluate the sympy expression in 400-digit mpmath arithmetic at the exact float inputs."""
    names = sorted(values)
    function = sp.lambdify([SYMBOLS[n] for n in names], symbolic(theorem), modules="mpmath")
    with mp.workdps(400):  # enough for e^eps - 1 at eps ~ 1e-300
        return +function(*(mp.mpf(values[n]) for n in names))


def test_symbols_are_plain_and_named_as_in_the_contract():
    assert symbolic("basic").free_symbols == {sp.Symbol("epsilon"), sp.Symbol("k")}
    assert symbolic("advanced").free_symbols == {sp.Symbol("epsilon"), sp.Symbol("k"), sp.Symbol("delta")}
    assert symbolic("amplify").free_symbols == {sp.Symbol("epsilon"), sp.Symbol("q")}
    for theorem in THEOREMS:
        assert isinstance(symbolic(theorem), sp.Expr)


@given(eps, ks)
def test_basic(epsilon, k):
    got = basic([epsilon] * min(k, 50)).epsilon
    assert mp.mpf(got) >= _exact("basic", epsilon=epsilon, k=min(k, 50))
    assert got == pytest.approx(float(_exact("basic", epsilon=epsilon, k=min(k, 50))), rel=1e-15)


@given(eps, ks, slacks)
def test_advanced(epsilon, k, slack):
    exact = _exact("advanced", epsilon=epsilon, k=k, delta=slack)
    got = advanced(epsilon, k, slack).epsilon
    assert mp.mpf(got) >= exact
    assert got == pytest.approx(float(exact), rel=1e-13, abs=1e-300)


@given(eps, qs)
def test_amplify(epsilon, q):
    exact = _exact("amplify", epsilon=epsilon, q=q)
    got = amplify(epsilon, 0.0, q).epsilon
    assert mp.mpf(got) >= exact
    assert got == pytest.approx(float(exact), rel=1e-13, abs=1e-300)


@functools.lru_cache(maxsize=None)
def _optimal_delta_function(k: int):
    expression = symbolic("optimal_delta").subs(SYMBOLS["k"], k).doit()
    return sp.lambdify([SYMBOLS["epsilon"], SYMBOLS["epsilon_total"]], expression, modules="mpmath")


# A few k (each k compiles its own symbolic sum) spread over 1..30.
@given(small_eps, st.sampled_from([1, 2, 3, 5, 8, 13, 21, 30]), st.floats(0.0, 20.0))
def test_optimal_delta_matches_the_symbolic_sum(epsilon, k, epsilon_total):
    function = _optimal_delta_function(k)
    with mp.workdps(80):
        exact = +function(mp.mpf(epsilon), mp.mpf(epsilon_total))
    got = optimal_delta(epsilon, k, epsilon_total)
    assert mp.mpf(got) >= exact
    # An upper bound whose float-error pad grows when delta is a near-cancelling difference (tiny epsilon).
    assert got == pytest.approx(float(exact), rel=1e-6, abs=1e-300)


def test_lecture_per_step_simplification_is_the_expression():
    value = float(symbolic("advanced_per_step_simplified").subs({"epsilon": 1, "k": 1000, "delta": sp.Rational(1, 10**5)}))
    assert value == pytest.approx(1 / math.sqrt(8000 * math.log(1e5)), rel=1e-14)
