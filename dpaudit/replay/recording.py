"""The instrumented generator: a ``numpy.random.Generator`` that logs every draw and can perturb noise draws.

:class:`RecordingGenerator` is a real ``Generator`` subclass over a PCG64 bit generator, so a mechanism
sees the same bit stream as ``numpy.random.default_rng(seed)`` and ``isinstance(rng, Generator)`` holds.
Every public sampling method appends a :class:`Draw` to the run's :class:`Recorder`: the method, the
shape of what it returned, its parameters as passed, and, for the additive noise primitives, the noise
family and scale. Noise primitives are location-scale draws whose standardised value the replay may move
(``laplace``, ``normal``, ``standard_normal`` here; :mod:`dpaudit.replay.hooks` adds the library's own
samplers and diffprivlib's ``randomise``); every other draw (uniforms, integers, bytes, choices, ...) is
frozen randomness, identical between two runs with the same seed as long as the sequences of calls agree.

A run may ask for *perturbations*: ``{draw index: array t}`` adds ``scale * t`` to the value that primitive
draw returns (t in standard units), which is how the replay measures how the output responds to the noise;
and for *overrides*: ``{draw index: noise}`` returns this run's location plus that noise instead (the noise
of another run, so the frozen randomness can change while the noise stays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Draw", "Recorder", "RecordingGenerator", "NOISE_FAMILIES", "DISCRETE_FAMILIES", "GENERATOR_PRIMITIVES",
           "generator_draw", "SEEDED_INSIDE", "seeded_inside",
           "primitive_parameters", "bind_arguments"]

#: Noise families the replay can attribute a shift to. Continuous ones are moved in standard units
#: (Laplace(0, 1), N(0, 1): the unit is the scale); discrete ones (integer noise: discrete Laplace with
#: P(k) ~ exp(-|k| / scale), discrete Gaussian with P(k) ~ exp(-k^2 / (2 scale^2))) in integer steps.
NOISE_FAMILIES: tuple[str, ...] = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
DISCRETE_FAMILIES: tuple[str, ...] = ("discrete_laplace", "discrete_gaussian")

#: Generator methods that are additive noise primitives: method -> (family, location keyword, scale keyword).
GENERATOR_PRIMITIVES: dict[str, tuple[str, str | None, str | None]] = {
    "laplace": ("laplace", "loc", "scale"),
    "normal": ("gaussian", "loc", "scale"),
    "standard_normal": ("gaussian", None, None),
}

#: Appended to the source of a draw from a generator the mechanism seeded itself (``default_rng(12345)``, the
#: global state after ``np.random.seed(0)``): its values do not depend on the generator the replay hands it.
SEEDED_INSIDE = " (seeded inside the mechanism)"


def seeded_inside(draw: Draw) -> bool:
    """Whether ``draw`` came from a generator the mechanism seeded itself."""
    return draw.source.endswith(SEEDED_INSIDE)


#: Public sampling methods of ``numpy.random.Generator`` that are logged (everything that draws).
_SAMPLING_METHODS: tuple[str, ...] = tuple(
    name for name in dir(np.random.Generator)
    if not name.startswith("_") and name not in ("bit_generator", "spawn") and callable(getattr(np.random.Generator, name)))

#: Parameter arrays up to this many elements are compared by value between runs (larger: shape and dtype).
_VALUE_LIMIT = 8


def _parameter_key(value: Any) -> Any:
    """A hashable, comparable summary of one argument as passed."""
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    array = np.asarray(value) if not isinstance(value, np.random.Generator) else None
    if array is None or array.dtype == object:
        return type(value).__name__
    if array.size <= _VALUE_LIMIT:
        return ("array", array.shape, tuple(array.ravel().tolist()))
    return ("array", array.shape, str(array.dtype))


@dataclass(frozen=True)
class Draw:
    """One logged draw.

    Attributes:
        index: position in the run's sequence of draws.
        source: where it came from ("rng", "numpy.random", "dpaudit", "diffprivlib").
        method: the sampling function's name.
        shape: shape of the value returned.
        parameters: the arguments as passed (summarised: small arrays by value, large ones by shape).
        family: the noise family for a noise primitive ("laplace", "gaussian"), else None (frozen draw).
        scale: the scale of a noise primitive as passed (broadcast to ``shape``), else None.
        location: the location of a noise primitive as passed (broadcast to ``shape``), else None.
        value: what a noise primitive returned (before any perturbation), else None.
        unit: what one step of perturbation adds to a noise primitive's value (the scale for continuous
            families, 1 for discrete ones), else None.
    """

    index: int
    source: str
    method: str
    shape: tuple[int, ...]
    parameters: tuple[tuple[str, Any], ...]
    family: str | None = None
    scale: np.ndarray | None = field(default=None, compare=False, repr=False)
    location: np.ndarray | None = field(default=None, compare=False, repr=False)
    value: np.ndarray | None = field(default=None, compare=False, repr=False)
    unit: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def signature(self) -> tuple[Any, ...]:
        """What must agree between the runs on d and d' for the draws to be the same (the location of a
        noise primitive may differ: that is a shift, not a different draw)."""
        parameters = tuple((key, value) for key, value in self.parameters if key not in ("loc", "value"))
        return self.source, self.method, self.shape, parameters

    @property
    def elements(self) -> int:
        return int(np.prod(self.shape)) if self.shape else 1

    def describe(self) -> str:
        shown = ", ".join(f"{key}={value!r}" for key, value in self.parameters if key not in ("value",))
        return f"#{self.index} {self.source}.{self.method}({shown}) -> shape {self.shape}"

    def to_dict(self) -> dict[str, Any]:
        scale = None if self.scale is None else float(np.max(self.scale)) if self.scale.size else None
        return {"index": self.index, "source": self.source, "method": self.method, "shape": list(self.shape),
                "family": self.family, "scale": scale}


class Recorder:
    """The log of one run, the perturbations it applies, and the depth of nested primitive calls."""

    def __init__(self, seed: int, perturbations: dict[int, np.ndarray] | None = None,
                 overrides: dict[int, np.ndarray] | None = None) -> None:
        self.seed = seed
        self.draws: list[Draw] = []
        self.perturbations = perturbations or {}
        self.overrides = overrides or {}
        self._depth = 0
        self._children = 0

    def child_seed(self) -> np.random.SeedSequence:
        """A deterministic seed for a generator the mechanism creates without one (``default_rng()``)."""
        self._children += 1
        return np.random.SeedSequence(self.seed, spawn_key=(1 << 20, self._children))

    def call(self, source: str, method: str, function: Callable[..., Any], arguments: dict[str, Any],
             primitive: tuple[str, Any, Any] | None) -> Any:
        """Run ``function(**arguments)`` (a draw), log it, and apply this run's perturbation to a primitive.

        ``primitive`` is (family, location, scale) for a noise primitive, else None. Draws made inside a
        primitive (its own uniforms or bits) are part of it and not logged.
        """
        if self._depth:
            return function(**arguments)
        self._depth += 1
        try:
            value = function(**arguments)
        finally:
            self._depth -= 1
        shape = tuple(np.shape(value))
        index = len(self.draws)
        parameters = tuple((key, _parameter_key(arguments[key])) for key in sorted(arguments) if key != "self")
        if primitive is None:
            self.draws.append(Draw(index, source, method, shape, parameters))
            return value
        family, location, scale = primitive
        scale_array = np.broadcast_to(np.asarray(scale, dtype=np.float64), shape)
        location_array = np.broadcast_to(np.asarray(location, dtype=np.float64), shape)
        unit = np.ones(shape) if family in DISCRETE_FAMILIES else scale_array
        self.draws.append(Draw(index, source, method, shape, parameters, family, scale_array, location_array,
                               np.array(value, dtype=np.float64), unit))
        override = self.overrides.get(index)
        if override is not None and np.shape(override) == shape:  # another run's noise, at this run's location
            forced = location_array + override
            value = (int(round(float(forced))) if isinstance(value, (int, np.integer)) else float(forced)) \
                if np.ndim(value) == 0 else np.array(forced, dtype=np.float64)
        shift = self.perturbations.get(index)
        if shift is None or np.shape(shift) != shape:  # the draws changed course: the caller sees it in the log
            return value
        moved = np.asarray(value, dtype=np.float64) + unit * shift
        if np.ndim(value) == 0:
            return int(round(float(moved))) if isinstance(value, (int, np.integer)) else float(moved)
        return moved


def primitive_parameters(method: str, arguments: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """(family, location, scale) when ``method`` with these arguments is a Generator noise primitive."""
    primitive = GENERATOR_PRIMITIVES.get(method)
    if primitive is None:
        return None
    family, location_key, scale_key = primitive
    location = arguments.get(location_key, 0.0) if location_key else 0.0
    scale = arguments.get(scale_key, 1.0) if scale_key else 1.0
    return family, location, scale


def generator_draw(recorder: Recorder, generator: np.random.Generator, source: str, method: str,
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Draw ``generator.method(*args, **kwargs)`` through the base Generator method, logged in ``recorder``."""
    base = getattr(np.random.Generator, method)
    if getattr(generator, "seeded_inside", False):
        source += SEEDED_INSIDE
    if method in _SIGNATURES:
        arguments = bind_arguments(method, args, kwargs)
        return recorder.call(source, method, lambda **kw: base(generator, **kw), arguments,
                             primitive_parameters(method, arguments))
    summary = {**{f"arg{i}": value for i, value in enumerate(args)}, **kwargs}
    return recorder.call(source, method, lambda **_: base(generator, *args, **kwargs), summary, None)


