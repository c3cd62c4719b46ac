"""Sympy closed forms of the composition and amplification theorems: the reference expressions.

The float implementations in :mod:`dpaudit.accountant` are tested against these expressions, and the
machine-checked derivations in ``proofs/`` import them, so a change here breaks a proof.

Symbols are plain (assumption-free) sympy symbols named ``epsilon`` (per-step epsilon), ``k`` (number
of steps), ``delta`` (the slack delta' of advanced composition, or the target delta), ``q`` (sampling
probability) and ``epsilon_total`` (total epsilon of a composition), so ``sympy.Symbol("epsilon")``
substitutes into every expression.
"""

from __future__ import annotations

import sympy as sp

from ._validation import check_choice

__all__ = ["SYMBOLS", "THEOREMS", "symbolic", "gdp_epsilon_equation"]

epsilon, k, delta, q, epsilon_total, i = sp.symbols("epsilon k delta q epsilon_total i")
mu, alpha = sp.symbols("mu alpha")

SYMBOLS: dict[str, sp.Symbol] = {
    "epsilon": epsilon,
    "k": k,
    "delta": delta,
    "q": q,
    "epsilon_total": epsilon_total,
    "mu": mu,
    "alpha": alpha,
}


def _ncdf(x: sp.Expr) -> sp.Expr:
    """The standard normal distribution function Phi(x) = (1 + erf(x / sqrt 2)) / 2."""
    return (1 + sp.erf(x / sp.sqrt(2))) / 2


def _basic() -> sp.Expr:
    # Basic composition of k epsilon-DP mechanisms (Dwork et al. 2006): epsilon_total = k * epsilon.
    return k * epsilon


def _advanced() -> sp.Expr:
    # Dwork-Rothblum-Vadhan 2010; Theorem 2 of the net-mechanism lecture; never looser than basic
    # composition (k epsilon, with a smaller delta), as ``accountant.advanced`` returns it.
    return sp.Min(sp.sqrt(2 * k * sp.log(1 / delta)) * epsilon + k * epsilon * (sp.exp(epsilon) - 1), k * epsilon)


def _advanced_simplified() -> sp.Expr:
    # The lecture's relaxation epsilon'(e^epsilon' - 1) <= 2 epsilon'^2 (valid for epsilon' <= 1).
    return sp.sqrt(2 * k * sp.log(1 / delta)) * epsilon + 2 * k * epsilon**2


def _advanced_per_step_simplified() -> sp.Expr:
    # Per-step budget of the lecture: epsilon' = epsilon / sqrt(8 k ln(1/delta')), read with
    # ``epsilon`` as the *total* target (valid while epsilon <= 2 ln(1/delta)).
    return epsilon / sp.sqrt(8 * k * sp.log(1 / delta))


def _amplify() -> sp.Expr:
    # Poisson subsampling of an epsilon-DP mechanism (add/remove), and sampling without replacement
    # under replace-one with q = m/n: epsilon' = ln(1 + q (e^epsilon - 1)) (Balle-Barthe-Gaboardi 2018).
    return sp.log(1 + q * (sp.exp(epsilon) - 1))


def _amplify_secrecy_of_sample() -> sp.Expr:
    # Lemma 3 of "Differential privacy and the secrecy of the sample": a 1-DP mechanism run on a
    # Poisson q-subsample is 2q-DP for q in (0, 1).
    return 2 * q


def _optimal_delta() -> sp.Expr:
    # Exact optimal homogeneous composition (Kairouz-Oh-Viswanath 2015, Murtagh-Vadhan 2016): k-fold
    # composition of epsilon-DP mechanisms is (epsilon_total, delta)-DP iff delta >= this sum.
    term = sp.binomial(k, i) * sp.Max(0, sp.exp((k - i) * epsilon) - sp.exp(epsilon_total + i * epsilon))
    return sp.Sum(term, (i, 0, k)) / (1 + sp.exp(epsilon)) ** k


def _gdp_delta() -> sp.Expr:
    # mu-GDP -> (epsilon, delta(epsilon)) (Dong, Roth & Su 2022, Cor. 2.13; Balle & Wang 2018, Thm 8).
    return _ncdf(-epsilon / mu + mu / 2) - sp.exp(epsilon) * _ncdf(-epsilon / mu - mu / 2)


def _gdp_tradeoff() -> sp.Expr:
    # G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu) (Dong, Roth & Su 2022, Def. 2.6); Phi^-1(p) = sqrt 2 erfinv(2p - 1).
    return _ncdf(sp.sqrt(2) * sp.erfinv(1 - 2 * alpha) - mu)


def gdp_epsilon_equation() -> sp.Equality:
    """gdp_epsilon(mu, delta) has no closed form: it is the root epsilon >= 0 of this equation (delta of
    mu-GDP at epsilon equals the target ``delta``), which :func:`dpaudit.accountant.gdp_epsilon` solves by
    bisection on the outward-rounded curve.

    Example:
        >>> sorted(str(s) for s in gdp_epsilon_equation().free_symbols)
        ['delta', 'epsilon', 'mu']
    """
    return sp.Eq(_gdp_delta(), delta)


_BUILDERS = {
    "basic": _basic,
    "advanced": _advanced,
    "advanced_simplified": _advanced_simplified,
    "advanced_per_step_simplified": _advanced_per_step_simplified,
    "amplify": _amplify,
    "amplify_secrecy_of_sample": _amplify_secrecy_of_sample,
    "optimal_delta": _optimal_delta,
    "gdp_delta": _gdp_delta,
    "gdp_tradeoff": _gdp_tradeoff,
}

THEOREMS: tuple[str, ...] = tuple(_BUILDERS)


def symbolic(theorem: str) -> sp.Expr:
    """Return the sympy closed form of ``theorem``.

    Theorems: ``basic`` (k*epsilon), ``advanced`` (the smaller of k*epsilon and DRV: sqrt(2k ln(1/delta))*epsilon +
    k*epsilon*(e^epsilon - 1)), ``advanced_simplified`` (with 2*k*epsilon^2 as the second term),
    ``advanced_per_step_simplified`` (epsilon/sqrt(8k ln(1/delta))), ``amplify``
    (ln(1 + q(e^epsilon - 1))), ``amplify_secrecy_of_sample`` (2q), ``optimal_delta`` (the exact delta
    of k-fold composition at ``epsilon_total``, a finite sum), ``gdp_delta`` (delta(epsilon) of mu-GDP:
    Phi(-epsilon/mu + mu/2) - e^epsilon Phi(-epsilon/mu - mu/2)), ``gdp_tradeoff`` (G_mu(alpha) =
    Phi(Phi^-1(1 - alpha) - mu)).

    Example:
        >>> import sympy
        >>> float(symbolic("amplify").subs({"q": 0.5, "epsilon": sympy.log(3)}))  # ln 2
        0.6931471805599453
    """
    check_choice(theorem, "theorem", THEOREMS)
    return _BUILDERS[theorem]()
