"""The spbm half of `precmon doctor`: where the driver is, what it shows, what it hides, and its
limits and PROCHOT now. One read of each file: no sampling, so it costs nothing beside the rest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .source import SpbmSource, find_spbm, open_spbm

CONTROLLERS = ("pl1", "pl2", "syspl1", "syspl2")


def spbm_report(root: Path | None = None) -> list[dict[str, Any]]:
    """One entry per spbm device under `root` (default: `PRECMON_SYSFS_ROOT`); [] where there is none."""
    out = []
    for d in find_spbm(root):
        src = open_spbm(d)
        if src is not None:
            out.append(_entry(src))
    return out


def _entry(src: SpbmSource) -> dict[str, Any]:
    entry = src.describe()
    status = next((s.extra for s in src.read(full=True) if s.channel_id == src.status_channel.id), {})
    entry["now"] = {k: status[k] for k in ("prochot", "pl_level", "temp_c") if k in status}
    limits = {}
    for c in CONTROLLERS:
        got = {k: status[f"{c}_{k}_w"] for k in ("ewma", "cap", "max", "min") if f"{c}_{k}_w" in status}
        if got:
            limits[c] = got
    entry["limits_w"] = limits
    return entry


def summary_lines(entry: dict[str, Any]) -> list[str]:
    """The entry as short lines for the doctor's table (plain text; the caller escapes it)."""
    now = entry.get("now", {})
    state = []
    if "prochot" in now:
        state.append("PROCHOT asserted" if now["prochot"] else "prochot 0 (normal)")
    if "pl_level" in now:
        state.append(f"pl_level {now['pl_level']:.0f}")
    lines = [
        f"{entry['path']}: {len(entry['power_channels'])} power channels, "
        f"energy counters {', '.join(entry['energy_counters']) or 'none'}",
        "status: " + (", ".join(state) or "no prochot/pl_level attribute"),
    ]
    for c, lim in entry.get("limits_w", {}).items():
        parts = [f"{k} {v:.0f} W" for k, v in lim.items()]
        lines.append(f"{c}: " + ", ".join(parts))
    hidden = entry.get("hidden") or []
    lines.append("hidden by the driver (firmware did not name them): " + (", ".join(hidden) or "none"))
    return lines
