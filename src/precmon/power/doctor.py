"""The power half of `precmon doctor`: what can be read here, current watts, and why not.

`power_report()` returns the docs/design.md §3 entries (`id, kind, label, scope, watts, available,
reason`): one per readable channel, one per missing kind. Watts are the average over a short
window (about one second), by the energy-window rules of docs/design.md §4: a counter delta
where the counter is fine enough for the window, else the integral of the samples. Data only:
`precmon doctor` (cli/commands/doctor_cmd.py) renders the list as a table or dumps it as JSON.
"""

from __future__ import annotations

import time
from typing import Any

from .base import SCOPE_RANK
from .discover import discover_sources
from .sampler import PowerSampler


def power_report(window_s: float = 1.0, rate_hz: float = 20.0, details: bool = False) -> list[dict[str, Any]]:
    """Discover every source, sample for `window_s`, and describe each channel and absence.

    Args:
        window_s: the averaging window.
        rate_hz: sample rate during it.
        details: also add `note` (e.g. "APU: includes the CPU") and `extra` (clocks, temperature,
            utilization, memory) to available entries; off, the entries have exactly docs/design.md §3's keys.
    """
    found = discover_sources()
    entries: list[dict[str, Any]] = []
    sampler = PowerSampler(found.sources, rate_hz=rate_hz)
    try:
        sampler.start()
        any_watts = any(c.has_watts for c in sampler.channels())
        windows = {w.channel_id: w for w in sampler.idle_power(window_s, phase="doctor")} if any_watts else {}
        if not any_watts:
            time.sleep(0.1)  # one host sample for the extras
        latest = sampler.latest()
    finally:
        sampler.stop()
        found.close()
    for ch in sorted(sampler.channels(), key=lambda c: (not c.has_watts, SCOPE_RANK.get(c.scope, 99), c.id)):
        w = windows.get(ch.id)
        if ch.has_watts:
            watts = round(w.avg_watts, 2) if w else None
            reason = None if w else "no reading in the sampling window"
        else:
            watts, reason = None, ch.note or "no watts"
        entry: dict[str, Any] = {
            "id": ch.id,
            "kind": ch.kind,
            "label": ch.label,
            "scope": ch.scope,
            "watts": watts,
            "available": True,
            "reason": reason,
        }
        s = latest.get(ch.id)
        if details:
            entry["note"] = ch.note if ch.has_watts else ""
            entry["extra"] = {k: round(v, 2) for k, v in (s.extra if s else {}).items()}
        entries.append(entry)
    for u in found.unavailable:
        entries.append(
            {
                "id": u.id or u.kind,
                "kind": u.kind,
                "label": u.label or u.kind,
                "scope": None,
                "watts": None,
                "available": False,
                "reason": u.reason,
            }
        )
    return entries
