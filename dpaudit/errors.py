"""Exception tree of dpaudit.

Every error raised on purpose by the package derives from :class:`DPAuditError`, and each one also
derives from the built-in exception a caller would naturally catch (``ValueError`` for a bad value,
``TypeError`` for a bad type), so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "DPAuditError",
    "InvalidArgument",
    "InvalidArgumentType",
    "UnsupportedEventError",
    "AccountingTooLargeError",
    "InfeasibleBudgetError",
    "MechanismError",
    "ConfigError",
    "ClusterError",
    "DependencyError",
]


class DPAuditError(Exception):
    """Base class of every error raised on purpose by dpaudit."""


class InvalidArgument(DPAuditError, ValueError):
    """A public argument has a value outside its allowed range.

    Attributes:
        argument: the name of the offending argument, as the caller spelled it.
    """

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


class InvalidArgumentType(DPAuditError, TypeError):
    """A public argument has the wrong type."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


class UnsupportedEventError(DPAuditError, ValueError):
    """An accountant was given a privacy event (or neighbouring relation) it cannot interpret."""


class AccountingTooLargeError(UnsupportedEventError):
    """An accountant refused, before allocating, a computation its planned grid or work bound says would
    not finish in seconds (a composition of 10^15 steps, a tilted grid of billions of cells). The event
    itself is supported: the message names the cause and the alternative (``RDPAccountant``, or
    :func:`~dpaudit.accountant.epsilon_upper`, which falls back to it). Attributes: ``accountant`` (its
    class name) and ``cells`` (the planned grid size that was refused, or None)."""

    def __init__(self, message: str, *, accountant: str = "PLDAccountant", cells: float | None = None) -> None:
        super().__init__(message)
        self.accountant = accountant
        self.cells = cells


class InfeasibleBudgetError(DPAuditError, ValueError):
    """No parameter meets the requested budget (for example a per-step delta that alone exceeds it)."""


class MechanismError(DPAuditError, RuntimeError):
    """A mechanism under audit crashed or returned output of the wrong shape or type."""


class ConfigError(DPAuditError, ValueError):
    """A gate configuration file is malformed; the message names the file, entry and key."""


class ClusterError(DPAuditError, RuntimeError):
    """A Dask cluster could not run the work: unreachable scheduler, no workers, workers that cannot import
    the mechanism, mismatched package versions. The message says which and how to fix it."""


class DependencyError(DPAuditError, ImportError):
    """An optional dependency a feature needs is missing or too old; the message names the package, the
    version found and the pip extra that installs it."""
