"""SparseVector: budget arithmetic (Theorem 5) and accuracy (Theorem 10), with the lecture's errata.

Lecture: sparse-vector, Algorithm 2, Theorem 5 (privacy, delta = 0 and delta > 0 via Corollary 6),
Theorem 7 (ANT accuracy), Theorem 8 (Laplace accuracy), Theorem 10 (SparseVector accuracy).

Statements proven here:

- delta = 0: sigma(eps) = 2c/eps; sigma(eps_1) = 2/eps_ANT and 2 sigma(eps_1) = 4/eps_ANT with
  eps_ANT = 8 eps/(9c); sigma(eps_2) = 1/eps_L with eps_L = eps/(9c); c eps_ANT + c eps_L = 8/9 eps +
  1/9 eps = eps (basic composition). eps_1 + eps_2 = 10/9 eps: the names suggest a split of eps, but
  the answers' budget is eps_2/2 (erratum, harmless).
- delta > 0: sigma(eps) = sqrt(32 c ln(2/delta))/eps; eps_ANT and eps_L are exactly the code's
  advanced-composition per-step budget at (8 eps/9, c, delta/2) and (eps/9, c, delta/2), so Corollary 6
  gives (8 eps/9, delta/2) and (eps/9, delta/2), and basic composition (eps, delta). Corollary 6 needs a
  hypothesis (see proof_advanced_composition); the code admits exactly the parameters for which
  Theorem 2 certifies both parts.
- Theorem 10: alpha_1 is Theorem 7 at beta_ANT = beta/(2c), eps_ANT; alpha_2 = sigma(eps_2) ln(2c/beta)
  makes P[|Lap(sigma(eps_2))| >= alpha_2] = beta/(2c) exactly; alpha_1 - alpha_2 = 9F(ln k + ln 2)/eps
  >= 0; the union bound over the 2c events gives beta. Exact small case (c = 1): the supremum of the
  failure probability is <= beta at the code's alpha.
- Errata demonstrated: the lecture's alpha_2 for delta = 0 (9c log(2c/beta), no 1/eps) has tail
  (beta/(2c))^eps and for delta > 0 (times eps instead of divided) has tail (beta/(2c))^{eps^2}, both
  > beta/(2c) for eps < 1; with them "alpha_1 >= alpha_2 for any delta" is false; and the claimed
  strict "Pr[|f_i(x) - a_i| >= alpha_2] < beta/2c" holds with equality.

Code checked: dpaudit.mechanisms.theorems:sparse_vector_sigma, sparse_vector_threshold_alpha,
sparse_vector_answer_alpha, sparse_vector_alpha, above_threshold_alpha;
dpaudit.mechanisms.sparse_vector:SparseVector (epsilon_1, epsilon_2, scales, event, delta > 0
admission); dpaudit.symbolic:symbolic("advanced_per_step_simplified", "advanced").
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import sympy as sp

from dpaudit.events import Composed, Laplace, PureDP, SelfComposed
from dpaudit.mechanisms import SparseVector
from dpaudit.mechanisms.theorems import (above_threshold_alpha, sparse_vector_alpha, sparse_vector_answer_alpha,
                                         sparse_vector_sigma, sparse_vector_threshold_alpha)
from dpaudit.symbolic import SYMBOLS, symbolic

from ._kit import ExpSum, exact_float, rel_close, sign
from .proof_above_threshold import _sup_failure

eps, c, delta, beta, k = sp.symbols("epsilon c delta beta k", positive=True)
EPS1, EPS2 = sp.Rational(8, 9) * eps, sp.Rational(2, 9) * eps
F0 = c  # the per-run divisor for delta = 0
F1 = sp.sqrt(8 * c * sp.log(2 / delta))  # ... and for delta > 0


def sigma(budget: sp.Expr, approximate: bool) -> sp.Expr:
    """sigma(.) of Algorithm 2."""
    return sp.sqrt(32 * c * sp.log(2 / delta)) / budget if approximate else 2 * c / budget


def per_step(total: sp.Expr) -> sp.Expr:
    """The code's advanced-composition per-step budget for c steps at (total, delta/2)."""
    return symbolic("advanced_per_step_simplified").subs(
        {SYMBOLS["epsilon"]: total, SYMBOLS["k"]: c, SYMBOLS["delta"]: delta / 2})


POINTS = list(itertools.product([0.1, 1.0, 4.0], [1, 3, 20], [0.0, 1e-6, 0.05]))


def test_code_sigma_is_algorithm2():
    for epsilon, cutoff, slack in POINTS:
        values = {eps: exact_float(epsilon), c: cutoff, delta: exact_float(slack) if slack else 1}
        exact = sigma(eps, slack > 0).subs(values)
        assert rel_close(sparse_vector_sigma(epsilon, cutoff, slack), exact, 1e-15)


