"""Accountant-breadth events: DiscreteGaussian, DiscreteLaplace, ApproxDP, BoundedRange, ZCDP, TreeAggregation.

Every upper bound is checked against an independent reference (mpmath sums over the exact output
distributions, exact loss-lattice convolutions, closed forms), never against the code under test."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpaudit.accountant import PLDAccountant, RDPAccountant, ZCDPAccountant, gaussian_delta, gaussian_epsilon, optimal
from dpaudit.errors import InvalidArgument, InvalidArgumentType, UnsupportedEventError
from dpaudit.events import (
    ApproxDP,
    BoundedRange,
    Composed,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    PoissonSampled,
    PureDP,
    SampledWithoutReplacement,
    SelfComposed,
    TreeAggregation,
    ZCDP,
)
from mp_reference import optimal_delta_pure

mp.mp.dps = 40


# ----------------------------------------------------------------------------- references (mpmath)
def _dgauss_pmf(sigma: float, centre: int, xs: range) -> list:
    s2 = 2 * mp.mpf(sigma) ** 2
    cut = int(40 * sigma) + 10
    norm = mp.fsum(mp.e ** (-mp.mpf(x) ** 2 / s2) for x in range(-cut, cut + 1))
    return [mp.e ** (-(mp.mpf(x) - centre) ** 2 / s2) / norm for x in xs]


def _dlap_pmf(scale: float, centre: int, xs: range) -> list:
    r = mp.e ** (-1 / mp.mpf(scale))
    c = (1 - r) / (1 + r)
    return [c * r ** abs(x - centre) for x in xs]


def _hockey(p: list, q: list, eps: float) -> mp.mpf:
    return mp.fsum(max(a - mp.e ** eps * b, 0) for a, b in zip(p, q))


def _loss_lattice_delta(losses: np.ndarray, masses: np.ndarray, count: int, eps: float, unit: float) -> float:
    """delta(eps) of ``count`` independent copies of a PLD whose losses are integer multiples of ``unit``."""
    idx = np.round(losses / unit).astype(int)
    base = np.zeros(idx.max() - idx.min() + 1)
    np.add.at(base, idx - idx.min(), masses)
    total = base
    for _ in range(count - 1):
        total = np.convolve(total, base)
    values = (np.arange(total.size) + count * idx.min()) * unit
    return float(np.sum(total * np.clip(-np.expm1(eps - values), 0.0, None)))


# ----------------------------------------------------------------------------- events
@pytest.mark.parametrize("make, argument", [
    (lambda: DiscreteGaussian(-1.0), "sigma"), (lambda: DiscreteGaussian(float("nan")), "sigma"),
    (lambda: DiscreteGaussian(1.0, 0), "sensitivity"), (lambda: DiscreteLaplace(0.0), "scale"),
    (lambda: ZCDP(0.0), "rho"), (lambda: ZCDP(-1.0), "rho"), (lambda: ApproxDP(-0.1, 0.0), "epsilon"),
    (lambda: ApproxDP(1.0, 1.0), "delta"), (lambda: ApproxDP(1.0, float("nan")), "delta"),
    (lambda: BoundedRange(-1.0), "epsilon"), (lambda: TreeAggregation(1.0, 0), "steps"),
    (lambda: TreeAggregation(0.0, 10), "noise_multiplier"),
])
def test_bad_parameters_name_the_argument(make, argument):
    with pytest.raises(InvalidArgument) as info:
        make()
    assert info.value.argument == argument and argument in str(info.value)


def test_events_are_frozen_and_typed():
    event = DiscreteGaussian(2.0)
    with pytest.raises(AttributeError):
        event.sigma = 3.0  # type: ignore[misc]
    with pytest.raises(InvalidArgumentType):
        DiscreteLaplace("1")  # type: ignore[arg-type]
    assert DiscreteGaussian(2) == DiscreteGaussian(2.0, 1) and hash(ZCDP(0.5)) == hash(ZCDP(0.5))


@pytest.mark.parametrize("steps, depth", [(1, 1), (2, 2), (3, 2), (4, 3), (7, 3), (8, 4), (1000, 10), (1024, 11)])
def test_tree_depth_is_dp_accountings_convention(steps, depth):
    assert TreeAggregation(1.0, steps).depth == depth == math.ceil(math.log2(steps + 1))


# ----------------------------------------------------------------------------- discrete Gaussian
@pytest.mark.parametrize("sigma, neighbouring", [(0.7, "add_remove"), (1.5, "add_remove"), (3.0, "replace_one")])
def test_discrete_gaussian_pld_is_sound_and_tight_against_mpmath(sigma, neighbouring):
    d = 2 if neighbouring == "replace_one" else 1
    xs = range(-int(30 * sigma) - 3, int(30 * sigma) + 4)
    p, q = _dgauss_pmf(sigma, d, xs), _dgauss_pmf(sigma, 0, xs)
    acct = PLDAccountant(neighbouring).compose(DiscreteGaussian(sigma))
    for eps in (0.0, 0.25, 1.0, 2.5):
        reference = float(_hockey(p, q, eps))
        upper = acct.delta(eps)
        assert upper >= reference
        assert upper <= reference * (1 + 1e-3) + 1e-12


def test_discrete_gaussian_composition_against_the_exact_sum():
    """The sum of the outputs is sufficient for the shift (the loss is linear in x), so k-fold composition
    equals the hockey-stick divergence of the k-fold convolved integer laws."""
    sigma, k = 1.2, 4
    xs = range(-60, 61)
    p = np.array([float(v) for v in _dgauss_pmf(sigma, 1, xs)])
    q = np.array([float(v) for v in _dgauss_pmf(sigma, 0, xs)])
    pk, qk = p, q
    for _ in range(k - 1):
        pk, qk = np.convolve(pk, p), np.convolve(qk, q)
    acct = PLDAccountant().compose(SelfComposed(DiscreteGaussian(sigma), k))
    for eps in (0.5, 2.0, 4.0):
        reference = float(np.sum(np.maximum(pk - math.exp(eps) * qk, 0.0)))
        assert reference <= acct.delta(eps) <= reference * (1 + 1e-3) + 1e-12


def test_discrete_gaussian_is_close_to_the_continuous_one_for_large_sigma_and_rdp_is_exact_zcdp():
    pld = PLDAccountant().compose(DiscreteGaussian(20.0)).epsilon(1e-6)
    assert abs(pld - gaussian_epsilon(1e-6, 1 / 20.0)) < 1e-3 * pld
    rdp = RDPAccountant(orders=[2.0, 10.0]).compose(DiscreteGaussian(3.0, 2))
    assert np.allclose(rdp.rdp, np.array([2.0, 10.0]) * 4 / 18.0)
    assert ZCDPAccountant(neighbouring="replace_one").compose(DiscreteGaussian(3.0)).rho() == pytest.approx(4 / 18.0)


def test_discrete_gaussian_with_too_many_atoms_is_refused_before_any_state_changes():
    acct = PLDAccountant().compose(Gaussian(1.0))
    before = acct.leaves
    assert not acct.supports(DiscreteGaussian(1e7))
    with pytest.raises(UnsupportedEventError, match="DiscreteGaussian"):
        acct.compose(Composed([Gaussian(2.0), DiscreteGaussian(1e7)]))
    assert acct.leaves == before


# ----------------------------------------------------------------------------- discrete Laplace
@pytest.mark.parametrize("scale, sensitivity, neighbouring, count", [
    (1.0, 1, "add_remove", 1), (1.3, 1, "replace_one", 4), (0.8, 3, "add_remove", 3)])
def test_discrete_laplace_pld_against_exact_references(scale, sensitivity, neighbouring, count):
    d = sensitivity * (2 if neighbouring == "replace_one" else 1)
    xs = range(-400, 401)
    p, q = _dlap_pmf(scale, d, xs), _dlap_pmf(scale, 0, xs)
    acct = PLDAccountant(neighbouring).compose(SelfComposed(DiscreteLaplace(scale, sensitivity), count))
    # loss of outcome x is (|x| - |x - d|) / scale: an integer multiple of 1/scale
    losses = np.array([(abs(x) - abs(x - d)) / scale for x in xs])
    masses = np.array([float(v) for v in p])
    for eps in (0.0, 0.5, 2.0):
        reference = float(_hockey(p, q, eps)) if count == 1 else _loss_lattice_delta(losses, masses, count, eps, 1.0 / scale)
        assert reference - 1e-12 <= acct.delta(eps) <= reference * (1 + 1e-3) + 1e-12
    assert acct.delta(count * d / scale) == 0.0  # pure DP: eps = sensitivity / scale per run


def test_discrete_laplace_rdp_matches_an_mpmath_sum():
    scale, d = 1.7, 2
    xs = range(-300, 301)
    p, q = _dlap_pmf(scale, d, xs), _dlap_pmf(scale, 0, xs)
    acct = RDPAccountant(neighbouring="replace_one", orders=[1.5, 2.0, 5.0, 20.0]).compose(DiscreteLaplace(scale))
    for alpha, value in zip(acct.orders, acct.rdp):
        exact = mp.log(mp.fsum(a**alpha * b ** (1 - alpha) for a, b in zip(p, q))) / (alpha - 1)
        assert value == pytest.approx(float(exact), rel=1e-9)


@settings(max_examples=15)
@given(scale=st.floats(0.3, 5.0), q=st.floats(0.01, 0.9), eps=st.floats(0.0, 2.0))
def test_poisson_sampled_discrete_laplace_is_sound_in_both_directions(scale, q, eps):
    xs = range(-120, 121)
    p0, q0 = _dlap_pmf(scale, 1, xs), _dlap_pmf(scale, 0, xs)
    mix = [q * a + (1 - q) * b for a, b in zip(p0, q0)]
    reference = max(_hockey(mix, q0, eps), _hockey(q0, mix, eps))
    upper = PLDAccountant().compose(PoissonSampled(q, DiscreteLaplace(scale))).delta(eps)
    assert upper >= float(reference) - 1e-12


# ----------------------------------------------------------------------------- (eps, delta)
@pytest.mark.parametrize("eps0, delta0, k", [(0.5, 1e-6, 10), (0.1, 1e-7, 50), (1.0, 0.0, 5)])
def test_approx_dp_composition_is_the_exact_optimal_composition(eps0, delta0, k):
    """Kairouz-Oh-Viswanath: delta_k(eps) = 1 - (1 - delta)^k (1 - delta_pure_k(eps))."""
    acct = PLDAccountant().compose(SelfComposed(ApproxDP(eps0, delta0), k))
    for eps in (0.5, 1.0, 2.0):
        exact = 1 - (1 - mp.mpf(delta0)) ** k * (1 - optimal_delta_pure(eps0, k, eps))
        assert float(exact) - 1e-12 <= acct.delta(eps) <= float(exact) * (1 + 1e-3) + 1e-12


def test_approx_dp_with_zero_delta_is_pure_dp_and_rdp_refuses_positive_delta():
    assert PLDAccountant().compose(ApproxDP(0.3)).leaves == PLDAccountant().compose(PureDP(0.3)).leaves
    acct = RDPAccountant().compose(Gaussian(2.0))
    before = acct.rdp.copy()
    assert not acct.supports(ApproxDP(1.0, 1e-6))
    with pytest.raises(UnsupportedEventError, match="delta"):
        acct.compose(Composed([PureDP(1.0), ApproxDP(1.0, 1e-6)]))
    assert np.array_equal(acct.rdp, before)
    assert PLDAccountant().compose(ApproxDP(1.0, 1e-3)).epsilon(1e-3) == 1.0  # all of delta used: basic composition


# ----------------------------------------------------------------------------- bounded range
def _br_profile_mp(eps: float, e: float) -> mp.mpf:
    """sup over t of delta_t(e), by a dense mpmath scan plus a local maximisation."""
    eps, e = mp.mpf(eps), mp.mpf(e)

    def f(t):
        a, b = t * eps, (1 - t) * eps
        if e >= b or t <= 0:
            return mp.mpf(0)
        p = (mp.e**a - 1) / (mp.e**a - mp.e ** (-b))
        return p * (1 - mp.e ** (e - b))

    top = 1 - e / eps
    grid = [top * i / 400 for i in range(401)]
    best = max(grid, key=f)
    lo, hi = max(best - top / 400, 0), min(best + top / 400, top)
    for _ in range(80):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if f(m1) < f(m2):
            lo = m1
        else:
            hi = m2
    return max(f(best), f((lo + hi) / 2))


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_bounded_range_profile_is_the_supremum_over_t(eps):
    from dpaudit.accountant.families.bounded_range import bounded_range_profile

    es = np.array([0.0, 0.2 * eps, 0.5 * eps, 0.9 * eps, eps])
    ours = bounded_range_profile(eps, es)
    for e, value in zip(es, ours):
        exact = float(_br_profile_mp(eps, e))
        assert exact <= value <= exact * (1 + 1e-8) + 1e-300


def test_bounded_range_composition_beats_pure_dp_and_is_above_an_actual_br_mechanism():
    eps0, k, delta = 0.1, 100, 1e-5
    br = PLDAccountant().compose(SelfComposed(BoundedRange(eps0), k))
    pure = optimal(eps0, k, delta).epsilon
    upper = br.epsilon(delta)
    assert upper < pure  # the target: strictly below PureDP's optimal composition
    # randomized response at eps/2 is eps-BR: its exact composition is a lower bound on the worst case
    lower = float(mp.findroot(lambda x: optimal_delta_pure(eps0 / 2, k, x) - delta, 1.5))
    assert lower <= upper
    assert br.epsilon_interval(delta)[0] <= upper
    # RDP/zCDP route (eps^2/8-zCDP) is also sound and below pure DP
    assert RDPAccountant().compose(SelfComposed(BoundedRange(eps0), k)).epsilon(delta) < pure


@pytest.mark.parametrize("sampling", ["poisson", "wor"])
def test_subsampled_bounded_range_stays_between_the_mechanism_and_pure_dp(sampling):
    eps0, k = 0.5, 40
    wrap = (lambda e: PoissonSampled(0.2, e)) if sampling == "poisson" else (lambda e: SampledWithoutReplacement(100, 20, e))
    relation = "add_remove" if sampling == "poisson" else "replace_one"
    br = PLDAccountant(relation).compose(SelfComposed(wrap(BoundedRange(eps0)), k)).epsilon(1e-5)
    pure = PLDAccountant(relation).compose(SelfComposed(wrap(PureDP(eps0)), k)).epsilon(1e-5)
    real = PLDAccountant(relation).compose(SelfComposed(wrap(PureDP(eps0 / 2)), k)).epsilon(1e-5)
    assert real <= br <= pure * (1 + 1e-3)


# ----------------------------------------------------------------------------- zCDP in PLD and RDP
@pytest.mark.parametrize("rho, k", [(0.05, 1), (0.01, 20)])
def test_zcdp_in_pld_is_above_the_gaussian_that_attains_it(rho, k):
    acct = PLDAccountant().compose(SelfComposed(ZCDP(rho), k))
    mu = math.sqrt(2 * rho * k)  # the Gaussian mechanism with this mu is (k rho)-zCDP
    for eps in (0.0, 0.5, 1.0, 2.0):
        assert acct.delta(eps) >= gaussian_delta(eps, mu)
    assert acct.epsilon_interval(1e-5)[0] <= acct.epsilon(1e-5)


def test_zcdp_rdp_is_linear_and_pld_profile_respects_the_cks_bound_for_one_step():
    from dpaudit.accountant.zcdp import zcdp_delta

    assert np.allclose(RDPAccountant(orders=[2.0, 3.5]).compose(ZCDP(0.3)).rdp, [0.6, 1.05])
    pld = PLDAccountant().compose(ZCDP(0.2))
    for eps in (0.3, 1.0, 2.0):
        assert pld.delta(eps) <= zcdp_delta(0.2, eps) * (1 + 1e-2) + 1e-9


# ----------------------------------------------------------------------------- tree aggregation
@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
def test_tree_aggregation_is_the_gaussian_with_the_depth_scaled_noise(neighbouring):
    event = TreeAggregation(3.0, 100)  # depth 7
    same = Gaussian(3.0 / math.sqrt(7))
    for kind in (PLDAccountant, RDPAccountant):
        a, b = kind(neighbouring).compose(event), kind(neighbouring).compose(same)
        assert a.epsilon(1e-6) == pytest.approx(b.epsilon(1e-6), rel=1e-12)
    mu = math.sqrt(7) / 3.0 * (2 if neighbouring == "replace_one" else 1)
    assert PLDAccountant(neighbouring).compose(event).epsilon(1e-6) >= gaussian_epsilon(1e-6, mu)


# ----------------------------------------------------------------------------- interfaces and bad input
def test_unsupported_events_leave_the_zcdp_accountant_unchanged():
    acct = ZCDPAccountant().compose(ZCDP(0.1))
    for event in (PoissonSampled(0.1, Gaussian(1.0)), ApproxDP(1.0, 1e-6)):
        assert not acct.supports(event)
        with pytest.raises(UnsupportedEventError):
            acct.compose(Composed([DiscreteGaussian(1.0), event]))
    assert acct.rho() == pytest.approx(0.1)


def test_rho_and_rdp_at_any_orders_on_every_accountant():
    event = Composed([Gaussian(2.0), DiscreteGaussian(4.0), PureDP(0.2), BoundedRange(0.4), ZCDP(0.01)])
    rho = 1 / 8 + 1 / 32 + 0.02 + 0.02 + 0.01
    for kind in (PLDAccountant, RDPAccountant, ZCDPAccountant):
        assert kind().compose(event).rho() == pytest.approx(rho, rel=1e-12)
    rdp = RDPAccountant().compose(event)
    orders = [1.25, 3.0, 100.0]
    curve = rdp.rdp(orders)
    assert np.all(curve <= np.array(orders) * rho * (1 + 1e-12))
    assert curve[1] == pytest.approx(rdp.rdp[list(rdp.orders).index(3.0)])
    assert PLDAccountant().compose(PoissonSampled(0.1, Gaussian(1.0))).rho() == math.inf


def test_heterogeneous_tree_of_every_new_event_in_every_accountant():
    tree = Composed([SelfComposed(DiscreteGaussian(5.0), 10), SelfComposed(DiscreteLaplace(10.0), 10),
                     SelfComposed(BoundedRange(0.05), 10), TreeAggregation(5.0, 64), SelfComposed(ZCDP(0.001), 10)])
    pld = PLDAccountant().compose(tree).epsilon(1e-6)
    rdp = RDPAccountant().compose(tree).epsilon(1e-6)
    zcdp = ZCDPAccountant().compose(tree).epsilon(1e-6)
    assert 0 < pld <= rdp * 1.05 and rdp <= zcdp * (1 + 1e-9)
    with_delta = PLDAccountant().compose(Composed([tree, ApproxDP(0.1, 1e-7)])).epsilon(1e-6)
    assert with_delta > pld


@pytest.mark.parametrize("q", [1.0, 0.3])
def test_bounded_range_pld_dominates_every_binary_pair_off_the_grid(q):
    """delta of every eps-BR binary pair B_t (Poisson-sampled: both directions), at points off the grid and
    below zero, never exceeds the accountant's upper bound."""
    eps = 1.0
    event = BoundedRange(eps) if q == 1.0 else PoissonSampled(q, BoundedRange(eps))
    acct = PLDAccountant(discretisation_interval=0.013).compose(event)
    ts = np.linspace(0.0, 1.0, 41)
    for e in (0.0071, 0.2345, 0.61, 0.93):
        worst = 0.0
        for t in ts:
            a, b = t * eps, (1 - t) * eps
            p_hi = math.expm1(a) / (math.expm1(a) - math.expm1(-b)) if t > 0 else 0.0
            p = np.array([p_hi, 1 - p_hi])
            qq = np.array([p_hi * math.exp(-b), (1 - p_hi) * math.exp(a)])
            mix = q * p + (1 - q) * qq
            worst = max(worst, float(np.sum(np.maximum(mix - math.exp(e) * qq, 0))),
                        float(np.sum(np.maximum(qq - math.exp(e) * mix, 0))))
        assert acct.delta(e) >= worst - 1e-15


