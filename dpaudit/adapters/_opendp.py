"""OpenDP measurements as dpaudit mechanisms.

OpenDP samples noise from the operating system's cryptographically secure generator, which cannot be
seeded: audits of an OpenDP measurement are not reproducible. The adapted mechanism says so
(``reproducible = False``); the auditor then runs it in one process (its samples stay independent) and
every result carries a "not reproducible" warning. Its claim is OpenDP's own privacy map:
``OpenDPMechanism.privacy`` (pure DP measurements, ``d_in`` given) or ``.claim`` (any measure).
"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidArgumentType
from ..guarantee import Guarantee
from ._scalar import stack_outputs

__all__ = ["opendp", "OpenDPMechanism", "MIN_VERSION", "NOT_REPRODUCIBLE"]

MIN_VERSION = (0, 10)
NOT_REPRODUCIBLE = ("OpenDP draws its noise from the operating system's secure generator, which cannot be seeded: "
                    "the samples, and so this result, are not reproducible run to run")

_INTEGERS = {"i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize"}


def _converter(carrier: str) -> Any:
    """A function from dpaudit data (numbers, lists, arrays) to the measurement's input carrier type."""
    inner = carrier[4:-1] if carrier.startswith("Vec<") and carrier.endswith(">") else None
    atom = inner if inner is not None else carrier
    if atom in ("f32", "f64"):
        element = float
    elif atom in _INTEGERS:
        element = int
    elif atom == "bool":
        element = bool
    elif atom == "String":
        element = str
    else:
        return lambda data: data  # another carrier: handed over as given
    if inner is not None:
        return lambda data: [element(v) for v in np.asarray(data).ravel().tolist()]

    def one(data: Any) -> Any:
        values = np.asarray(data).ravel()
        if values.size != 1:
            raise ValueError(f"the measurement takes one {carrier} value: data must be a number or a 1-element "
                             f"sequence, got {values.size} values")
        return element(values[0].item())

    return one


def _output(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [float(v) for v in value]
    return value


class OpenDPMechanism:
    """An OpenDP ``Measurement`` as ``mechanism(data, size, rng)`` (one invocation per output; the
    ``rng`` is not used because OpenDP cannot be seeded)."""

    reproducible = False
    reproducibility_note = NOT_REPRODUCIBLE

    def __init__(self, measurement: Any, d_in: Any = None, elementwise: bool = False) -> None:
        self.measurement = measurement
        self.d_in = d_in
        self.elementwise = elementwise
        carrier = str(measurement.input_carrier_type)
        self._convert = _converter(carrier[4:-1] if elementwise else carrier)
        self.claim = measurement.map(d_in) if d_in is not None else None
        pure = str(measurement.output_measure).startswith("MaxDivergence")
        self.privacy = Guarantee(float(self.claim), 0.0) if pure and isinstance(self.claim, (int, float)) else None
        self.__name__ = f"OpenDP measurement on {measurement.input_domain}"

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        value = self._convert(data)
        measurement = self.measurement
        if self.elementwise:  # one call on `size` copies: independent noise per element
            outputs = _output(measurement([value] * size))
            if len(outputs) != size:
                raise ValueError(f"elementwise=True: the measurement returned {len(outputs)} values for {size} inputs")
            return stack_outputs(outputs, self.__name__)
        return stack_outputs([_output(measurement(value)) for _ in range(size)], self.__name__)

    def __repr__(self) -> str:
        return f"dpaudit.adapters.opendp({self.measurement.input_domain} -> {self.measurement.output_measure})"


def opendp(measurement: Any, d_in: Any = None, *, elementwise: bool = False) -> OpenDPMechanism:
    """Adapt an OpenDP ``Measurement`` (``opendp.mod.Measurement``).

    Args:
        measurement: the measurement; ``data`` handed to the mechanism is converted to its input carrier
            type (a number for atom domains, a list for vector domains).
        d_in: the input distance of adjacent datasets (e.g. 1 for add/remove-one under the symmetric
            distance, the sensitivity for a scalar metric); then ``.claim = measurement.map(d_in)`` and, for
            pure-DP measurements (``MaxDivergence``), ``.privacy`` is that epsilon as a ``Guarantee``.
        elementwise: the measurement works on a vector domain and adds independent noise to each element
            (``make_laplace``, ``make_gaussian``, ``make_geometric`` on a ``vector_domain``): the data is
            one value and a batch is ONE call on ``size`` copies of it. OpenDP spends about 0.25 ms per
            call, so this is several times faster than one call per output.

    Audits are not reproducible (OpenDP cannot be seeded): the result says so in its warnings.

    Raises:
        TypeError: ``measurement`` is not an OpenDP Measurement (a Transformation, another library's object).
        ValueError: OpenDP is missing or older than 0.10.

    Example:
        >>> import opendp.prelude as dp                                           # doctest: +SKIP
        >>> dp.enable_features("contrib")                                          # doctest: +SKIP
        >>> m = dp.m.make_laplace(dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float), scale=1.0)  # doctest: +SKIP
        >>> mechanism = opendp(m, d_in=1.0)                                       # doctest: +SKIP
        >>> dpaudit.audit(mechanism, 0.0, 1.0, epsilon=mechanism.privacy.epsilon).violated  # doctest: +SKIP
        False
    """
    module = type(measurement).__module__ or ""
    if not module.startswith("opendp"):
        hint = " (for a diffprivlib object use dpaudit.adapters.diffprivlib)" if module.startswith("diffprivlib") else ""
        raise InvalidArgumentType("measurement", f"measurement={measurement!r} is not an OpenDP Measurement{hint}")
    try:
        version_text = metadata.version("opendp")
    except metadata.PackageNotFoundError as exc:
        raise InvalidArgument("measurement", "OpenDP is not installed: pip install 'dpaudit[opendp]'") from exc
    version = tuple(int(p) for p in version_text.split(".")[:2] if p.isdigit())
    if version < MIN_VERSION:
        raise InvalidArgument("measurement", f"OpenDP {version_text} is too old: the adapter needs >= "
                              f"{'.'.join(map(str, MIN_VERSION))}")
    from opendp.mod import Measurement, Transformation

    if isinstance(measurement, Transformation):
        raise InvalidArgumentType("measurement", "measurement is an OpenDP Transformation (it adds no noise): chain a "
                                  "measurement onto it, e.g. transformation >> dp.m.then_laplace(scale=1.0)")
    if not isinstance(measurement, Measurement):
        raise InvalidArgumentType("measurement", f"measurement={measurement!r} is not an OpenDP Measurement")
    if elementwise and not str(measurement.input_carrier_type).startswith("Vec<"):
        raise InvalidArgument("elementwise", f"elementwise=True needs a measurement on a vector domain, this one takes "
                              f"{measurement.input_carrier_type}")
    if d_in is not None:
        try:
            measurement.map(d_in)
        except Exception as exc:
            raise InvalidArgument("d_in", f"d_in={d_in!r} is not a valid input distance for this measurement: {exc}") from exc
    return OpenDPMechanism(measurement, d_in, elementwise)