def test_theorem5_budget_delta_zero():
    eps_ant = 2 / sigma(EPS1, False)
    assert sp.simplify(eps_ant - 8 * eps / (9 * c)) == 0
    assert sp.simplify(2 * sigma(EPS1, False) - 4 / eps_ant) == 0  # the query noise is ANT's Lap(4/eps_ANT)
    eps_l = 1 / sigma(EPS2, False)
    assert sp.simplify(eps_l - eps / (9 * c)) == 0
    assert sp.simplify(c * eps_ant + c * eps_l - eps) == 0
    assert sp.Rational(8, 9) + sp.Rational(1, 9) == 1
    # Erratum: the two named budgets do not sum to eps.
    assert sp.simplify(EPS1 + EPS2 - sp.Rational(10, 9) * eps) == 0
    assert sp.simplify(eps_l - EPS2 / (2 * c)) == 0  # the answers spend eps_2 / 2 in total


def test_theorem5_code_scales_and_event_delta_zero():
    """SparseVector's noise scales are sigma(eps_1), 2 sigma(eps_1), sigma(eps_2), and its privacy event
    is c runs of eps_ANT-DP plus c Laplace answers whose budgets sum to eps."""
    for epsilon, cutoff, _ in POINTS:
        mechanism = SparseVector(epsilon, threshold=0.0, c=cutoff, k=5)
        values = {eps: exact_float(epsilon), c: cutoff}
        assert rel_close(mechanism.epsilon_1, EPS1.subs(values), 2e-16)
        assert rel_close(mechanism.epsilon_2, EPS2.subs(values), 2e-16)
        assert rel_close(mechanism.threshold_scale, sigma(EPS1, False).subs(values), 1e-15)
        assert mechanism.query_scale == 2 * mechanism.threshold_scale
        assert rel_close(mechanism.answer_scale, sigma(EPS2, False).subs(values), 1e-15)
        per_run = 2 / sigma(EPS1, False).subs(values)
        answer = 1 / sigma(EPS2, False).subs(values)
        assert isinstance(mechanism.event, Composed)
        runs, answers = mechanism.event.events
        assert isinstance(runs, SelfComposed) and isinstance(runs.event, PureDP) and runs.count == cutoff
        assert isinstance(answers, SelfComposed) and isinstance(answers.event, Laplace) and answers.count == cutoff
        assert rel_close(runs.event.epsilon, per_run, 1e-15)
        assert rel_close(1 / answers.event.noise_multiplier, answer, 1e-15)
        assert sign(cutoff * (per_run + answer) - exact_float(epsilon)) == 0


def test_theorem5_budget_delta_positive_is_corollary6():
    """sigma(eps_1) = 2/eps_ANT with eps_ANT = 8 eps/(9 sqrt(8c ln(2/delta))) = per-step(8eps/9, c, delta/2);
    sigma(eps_2) = 1/eps_L with eps_L = per-step(eps/9, c, delta/2). Corollary 6 (k = c, delta' = delta/2)
    then gives (8 eps/9, delta/2) and (eps/9, delta/2); basic composition gives (eps, delta)."""
    eps_ant = 2 / sigma(EPS1, True)
    assert sp.simplify(eps_ant - 8 * eps / (9 * F1)) == 0
    assert sp.simplify(eps_ant - per_step(sp.Rational(8, 9) * eps)) == 0
    assert sp.simplify(2 * sigma(EPS1, True) - 4 / eps_ant) == 0
    eps_l = 1 / sigma(EPS2, True)
    assert sp.simplify(eps_l - eps / (9 * F1)) == 0
    assert sp.simplify(eps_l - per_step(eps / 9)) == 0
    assert sp.simplify(sp.Rational(8, 9) * eps + eps / 9 - eps) == 0 and delta / 2 + delta / 2 == delta


