"""A safe parser of privacy-event trees written as their own ``repr``: never ``eval``.

``parse_event("SelfComposed(PoissonSampled(0.01, Gaussian(1.0)), 1000)")`` reads the text with Python's
:mod:`ast` and accepts only calls of the event classes of :mod:`dpaudit.events` (by name), whose arguments
(positional or keyword) are numeric literals (optionally signed; ``inf`` too), other such calls, lists/tuples
of calls (for ``Composed``) or of numbers (a mixture's sensitivities). Anything else (names, attributes, strings, operators, comprehensions, ...) is
rejected with an :class:`EventParseError` (an ``InvalidArgument``) whose ``column`` (1-based) points at the
offending node; a value an event rejects (``Gaussian(-1)``) is reported at its call's column.

Example:
    >>> parse_event("Composed([Gaussian(noise_multiplier=2.0), PureDP(0.5)])")
    Composed(events=(Gaussian(noise_multiplier=2.0), PureDP(epsilon=0.5)))
"""

from __future__ import annotations

import ast
from typing import Any

from . import events as _events
from .errors import DPAuditError, InvalidArgument, InvalidArgumentType

__all__ = ["parse_event", "EventParseError", "EVENT_NAMES", "MAX_EVENT_TEXT"]

#: The event classes a string may name (SampledWithReplacement is included when the events module has it).
EVENT_NAMES: tuple[str, ...] = tuple(
    name for name in ("Laplace", "Gaussian", "PureDP", "RandomizedResponse", "Composed", "SelfComposed",
                      "PoissonSampled", "SampledWithoutReplacement", "SampledWithReplacement", "DiscreteGaussian",
                      "DiscreteLaplace", "ZCDP", "ApproxDP", "BoundedRange", "TreeAggregation", "MixtureOfGaussians",
                      "TruncatedSubsampledGaussian", "RepeatAndSelect", "UserLevel",
                      "RandomAllocation", "BandMF")
    if isinstance(getattr(_events, name, None), type))
#: Longest accepted text (characters); bounds parsing time and memory.
MAX_EVENT_TEXT = 100_000
_MAX_DEPTH = 200


class EventParseError(InvalidArgument):
    """A malformed event string; ``column`` is 1-based (None if unknown)."""

    def __init__(self, argument: str, message: str, column: int | None) -> None:
        where = f"column {column}: " if column is not None else ""
        super().__init__(argument, where + message)
        self.column = column
        self.detail = message


def _column(node: ast.AST) -> int:
    return getattr(node, "col_offset", 0) + 1


def parse_event(text: str, name: str = "event") -> _events.PrivacyEvent:
    """Parse an event tree written as its ``repr`` (keyword or positional arguments, lists for Composed).

    Raises:
        InvalidArgumentType: ``text`` is not a string.
        EventParseError: malformed text or invalid parameter, with the (1-based) column of the problem.
    """
    if not isinstance(text, str):
        raise InvalidArgumentType(name, f"{name}={text!r} must be a string, not {type(text).__name__}")
    if len(text) > MAX_EVENT_TEXT:
        raise EventParseError(name, f"the event text is {len(text)} characters long (at most {MAX_EVENT_TEXT})", None)
    source = text.strip()
    lead = len(text) - len(text.lstrip())
    if not source:
        raise EventParseError(name, "the event text is empty", 1)
    if "\n" in source or "\r" in source:
        raise EventParseError(name, "the event must be written on one line", source.find("\n") + lead + 1)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        column = (exc.offset or 1) + lead
        raise EventParseError(name, f"not a valid event expression ({exc.msg})", column) from None
    except (RecursionError, MemoryError, ValueError):
        raise EventParseError(name, "the event expression is too deeply nested or malformed", None) from None
    try:
        return _Builder(name, lead).event(tree.body, 0)
    except RecursionError:
        raise EventParseError(name, "the event expression is too deeply nested", None) from None


class _Builder:
    def __init__(self, name: str, lead: int) -> None:
        self.name, self.lead = name, lead

    def error(self, node: ast.AST, message: str) -> EventParseError:
        return EventParseError(self.name, message, _column(node) + self.lead)

    def event(self, node: ast.AST, depth: int) -> _events.PrivacyEvent:
        if depth > _MAX_DEPTH:
            raise self.error(node, f"the event tree is nested more than {_MAX_DEPTH} levels deep")
        if not isinstance(node, ast.Call):
            raise self.error(node, f"expected an event such as Gaussian(1.0), got {_describe(node)}")
        if not isinstance(node.func, ast.Name):
            raise self.error(node.func, f"expected an event name, got {_describe(node.func)}")
        kind = node.func.id
        if kind not in EVENT_NAMES:
            raise self.error(node.func, f"unknown event {kind!r} (known: {', '.join(EVENT_NAMES)})")
        args = [self.value(arg, depth) for arg in node.args]
        kwargs: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:
                raise self.error(keyword.value, "'**' arguments are not allowed")
            if keyword.arg in kwargs:
                raise self.error(keyword.value, f"argument {keyword.arg!r} given twice")
            kwargs[keyword.arg] = self.value(keyword.value, depth)
        cls = getattr(_events, kind)
        if kind == "Composed" and "events" in kwargs:  # its repr: Composed(events=(...))
            if args:
                raise self.error(node, "Composed: give the events either positionally or as events=[...]")
            args = [kwargs.pop("events")]
        try:
            return cls(*args, **kwargs)
        except TypeError as exc:
            if isinstance(exc, DPAuditError):
                raise self.error(node, f"{kind}: {exc}") from None
            raise self.error(node, f"{kind}: wrong arguments ({_clean_type_error(exc)})") from None
        except (DPAuditError, ValueError) as exc:
            raise self.error(node, f"{kind}: {exc}") from None

    def value(self, node: ast.AST, depth: int) -> Any:
        if isinstance(node, ast.Call):
            return self.event(node, depth + 1)
        if isinstance(node, (ast.List, ast.Tuple)):
            if node.elts and not any(isinstance(item, ast.Call) for item in node.elts):
                return [self.number(item) for item in node.elts]  # e.g. a mixture's sensitivities
            return [self.event(item, depth + 1) for item in node.elts]
        return self.number(node)

    def number(self, node: ast.AST) -> Any:
        number = node
        sign = 1
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            sign = -1 if isinstance(node.op, ast.USub) else 1
            number = node.operand
        if isinstance(number, ast.Constant) and isinstance(number.value, (int, float)) and not isinstance(number.value, bool):
            return sign * number.value
        if isinstance(number, ast.Name) and number.id == "inf":  # as events print it (RepeatAndSelect's shape)
            return sign * float("inf")
        raise self.error(node, f"expected a number, an event or a list of events, got {_describe(node)}")


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return f"{type(node.value).__name__} {node.value!r}"
    if isinstance(node, ast.Name):
        return f"the name {node.id!r}"
    return f"an expression of type {type(node).__name__}"


def _clean_type_error(exc: TypeError) -> str:
    text = str(exc)
    return text.split("() ", 1)[-1] if "() " in text else text
