"""tensorflow_privacy's user-level DP-SGD statement, re-implemented from its description (the package is not
installed; this is a reference for tests and benchmarks, not part of dpaudit).

``compute_dp_sgd_privacy_statement(..., max_examples_per_user=k)`` with RDP accounting and Poisson sampling
(tensorflow_privacy, ``compute_dp_sgd_privacy_lib._compute_dp_sgd_group_privacy_using_rdp``): the example-level
epsilon at delta_ex from dp_accounting's RDP accountant (default orders) for
``SelfComposed(PoissonSampled(q, Gaussian(sigma)), T)``, and group privacy by Vadhan (2017), Lemma 2.2 in the
form of its proof's penultimate line: user eps = k eps_ex, user delta = delta_ex (e^{k eps_ex} - 1) /
(e^{eps_ex} - 1); delta_ex is found by a root search (Brent's method on ln delta_ex) so that the user delta
equals the target. Without microbatching (the sensitivity is not doubled).
"""

from __future__ import annotations

import math

import dp_accounting
from scipy import optimize


def _log_expm1(x: float) -> float:
    return x + math.log(-math.expm1(-x))


def tf_privacy_user_epsilon(q: float, sigma: float, steps: int, k: int, delta: float) -> float:
    """tensorflow_privacy's user-level epsilon (RDP accounting, group privacy, Poisson sampling)."""
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)

    accountant = dp_accounting.rdp.RdpAccountant().compose(event)  # composed once, read at each delta

    def example_eps(log_delta: float) -> float:
        return accountant.get_epsilon(math.exp(log_delta))

    if k == 1:
        return example_eps(math.log(delta))
    target = math.log(delta)

    def gap(log_delta: float) -> float:
        eps = example_eps(log_delta)
        if not math.isfinite(k * eps):
            return math.inf
        return log_delta + _log_expm1(k * eps) - _log_expm1(eps) - target

    high = target
    low = high - math.log(10)
    value = gap(low)
    while value > 0:
        high = low - value
        low = high - math.log(10)
        value = gap(low)
        if not math.isfinite(value):
            return math.inf
    low -= value
    root = optimize.brentq(gap, low, high)
    return k * example_eps(root)