def test_bounded_range_composition_dominates_heterogeneous_binary_pairs():
    """Two runs with different t (the adversary's choice) compose below the accountant's bound."""
    eps = 0.8
    acct = PLDAccountant().compose(SelfComposed(BoundedRange(eps), 3))

    def atoms(t):
        a, b = t * eps, (1 - t) * eps
        p_hi = math.expm1(a) / (math.expm1(a) - math.expm1(-b)) if t > 0 else 0.0
        return [((1 - t) * eps, p_hi), (-t * eps, 1 - p_hi)]

    for ts in [(0.1, 0.5, 0.9), (0.3, 0.3, 0.7), (0.5, 0.5, 0.5), (0.0, 1.0, 0.4)]:
        composed = [(0.0, 1.0)]
        for t in ts:
            composed = [(l1 + l2, m1 * m2) for l1, m1 in composed for l2, m2 in atoms(t)]
        for e in (0.0, 0.4, 1.1, 1.9):
            exact = sum(m * max(0.0, 1 - math.exp(e - l)) for l, m in composed)
            assert acct.delta(e) >= exact - 1e-15


def test_profile_pairs_stay_valid_far_out_and_huge_parameters_are_refused_or_split():
    # a very sparse sample of a loose mechanism: both directions must stay proper (total mass ~1)
    for event in (PoissonSampled(1e-6, ZCDP(5.0)), PoissonSampled(0.5, BoundedRange(50.0))):
        acct = PLDAccountant().compose(event)
        assert math.isfinite(acct.epsilon(1e-6))
    small = PLDAccountant().compose(PoissonSampled(1e-6, ZCDP(5.0))).delta(0.0)
    assert small <= 1e-5
    for event in (ZCDP(1000.0), BoundedRange(1000.0)):
        assert not PLDAccountant().supports(event)
    split = PLDAccountant(discretisation_interval=0.05).compose(SelfComposed(ZCDP(300.0), 3))  # 900 in <= 400 parts
    assert split.epsilon(1e-5) >= gaussian_epsilon(1e-5, math.sqrt(2 * 900.0))


def test_interop_is_reachable_from_events_lazily_and_explains_a_missing_dp_accounting():
    """``import dpaudit.events`` loads neither the interop layer nor dp_accounting; without dp_accounting
    the conversion raises an ImportError naming the extra to install."""
    import subprocess
    import sys

    code = ("import sys\n"
            "import dpaudit.events as ev\n"
            "assert 'dpaudit.interop' not in sys.modules and 'dp_accounting' not in sys.modules\n"
            "sys.modules['dp_accounting'] = None  # as if it were not installed\n"
            "try:\n"
            "    ev.to_dp_accounting(ev.Gaussian(1.0))\n"
            "except ImportError as exc:\n"
            "    assert 'dp-accounting' in str(exc), exc\n"
            "else:\n"
            "    raise SystemExit('no ImportError')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
