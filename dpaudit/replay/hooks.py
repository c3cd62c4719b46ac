"""Instrumentation beyond the ``rng`` argument: numpy's global state, the library's noise samplers, diffprivlib.

While :func:`instrumented` is active, a run started with :func:`active_run` also logs

- the legacy module-level functions of ``numpy.random`` (``np.random.laplace``, ``normal``, ``rand``,
  ``randint``, ...), served from the run's generator; ``np.random.seed(s)`` is logged and, as in numpy, fixes
  the global draws after it: they come from a generator seeded by s, marked seeded inside the mechanism;
- ``numpy.random.default_rng()``: a generator the mechanism creates logs into the same run (seeded
  deterministically from the run when no seed is given; given a seed, its draws are marked seeded inside the
  mechanism: they ignore the run's seed);
- dpaudit's own samplers ``dpaudit.mechanisms._noise.laplace`` and ``normal`` (the library's mechanisms
  draw Laplace noise as exponential times random signs: the sampler, not its parts, is the primitive);
- diffprivlib's ``Laplace.randomise`` and ``Gaussian.randomise`` (also ``GaussianAnalytic``), and the
  integer ones ``Geometric.randomise`` (discrete Laplace, scale 1 / |``_scale``|, its signed rate) and
  ``GaussianDiscrete.randomise`` (discrete Gaussian, sigma ``_scale``), when diffprivlib is imported: the
  value passed is the location and the mechanism's scale is read as the method computes it.

Randomness from anywhere else (``random``, ``secrets``, ``os.urandom``, an unseeded RandomState, C
extensions) is not seen; the replay detects it when two runs with the same seed differ. Patching is
process-wide: do not replay from several threads at once.
"""

from __future__ import annotations

import contextlib
import sys
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from ..mechanisms import _noise
from .recording import SEEDED_INSIDE, Recorder, RecordingGenerator, generator_draw

__all__ = ["instrumented", "active_run"]

#: Legacy numpy.random functions and the Generator method each is served by.
_LEGACY: dict[str, str] = {
    **{name: name for name in (
        "beta", "binomial", "bytes", "chisquare", "choice", "dirichlet", "exponential", "f", "gamma", "geometric",
        "gumbel", "hypergeometric", "laplace", "logistic", "lognormal", "logseries", "multinomial",
        "multivariate_normal", "negative_binomial", "noncentral_chisquare", "noncentral_f", "normal", "pareto",
        "permutation", "poisson", "power", "rayleigh", "shuffle", "standard_cauchy", "standard_exponential",
        "standard_gamma", "standard_normal", "standard_t", "triangular", "uniform", "vonmises", "wald", "weibull",
        "zipf")},
    "random": "random", "random_sample": "random", "ranf": "random", "sample": "random", "randint": "integers",
}

_current: list[tuple[Recorder, RecordingGenerator]] = []


@contextlib.contextmanager
def active_run(recorder: Recorder, generator: RecordingGenerator) -> Iterator[None]:
    """Route the instrumented global sources to ``recorder`` for the duration of one run."""
    _current.append((recorder, generator))
    try:
        yield
    finally:
        _current.pop()


