"""Advanced composition and the lecture's per-step budget.

Lecture: net-mechanism-and-advanced-composition, Theorem 2 and the derivation after it; sparse-vector
lecture, Corollary 6.

Statements proven here:

- Theorem 2: k-fold adaptive composition of epsilon'-DP mechanisms is (epsilon, delta')-DP for
  epsilon = sqrt(2k ln(1/delta')) epsilon' + k epsilon' (e^epsilon' - 1). Checked (a) symbolically
  against the code's expression and (b) exactly on small compositions: the exact optimal delta of
  k-fold randomized response (the worst case, Kairouz-Oh-Viswanath) at that epsilon is <= delta'.
- The relaxation epsilon'(e^epsilon' - 1) <= 2 epsilon'^2 for 0 <= epsilon' <= 1 (concavity plus exact
  endpoint values), and its exact range [0, x*], x* = -1/2 - W_{-1}(-e^{-1/2}/2) ~ 1.2564.
- The per-step choice epsilon' = epsilon / sqrt(8k ln(1/delta')) solves the first half of the split,
  sqrt(epsilon/(4k)) the second; the first is binding iff epsilon <= 2 ln(1/delta') (so "for
  epsilon <= 1" needs delta' <= e^{-1/2}); and the budget meets Theorem 2 exactly when
  e^{epsilon'} - 1 <= sqrt(2 ln(1/delta') / k).
- Corollary 6 (sparse-vector lecture) holds under that condition and is false without a hypothesis on
  epsilon' (exact counterexample).

Code checked: dpaudit.symbolic:symbolic("advanced" | "advanced_simplified" |
"advanced_per_step_simplified" | "basic" | "optimal_delta"); dpaudit.accountant.closed_form:advanced;
dpaudit.accountant.per_step:per_step_epsilon(theorem="advanced_simplified") and its
_simplified_per_step; dpaudit.accountant.optimal:optimal_delta.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
import sympy as sp
from mpmath import iv

from dpaudit.accountant import advanced, optimal_delta, per_step_epsilon
from dpaudit.accountant.per_step import _simplified_per_step, simplified_per_step_limit
from dpaudit.symbolic import SYMBOLS, symbolic

from ._kit import ExpSum, Q, _workdps, exact_float, iv_eval, rel_close, sign

EPS, K, DELTA, EPS_TOTAL = SYMBOLS["epsilon"], SYMBOLS["k"], SYMBOLS["delta"], SYMBOLS["epsilon_total"]
# Positive twins of the code's plain symbols, for simplifications that need signs.
e, k, d = sp.symbols("e k d", positive=True)
POSITIVE = {EPS: e, K: k, DELTA: d}
L = sp.log(1 / d)  # ln(1/delta') > 0 for delta' < 1


def code(theorem: str) -> sp.Expr:
    """The code's closed form, with positive symbols."""
    return symbolic(theorem).xreplace(POSITIVE)


def theorem2_branch(form: sp.Expr) -> sp.Expr:
    """Theorem 2's own expression inside the code's advanced form Min(k epsilon, Theorem 2)."""
    if not isinstance(form, sp.Min):
        return form
    return max(form.args, key=sp.count_ops)


def optimal_delta_exact(epsilon0, steps: int, epsilon_total, dps: int = 40):
    """Interval enclosure of the code's symbolic("optimal_delta") at the given exact values, summing its
    summand term by term (the Sum is finite)."""
    expression = symbolic("optimal_delta")
    total_sum = next(iter(expression.atoms(sp.Sum)))
    index = total_sum.limits[0][0]
    placeholder = sp.Symbol("SUM")
    values = {EPS: epsilon0, K: sp.Integer(steps), EPS_TOTAL: epsilon_total}
    term = total_sum.function.subs(values)
    with _workdps(dps):
        acc = iv.mpf(0)
        for j in range(steps + 1):
            acc += iv_eval(term, {index: iv.mpf(j)})
        return iv_eval(expression.xreplace({total_sum: placeholder}).subs(values), {placeholder: acc})


