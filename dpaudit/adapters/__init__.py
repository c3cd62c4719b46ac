"""Other libraries' mechanisms as dpaudit mechanisms ``mechanism(data, size, rng) -> ndarray``.

- :func:`scalar`: any ``fn(data, rng) -> one output`` (a number or a fixed-length vector), called
  ``size`` times per batch from independent seeded streams, optionally over worker processes;
- :func:`diffprivlib`: an IBM diffprivlib mechanism instance or ``diffprivlib.tools`` function, seeded
  through its ``random_state`` (audits are reproducible); extra ``dpaudit[diffprivlib]``;
- :func:`opendp`: an OpenDP ``Measurement``. OpenDP draws from the operating system's secure generator,
  which cannot be seeded: the adapted mechanism says so (``reproducible = False``) and every audit of it
  carries a "not reproducible" warning; extra ``dpaudit[opendp]``.

Example:
    >>> import dpaudit
    >>> from dpaudit.adapters import scalar
    >>> laplace = scalar(lambda data, rng: data[0] + rng.laplace(0.0, 1.0))
    >>> dpaudit.audit(laplace, [0.0], [1.0], epsilon=1.0, samples=20_000, workers=1).violated
    False
"""

from __future__ import annotations

from ._scalar import ScalarMechanism, scalar

__all__ = ["scalar", "ScalarMechanism", "diffprivlib", "DiffprivlibMechanism", "opendp", "OpenDPMechanism"]


def __getattr__(name: str):  # the library adapters load their libraries only when used
    if name in ("diffprivlib", "DiffprivlibMechanism"):
        from . import _diffprivlib

        return getattr(_diffprivlib, name)
    if name in ("opendp", "OpenDPMechanism"):
        from . import _opendp

        return getattr(_opendp, name)
    raise AttributeError(f"module 'dpaudit.adapters' has no attribute {name!r}")
