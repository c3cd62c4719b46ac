"""Privacy accountants: closed-form theorems and tight numeric accounting of event trees.

Every number returned here is an upper bound on the true epsilon (or delta), rounded up.
"""

from ..guarantee import Guarantee
from ..symbolic import symbolic
from .closed_form import SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT, advanced, amplify, basic
from .gaussian import analytic_gaussian_sigma, classic_gaussian_sigma, gaussian_delta, gaussian_epsilon
from .optimal import optimal, optimal_delta
from .per_step import PER_STEP_THEOREMS, per_step_epsilon
from .pld import PLDAccountant
from .rdp import RDPAccountant
from .zcdp import ZCDPAccountant, zcdp_delta, zcdp_epsilon
from .opacus_style import OpacusAccountant
from .calibration import dpsgd_epsilon, dpsgd_event, dpsgd_noise_multiplier
from .best import EpsilonUpper, epsilon_upper
from .calibrate import CalibrationResult, calibrate
from .curves import gdp_delta, gdp_epsilon, gdp_tradeoff

__all__ = [
    "Guarantee",
    "basic",
    "advanced",
    "optimal",
    "optimal_delta",
    "amplify",
    "per_step_epsilon",
    "PER_STEP_THEOREMS",
    "symbolic",
    "gaussian_delta",
    "gaussian_epsilon",
    "analytic_gaussian_sigma",
    "classic_gaussian_sigma",
    "SECRECY_OF_SAMPLE_ONE_SIDED_LIMIT",
    "PLDAccountant",
    "RDPAccountant",
    "ZCDPAccountant",
    "zcdp_epsilon",
    "zcdp_delta",
    "OpacusAccountant",
    "dpsgd_event",
    "dpsgd_epsilon",
    "dpsgd_noise_multiplier",
    "EpsilonUpper",
    "epsilon_upper",
    "CalibrationResult",
    "calibrate",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_tradeoff",
]