# ------------------------------------------------------------------------------------------ Theorem 2
def test_theorem2_code_is_the_lecture_formula():
    """The code's closed form is the lecture's Theorem 2, capped by basic composition (k epsilon), which
    holds for the same k steps at the same total delta: the smaller of two sound bounds is sound."""
    lecture = sp.sqrt(2 * k * sp.log(1 / d)) * e + k * e * (sp.exp(e) - 1)
    form = code("advanced")
    assert isinstance(form, sp.Min) and len(form.args) == 2
    assert sp.simplify(theorem2_branch(form) - lecture) == 0
    assert sp.simplify(min(form.args, key=sp.count_ops) - k * e) == 0


def test_theorem2_float_accountant_matches_the_closed_form():
    """advanced() is an upper bound on the exact closed form, within a few ulps, on a grid."""
    for eps0, steps, slack in itertools.product([0.0, 1e-6, 0.01, 0.25, 1.0, 3.0], [1, 2, 10, 1000, 10**6],
                                                [0.5, 1e-3, 1e-12]):
        exact = symbolic("advanced").subs({EPS: exact_float(eps0), K: steps, DELTA: exact_float(slack)})
        got = advanced(eps0, steps, slack).epsilon
        assert sign(exact_float(got) - exact) >= 0, (eps0, steps, slack)
        if eps0 > 0:
            assert rel_close(got, exact, 1e-14), (eps0, steps, slack)


@pytest.mark.parametrize("steps", [1, 2, 3, 5, 8, 20])
def test_theorem2_holds_exactly_on_small_compositions(steps):
    """The exact delta of the k-fold composition at Theorem 2's epsilon is <= delta'.

    k-fold randomized response with parameter epsilon' is the worst k-fold composition of
    epsilon'-DP mechanisms (Kairouz-Oh-Viswanath 2015), and the code's optimal_delta is its exact
    delta (checked against an enumeration in the next test), so this is Theorem 2 on these instances.
    """
    for eps0, slack in itertools.product([Q("1/20"), Q("1/4"), Q("1/2"), Q(1)], [Q("1/2"), Q("1/20"), Q("1e-6")]):
        epsilon = symbolic("advanced").subs({EPS: eps0, K: steps, DELTA: slack})
        exact = optimal_delta_exact(eps0, steps, epsilon)
        assert exact.b <= iv_eval(slack).a, (steps, eps0, slack, exact)


def _enumerated_delta(eps0: Fraction, steps: int, total: Fraction) -> ExpSum:
    """(1 + e^eps0)^k times the hockey-stick divergence of k-fold randomized response, by enumerating
    all 2^k output sequences: P(s) (1 + e^eps0)^k = e^{eps0 #ones(s)}, P'(s) (1 + e^eps0)^k = e^{eps0 #zeros(s)}."""
    acc = ExpSum()
    for outcome in itertools.product((0, 1), repeat=steps):
        ones = sum(outcome)
        diff = ExpSum.exp(eps0 * ones) - ExpSum.exp(total + eps0 * (steps - ones))
        if diff.sign() > 0:
            acc = acc + diff
    return acc


def test_optimal_delta_expression_is_the_exact_randomized_response_delta():
    for steps, eps0, total in itertools.product([1, 2, 3, 4, 5], [Fraction(1, 3), Fraction(1)],
                                                [Fraction(0), Fraction(1, 2), Fraction(1), Fraction(2)]):
        enumerated = _enumerated_delta(eps0, steps, total)
        with _workdps(40):
            reference = enumerated.enclosure(40) / iv_eval((1 + sp.exp(Q(eps0))) ** steps)
        expression = optimal_delta_exact(Q(eps0), steps, Q(total))
        assert abs(expression - reference).b < 1e-30, (steps, eps0, total)
        # The float accountant is an upper bound on it and close to it.
        got = optimal_delta(float(eps0), steps, float(total))
        assert got >= expression.a and got <= expression.b * (1 + 1e-12) + 1e-300, (steps, eps0, total, got)


