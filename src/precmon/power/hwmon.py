"""Power from Linux hwmon: amdgpu, the DGX Spark `spbm` driver, and any other power sensor.

hwmon units: `power*_input` / `power*_average` in µW, `energy*_input` in µJ.

- amdgpu: `power1_average` and/or `power1_input` (kernels and GPUs differ; probe both, prefer
  the instant `power1_input`). On an APU (Strix Halo and friends) this is the package power
  *including the CPU*; we recognise an APU by its `vddnb` (northbridge) voltage rail, which
  discrete GPUs do not have, and give it scope "package" with a note.
- spbm (DGX Spark, out-of-tree): `power/spark/` (draw channels by label, energy accumulators,
  PL limits, PROCHOT), handed the directory here.
- anything else with `power*_input` (or only `power*_average`): kind "hwmon".
`ina3221` is left to the Jetson source, which knows its rails.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from ._sysfs import CounterUnwrapper, sysfs_path, try_read_int, try_read_text
from .base import Channel, Sample, Unavailable
from .spark import SpbmSource, open_spbm

_SKIP = {"ina3221", "amdgpu", "spbm"}  # handled elsewhere (or by their own function below)
_POWER_RE = re.compile(r"power(\d+)_(input|average)$")

MAX_READING_UW = 100_000 * 10**6  # 100 kW: beyond any one device; more is a driver bug, not watts


@dataclass
class _HwmonChannel:
    channel: Channel
    power_paths: list[Path]  # first readable one wins; extras record all of them
    energy_path: Path | None = None
    unwrap: CounterUnwrapper | None = None


class HwmonSource:
    """The power channels of one hwmon device (one `hwmonN` directory)."""

    def __init__(self, kind: str, hwmon_dir: Path, chans: list[_HwmonChannel]) -> None:
        self.kind = kind
        self.path = hwmon_dir
        self._chans = chans

    def channels(self) -> list[Channel]:
        return [c.channel for c in self._chans]

    def read(self, full: bool = True) -> list[Sample]:
        out = []
        for c in self._chans:
            t = time.monotonic()
            watts = None
            extra: dict[str, float] = {}
            for p in c.power_paths:
                uw = try_read_int(p)
                if uw is None or not 0 <= uw <= MAX_READING_UW:  # unsigned µW by the hwmon ABI
                    continue
                if watts is None:
                    watts = uw / 1e6
                if len(c.power_paths) > 1:
                    extra[p.name.replace("power1_", "power_") + "_w"] = uw / 1e6
            energy_j = None
            if c.energy_path is not None and c.unwrap is not None:
                uj = try_read_int(c.energy_path)
                energy_j = None if uj is None else c.unwrap.update(uj) / 1e6
            out.append(Sample(c.channel.id, t, watts, energy_j, extra))
        return out

    def close(self) -> None:
        pass


def _power_files(d: Path) -> dict[int, dict[str, Path]]:
    """{index: {"input": path, "average": path}} for the power files that exist."""
    found: dict[int, dict[str, Path]] = {}
    for p in d.iterdir():
        m = _POWER_RE.match(p.name)
        if m:
            found.setdefault(int(m.group(1)), {})[m.group(2)] = p
    return found


def _label(d: Path, prefix: str, idx: int) -> str | None:
    return try_read_text(d / f"{prefix}{idx}_label")


def _amdgpu(d: Path) -> HwmonSource | None:
    files = _power_files(d).get(1, {})
    paths = [files[k] for k in ("input", "average") if k in files]
    if not paths:
        return None
    labels = {try_read_text(p) for p in d.glob("in*_label")}
    apu = "vddnb" in labels
    scope, note = ("package", "APU: includes the CPU") if apu else ("gpu", "")
    ch = Channel(f"{d.name}:amdgpu", "amdgpu", "amdgpu APU package" if apu else "amdgpu", scope, note=note)
    return HwmonSource("amdgpu", d, [_HwmonChannel(ch, paths)])


def _generic(d: Path, name: str) -> HwmonSource | None:
    chans = []
    system = "power_meter" in name  # acpi_power_meter: the whole machine at the wall
    for idx, files in sorted(_power_files(d).items()):
        path = files.get("input") or files.get("average")
        assert path is not None
        label = _label(d, "power", idx) or f"{name} power{idx}"
        scope = "system" if system else "rail"
        chans.append(_HwmonChannel(Channel(f"{d.name}:{name}:power{idx}", "hwmon", label, scope), [path]))
    return HwmonSource("hwmon", d, chans) if chans else None


def open_hwmon() -> tuple[list[HwmonSource | SpbmSource], list[Unavailable]]:
    """Every hwmon power device, and for amdgpu/spbm/hwmon not found, why."""
    base = sysfs_path("/sys/class/hwmon")
    if not base.is_dir():
        why = f"no device: {base} absent"
        return [], [Unavailable(k, why) for k in ("amdgpu", "spbm", "hwmon")]
    sources: list[HwmonSource | SpbmSource] = []
    seen_names: set[str] = set()
    for d in sorted(base.glob("hwmon*"), key=lambda p: int(p.name[5:]) if p.name[5:].isdigit() else 0):
        name = try_read_text(d / "name") or ""
        seen_names.add(name)
        src: HwmonSource | SpbmSource | None = None
        try:
            if name == "amdgpu":
                src = _amdgpu(d)
            elif name == "spbm":
                src = open_spbm(d)
            elif name not in _SKIP:
                src = _generic(d, name or d.name)
        except OSError:
            continue  # a device that vanished while we listed it
        if src is not None:
            sources.append(src)
    found = {s.kind for s in sources}
    missing = []
    if "amdgpu" not in found:
        why = "amdgpu hwmon without power1_average/power1_input" if "amdgpu" in seen_names else ("no amdgpu hwmon")
        missing.append(Unavailable("amdgpu", f"no device: {why}"))
    if "spbm" not in found:
        why = (
            "spbm hwmon without power channels"
            if "spbm" in seen_names
            else "no hwmon named 'spbm' (DGX Spark's out-of-tree power driver)"
        )
        missing.append(Unavailable("spbm", f"no device or driver missing: {why}"))
    if "hwmon" not in found:
        missing.append(Unavailable("hwmon", "no device: no other hwmon power*_input sensor"))
    return sources, missing
