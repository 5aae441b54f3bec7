"""Finding every power source on this machine, and saying why each missing kind is missing.

A user who sees no power numbers must learn why in one line: no such device, a driver not
loaded, a file only root may read. So discovery returns the opened sources *and* one
`Unavailable` (kind, reason) per kind it did not find, in the order of docs/design.md §3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .base import PowerSource, Unavailable
from .host import open_host
from .hwmon import open_hwmon
from .jetson import open_jetson
from .nvml import open_nvml
from .rapl import open_rapl

KINDS = ("nvml", "amdgpu", "spbm", "hwmon", "jetson", "tegrastats", "rapl", "host")


@dataclass
class Discovery:
    sources: list[PowerSource] = field(default_factory=list)
    unavailable: list[Unavailable] = field(default_factory=list)

    def close(self) -> None:
        for s in self.sources:
            s.close()


def discover_sources(include_host: bool = True) -> Discovery:
    """Open every power source present; list a reason for every kind (or channel) that is not.

    Args:
        include_host: also open the psutil host source (CPU and memory, no watts).
    """
    found = Discovery()

    def add(src: PowerSource | Sequence[PowerSource] | None, missing: list[Unavailable]) -> None:
        if isinstance(src, Sequence):
            found.sources.extend(src)
        elif src is not None:
            found.sources.append(src)
        found.unavailable.extend(missing)

    add(*open_nvml())
    add(*open_hwmon())
    add(*open_jetson())
    add(*open_rapl())
    if include_host:
        add(*open_host())
    # A kind that was found keeps its per-channel reasons (a RAPL sub-zone denied), but drops
    # kind-level "not found" lines that its own success contradicts.
    kinds_found = {s.kind for s in found.sources}
    found.unavailable = [u for u in found.unavailable if u.id is not None or u.kind not in kinds_found]
    order = {k: i for i, k in enumerate(KINDS)}
    found.unavailable.sort(key=lambda u: order.get(u.kind, 99))
    found.sources.sort(key=lambda s: order.get(s.kind, 99))
    return found