def test_theorem2_needs_a_positive_delta():
    """The lecture states Theorem 2 as (epsilon, delta)-DP for any delta >= 0 while its formula uses
    delta'. The guarantee is (epsilon, delta') with delta' > 0: here the composition is *not*
    (epsilon, 0)-DP at Theorem 2's epsilon (its exact delta there is > 0)."""
    steps, eps0, slack = 100, Q("1/10"), Q("1/10")
    epsilon = symbolic("advanced").subs({EPS: eps0, K: steps, DELTA: slack})
    assert sign(steps * eps0 - epsilon) > 0  # Theorem 2 beats basic composition here
    exact = optimal_delta_exact(eps0, steps, epsilon)
    assert exact.a > 0 and exact.b <= iv_eval(slack).a


# -------------------------------------------------------------------------------- the relaxation step
def test_relaxation_step_on_the_unit_interval():
    """e'(e^e' - 1) <= 2 e'^2 on [0, 1], i.e. g(x) = 2x - (e^x - 1) >= 0 there: g'' = -e^x < 0 (g is
    concave), g(0) = 0 and g(1) = 3 - e > 0, so g >= min(g(0), g(1)) = 0 on [0, 1]."""
    x = sp.Symbol("x", real=True)
    g = 2 * x - (sp.exp(x) - 1)
    assert sp.diff(g, x, 2).is_negative  # sympy proves the sign for every real x
    assert g.subs(x, 0) == 0
    assert sign(g.subs(x, 1)) > 0
    # The code's relaxed expression exceeds the exact one by exactly k e' g(e').
    difference = code("advanced_simplified") - theorem2_branch(code("advanced"))
    assert sp.simplify(difference - k * e * g.subs(x, e)) == 0


def test_relaxation_step_exact_range():
    """g has exactly one positive root x* = -1/2 - W_{-1}(-e^{-1/2}/2) ~ 1.2564 (concave, g(0) = 0):
    the relaxation holds on [0, x*] and fails beyond, so "epsilon' <= 1" is sufficient, not sharp."""
    x = sp.Symbol("x", real=True)
    g = 2 * x - (sp.exp(x) - 1)
    roots = sp.solve(sp.Eq(sp.exp(x), 1 + 2 * x), x)
    positive = [r for r in roots if sp.N(r) > 0]
    assert len(positive) == 1
    root = positive[0]
    assert sp.simplify(g.subs(x, root)) == 0 or abs(sp.N(g.subs(x, root), 50)) < 1e-45
    # g(1.2564) > 0 > g(1.2565) exactly, and a concave g with g(0) = 0 has one positive root: x* lies
    # in between (so beyond 1), and the closed form evaluates there.
    assert sign(g.subs(x, Q("1.2564"))) > 0 and sign(g.subs(x, Q("1.2565"))) < 0
    assert Q("1.2564") < sp.N(root, 30) < Q("1.2565")


# ----------------------------------------------------------------------------------- per-step budget
def test_per_step_choice_solves_the_split():
    """epsilon/2 = sqrt(2k ln(1/d)) e' gives the code's per-step budget; epsilon/2 = 2k e'^2 gives
    sqrt(epsilon/(4k)); the pure-DP budget solves k e' = epsilon (basic composition)."""
    step = sp.Symbol("s", positive=True)
    (first,) = sp.solve(sp.Eq(e / 2, sp.sqrt(2 * k * L) * step), step)
    assert sp.simplify(first - code("advanced_per_step_simplified")) == 0
    (second,) = sp.solve(sp.Eq(e / 2, 2 * k * step**2), step)
    assert sp.simplify(second - sp.sqrt(e / (4 * k))) == 0
    (pure,) = sp.solve(sp.Eq(code("basic").subs(e, step), e), step)
    assert sp.simplify(pure - e / k) == 0


def test_first_constraint_binding_iff_epsilon_at_most_two_ln_inverse_delta():
    """(first / second)^2 = epsilon / (2 ln(1/delta')): the first constraint is the smaller (binding)
    one iff epsilon <= 2 ln(1/delta'). "For epsilon <= 1 it is always binding" therefore needs
    2 ln(1/delta') >= 1, i.e. delta' <= e^{-1/2} ~ 0.607; with delta' = 9/10 and epsilon = 1 it is not."""
    first = code("advanced_per_step_simplified")
    second = sp.sqrt(e / (4 * k))
    assert sp.simplify((first / second) ** 2 - e / (2 * L)) == 0
    # The whole family "epsilon <= 1" is covered iff 2 ln(1/delta') >= 1.
    (threshold,) = sp.solve(sp.Eq(2 * L, 1), d)
    assert sp.simplify(threshold - sp.exp(-sp.Rational(1, 2))) == 0
    counter = {e: 1, k: 1, d: Q("9/10")}
    assert sign(first.subs(counter) - second.subs(counter)) > 0  # the first is not binding


