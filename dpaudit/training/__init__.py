"""Audits of real training stacks (PyTorch / Opacus): canaries planted, runs scored, the sampler checked,
the claim read from the engine.

* :func:`event_from_opacus`, :func:`claim_from_opacus`: the PrivacyEngine's accountant history as a dpaudit
  event tree, and dpaudit's upper bound beside Opacus' own number;
* :func:`check_sampler`: the data loader as it really samples, tested against Poisson(q);
* :func:`audit_opacus`, :func:`audit_training`: canary presets, many-run and one-run audits, results with
  the certified lower bound, the claimed upper bound and the threat model side by side;
* :func:`check_update_scale`: the released updates' noise as declared, whatever the realised batch size;
* :func:`witness_run`: one run, no canaries, every parameter of the claim (reads, steps, clipping, noise)
  witnessed by a data ledger and an update ledger;
* :class:`TrainingMechanism`: a training stack as an auditor mechanism (``audit_curve``, ``audit``).

torch and opacus (the ``opacus`` extra) are imported only by the functions that train.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "event_from_opacus": "dpaudit.training.engine",
    "claim_from_opacus": "dpaudit.training.engine",
    "EngineClaim": "dpaudit.training.engine",
    "check_sampler": "dpaudit.training.sampler",
    "SamplerCheckResult": "dpaudit.training.sampler",
    "RecordIdBatches": "dpaudit.training.record_ids",
    "audit_opacus": "dpaudit.training.audit",
    "audit_training": "dpaudit.training.audit",
    "opacus_target": "dpaudit.training.audit",
    "TrainingMechanism": "dpaudit.training.mechanism",
    "check_update_scale": "dpaudit.training.update_scale",
    "UpdateScaleCheck": "dpaudit.training.update_scale",
    "TrainingAuditResult": "dpaudit.training.audit",
    "perfect_guess_epsilon": "dpaudit.training.audit",
    "split_false_alarm": "dpaudit.training.audit",
    "PRESETS": "dpaudit.training.canaries",
    "make_canaries": "dpaudit.training.canaries",
    "TrainingTarget": "dpaudit.training.protocol",
    "OpacusTraining": "dpaudit.training.opacus_training",
    "OpacusHooks": "dpaudit.training.opacus_hooks",
    "witness_run": "dpaudit.training.ledger",
    "WitnessResult": "dpaudit.training.ledger",
    "WitnessCheck": "dpaudit.training.ledger",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dpaudit.training' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
