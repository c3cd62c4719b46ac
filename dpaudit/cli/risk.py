"""``--risk`` on ``dpaudit budget`` sub-commands: the attack risk an event tree's curve allows.

Prints, for the composed event (or, on ``basic``, ``advanced``, ``optimal`` and ``amplify``, for the
(epsilon, delta) result's worst-case curve), an upper bound on the true-positive rate of any membership attack at the
standard false-positive rates (0.001, 0.01, 0.1) and on its advantage TPR - FPR (Kulynych et al. 2024,
read from the accountant's trade-off curve by :mod:`dpaudit.accountant.risk`); ``--json`` carries the
same numbers under ``"risk"``.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_risk_flag", "risk_section", "guarantee_risk_section"]


def add_risk_flag(parser: argparse.ArgumentParser) -> None:
    """Add ``--risk`` to a sub-command."""
    parser.add_argument("--risk", action="store_true",
                        help="also print the attack risk the curve allows: any membership attack's TPR at FPR "
                             "0.001, 0.01, 0.1 and its advantage (upper bounds)")


def _text(risk: Any, label: str) -> str:
    from ..reporting import format_number

    rates = ", ".join(f"TPR <= {format_number(t, 4, 'up')} at FPR {f:g}" for f, t in zip(risk.fprs, risk.tpr_upper))
    return (f"attack risk{label} ({risk.accountant}, upper bounds on any membership attack): {rates}; "
            f"advantage (TPR - FPR) <= {format_number(risk.advantage_upper, 4, 'up')}")


def guarantee_risk_section(epsilon: float, delta: float) -> tuple[dict[str, Any], str]:
    """(JSON payload, text line) of the attack risk an (epsilon, delta)-DP result allows."""
    from ..accountant import guarantee_attack_risk

    risk = guarantee_attack_risk(epsilon, delta)
    return risk.to_dict(), _text(risk, "")


def risk_section(event: Any, accountant: str, neighbouring: str, label: str = "") -> tuple[dict[str, Any], str]:
    """(JSON payload, text lines) of the attack risk of ``event`` under ``accountant`` ("pld", "rdp",
    "zcdp"; "best" reads the PLD accountant, falling back to RDP when PLD cannot account for the tree)."""
    from ..accountant import PLDAccountant, RDPAccountant, ZCDPAccountant, attack_risk

    kinds = {"pld": PLDAccountant, "rdp": RDPAccountant, "zcdp": ZCDPAccountant}
    name = accountant if accountant in kinds else "pld"
    acct = kinds[name](neighbouring=neighbouring)
    if not acct.supports(event) and name == "pld":
        name, acct = "rdp", RDPAccountant(neighbouring=neighbouring)
    risk = attack_risk(acct.compose(event), name=name)
    return risk.to_dict(), _text(risk, label)
