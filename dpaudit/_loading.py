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


def _place(directories: list[str], first: bool) -> None:
    """Put ``directories`` (in this order) at the front of sys.path, or at its end."""
    for directory in directories:
        while directory in sys.path:
            sys.path.remove(directory)
    if first:
        sys.path[0:0] = directories
    else:
        sys.path.extend(directories)


def load_object(spec: str, name: str = "mechanism", base: str | os.PathLike | None = None) -> Any:
    """Import ``module:attribute`` (attribute may be dotted). Modules are looked up in ``base`` first (a
    gate file's directory), then in the current directory, then on the usual path. Those directories lead
    sys.path only while the user's module is imported; afterwards they follow it, so a file of the user's
    (a ``matplotlib.py`` beside the config) can never shadow a module dpaudit imports later (its plots)."""
    if not isinstance(spec, str) or spec.count(":") != 1:
        raise InvalidArgument(name, f"{name}={spec!r} must look like 'package.module:attribute'")
    module_name, attribute = spec.split(":")
    directories = list(dict.fromkeys(([os.path.abspath(base)] if base is not None else []) + [os.getcwd()]))
    _place(directories, first=True)
    try:
        with phase(f"importing module {module_name!r} ({name}={spec!r})", bounded=True):
            value: Any = importlib.import_module(module_name)
    except SystemExit as exc:
        raise MechanismError(f"{name}={spec!r}: importing {module_name!r} called sys.exit({exc.code!r}); a module may not "
                             "end the process") from None
    except Exception as exc:
        raise InvalidArgument(name, f"{name}={spec!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc})") from exc
    finally:
        _place(directories, first=False)  # still found (modules the user's code imports later), never first
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
