"""Lazy, version-checked imports of torch and Opacus for the training audits (the ``opacus`` extra)."""

from __future__ import annotations

from types import ModuleType

from ..errors import DependencyError

__all__ = ["require_torch", "require_opacus", "MIN_TORCH", "MIN_OPACUS", "INSTALL_HINT"]

MIN_TORCH = (2, 2)
MIN_OPACUS = (1, 5)
INSTALL_HINT = ('pip install "dpaudit[opacus]" (a CPU-only torch: pip install torch --index-url '
                "https://download.pytorch.org/whl/cpu)")


def _version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _require(name: str, minimum: tuple[int, int]) -> ModuleType:
    try:
        module = __import__(name)
    except ImportError as exc:
        raise DependencyError(f"training audits need {name} >= {'.'.join(map(str, minimum))}, which is not "
                              f"installed ({exc}): {INSTALL_HINT}") from exc
    found = getattr(module, "__version__", "0")
    if _version(str(found)) < minimum:
        raise DependencyError(f"training audits need {name} >= {'.'.join(map(str, minimum))}, found {found}: "
                              f"{INSTALL_HINT}")
    return module


def require_torch() -> ModuleType:
    """The torch module (>= 2.2), or DependencyError naming the extra to install."""
    return _require("torch", MIN_TORCH)


def require_opacus() -> ModuleType:
    """The opacus module (>= 1.5, with torch >= 2.2), or DependencyError naming the extra to install."""
    require_torch()
    return _require("opacus", MIN_OPACUS)
