"""Host CPU utilization and memory via psutil: context for the power numbers, never watts.

A machine without any power sensor still shows *something* useful (is the CPU busy? how much
memory does the model take on a unified-memory box?), but every sample has `watts=None` and the
channel says `has_watts=False`, so nothing downstream can mistake utilization for power.
"""

from __future__ import annotations

import time
from typing import Protocol

from .base import Channel, Sample, Unavailable

CHANNEL = Channel(
    "host",
    "host",
    "host CPU + memory",
    "system",
    has_watts=False,
    note="psutil: CPU utilization and memory only, no watts",
)


class _VirtualMemory(Protocol):
    total: int
    available: int


class Psutil(Protocol):
    """The two calls of psutil this source makes (the module, or a stand-in in tests)."""

    def cpu_percent(self, interval: float | None = None) -> float: ...

    def virtual_memory(self) -> _VirtualMemory: ...


class HostSource:
    kind = "host"

    def __init__(self, psutil_module: Psutil) -> None:
        self._ps = psutil_module
        self._ps.cpu_percent(interval=None)  # primes the delta

    def channels(self) -> list[Channel]:
        return [CHANNEL]

    def read(self, full: bool = True) -> list[Sample]:
        if not full:  # nothing cheap to read: there are no watts here
            return []
        t = time.monotonic()
        ps = self._ps
        extra: dict[str, float] = {"cpu_util_pct": float(ps.cpu_percent(interval=None))}
        vm = ps.virtual_memory()
        extra["mem_used_bytes"] = float(vm.total - vm.available)
        extra["mem_total_bytes"] = float(vm.total)
        return [Sample(CHANNEL.id, t, None, None, extra)]

    def close(self) -> None:
        pass


def open_host() -> tuple[HostSource | None, list[Unavailable]]:
    try:
        import psutil
    except ImportError:
        return None, [Unavailable("host", "driver missing: psutil not installed")]
    return HostSource(psutil), []
