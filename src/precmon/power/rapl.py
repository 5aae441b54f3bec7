"""CPU package power from Linux powercap RAPL energy counters.

`/sys/class/powercap/intel-rapl:N[:M]/energy_uj` is a µJ counter that wraps at
`max_energy_range_uj`; `name` says what it covers (`package-N`, `core`, `uncore`, `dram`,
`psys`). AMD Zen CPUs expose the same files under the same names. Since kernel 5.10 (the
PLATYPUS side-channel fix) `energy_uj` is readable by root only: we say so plainly instead of
showing nothing. `intel-rapl-mmio:*` repeats the package zone and is skipped (no double count).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ._sysfs import CounterRate, CounterUnwrapper, read_int, sysfs_path, try_read_int, try_read_text
from .base import Channel, Sample, Unavailable

KIND = "rapl"
PERMISSION_REASON = "permission denied: RAPL needs root since kernel 5.10"

_SCOPE_BY_NAME = {"core": "cpu", "uncore": "gpu", "dram": "rail", "psys": "soc"}


def rapl_scope(zone_name: str) -> str:
    """`package-0` → package, `core` → cpu, `uncore` (the iGPU) → gpu, `dram` → rail."""
    if zone_name.startswith("package"):
        return "package"
    return _SCOPE_BY_NAME.get(zone_name, "rail")


@dataclass
class _Zone:
    channel: Channel
    energy_path: Path
    unwrap: CounterUnwrapper
    rate: CounterRate


def _zone_id(zone_dir: Path, names: dict[str, str]) -> tuple[str, str]:
    """(channel id, label): `rapl:package-0` for a top zone, `rapl:package-0:core` for a sub-zone."""
    parts = zone_dir.name.split(":")  # ["intel-rapl", "0"] or ["intel-rapl", "0", "1"]
    name = names[zone_dir.name]
    if len(parts) > 2:
        parent = names.get(":".join(parts[:2]), f"zone{parts[1]}")
        return f"rapl:{parent}:{name}", f"{parent} {name}"
    return f"rapl:{name}", name


class RaplSource:
    """All readable RAPL zones of this host; build it with `open_rapl()`."""

    kind = KIND

    def __init__(self, zones: list[_Zone]) -> None:
        self._zones = zones

    def channels(self) -> list[Channel]:
        return [z.channel for z in self._zones]

    def read(self, full: bool = True) -> list[Sample]:
        out = []
        for z in self._zones:
            t = time.monotonic()
            raw = try_read_int(z.energy_path)
            if raw is None:
                out.append(Sample(z.channel.id, t, None))
                continue
            energy_j = z.unwrap.update(raw) / 1e6
            out.append(Sample(z.channel.id, t, z.rate.update(t, energy_j), energy_j))
        return out

    def close(self) -> None:
        pass


def open_rapl() -> tuple[RaplSource | None, list[Unavailable]]:
    """Every RAPL zone whose counter can be read, and a reason for each one that cannot."""
    base = sysfs_path("/sys/class/powercap")
    zone_dirs = sorted(p for p in base.glob("intel-rapl:*") if (p / "energy_uj").exists())
    if not zone_dirs:
        return None, [Unavailable(KIND, f"no device: no intel-rapl zone under {base}")]
    names = {p.name: try_read_text(p / "name") or p.name for p in zone_dirs}
    zones: list[_Zone] = []
    missing: list[Unavailable] = []
    for p in zone_dirs:
        cid, label = _zone_id(p, names)
        try:
            read_int(p / "energy_uj")
        except PermissionError:
            missing.append(Unavailable(KIND, PERMISSION_REASON, cid, label))
            continue
        except (OSError, ValueError) as e:
            missing.append(Unavailable(KIND, f"unreadable: {p / 'energy_uj'}: {e}", cid, label))
            continue
        max_range = try_read_int(p / "max_energy_range_uj")
        ch = Channel(cid, KIND, label, rapl_scope(names[p.name]), has_energy_counter=True)
        zones.append(_Zone(ch, p / "energy_uj", CounterUnwrapper(max_range), CounterRate()))
    return (RaplSource(zones) if zones else None), missing
