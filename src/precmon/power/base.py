"""What every power source gives: channels, samples and energy windows.

A *source* is one telemetry kind on this machine (NVML, an hwmon driver, RAPL, ...). It exposes
one or more *channels*, each a single readable quantity with a named scope ("gpu", "module",
"soc", "package", "system", "cpu"). Watts without a scope mislead; so every sample carries one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

SCOPES = ("system", "module", "soc", "package", "gpu", "cpu", "rail")
# Widest first: the headline number of a measurement comes from the widest scope available.
# "rail" is one supply rail of a board (a Jetson INA3221 rail, an spbm sub-channel, DRAM RAPL):
# real watts, but never the whole of anything, so it ranks last.
SCOPE_RANK = {"system": 0, "module": 1, "soc": 1, "package": 2, "gpu": 3, "cpu": 4, "rail": 5}


@dataclass(frozen=True)
class Channel:
    """One readable power quantity of a source."""

    id: str  # stable, unique on this host, e.g. "nvml:0", "hwmon1:sys_total", "rapl:package-0"
    kind: str  # nvml | amdgpu | spbm | hwmon | jetson | tegrastats | rapl | host
    label: str
    scope: str  # one of SCOPES
    has_energy_counter: bool = False
    has_watts: bool = True  # False for host (psutil): utilization and memory only, never watts
    note: str = ""  # what a reader must know, e.g. "APU: includes CPU", "memory from /proc/meminfo"
    # How often the energy counter advances, where it is coarse enough to matter (NVML: ~0.1 s). A
    # window shorter than COUNTER_MIN_STEPS of these is integrated from the watts samples instead:
    # one step early or late would be more than 2% of it (see power/windows.py).
    counter_step_s: float | None = None
    # The node whose power this is, where it is another machine's (power/remote/: read from its
    # exporter at each window's edges); None for this machine's own sources.
    node: str | None = None


#: The `Sample.extra` key of a reading taken over the network: its round trip in seconds (the
#: sample's time is the middle of it, so half of it is how far off that time may be).
ROUND_TRIP_S = "round_trip_s"


@dataclass(frozen=True)
class Sample:
    """One reading of one channel at a monotonic time (time.monotonic())."""

    channel_id: str
    t_s: float
    watts: float | None
    energy_j: float | None = None  # cumulative counter value, where the channel has one
    extra: dict[str, float] = field(default_factory=dict)  # util_pct, temp_c, sm_clock_mhz, ...


@dataclass(frozen=True)
class EnergyWindow:
    """Energy used by one channel over one phase of a measurement."""

    channel_id: str
    scope: str
    phase: str
    duration_s: float
    energy_j: float
    avg_watts: float
    peak_watts: float | None
    method: str  # "counter" (energy-counter delta) or "integrated" (samples, trapezoid rule)
    n_samples: int
    counter_energy_j: float | None = None  # the coarse counter's delta, where it was set aside for samples
    start_s: float | None = None  # time.monotonic() of the window's first reading (its edge)
    node: str | None = None  # the channel's node (None: this machine)
    # Another node's window: half the round trips of its two edge reads added up, the most by which
    # its edges may sit off this machine's (the window's timing uncertainty); None for a local one.
    edge_s: float | None = None


class SampleHistory(Protocol):
    """The recent samples of a channel: what cutting a window at the first token needs."""

    def history(self, channel_id: str, seconds: float) -> list[Sample]:
        """The samples of the last `seconds` of one channel, oldest first."""
        ...


class EnergyMeter(SampleHistory, Protocol):
    """What the layers above need from the power layer (PowerSampler implements it).

    `begin(phase)` marks the start of a phase; `end(phase)` returns one window per channel that
    has watts. The read side (`latest`, `history`, `errors`) feeds the live power panel, the
    per-second series of a run and the sweep's cool-down wait. A measurement without power passes
    `None` instead of a meter.
    """

    def begin(self, phase: str) -> None: ...

    def end(self, phase: str) -> list[EnergyWindow]: ...

    def lap(self, phase: str) -> list[EnergyWindow]:
        """`end(phase)` then `begin(phase)` at one boundary: the window that just closed."""
        ...

    def channels(self) -> list[Channel]: ...

    def latest(self) -> dict[str, Sample]:
        """The newest sample of each channel that has one."""
        ...

    def errors(self) -> dict[str, str]:
        """Source kind → the error of its last read, for sources whose last read failed."""
        ...

    def power_sources_info(self) -> list[dict[str, object]]:
        """`host.power_sources` of the results file."""
        ...

    def stop(self) -> None:
        """Stop sampling (the meter's owner calls it once, when done)."""
        ...


class PowerSource(Protocol):
    """One telemetry kind on this machine, opened and ready to read.

    `read(full=False)` returns the cheap part (watts and energy counters) of every channel;
    `read(full=True)` adds the slow extras (clocks, temperature, memory, utilization). A read
    never raises for one bad channel or field: that value is `None` in its sample.
    """

    kind: str

    def channels(self) -> list[Channel]: ...

    def read(self, full: bool = True) -> list[Sample]: ...

    def close(self) -> None: ...


# Capabilities a PowerSource may have, checked with isinstance (each protocol names only its
# own members, so a source need not declare what it lacks).
@runtime_checkable
class BlockingSource(Protocol):
    """A source whose reads call into a driver and can stall (NVML on a GPU that fell off the bus).

    Where `blocking` is true the sampler gives it a thread of its own, so it delays only itself;
    a source without the attribute shares the cheap sources' thread.
    """

    blocking: bool


@runtime_checkable
class GatedCounterSource(Protocol):
    """A source whose energy counter costs a driver call (NVML: ~4 ms of CPU per read).

    Where `expensive_counter` is true the sampler asks for the counter (`counters=True`) only at
    phase boundaries and every few seconds; the ticks between read watts only.
    """

    expensive_counter: bool

    def read(self, full: bool = True, counters: bool = True) -> list[Sample]: ...


@runtime_checkable
class PacedSource(Protocol):
    """A source read at its own period (another node's exporter, over the network), not the
    sampler's rate: a read costs a round trip. Boundary reads still come at once."""

    period_s: float


@runtime_checkable
class FreshReads(Protocol):
    """A meter that can read every source now, bounded (an exporter's `/power?fresh=1`: the edge
    of another machine's window reads this node's counters at that moment, not seconds ago)."""

    def read_now(self) -> None: ...


@dataclass(frozen=True)
class Node:
    """Another machine whose power a measurement adds (`--power-from URL`, power/remote/).

    Attributes:
        name: its exporter's `host` (precmon's `--node`, DCGM's `Hostname`), else the URL's host:port.
        url: where it is read.
        exporter: "precmon" or "dcgm"; None when it never answered.
        unmeasured: why its power is not measured although it answers (no power source there):
            not expected in a sum, named in the results' scope line.
        problem: why it could not be read when the sources were opened (every window then misses it).
    """

    name: str
    url: str
    exporter: str | None = None
    unmeasured: str | None = None
    problem: str | None = None

    @property
    def expected(self) -> bool:
        """Whether a phase's sum needs this node's window (it has, or should have, power)."""
        return self.unmeasured is None


@runtime_checkable
class TotalsMeter(Protocol):
    """A meter that keeps each channel's energy since it started (PowerSampler.energy_totals)."""

    def energy_totals(self) -> dict[str, tuple[float, str, float]]:
        """Channel id → (joules, "counter" | "integrated", time.monotonic() of the newest reading)."""
        ...


@runtime_checkable
class NodesMeter(Protocol):
    """A meter that reads other machines too (PowerSampler over `--power-from` nodes)."""

    def nodes(self) -> list[Node]:
        """The other machines, in the order given (those that answered without power included)."""
        ...


@runtime_checkable
class NodeSource(Protocol):
    """A source that is another machine (power/remote/): its node, for the results' `host`."""

    node: Node


@dataclass(frozen=True)
class Unavailable:
    """A telemetry kind (or one channel of it) that is absent here, and the human reason why."""

    kind: str
    reason: str
    id: str | None = None
    label: str | None = None
