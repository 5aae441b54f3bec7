"""The DGX Spark's power, limits and PROCHOT from one `spbm` hwmon directory (`layout.py`).

Channels, by label (never by index: the driver leaves gaps where it hides a channel):
- one per *draw* channel (`layout.DRAW_CHANNELS`), with the energy accumulator of the same label
  as its counter where the driver exposes one (cpu_e, cpu_p, gpu), so phase windows take the
  counter's difference first and integrate the instant watts only where there is none;
- `pkg`, the package energy accumulator, as a channel of its own: its watts are the counter's rate;
- `status`, without watts: PROCHOT, the power-limit level and each PL controller's EWMA power
  against its cap, read on every tick (ten small files) so short runs are covered, plus the
  ceilings, floors, budgets and the hottest junction on the slow (extras) ticks.
The controllers' EWMA channels and the old budget channels are *not* draw channels: as channels
they would double the soc_pkg/sys_total rows, and `syspl2` (27 W at idle against sys_total's 25 W)
or `budget_gpu` (a 170 W allocation) would take the headline or the GPU row.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._sysfs import CounterRate, sysfs_path, try_read_int, try_read_text
from ..base import Channel, Sample
from . import layout
from .counters import EnergyTotal

KIND = "spbm"
STATUS_LABEL = "status"
_FILE_RE = re.compile(r"(power|energy|temp)(\d+)_(label)$")
# A register that reads 0xFFFFFFFF (telemetry inactive) scales to 4.29 GW: no reading at all.
MAX_READING_UW = 100_000 * layout.UW_PER_W


def is_status(ch: Channel) -> bool:
    """The spbm status channel (PROCHOT, PL level, limits): what the validity checks read."""
    return ch.kind == KIND and ch.id.endswith(":" + STATUS_LABEL)


@dataclass
class _Draw:
    channel: Channel
    power: Path | None
    energy: Path | None = None
    total: EnergyTotal | None = None
    rate: CounterRate | None = None


@dataclass
class _Status:
    """The status files that exist: name → path, split by how often they are read."""

    every_tick: dict[str, Path] = field(default_factory=dict)
    slow: dict[str, Path] = field(default_factory=dict)


def _labelled(d: Path) -> dict[str, dict[str, int]]:
    """{"power": {label: index}, "energy": {...}, "temp": {...}} from the `*_label` files present."""
    out: dict[str, dict[str, int]] = {"power": {}, "energy": {}, "temp": {}}
    for p in d.iterdir():
        m = _FILE_RE.match(p.name)
        if m:
            label = try_read_text(p)
            if label:
                out[m.group(1)].setdefault(label, int(m.group(2)))
    return out


def _controller_name(label: str) -> str | None:
    name = label.removeprefix(layout.OLD_CONTROLLER_PREFIX)
    return name if name in layout.CONTROLLERS else None


class SpbmSource:
    """The channels of one spbm device; build it with `open_spbm(hwmon_dir)`."""

    kind = KIND

    def __init__(self, d: Path) -> None:
        self.path = d
        found = _labelled(d)
        self.hidden = [c.label for c in layout.DRAW_CHANNELS if c.label not in found["power"]]
        self._draws: list[_Draw] = []
        self.status = _Status()
        for label, idx in sorted(found["power"].items(), key=lambda kv: kv[1]):
            self._add_power(d, label, idx, found["energy"], set(found["power"]))
        paired = {dr.channel.label for dr in self._draws if dr.energy is not None}
        for label, idx in sorted(found["energy"].items(), key=lambda kv: kv[1]):
            path = d / f"energy{idx}_input"
            if label in paired or not path.exists():
                continue
            # pkg, or a twin whose power file the driver hid: the counter alone, watts from its rate
            known = layout.DRAW_BY_LABEL.get(label)
            scope, note = layout.ENERGY_OWN.get(label) or (known.scope if known else "rail", "energy accumulator only")
            cid = f"{d.name}:{label}-energy" if label in found["power"] else f"{d.name}:{label}"
            ch = Channel(cid, KIND, label, scope, has_energy_counter=True, note=note)
            self._draws.append(_Draw(ch, None, path, EnergyTotal(), CounterRate(min_dt_s=0.25)))
        if layout.HOTTEST in found["temp"]:
            self.status.slow["temp_c"] = d / f"temp{found['temp'][layout.HOTTEST]}_input"
        for name in layout.STATUS_FILES:
            if (d / name).exists():
                self.status.every_tick[name] = d / name
        note = "PROCHOT, power-limit level, PL limits (spbm)"
        cid = f"{d.name}:{STATUS_LABEL}"
        self.status_channel = Channel(cid, KIND, "spbm status", "system", has_watts=False, note=note)

    def _add_power(self, d: Path, label: str, idx: int, energy: dict[str, int], labels: set[str]) -> None:
        base = d / f"power{idx}"
        inp = Path(f"{base}_input")
        ctl = _controller_name(label)
        if ctl is not None:
            # Drivers before dc7a559 had both `pl1` (the limit itself) and `ewma_pl1`: only the
            # EWMA is the power the controller sees.
            if inp.exists() and layout.OLD_CONTROLLER_PREFIX + label not in labels:
                self.status.every_tick[f"{ctl}_ewma_w"] = inp
            for attr, where in (("cap", self.status.every_tick), ("max", self.status.slow), ("min", self.status.slow)):
                if Path(f"{base}_{attr}").exists():
                    where[f"{ctl}_{attr}_w"] = Path(f"{base}_{attr}")
            return
        if label.startswith(layout.BUDGET_PREFIX):
            if inp.exists():
                self.status.slow[f"{label}_w"] = inp
            return
        if not inp.exists():
            return
        known = layout.DRAW_BY_LABEL.get(label)
        scope, what = (known.scope, known.what) if known else ("rail", "a channel this precmon does not know")
        epath = d / f"energy{energy[label]}_input" if label in energy else None
        if epath is not None and not epath.exists():
            epath = None
        ch = Channel(f"{d.name}:{label}", KIND, label, scope, has_energy_counter=epath is not None, note=what)
        self._draws.append(_Draw(ch, inp, epath, EnergyTotal() if epath else None))

    def channels(self) -> list[Channel]:
        status = [self.status_channel] if self.status.every_tick or self.status.slow else []
        return [dr.channel for dr in self._draws] + status

    def read(self, full: bool = True) -> list[Sample]:
        out = [self._read_draw(dr) for dr in self._draws]
        t = time.monotonic()
        extra = _read_status(self.status.every_tick)
        if full:
            extra |= _read_status(self.status.slow)
        if extra:
            out.append(Sample(self.status_channel.id, t, None, None, extra))
        return out

    def _read_draw(self, dr: _Draw) -> Sample:
        t = time.monotonic()
        watts = None
        if dr.power is not None:
            uw = try_read_int(dr.power)
            if uw is not None and 0 <= uw <= MAX_READING_UW:
                watts = uw / layout.UW_PER_W
        energy_j = None
        if dr.energy is not None and dr.total is not None:
            uj = try_read_int(dr.energy)
            if uj is not None and uj >= 0:
                energy_j = dr.total.update(t, uj)
        if dr.rate is not None and energy_j is not None:
            watts = dr.rate.update(t, energy_j)
        return Sample(dr.channel.id, t, watts, energy_j)

    def describe(self) -> dict[str, object]:
        """What `precmon doctor` says about the driver: where, what it shows, what it hides."""
        return {
            "path": str(self.path),
            "power_channels": [dr.channel.label for dr in self._draws if dr.power is not None],
            "energy_counters": [dr.channel.label for dr in self._draws if dr.energy is not None],
            "status": sorted(self.status.every_tick) + sorted(self.status.slow),
            "hidden": self.hidden,
        }

    def close(self) -> None:
        pass


def _read_status(files: dict[str, Path]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, path in files.items():
        v = try_read_int(path)
        if v is None or v < 0:
            continue
        if key.endswith("_w"):
            if v > MAX_READING_UW:
                continue
            out[key] = v / layout.UW_PER_W
        elif key == "temp_c":
            out[key] = v / layout.MC_PER_C
        else:
            out[key] = float(v)
    return out


def open_spbm(d: Path) -> SpbmSource | None:
    """The spbm source of one hwmon directory, or None where it has no channel at all."""
    src = SpbmSource(d)
    return src if src._draws else None


def find_spbm(root: Path | None = None) -> list[Path]:
    """The hwmon directories named `spbm` under `root` (default: `PRECMON_SYSFS_ROOT`, i.e. `/`)."""
    base = (root / "sys/class/hwmon") if root is not None else sysfs_path("/sys/class/hwmon")
    if not base.is_dir():
        return []
    return sorted(d for d in base.glob("hwmon*") if try_read_text(d / "name") == layout.DRIVER_NAME)
