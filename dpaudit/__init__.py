"""dpaudit: differential-privacy accounting, auditing and accuracy checking.

Accountant numbers are upper bounds (``dpaudit.accountant``); auditor numbers are lower bounds that
hold with the stated confidence (``dpaudit.audit``).
"""

from __future__ import annotations

import importlib
from typing import Any

# Public names and the modules that define them, imported on first use (``dpaudit --help`` and the
# budget commands start without loading scipy, statsmodels, matplotlib or sympy).
_LAZY = {
    "audit": "dpaudit.auditor",
    "AuditResult": "dpaudit.auditor",
    "audit_curve": "dpaudit.auditor",
    "CurveAuditResult": "dpaudit.auditor",
    "check_accuracy": "dpaudit.auditor",
    "AccuracyResult": "dpaudit.auditor",
    "Guarantee": "dpaudit.guarantee",
    "audit_scores": "dpaudit.auditor",
    "ScoreAuditResult": "dpaudit.auditor",
    "audit_one_run": "dpaudit.auditor",
    "OneRunResult": "dpaudit.auditor",
    "replay": "dpaudit.replay",
    "ReplayResult": "dpaudit.replay",
}
# Names that are the module itself: ``dpaudit.replay`` is the package dpaudit/replay/, callable as its
# ``replay`` function (so ``import dpaudit.replay`` and ``dpaudit.replay(...)`` agree).
_MODULES = {"replay"}

__all__ = list(_LAZY)
from ._version import __version__


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        value = module if name in _MODULES else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpaudit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