def test_per_step_budget_meets_theorem2_iff_exact_condition():
    """With e' = epsilon/sqrt(8k L): Theorem 2 gives epsilon/2 + k e'(e^e' - 1), which is <= epsilon iff
    e^e' - 1 <= sqrt(2L/k). The lecture's route (relaxation, needs e' <= 1) gives epsilon/2 +
    epsilon^2/(4L) <= epsilon iff epsilon <= 2L."""
    step = code("advanced_per_step_simplified")
    assert sp.simplify(sp.sqrt(2 * k * L) * step - e / 2) == 0
    assert sp.simplify(e / (2 * k * step) - sp.sqrt(2 * L / k)) == 0
    relaxed = code("advanced_simplified").subs(e, step)
    assert sp.simplify(relaxed - (e / 2 + e**2 / (4 * L))) == 0


def test_epsilon_at_most_two_ln_inverse_delta_is_not_enough_for_small_k():
    """epsilon <= 2 ln(1/delta') bounds the relaxed expression but does not make e' <= 1: for k = 1,
    delta' = 1e-5, epsilon = 23 (< 2 ln 1e5 ~ 23.03) the budget e' ~ 2.4 composes under Theorem 2 to
    ~ 35 > 23. The code does not return such a budget: it refuses (a ValueError naming target_epsilon)."""
    values = {e: 23, k: 1, d: Q("1e-5")}
    assert sign(2 * L.subs(values) - 23) > 0
    step = code("advanced_per_step_simplified").subs(values)
    assert sign(step - 1) > 0
    composed = theorem2_branch(symbolic("advanced")).subs({EPS: step, K: 1, DELTA: Q("1e-5")})
    assert sign(composed - 23) > 0
    with pytest.raises(ValueError, match="target_epsilon"):
        per_step_epsilon(23.0, 1e-5, 1, "advanced_simplified")


def test_when_two_ln_inverse_delta_suffices():
    """With u = sqrt(2L/k): sqrt(8kL) = 2ku, so the exact condition reads epsilon <= 2ku ln(1 + u) and the
    code's condition epsilon <= 2L reads epsilon <= k u^2. The second implies the first iff
    phi(u) = 2 ln(1 + u) - u >= 0; phi is concave (phi'' = -2/(1+u)^2), phi(0) = 0, phi'(0) = 1, so this
    holds exactly for u <= u* with phi(u*) = 0, u* in (2.5128, 2.5129): i.e. for
    ln(1/delta') <= k u*^2 / 2 ~ 3.157 k. Smaller delta' with few steps (k = 1, delta' = 1e-5) is outside."""
    u = sp.Symbol("u", positive=True)
    values = {d: sp.exp(-k * u**2 / 2)}  # then L = k u^2 / 2
    assert sp.simplify(L.subs(values) - k * u**2 / 2) == 0
    assert sp.simplify(sp.sqrt(8 * k * L.subs(values)) - 2 * k * u) == 0
    phi = 2 * sp.log(1 + u) - u
    assert sp.diff(phi, u, 2).is_negative and phi.subs(u, 0) == 0 and sp.diff(phi, u).subs(u, 0) == 1
    assert sign(phi.subs(u, Q("2.5128"))) > 0 > sign(phi.subs(u, Q("2.5129")))
    outside = sp.sqrt(2 * sp.log(Q("1e5")))  # k = 1, delta' = 1e-5
    assert sign(phi.subs(u, outside)) < 0


