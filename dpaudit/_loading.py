"""Import user objects named "package.module:attribute" (mechanisms, neighbour lists).

An import runs user code: inside an isolated child (``dpaudit._isolation``) it is a named phase with its
own deadline; a module that calls ``sys.exit`` at import is a MechanismError (user code that failed), never
the end of the process."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from ._isolation import phase
from .errors import InvalidArgument, MechanismError

__all__ = ["load_object", "load_pairs", "pairs_from"]


def _importable_first(directories: list[str]) -> None:
    """Put ``directories`` at the front of sys.path, in this order."""
    for directory in reversed(directories):
        if directory in sys.path:
            sys.path.remove(directory)
        sys.path.insert(0, directory)


def load_object(spec: str, name: str = "mechanism", base: str | os.PathLike | None = None) -> Any:
    """Import ``module:attribute`` (attribute may be dotted). Modules are looked up in ``base`` first (a
    gate file's directory), then in the current directory, then on the usual path."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise InvalidArgument(name, f"{name}={spec!r} must look like 'package.module:attribute'")
    module_name, attribute = spec.split(":")
    _importable_first(([os.path.abspath(base)] if base is not None else []) + [os.getcwd()])
    try:
        with phase(f"importing module {module_name!r} ({name}={spec!r})", bounded=True):
            value: Any = importlib.import_module(module_name)
    except SystemExit as exc:
        raise MechanismError(f"{name}={spec!r}: importing {module_name!r} called sys.exit({exc.code!r}); a module may not "
                             "end the process") from None
    except Exception as exc:
        raise InvalidArgument(name, f"{name}={spec!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from exc
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise InvalidArgument(name, f"{name}={spec!r}: {module_name!r} has no attribute {attribute!r}")
        value = getattr(value, part)
    return value


def load_pairs(spec: str, name: str = "neighbours", base: str | os.PathLike | None = None) -> list[tuple[Any, Any]]:
    """Import a list of (d, d_prime) pairs, or a callable returning one."""
    return pairs_from(load_object(spec, name, base), spec, name)


def pairs_from(value: Any, spec: str, name: str = "neighbours") -> list[tuple[Any, Any]]:
    """Validate a neighbours object: a list of (d, d_prime) pairs, or a callable returning one (called here;
    an exception in it becomes MechanismError: user code that failed, not a usage error)."""
    if callable(value):
        try:
            value = value()
        except Exception as exc:
            raise MechanismError(f"{name}={spec!r}: calling it raised {type(exc).__name__}: {exc}") from exc
    try:
        pairs = [tuple(pair) for pair in value]
    except TypeError as exc:
        raise InvalidArgument(name, f"{name}={spec!r} must be a list of (d, d_prime) pairs or return one") from exc
    if not pairs or any(len(pair) != 2 for pair in pairs):
        raise InvalidArgument(name, f"{name}={spec!r} must be a non-empty list of (d, d_prime) pairs")
    return pairs
