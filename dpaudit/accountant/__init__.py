"""Privacy accountants: closed-form theorems and tight numeric accounting of event trees.

Every number returned here is an upper bound on the true epsilon (or delta), rounded up.
"""

from __future__ import annotations

import importlib
from typing import Any

# Functions named like their own submodule are imported eagerly (light: numpy only); lazily, an import of
# the submodule elsewhere would bind the package attribute to the module instead of the function.
from .optimal import optimal, optimal_delta

# Public names and the modules that define them, imported on first use: `dpaudit budget basic` loads the
# closed forms only, not sympy or scipy.optimize. Add new public names here (not as eager imports).
_LAZY = {
    "Guarantee": "dpaudit.guarantee",
    "symbolic": "dpaudit.symbolic",
    "SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT": "dpaudit.accountant.closed_form",
    "advanced": "dpaudit.accountant.closed_form",
    "amplify": "dpaudit.accountant.closed_form",
    "basic": "dpaudit.accountant.closed_form",
    "analytic_gaussian_sigma": "dpaudit.accountant.gaussian",
    "classic_gaussian_sigma": "dpaudit.accountant.gaussian",
    "gaussian_delta": "dpaudit.accountant.gaussian",
    "gaussian_epsilon": "dpaudit.accountant.gaussian",
    "PER_STEP_THEOREMS": "dpaudit.accountant.per_step",
    "per_step_epsilon": "dpaudit.accountant.per_step",
    "PLDAccountant": "dpaudit.accountant.pld",
    "RDPAccountant": "dpaudit.accountant.rdp",
    "ZCDPAccountant": "dpaudit.accountant.zcdp",
    "zcdp_delta": "dpaudit.accountant.zcdp",
    "zcdp_epsilon": "dpaudit.accountant.zcdp",
    "OpacusAccountant": "dpaudit.accountant.opacus_style",
    "calibrate": "dpaudit.accountant.calibration",
    "CalibrationResult": "dpaudit.accountant.calibration",
    "dpsgd_epsilon": "dpaudit.accountant.calibration",
    "dpsgd_event": "dpaudit.accountant.calibration",
    "dpsgd_noise_multiplier": "dpaudit.accountant.calibration",
    "EpsilonUpper": "dpaudit.accountant.best",
    "epsilon_upper": "dpaudit.accountant.best",
    "bounded_range_composition": "dpaudit.accountant.bounded_range",
    "BoundedRangeComposition": "dpaudit.accountant.bounded_range",
    "gdp_delta": "dpaudit.accountant.curves",
    "gdp_epsilon": "dpaudit.accountant.curves",
    "gdp_tradeoff": "dpaudit.accountant.curves",
    "AttackRisk": "dpaudit.accountant.risk",
    "attack_risk": "dpaudit.accountant.risk",
    "epsilon_for_tpr": "dpaudit.accountant.risk",
    "gdp_advantage": "dpaudit.accountant.risk",
    "gdp_tpr_at_fpr": "dpaudit.accountant.risk",
    "STANDARD_FPRS": "dpaudit.accountant.risk",
    "tpr_lower_from_tests": "dpaudit.accountant.risk",
    "guarantee_attack_risk": "dpaudit.accountant.risk",
    "UserLevelEpsilon": "dpaudit.accountant.user_level",
    "user_level_epsilon": "dpaudit.accountant.user_level",
    "group_privacy_epsilon": "dpaudit.accountant.user_level",
}

__all__ = [*_LAZY, "optimal", "optimal_delta"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpaudit.accountant' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
