"""IBM diffprivlib mechanisms and tools as dpaudit mechanisms, seeded through ``random_state``.

diffprivlib draws from a secure, unseedable generator unless a ``random_state`` is given; the adapter
builds a fresh copy of the mechanism for every batch with ``random_state`` a ``numpy.random.RandomState``
seeded from the batch's generator, through diffprivlib's own constructor (its checks apply), so audits
are reproducible. diffprivlib releases one value per ``randomise`` call: batches are Python loops.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidArgumentType
from ..guarantee import Guarantee
from ._scalar import stack_outputs

__all__ = ["diffprivlib", "DiffprivlibMechanism", "MIN_VERSION"]

MIN_VERSION = (0, 6)  # random_state on every mechanism and tool


def _library(argument: str) -> Any:
    try:
        import diffprivlib as library
    except ModuleNotFoundError as exc:
        if exc.name != "diffprivlib":
            raise InvalidArgument(argument, f"diffprivlib is installed but cannot be imported: {exc}") from exc
        raise InvalidArgument(argument, "diffprivlib is not installed: pip install 'dpaudit[diffprivlib]'") from exc
    except ImportError as exc:  # e.g. diffprivlib 0.6.6 with scikit-learn >= 1.9 (sklearn.tree._tree.DOUBLE)
        raise InvalidArgument(argument, f"diffprivlib is installed but cannot be imported ({exc}); its dependencies do "
                              "not match it: pip install 'dpaudit[diffprivlib]' (pins a compatible scikit-learn)") from exc
    version = tuple(int(part) for part in library.__version__.split(".")[:2] if part.isdigit())
    if version < MIN_VERSION:
        raise InvalidArgument(argument, f"diffprivlib {library.__version__} is too old: the adapter needs >= "
                              f"{'.'.join(map(str, MIN_VERSION))} (random_state for reproducible audits)")
    return library


def _state(rng: np.random.Generator) -> np.random.RandomState:
    return np.random.RandomState(int(rng.integers(2**32)))


def _scalar_value(data: Any) -> Any:
    values = np.asarray(data).ravel()
    if values.size != 1:
        raise ValueError(f"this diffprivlib mechanism randomises one value: data must be a number or a 1-element "
                         f"sequence, got {values.size} values")
    return values[0].item()


class DiffprivlibMechanism:
    """A diffprivlib mechanism or tool as ``mechanism(data, size, rng)``; ``.privacy`` is the library's
    claimed (epsilon, delta) when the object states one."""

    reproducible = True

    def __init__(self, target: Any, kind: str, parameters: dict[str, Any], privacy: Guarantee | None) -> None:
        self.target, self.kind, self.parameters = target, kind, parameters
        self.privacy = privacy
        self.__name__ = f"diffprivlib {getattr(target, '__name__', type(target).__name__)}"

    def _mechanism(self, rng: np.random.Generator, **extra: Any) -> Any:
        return self.target(**{**self.parameters, **extra}, random_state=_state(rng))

    def __call__(self, data: Any, size: int, rng: np.random.Generator) -> np.ndarray:
        if self.kind == "tool":
            from diffprivlib.accountant import BudgetAccountant

            state, values, parameters = _state(rng), np.asarray(data), dict(self.parameters)
            fresh = "accountant" in inspect.signature(self.target).parameters and parameters.get("accountant") is None
            if fresh:
                parameters.pop("accountant", None)
            # a fresh accountant per call: the default one would record (and re-sum) every release
            outputs = [self.target(values, **parameters, random_state=state,
                                   **({"accountant": BudgetAccountant()} if fresh else {})) for _ in range(size)]
        elif self.kind == "selection":  # utilities are the data; output: the chosen candidate (index)
            mechanism = self._mechanism(rng, utility=[float(u) for u in np.asarray(data, dtype=float).ravel()])
            outputs = [mechanism.randomise() for _ in range(size)]
        elif self.kind == "binary":  # data 0/1 -> value0/value1, output back to 0/1
            labels = (self.parameters["value0"], self.parameters["value1"])
            mechanism = self._mechanism(rng)
            value = labels[int(_scalar_value(data))]
            outputs = [labels.index(mechanism.randomise(value)) for _ in range(size)]
        else:
            mechanism = self._mechanism(rng)
            value = _scalar_value(data)
            outputs = [mechanism.randomise(value) for _ in range(size)]
        return stack_outputs(outputs, self.__name__)

    def __repr__(self) -> str:
        return f"dpaudit.adapters.diffprivlib({self.__name__.split(' ', 1)[1]})"


def _parameters(mechanism: Any) -> dict[str, Any]:
    """The constructor arguments of a diffprivlib mechanism instance, read back from its attributes."""
    parameters = {}
    for name, parameter in inspect.signature(type(mechanism).__init__).parameters.items():
        if name in ("self", "random_state") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if hasattr(mechanism, name):
            parameters[name] = getattr(mechanism, name)
        elif parameter.default is parameter.empty:
            raise InvalidArgument("mechanism", f"cannot rebuild diffprivlib {type(mechanism).__name__}: its argument "
                                  f"{name!r} is not readable back from the instance (unsupported diffprivlib version?)")
    return parameters


def diffprivlib(mechanism: Any, **tool_arguments: Any) -> DiffprivlibMechanism:
    """Adapt a diffprivlib mechanism instance (``diffprivlib.mechanisms``) or tool (``diffprivlib.tools``).

    - scalar mechanisms (``Laplace``, ``Gaussian``, ``Geometric``, ``Snapping``, ...): ``data`` is the one
      value randomised (a number or a 1-element sequence);
    - ``Binary``: ``data`` is 0 or 1 (for ``value0``/``value1``); outputs are 0/1;
    - ``Exponential``, ``PermuteAndFlip``: ``data`` is the utility vector; outputs are the chosen index;
    - tools (``diffprivlib.tools.mean`` ...): pass the tool's arguments, e.g.
      ``diffprivlib(tools.mean, epsilon=1.0, bounds=(0, 1))``; ``data`` is the dataset.

    Every batch is seeded through ``random_state``: audits are reproducible.

    Raises:
        TypeError: ``mechanism`` is not a diffprivlib mechanism instance or tool (e.g. a class, or another
            library's object).
        ValueError: diffprivlib is missing or older than 0.6.

    Example:
        >>> from diffprivlib.mechanisms import Laplace                           # doctest: +SKIP
        >>> mechanism = diffprivlib(Laplace(epsilon=1.0, sensitivity=1.0))      # doctest: +SKIP
        >>> dpaudit.audit(mechanism, 0.0, 1.0, epsilon=mechanism.privacy.epsilon).violated  # doctest: +SKIP
        False
    """
    module = getattr(mechanism if inspect.isfunction(mechanism) or isinstance(mechanism, type) else type(mechanism),
                     "__module__", "") or ""
    if not module.startswith("diffprivlib"):
        hint = " (for an OpenDP measurement use dpaudit.adapters.opendp)" if module.startswith("opendp") else ""
        raise InvalidArgumentType("mechanism", f"mechanism={mechanism!r} is not a diffprivlib mechanism instance or "
                                  f"diffprivlib.tools function{hint}")
    library = _library("mechanism")
    from diffprivlib.mechanisms import Binary, DPMechanism, Exponential, PermuteAndFlip

    if isinstance(mechanism, type):
        raise InvalidArgumentType("mechanism", f"mechanism={mechanism.__name__} is a class: pass an instance, e.g. "
                                  f"{mechanism.__name__}(epsilon=1.0, sensitivity=1.0)")
    if inspect.isfunction(mechanism):
        if "random_state" not in inspect.signature(mechanism).parameters:
            raise InvalidArgumentType("mechanism", f"diffprivlib function {mechanism.__name__} takes no random_state: "
                                      "it cannot be seeded (not a diffprivlib.tools function?)")
        epsilon = tool_arguments.get("epsilon")
        privacy = Guarantee(float(epsilon), 0.0) if isinstance(epsilon, (int, float)) else None
        return DiffprivlibMechanism(mechanism, "tool", dict(tool_arguments), privacy)
    if tool_arguments:
        raise InvalidArgument(sorted(tool_arguments)[0], "extra arguments are for diffprivlib.tools functions only; "
                              "configure a mechanism through its constructor")
    if not isinstance(mechanism, DPMechanism):
        raise InvalidArgumentType("mechanism", f"mechanism={mechanism!r} is not a diffprivlib.mechanisms instance "
                                  f"(diffprivlib {library.__version__})")
    parameters = _parameters(mechanism)
    kind = "selection" if isinstance(mechanism, (Exponential, PermuteAndFlip)) else (
        "binary" if isinstance(mechanism, Binary) else "scalar")
    if kind == "selection":
        parameters.pop("utility", None)
    privacy = Guarantee(float(mechanism.epsilon), float(getattr(mechanism, "delta", 0.0) or 0.0))
    return DiffprivlibMechanism(type(mechanism), kind, parameters, privacy)
