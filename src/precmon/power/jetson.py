"""Jetson power: INA3221 rails from sysfs, or `tegrastats` when sysfs is not readable.

An INA3221 has three channels, each with `in*_label`, `in*_input` (bus voltage, mV) and
`curr*_input` (mA) under `/sys/bus/i2c/devices/*/hwmon/hwmon*/`; watts = mV × mA / 10⁶.
`VDD_IN` (Orin) or `POM_5V_IN` (older) is the whole module's input: scope "module"; the other
rails are parts of it. `tegrastats` prints the same rails as `VDD_IN 4162mW/4162mW` (current /
average) or, on older releases, `POM_5V_IN 1388/1388`.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ._sysfs import read_int, sysfs_path, try_read_int, try_read_text
from .base import Channel, Sample, Unavailable

TOTAL_RAILS = ("VDD_IN", "POM_5V_IN")
# Current/average in mW. Names without the "mW" suffix (older releases) only count as rails when
# they look like one, so "RAM 2185/7765MB" is never mistaken for power.
_RAIL_MW = re.compile(r"\b([A-Za-z][A-Za-z0-9_]*) (\d+)mW/(\d+)mW(?![\w])")
_RAIL_OLD = re.compile(r"\b((?:POM|VDD|VIN)_[A-Za-z0-9_]*) (\d+)/(\d+)(?![\w])")


def rail_scope(label: str) -> str:
    up = label.upper()
    if up in TOTAL_RAILS:
        return "module"
    if "GPU" in up and "CPU" not in up:
        return "gpu"
    if "CPU" in up and "GPU" not in up:
        return "cpu"
    return "rail"


def parse_tegrastats_line(line: str) -> dict[str, tuple[float, float]]:
    """{rail: (current_watts, average_watts)} from one tegrastats line; {} if it has no rails."""
    out: dict[str, tuple[float, float]] = {}
    for rx in (_RAIL_MW, _RAIL_OLD):
        for m in rx.finditer(line):
            out.setdefault(m.group(1), (int(m.group(2)) / 1000, int(m.group(3)) / 1000))
    return out


@dataclass
class _Rail:
    channel: Channel
    mv_path: Path
    ma_path: Path


class Ina3221Source:
    kind = "jetson"

    def __init__(self, rails: list[_Rail]) -> None:
        self._rails = rails

    def channels(self) -> list[Channel]:
        return [r.channel for r in self._rails]

    def read(self, full: bool = True) -> list[Sample]:
        out = []
        for r in self._rails:
            t = time.monotonic()
            mv, ma = try_read_int(r.mv_path), try_read_int(r.ma_path)
            watts = None if mv is None or ma is None else mv * ma / 1e6
            extra = {} if mv is None or ma is None else {"volts": mv / 1000, "amps": ma / 1000}
            out.append(Sample(r.channel.id, t, watts, None, extra))
        return out

    def close(self) -> None:
        pass


def _find_rails() -> tuple[list[_Rail], str | None]:
    """The readable INA3221 rails, and why none are readable (None when some are)."""
    base = sysfs_path("/sys/bus/i2c/devices")
    rails: list[_Rail] = []
    denied = False
    for d in sorted(base.glob("*/hwmon/hwmon*")):
        for label_path in sorted(d.glob("in*_label")):
            idx = label_path.name[2:].split("_")[0]
            label = try_read_text(label_path)
            mv, ma = d / f"in{idx}_input", d / f"curr{idx}_input"
            if not label or not ma.exists() or "sum of shunt" in label.lower():
                continue
            try:
                read_int(mv)
                read_int(ma)
            except PermissionError:
                denied = True
                continue
            except (OSError, ValueError):
                pass  # a rail that reads later is still a rail
            cid = f"jetson:{label}"
            rails.append(_Rail(Channel(cid, "jetson", label, rail_scope(label)), mv, ma))
    if rails:
        return rails, None
    if denied:
        return [], "permission denied: INA3221 rails not readable"
    return [], f"no device: no INA3221 rails under {base}"


class TegrastatsSource:
    """Runs `tegrastats --interval MS` and keeps the rails of its latest line."""

    kind = "tegrastats"

    def __init__(self, binary: str, interval_ms: int = 100) -> None:
        self._proc = subprocess.Popen(
            [binary, "--interval", str(interval_ms)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        self._lock = threading.Lock()
        self._latest: dict[str, tuple[float, float]] = {}
        self._t_s = 0.0
        first = self._proc.stdout.readline() if self._proc.stdout else ""
        self._ingest(first)
        self._chans = [Channel(f"tegrastats:{r}", "tegrastats", r, rail_scope(r)) for r in self._latest]
        threading.Thread(target=self._pump, name="precmon-tegrastats", daemon=True).start()

    def _ingest(self, line: str) -> None:
        rails = parse_tegrastats_line(line)
        if rails:
            with self._lock:
                self._latest, self._t_s = rails, time.monotonic()

    def _pump(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self._ingest(line)

    def channels(self) -> list[Channel]:
        return list(self._chans)

    def read(self, full: bool = True) -> list[Sample]:
        with self._lock:
            latest, t = self._latest, self._t_s
        return [
            Sample(
                c.id,
                t,
                latest[c.label][0] if c.label in latest else None,
                None,
                {"avg_w": latest[c.label][1]} if c.label in latest else {},
            )
            for c in self._chans
        ]

    def close(self) -> None:
        self._proc.terminate()


def open_jetson() -> tuple[list[Ina3221Source | TegrastatsSource], list[Unavailable]]:
    """INA3221 from sysfs; else tegrastats when it exists; with reasons for what is absent."""
    rails, why = _find_rails()
    if rails:
        return [Ina3221Source(rails)], [Unavailable("tegrastats", "not used: INA3221 rails read from sysfs")]
    missing = [Unavailable("jetson", why or "no device")]
    binary = shutil.which("tegrastats")
    if binary is None:
        return [], missing + [Unavailable("tegrastats", "no device: tegrastats not on PATH")]
    try:
        src = TegrastatsSource(binary)
    except OSError as e:
        return [], missing + [Unavailable("tegrastats", f"could not run tegrastats: {e}")]
    if not src.channels():
        src.close()
        return [], missing + [Unavailable("tegrastats", "tegrastats printed no power rails")]
    return [src], missing
