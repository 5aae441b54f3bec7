"""Reading sysfs/procfs files, rooted where the tests (or a chroot) say.

Every sysfs path the power layer reads goes through `sysfs_path`, which prepends
`PRECMON_SYSFS_ROOT` (default `/`); `/proc` paths go through `proc_path` and `PRECMON_PROC_ROOT`
(default `/proc`). The variables are read at call time, so a test can point them at a fixture tree.

Counters: RAPL `energy_uj` wraps at `max_energy_range_uj`; other counters may reset. The
`CounterUnwrapper` turns a raw counter into a monotonic one so that windows can subtract freely.
"""

from __future__ import annotations

import os
from pathlib import Path


def sysfs_root() -> Path:
    return Path(os.environ.get("PRECMON_SYSFS_ROOT") or "/")


def sysfs_path(absolute: str) -> Path:
    """`/sys/class/hwmon` → `$PRECMON_SYSFS_ROOT/sys/class/hwmon`."""
    return sysfs_root() / absolute.lstrip("/")


def proc_path(relative: str) -> Path:
    """`meminfo` → `$PRECMON_PROC_ROOT/meminfo` (default `/proc/meminfo`)."""
    return Path(os.environ.get("PRECMON_PROC_ROOT") or "/proc") / relative


_os_open = os.open  # the one place files are opened (tests deny access here: root ignores chmod)


def read_bytes(path: Path | str) -> bytes:
    """A small sysfs file, raw. os.open/os.read: a quarter of the CPU of open() at 10-50 Hz."""
    fd = _os_open(path, os.O_RDONLY)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


def read_text(path: Path | str) -> str:
    """The stripped contents of a small sysfs file. Raises OSError (incl. PermissionError)."""
    return read_bytes(path).decode("utf-8", "replace").strip()


def read_int(path: Path | str) -> int:
    """An integer sysfs file. Raises OSError or ValueError."""
    return int(read_bytes(path).split()[0])


def try_read_text(path: Path | str) -> str | None:
    try:
        return read_text(path)
    except (OSError, ValueError):
        return None


def try_read_int(path: Path | str) -> int | None:
    """An integer file, or None when it is missing, unreadable or not a number.

    amdgpu answers some reads with ENODATA/EINVAL while the GPU sleeps: that is one missing
    reading, not a broken channel.
    """
    try:
        return read_int(path)
    except (OSError, ValueError, IndexError):
        return None


def read_meminfo() -> dict[str, int]:
    """`/proc/meminfo` as bytes per key (`MemTotal`, `MemAvailable`, ...); {} when unreadable."""
    out: dict[str, int] = {}
    text = try_read_text(proc_path("meminfo"))
    if not text:
        return out
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if not parts:
            continue
        try:
            value = int(parts[0])
        except ValueError:
            continue
        unit = parts[1].lower() if len(parts) > 1 else ""
        out[key.strip()] = value * 1024 if unit == "kb" else value
    return out


def counter_delta(prev: int, cur: int, max_range: int | None) -> int:
    """Increase of a counter from `prev` to `cur`, wrap-aware.

    With a known `max_range` (RAPL `max_energy_range_uj`) a smaller `cur` means one wrap:
    `cur + max_range - prev`. Without one, a smaller `cur` means a reset to zero: `cur`.
    """
    if cur >= prev:
        return cur - prev
    if max_range:
        return cur + max_range - prev
    return cur


class CounterUnwrapper:
    """Turns successive raw readings of a wrapping counter into a monotonic total.

    Reads must come more often than one wrap period (RAPL at 200 W: ~20 min for 262 kJ), which
    a sampler at 10 Hz guarantees. The first reading is the origin of the monotonic total.
    """

    def __init__(self, max_range: int | None = None) -> None:
        self.max_range = max_range
        self._prev: int | None = None
        self._total = 0

    def update(self, raw: int) -> int:
        if self._prev is None:
            self._total = raw
        else:
            self._total += counter_delta(self._prev, raw, self.max_range)
        self._prev = raw
        return self._total


class CounterRate:
    """Watts from an energy counter alone (RAPL has no power file): Δenergy ÷ Δt between reads.

    Reads closer than `min_dt_s` (a boundary read right after a tick) keep the previous watts
    rather than divide a tiny, noisy delta.
    """

    def __init__(self, min_dt_s: float = 0.05) -> None:
        self.min_dt_s = min_dt_s
        self._ref: tuple[float, float] | None = None
        self._watts: float | None = None

    def update(self, t_s: float, energy_j: float) -> float | None:
        if self._ref is None:
            self._ref = (t_s, energy_j)
            return None
        t0, e0 = self._ref
        if t_s - t0 >= self.min_dt_s:
            self._watts = (energy_j - e0) / (t_s - t0)
            self._ref = (t_s, energy_j)
        return self._watts