def test_theorem5_code_admits_exactly_what_theorem2_certifies():
    """For delta > 0 the code admits (epsilon, c, delta) iff the composition bound (Theorem 2's exact closed
    form capped by basic composition, the code's symbolic("advanced"), up to its 1e-12 float tolerance)
    composes both parts within their budgets; it then uses the scales above."""
    admitted = refused = 0
    for epsilon, cutoff, slack in itertools.product([0.05, 1.0, 3.0, 10.0, 40.0], [1, 4, 30], [1e-9, 1e-3, 0.2]):
        values = {eps: exact_float(epsilon), c: cutoff, delta: exact_float(slack)}
        parts = [(2 / sigma(EPS1, True), sp.Rational(8, 9)), (1 / sigma(EPS2, True), sp.Rational(1, 9))]
        excess = []
        for step, share in parts:
            composed = symbolic("advanced").subs({SYMBOLS["epsilon"]: step.subs(values), SYMBOLS["k"]: cutoff,
                                                  SYMBOLS["delta"]: exact_float(slack) / 2})
            excess.append(composed - share * exact_float(epsilon))
        try:
            mechanism = SparseVector(epsilon, threshold=0.0, c=cutoff, k=3, delta=slack)
        except ValueError:
            refused += 1
            assert any(sign(x) > 0 for x in excess)
            continue
        admitted += 1
        assert all(sign(x - Q_TOL * exact_float(epsilon)) <= 0 for x in excess)
        assert rel_close(mechanism.threshold_scale, sigma(EPS1, True).subs(values), 1e-14)
        assert rel_close(mechanism.answer_scale, sigma(EPS2, True).subs(values), 1e-14)
    assert admitted > 10 and refused > 1  # both branches exercised


Q_TOL = sp.Rational(1, 10**12)


def test_theorem10_alpha1_is_theorem7_instantiated():
    """alpha_1 = 8 (ln k + ln(2/beta_ANT)) / eps_ANT with beta_ANT = beta/(2c) is 9F (ln k + ln(4c/beta))/eps,
    and alpha_1 eps_ANT = 8 (ln k + ln(4c/beta)) does not depend on eps or on delta."""
    theorem7 = lambda b, e: 8 * (sp.log(k) + sp.log(2 / b)) / e  # noqa: E731
    for F, approximate in ((F0, False), (F1, True)):
        eps_ant = 2 / sigma(EPS1, approximate)
        alpha1 = theorem7(beta / (2 * c), eps_ant)
        target = 9 * F * (sp.log(k) + sp.log(4 * c / beta)) / eps
        assert sp.simplify(sp.expand_log(alpha1 - target, force=True)) == 0
        assert sp.simplify(sp.expand_log(alpha1 * eps_ant - 8 * (sp.log(k) + sp.log(4 * c / beta)), force=True)) == 0
    for epsilon, cutoff, slack in POINTS:
        for steps, p in itertools.product([1, 10, 1000], [1e-4, 0.1]):
            F = F1 if slack else F0
            values = {eps: exact_float(epsilon), c: cutoff, k: steps, beta: exact_float(p),
                      delta: exact_float(slack) if slack else 1}
            exact = (9 * F * (sp.log(k) + sp.log(4 * c / beta)) / eps).subs(values)
            got = sparse_vector_threshold_alpha(steps, cutoff, epsilon, p, slack)
            assert rel_close(got, exact, 1e-14)
            eps_ant = float((2 / sigma(EPS1, bool(slack))).subs(values))
            assert rel_close(above_threshold_alpha(steps, eps_ant, p / (2 * cutoff)), exact, 1e-13)


def test_theorem10_alpha2_is_the_laplace_tail():
    """P[|Lap(sigma(eps_2))| >= alpha_2] = exp(-alpha_2 / sigma(eps_2)) = beta/(2c) exactly at
    alpha_2 = 9F ln(2c/beta)/eps (the code's sparse_vector_answer_alpha)."""
    for F, approximate in ((F0, False), (F1, True)):
        alpha2 = 9 * F * sp.log(2 * c / beta) / eps
        assert sp.simplify(sp.exp(-alpha2 / sigma(EPS2, approximate)) - beta / (2 * c)) == 0
    for epsilon, cutoff, slack in POINTS:
        for p in (1e-4, 0.1, 0.9):
            F = F1 if slack else F0
            values = {eps: exact_float(epsilon), c: cutoff, beta: exact_float(p),
                      delta: exact_float(slack) if slack else 1}
            exact = (9 * F * sp.log(2 * c / beta) / eps).subs(values)
            assert rel_close(sparse_vector_answer_alpha(cutoff, epsilon, p, slack), exact, 1e-14)


def test_theorem10_alpha1_dominates_alpha2_and_union_bound():
    """alpha_1 - alpha_2 = 9F (ln k + ln 2)/eps > 0 for k >= 1, so alpha = alpha_1 (the code's
    sparse_vector_alpha); c ANT runs and c answers failing with beta/(2c) each total beta."""
    for F in (F0, F1):
        alpha1 = 9 * F * (sp.log(k) + sp.log(4 * c / beta)) / eps
        alpha2 = 9 * F * sp.log(2 * c / beta) / eps
        assert sp.simplify(sp.expand_log(alpha1 - alpha2 - 9 * F * (sp.log(k) + sp.log(2)) / eps, force=True)) == 0
    assert sp.simplify(2 * c * (beta / (2 * c)) - beta) == 0
    for epsilon, cutoff, slack in POINTS:
        for steps, p in itertools.product([1, 10], [1e-4, 0.5]):
            got = sparse_vector_alpha(steps, cutoff, epsilon, p, slack)
            assert got == sparse_vector_threshold_alpha(steps, cutoff, epsilon, p, slack)
            assert got > sparse_vector_answer_alpha(cutoff, epsilon, p, slack)


