"""The witness families the selector runs, in order: adding a family is one module and one line here.

The order is part of the audit's reproducibility: families that draw from the batch's random generator
draw in this order, and candidates predicted equal keep it.
"""

from __future__ import annotations

from .batch import WitnessFamily
from .family_atoms import AtomsAndStructure
from .family_learned import LearnedScores
from .family_magnitude import Magnitude
from .family_products import Products
from .family_tails import StreamedTails

__all__ = ["FAMILIES"]

FAMILIES: tuple[WitnessFamily, ...] = (
    AtomsAndStructure(),
    Magnitude(),
    Products(),
    LearnedScores(),
    StreamedTails(),
)
