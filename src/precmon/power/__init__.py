"""Power: one source per telemetry kind (NVML, hwmon, spbm, Jetson, RAPL, host), the sampler and energy windows.

Public entry points: `PowerSampler` (the `EnergyMeter` the measurement layer uses),
`discover_sources()`, `headline()` / `headline_now()` (the one headline rule), `fleet.fleet()` (a
phase over several machines: each node's headline, summed; `remote.open_nodes` makes the other
nodes sources), `power_report()` (power/doctor.py) and `joules_per_token()`. Monthly kWh and cost are in
report/analysis/energy.py.
"""

from .base import SCOPE_RANK, SCOPES, Channel, EnergyMeter, EnergyWindow, Node, PowerSource, Sample, Unavailable
from .discover import Discovery, discover_sources
from .energy import joules_per_token
from .fleet import Fleet
from .sampler import PowerSampler
from .windows import headline, headline_now, window_from_samples

__all__ = [
    "SCOPES",
    "SCOPE_RANK",
    "Channel",
    "EnergyMeter",
    "EnergyWindow",
    "Fleet",
    "Node",
    "PowerSource",
    "Sample",
    "Unavailable",
    "Discovery",
    "discover_sources",
    "PowerSampler",
    "headline",
    "headline_now",
    "window_from_samples",
    "joules_per_token",
]
