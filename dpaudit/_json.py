"""JSON-ready values: non-finite floats as strings and numpy scalars as Python ones (below every package
that writes ``to_dict()`` results, so result objects need not import the reporting layer)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["json_ready"]


def json_ready(value: Any) -> Any:
    """Replace non-finite floats by strings ("inf", "-inf", "nan") and numpy scalars by Python ones."""
    if isinstance(value, dict):
        return {str(k): json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