def test_erratum_lecture_alpha2_is_too_small():
    """The lecture prints alpha_2 = 9c log(2c/beta) (delta = 0) and 9 log(2c/beta) sqrt(8c log(2/delta)) eps
    (delta > 0). Their Laplace tails are (beta/(2c))^eps and (beta/(2c))^{eps^2}: larger than beta/(2c)
    whenever eps < 1, e.g. eps = 1/2, c = 1, beta = 1/10 gives 0.224 and 0.473 instead of 0.05."""
    printed0 = 9 * c * sp.log(2 * c / beta)
    printed1 = 9 * sp.log(2 * c / beta) * F1 * eps
    tail0 = sp.exp(-printed0 / sigma(EPS2, False))
    tail1 = sp.exp(-printed1 / sigma(EPS2, True))
    assert sp.simplify(sp.expand_log(sp.log(tail0) - eps * sp.log(beta / (2 * c)), force=True)) == 0
    assert sp.simplify(sp.expand_log(sp.log(tail1) - eps**2 * sp.log(beta / (2 * c)), force=True)) == 0
    instance = {eps: sp.Rational(1, 2), c: 1, beta: sp.Rational(1, 10), delta: sp.Rational(1, 100)}
    assert sign(tail0.subs(instance) - beta.subs(instance) / 2) > 0
    assert sign(tail1.subs(instance) - beta.subs(instance) / 2) > 0


def test_erratum_alpha1_at_least_printed_alpha2_is_false():
    """"alpha_1 >= alpha_2 for any value of delta, by direct comparison" fails for the printed alpha_2:
    delta = 0, k = c = 1, beta = 1/10, eps = 10 gives alpha_1 = 0.9 ln 40 ~ 3.3 < 9 ln 20 ~ 27."""
    instance = {eps: 10, c: 1, k: 1, beta: sp.Rational(1, 10)}
    alpha1 = (9 * c * (sp.log(k) + sp.log(4 * c / beta)) / eps).subs(instance)
    printed0 = (9 * c * sp.log(2 * c / beta)).subs(instance)
    assert sign(printed0 - alpha1) > 0


def test_erratum_strict_inequality_is_an_equality():
    """The proof claims Pr[|f_i(x) - a_i| >= alpha_2] < beta/2c; the Laplace tail at alpha_2 is exactly
    beta/(2c) (so the strict form is false; it is harmless because alpha = alpha_1 > alpha_2)."""
    for approximate in (False, True):
        F = F1 if approximate else F0
        alpha2 = 9 * F * sp.log(2 * c / beta) / eps
        assert sp.simplify(sp.exp(-alpha2 / sigma(EPS2, approximate)) - beta / (2 * c)) == 0


def test_theorem10_exact_supremum_for_c_equal_one():
    """c = 1: SparseVector is one AboveThreshold run at eps_ANT = 8 eps/9 followed by one answer
    f_i + Lap(sigma(eps_2)). The failure probability is at most the exact supremum of the ANT failure at
    alpha_1 (an AboveThreshold instance at eps = 1 with alpha_1 eps_ANT, by scaling) plus the exact tail
    P[|Lap(sigma(eps_2))| >= alpha_1]; with the code's alpha this is <= beta."""
    for steps, p, epsilon in itertools.product([1, 2, 4], [0.05, 0.5], [Fraction(1, 2), Fraction(2)]):
        alpha = Fraction(sparse_vector_alpha(steps, 1, float(epsilon), p))
        eps_ant = Fraction(8, 9) * epsilon
        ant = _sup_failure(steps, alpha * eps_ant)
        answer_scale = 9 / epsilon  # sigma(eps_2) = 2c/eps_2 with c = 1
        code_scale = SparseVector(float(epsilon), 0.0, 1, steps).answer_scale
        assert rel_close(code_scale, sp.Rational(9) / exact_float(float(epsilon)), 1e-15)
        laplace_tail = ExpSum.exp(-alpha / answer_scale)
        assert (ExpSum.const(Fraction(p)) - ant - laplace_tail).sign() > 0, (steps, p, epsilon)
