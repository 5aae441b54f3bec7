"""Power, energy counters, GPU facts and the node's identity from the power sampler.

The exporter reads the sampler that already runs (`precmon exporter`'s own, or the TUI's in
`precmon watch --prometheus`): a scrape costs one `latest()` copy, never a device read, so
several scrapers cannot make the sources busier (`/power?fresh=1`, another machine's window edge,
is the one read that asks the sources first: exporter/serve.py). A sample older than
`stale_after_s` is left out: a source that stopped answering must show as absent, not as its last
value forever.

Every channel with watts has an energy counter here (`precmon_energy_joules_total`), so another
node can take a window's energy as the difference of two reads whatever its clock: the hardware's
counter where the channel keeps one (`method="counter"`), else the integral of this exporter's
own samples since it started (`method="integrated"`, `PowerSampler.energy_totals`). Only this
machine's channels are exported: another node's (`--power-from` in the TUI) are its own exporter's.
"""

from __future__ import annotations

import math
import socket
import time
from collections.abc import Callable, Iterator

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from precmon import __version__
from precmon.exporter.catalog import family
from precmon.power.base import EnergyMeter, Sample, TotalsMeter

STALE_AFTER_S = 30.0

# extra key of a Sample → (metric, scale to the base unit, extra labels)
_EXTRAS: dict[str, tuple[str, float, tuple[str, ...]]] = {
    "sm_clock_mhz": ("precmon_gpu_clock_hertz", 1e6, ("sm",)),
    "mem_clock_mhz": ("precmon_gpu_clock_hertz", 1e6, ("memory",)),
    "gpu_util_pct": ("precmon_gpu_utilization_ratio", 0.01, ()),
    "temp_c": ("precmon_gpu_temperature_celsius", 1.0, ()),
    "power_limit_w": ("precmon_gpu_power_limit_watts", 1.0, ()),
    "cpu_util_pct": ("precmon_cpu_utilization_ratio", 0.01, ()),
}


def _finite(x: float | None) -> float | None:
    """`x` when it is a finite number, else None (NaN or inf is no reading)."""
    return x if x is not None and math.isfinite(x) else None


class PowerCollector(Collector):
    """Yields `precmon_node_info`, `precmon_power_watts`, `precmon_energy_joules_total` and the GPU/CPU facts.

    Args:
        meter_of: returns the sampler to read, or None while there is none yet (the TUI opens
            its sampler in a worker thread after the exporter has started).
        host: the `host` label (default: this machine's hostname).
        stale_after_s: samples older than this are not exported.
    """

    def __init__(
        self,
        meter_of: Callable[[], EnergyMeter | None],
        host: str | None = None,
        stale_after_s: float = STALE_AFTER_S,
    ) -> None:
        self.meter_of = meter_of
        self.host = host or socket.gethostname()
        self.stale_after_s = stale_after_s

    def _counter(self, meter: EnergyMeter, cid: str, sample: Sample) -> float | None:
        """The newest energy-counter value of a channel: NVML's counter costs a driver call, so
        the sampler reads it only every few seconds and the ticks between carry watts only."""
        if sample.energy_j is not None:
            return _finite(sample.energy_j)
        for s in reversed(meter.history(cid, self.stale_after_s)):
            if s.energy_j is not None:
                return _finite(s.energy_j)
        return None

    def _energy(self, meter: EnergyMeter, now: float) -> dict[str, tuple[float, str]]:
        """Channel id → (joules, method) of every fresh total (a meter without totals: its
        hardware counters only, from the newest samples)."""
        if isinstance(meter, TotalsMeter):
            return {
                cid: (j, method)
                for cid, (j, method, t_s) in meter.energy_totals().items()
                if now - t_s <= self.stale_after_s and math.isfinite(j)
            }
        out = {}
        for cid, sample in meter.latest().items():
            if now - sample.t_s <= self.stale_after_s and (j := self._counter(meter, cid, sample)) is not None:
                out[cid] = (j, "counter")
        return out

    def collect(self) -> Iterator[Metric]:
        info = family("precmon_node_info")
        info.add_metric([self.host, __version__], 1.0)
        yield info
        meter = self.meter_of()
        if meter is None:
            return
        channels = {c.id: c for c in meter.channels() if c.node is None}
        latest = meter.latest()
        now = time.monotonic()
        watts, energy = family("precmon_power_watts"), family("precmon_energy_joules_total")
        for cid, (j, method) in sorted(self._energy(meter, now).items()):
            ch = channels.get(cid)
            # a channel that keeps a counter is exported by it alone (NVML's first read may come late)
            if ch is not None and ch.has_watts and method == ("counter" if ch.has_energy_counter else "integrated"):
                energy.add_metric([cid, ch.scope, self.host, method], j)
        extras = {name: family(name) for name, _, _ in _EXTRAS.values()}
        for cid, sample in sorted(latest.items()):
            ch = channels.get(cid)
            if ch is None or now - sample.t_s > self.stale_after_s:
                continue
            if ch.has_watts and (w := _finite(sample.watts)) is not None:
                watts.add_metric([cid, ch.scope, self.host], w)
            for key, (name, scale, labels) in _EXTRAS.items():
                if (x := _finite(sample.extra.get(key))) is not None:
                    extras[name].add_metric([cid, self.host, *labels], x * scale)
        yield from (f for f in (watts, energy, *extras.values()) if f.samples)
