"""Energy arithmetic for reports: J/token, monthly kWh and what it costs.

docs/design.md §4: monthly kWh = average W × hours/day × 30 ÷ 1000 (hours/day default 24); cost = kWh ×
price per kWh. Pure functions with units in their names, so the report layer cannot mix W and kW.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

DAYS_PER_MONTH = 30


def monthly_kwh(avg_watts: float, hours_per_day: float = 24.0) -> float:
    """kWh in a 30-day month at `avg_watts` for `hours_per_day` hours a day."""
    if avg_watts < 0 or not 0 <= hours_per_day <= 24:
        raise ValueError(f"need avg_watts >= 0 and 0 <= hours_per_day <= 24: {avg_watts}, {hours_per_day}")
    return avg_watts * hours_per_day * DAYS_PER_MONTH / 1000.0


def monthly_cost(avg_watts: float, price_per_kwh: float, hours_per_day: float = 24.0) -> float:
    """Cost of a month at `price_per_kwh` (in whatever currency the price is in)."""
    return monthly_kwh(avg_watts, hours_per_day) * price_per_kwh


def joules_per_token(energy_j: float | None, tokens: int) -> float | None:
    """Energy per decoded token; None when there is no energy or no token to divide by."""
    if energy_j is None or tokens <= 0 or not math.isfinite(energy_j):
        return None
    return energy_j / tokens


def tokens_per_kwh(j_per_token: float) -> float:
    """How many tokens one kWh (3.6 MJ) buys at `j_per_token`."""
    return 3.6e6 / j_per_token


@dataclass(frozen=True)
class MonthlyEnergy:
    avg_watts: float
    hours_per_day: float
    kwh: float
    price_per_kwh: float | None
    cost: float | None


def monthly_energy(avg_watts: float, hours_per_day: float = 24.0, price_per_kwh: float | None = None) -> MonthlyEnergy:
    """All of the monthly figures at once, cost None without a price."""
    kwh = monthly_kwh(avg_watts, hours_per_day)
    cost = None if price_per_kwh is None else kwh * price_per_kwh
    return MonthlyEnergy(avg_watts, hours_per_day, kwh, price_per_kwh, cost)
