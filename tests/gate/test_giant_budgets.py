"""Budgets of any size answer in seconds: where the gate does not build the PLD (too many compositions) or
the PLD accountant refuses the tree, the row carries the tightest other sound bound and says which."""

from __future__ import annotations

import pytest

from dpaudit.accountant import PLDAccountant, epsilon_upper
from dpaudit.errors import UnsupportedEventError
from dpaudit.events import Gaussian, Laplace, PoissonSampled, SelfComposed
from dpaudit.gate.config import BudgetSpec
from dpaudit.gate.runner import GATE_PLD_MAX_COMPOSITIONS, evaluate_budget

GIANT = 10**15


def test_an_event_budget_past_the_limit_answers_with_the_best_other_bound():
    event = SelfComposed(Laplace(1.0), GIANT)
    row = evaluate_budget(BudgetSpec("laplace", "event", 8.0, {"event": repr(event), "delta": 1e-5}))
    best = epsilon_upper(event, 1e-5, methods=("gdp", "pure", "rdp"))
    assert row["epsilon_upper"] == best.epsilon and not row["passed"]
    assert "PLD not built" in row["method"] and f"{GATE_PLD_MAX_COMPOSITIONS:.0e}" in row["method"]


def test_a_dpsgd_budget_past_the_limit_and_a_delta_budget_answer_too():
    parameters = {"noise_multiplier": 1.0, "sampling_probability": 0.01, "steps": GIANT, "delta": 1e-5}
    row = evaluate_budget(BudgetSpec("dpsgd", "dpsgd", 8.0, parameters))
    assert row["method"].startswith("RDP accountant (PLD not built") and row["epsilon_upper"] > 8.0 and not row["passed"]
    event = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), GIANT)
    row = evaluate_budget(BudgetSpec("delta", "event", None, {"event": repr(event), "epsilon": 8.0}, max_delta=1e-5))
    assert 0.0 < row["delta_upper"] <= 1.0 and not row["passed"] and "PLD not built" in row["method"]


def test_a_refusal_of_the_pld_accountant_falls_back_and_says_why(monkeypatch):
    def refuses(self, target_delta):
        raise UnsupportedEventError("PLDAccountant cannot discretise this composition: too many cells")

    monkeypatch.setattr(PLDAccountant, "epsilon", refuses)
    event = SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)
    row = evaluate_budget(BudgetSpec("small", "event", 8.0, {"event": repr(event), "delta": 1e-5}))
    assert "too many cells" in row["method"] and row["epsilon_upper"] == pytest.approx(
        epsilon_upper(event, 1e-5, methods=("gdp", "pure", "rdp")).epsilon)


def test_within_the_limit_the_pld_answers():
    parameters = {"noise_multiplier": 1.0, "sampling_probability": 0.01, "steps": 10_000, "delta": 1e-5}
    row = evaluate_budget(BudgetSpec("dpsgd", "dpsgd", 8.0, parameters))
    assert row["method"] == "PLD accountant" and row["passed"]