def test_code_per_step_budget_is_sound_and_equals_the_formula():
    """On a grid: per_step_epsilon(..., "advanced_simplified") returns exactly when Theorem 2's exact
    condition e^e' - 1 <= sqrt(2L/k) holds (simplified_per_step_limit is that condition solved for
    epsilon), and then a value <= epsilon/sqrt(8k ln(1/delta')) within 1e-15 whose exact Theorem-2
    composition is <= epsilon; otherwise it refuses with a ValueError naming target_epsilon."""
    returned = refused = 0
    for target, slack, steps in itertools.product([0.01, 0.5, 1.0, 2.0, 5.0, 20.0], [0.5, 0.1, 1e-5, 1e-12],
                                                  [1, 2, 5, 50, 10**4]):
        values = {e: exact_float(target), k: steps, d: exact_float(slack)}
        formula = code("advanced_per_step_simplified").subs(values)
        exact_condition = sp.exp(formula) - 1 - sp.sqrt(2 * L.subs(values) / steps)
        limit = sp.sqrt(8 * k * L).subs(values) * sp.log(1 + sp.sqrt(2 * L / k).subs(values))
        assert rel_close(simplified_per_step_limit(slack, steps), limit, 1e-13)
        try:
            got = per_step_epsilon(target, slack, steps, "advanced_simplified")
        except ValueError as error:
            refused += 1
            assert sign(exact_condition) > 0 and "target_epsilon" in str(error), (target, slack, steps, error)
            continue
        returned += 1
        assert sign(exact_condition) <= 0, (target, slack, steps)
        assert sign(exact_float(got) - formula) <= 0 and rel_close(got, formula, 1e-15)
        composed = symbolic("advanced").subs({EPS: exact_float(got), K: steps, DELTA: exact_float(slack)})
        assert sign(composed - exact_float(target)) <= 0, (target, slack, steps)
        assert _simplified_per_step(target, slack, steps) == got
    assert returned > 50 and refused > 5


# ------------------------------------------------------------------------- Corollary 6 (sparse vector)
def test_corollary6_holds_under_the_exact_condition():
    """Corollary 6: k-fold composition of (epsilon'/sqrt(8k ln(1/delta')))-DP mechanisms is
    (epsilon', delta')-DP. Via Theorem 2 this holds exactly under the condition proven above. In
    particular for epsilon' <= 1 and delta' <= e^{-1/2} (L >= 1/2): the per-step e' = epsilon'/sqrt(8kL)
    increases in epsilon' and decreases in k and L, so e' <= 1/sqrt(8 * 1 * 1/2) = 1/2 <= 1 (the
    relaxation applies) and epsilon' <= 1 <= 2L, so epsilon'/2 + epsilon'^2/(4L) <= epsilon'."""
    ell = sp.Symbol("L", positive=True)
    step = e / sp.sqrt(8 * k * ell)
    assert sp.simplify(code("advanced_per_step_simplified") - step.subs(ell, L)) == 0
    assert sp.diff(step, e).is_positive and sp.diff(step, k).is_negative and sp.diff(step, ell).is_negative
    assert step.subs({e: 1, k: 1, ell: sp.Rational(1, 2)}) == sp.Rational(1, 2)
    relaxed_excess = e / 2 + e**2 / (4 * ell) - e  # = e (e - 2L) / (4L) <= 0 iff e <= 2L
    assert sp.simplify(relaxed_excess - e * (e - 2 * ell) / (4 * ell)) == 0
    # The corner epsilon' = 1, k = 1, delta' = e^{-1/2} through the code's exact Theorem 2 expression:
    corner = code("advanced_per_step_simplified").subs({k: 1, d: sp.exp(-sp.Rational(1, 2)), e: 1})
    composed = symbolic("advanced").subs({EPS: corner, K: 1, DELTA: sp.exp(-sp.Rational(1, 2))})
    assert sign(composed - 1) <= 0


def test_corollary6_is_false_without_a_hypothesis_on_epsilon():
    """Exact counterexample: k = 10, epsilon' = 15, delta' = 1/2. The per-step epsilon is
    15/sqrt(80 ln 2) ~ 2.01, and the exact delta of the 10-fold composition at 15 exceeds 1/2 (~0.540).
    Dwork & Roth's Corollary 3.21 assumes 0 < epsilon' < 1; the lecture dropped it."""
    steps, target, slack = 10, Q(15), Q("1/2")
    step = code("advanced_per_step_simplified").subs({e: target, k: steps, d: slack})
    exact = optimal_delta_exact(step, steps, target)
    assert exact.a > iv_eval(slack).b
    assert exact.a > 0.539