_SIGNATURES: dict[str, tuple[str, ...]] = {
    # positional parameter names of the sampling methods whose arguments the replay reads or compares
    "laplace": ("loc", "scale", "size"),
    "normal": ("loc", "scale", "size"),
    "standard_normal": ("size", "dtype", "out"),
}


def bind_arguments(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The positional arguments of a noise primitive named, merged with its keyword arguments."""
    bound = dict(zip(_SIGNATURES[name], args))
    bound.update(kwargs)
    return bound


class RecordingGenerator(np.random.Generator):
    """A ``numpy.random.Generator`` (PCG64, same stream as ``default_rng(seed)``) that logs every draw into
    ``recorder`` and applies the recorder's perturbations to noise primitives.

    Example:
        >>> rng = RecordingGenerator(Recorder(0))
        >>> value = rng.laplace(0.0, 2.0, 3)
        >>> [draw.method for draw in rng.recorder.draws], rng.recorder.draws[0].family
        (['laplace'], 'laplace')
        >>> bool(np.all(value == np.random.default_rng(0).laplace(0.0, 2.0, 3)))
        True
    """

    def __init__(self, recorder: Recorder, seed: Any = None, *, seeded_inside: bool = False) -> None:
        super().__init__(np.random.PCG64(recorder.seed if seed is None else seed))
        self._recorder = recorder
        self.seeded_inside = seeded_inside  # seeded by the mechanism itself: its draws ignore the run's seed

    @property
    def recorder(self) -> Recorder:
        return self._recorder

    def spawn(self, n_children: int) -> list[np.random.Generator]:
        """Children that log into the same recorder (their streams are the parent's spawned ones)."""
        children = self.bit_generator.seed_seq.spawn(n_children)
        return [RecordingGenerator(self._recorder, child, seeded_inside=self.seeded_inside) for child in children]

    def __reduce__(self) -> Any:  # a recorder is per run: copies are plain generators with the same state
        generator = np.random.Generator(np.random.PCG64())
        generator.bit_generator.state = self.bit_generator.state
        return generator.__reduce__()


def _install_methods() -> None:
    for name in _SAMPLING_METHODS:
        setattr(RecordingGenerator, name, _logged_method(name))


def _logged_method(name: str) -> Callable[..., Any]:
    def method(self: RecordingGenerator, *args: Any, **kwargs: Any) -> Any:
        return generator_draw(self._recorder, self, "rng", name, args, kwargs)

    method.__name__ = name
    method.__doc__ = f"``numpy.random.Generator.{name}``, logged (and perturbed when it is a noise primitive)."
    return method


_install_methods()