def _legacy_function(name: str, method: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def function(*args: Any, **kwargs: Any) -> Any:
        if not _current:
            return original(*args, **kwargs)
        recorder, generator = _current[-1]
        return generator_draw(recorder, generator, "numpy.random", method, args, kwargs)

    function.__name__ = name
    return function


def _shape_function(name: str, method: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """``rand(d0, d1, ...)`` / ``randn(d0, d1, ...)``: dimensions as positional arguments."""
    def function(*dimensions: int) -> Any:
        if not _current:
            return original(*dimensions)
        recorder, generator = _current[-1]
        return generator_draw(recorder, generator, "numpy.random", method, (dimensions or None,), {})

    function.__name__ = name
    return function


def _seed_function(original: Callable[..., Any]) -> Callable[..., Any]:
    def seed(*args: Any, **kwargs: Any) -> None:
        if not _current:
            return original(*args, **kwargs)
        recorder = _current[-1][0]
        recorder.call("numpy.random", "seed", lambda **_: None, {}, None)
        value = args[0] if args else kwargs.get("seed")
        if value is not None:  # the global state reset to a fixed seed: its draws no longer follow the run's seed
            try:
                generator = RecordingGenerator(recorder, value, seeded_inside=True)
            except (TypeError, ValueError):
                generator = RecordingGenerator(recorder, zlib.crc32(repr(value).encode()), seeded_inside=True)
            _current[-1] = (recorder, generator)
        return None

    return seed


def _default_rng_function(original: Callable[..., Any]) -> Callable[..., Any]:
    def default_rng(seed: Any = None) -> np.random.Generator:
        if not _current or isinstance(seed, (np.random.Generator, np.random.BitGenerator)):
            return original(seed)
        recorder = _current[-1][0]
        if seed is None:
            return RecordingGenerator(recorder, recorder.child_seed())
        return RecordingGenerator(recorder, seed, seeded_inside=True)  # its draws ignore the run's seed

    return default_rng


def _library_sampler(family: str, original: Callable[..., Any]) -> Callable[..., Any]:
    def sampler(rng: np.random.Generator, scale: float, shape: Any) -> np.ndarray:
        if not isinstance(rng, RecordingGenerator):
            return original(rng, scale, shape)
        source = "dpaudit" + (SEEDED_INSIDE if rng.seeded_inside else "")
        return rng.recorder.call(source, original.__name__, lambda **_: original(rng, scale, shape),
                                 {"scale": scale, "size": shape}, (family, 0.0, scale))

    sampler.__name__ = original.__name__
    sampler.__doc__ = f"dpaudit's ``{original.__name__}`` sampler, logged as a noise primitive."
    return sampler


def _diffprivlib_randomise(family: str, original: Callable[..., Any],
                           scale_of: Callable[[Any], float]) -> Callable[..., Any]:
    def randomise(self: Any, value: Any) -> Any:
        if not _current:
            return original(self, value)
        recorder = _current[-1][0]
        return recorder.call("diffprivlib", f"{type(self).__name__}.randomise", lambda **_: original(self, value),
                             {"value": value, "scale": scale_of(self)}, (family, value, scale_of(self)))

    randomise.__name__ = "randomise"
    randomise.__doc__ = "diffprivlib's ``randomise``, logged as a noise primitive."
    return randomise


def _patches() -> list[tuple[Any, str, Any]]:
    """(owner, attribute, replacement) for every source this module instruments."""
    patches: list[tuple[Any, str, Any]] = []
    for name, method in _LEGACY.items():
        patches.append((np.random, name, _legacy_function(name, method, getattr(np.random, name))))
    patches.append((np.random, "rand", _shape_function("rand", "random", np.random.rand)))
    patches.append((np.random, "randn", _shape_function("randn", "standard_normal", np.random.randn)))
    patches.append((np.random, "seed", _seed_function(np.random.seed)))
    patches.append((np.random, "default_rng", _default_rng_function(np.random.default_rng)))
    patches.append((_noise, "laplace", _library_sampler("laplace", _noise.laplace)))
    patches.append((_noise, "normal", _library_sampler("gaussian", _noise.normal)))
    if "diffprivlib" in sys.modules:  # only when the mechanism under replay has imported it
        from diffprivlib.mechanisms import Gaussian as DiffprivlibGaussian
        from diffprivlib.mechanisms import Laplace as DiffprivlibLaplace

        patches.append((DiffprivlibLaplace, "randomise", _diffprivlib_randomise(
            "laplace", DiffprivlibLaplace.randomise,
            lambda self: self.sensitivity / (self.epsilon - np.log(1 - self.delta)))))
        patches.append((DiffprivlibGaussian, "randomise", _diffprivlib_randomise(
            "gaussian", DiffprivlibGaussian.randomise, lambda self: self._scale)))
        from diffprivlib.mechanisms import GaussianDiscrete as DiffprivlibDiscreteGaussian
        from diffprivlib.mechanisms import Geometric as DiffprivlibGeometric

        patches.append((DiffprivlibGeometric, "randomise", _diffprivlib_randomise(
            "discrete_laplace", DiffprivlibGeometric.randomise, lambda self: 1.0 / abs(self._scale))))
        patches.append((DiffprivlibDiscreteGaussian, "randomise", _diffprivlib_randomise(
            "discrete_gaussian", DiffprivlibDiscreteGaussian.randomise, lambda self: self._scale)))
    return patches


@contextlib.contextmanager
def instrumented() -> Iterator[None]:
    """Patch the global randomness sources for the duration of a replay (restored afterwards, also on error)."""
    patches = _patches()
    saved = [(owner, attribute, owner.__dict__[attribute] if isinstance(owner, type) else getattr(owner, attribute))
             for owner, attribute, _ in patches]
    try:
        for owner, attribute, replacement in patches:
            setattr(owner, attribute, replacement)
        yield
    finally:
        for owner, attribute, original in saved:
            setattr(owner, attribute, original)
