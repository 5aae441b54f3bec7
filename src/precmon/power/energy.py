"""Energy per token: the one piece of energy arithmetic the live view needs below the report layer.

Monthly kWh and cost are a report concern: they live in report/analysis/energy.py (docs/design.md §4).
"""

from __future__ import annotations

import math


def joules_per_token(energy_j: float | None, tokens: int) -> float | None:
    """Energy per decoded token; None when there is no energy or no token to divide by."""
    if energy_j is None or tokens <= 0 or not math.isfinite(energy_j):
        return None
    return energy_j / tokens
