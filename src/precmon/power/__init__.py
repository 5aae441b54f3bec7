"""precmon.power layer (plain Python: never imports textual).

Public entry points: `PowerSampler` (the `EnergyMeter` the measurement layer uses),
`discover_sources()`, `headline()`, `power_report()` (doctor) and the energy arithmetic.
"""

from .base import SCOPE_RANK, SCOPES, Channel, EnergyMeter, EnergyWindow, PowerSource, Sample, Unavailable
from .discover import Discovery, discover_sources
from .energy import joules_per_token, monthly_cost, monthly_energy, monthly_kwh
from .sampler import PowerSampler
from .windows import headline, window_from_samples

__all__ = [
    "SCOPES",
    "SCOPE_RANK",
    "Channel",
    "EnergyMeter",
    "EnergyWindow",
    "PowerSource",
    "Sample",
    "Unavailable",
    "Discovery",
    "discover_sources",
    "PowerSampler",
    "headline",
    "window_from_samples",
    "joules_per_token",
    "monthly_cost",
    "monthly_energy",
    "monthly_kwh",
]
