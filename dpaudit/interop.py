"""Conversion between dpaudit event trees and Google's dp_accounting ``DpEvent`` trees (the functions of
:mod:`dpaudit.events.conversion`, where the counterparts and conventions are listed)."""

from __future__ import annotations

from .events.conversion import from_dp_accounting, to_dp_accounting

__all__ = ["from_dp_accounting", "to_dp_accounting"]
