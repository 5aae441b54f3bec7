"""How often the TUI repaints, reads power and polls the server: one setting, `--refresh-s`.

Every wake-up of the TUI costs CPU on the machine being measured, so the live panels repaint
once a `refresh_s` (default 1 s; nvitop's default is 2 s), the power sampler reads slowly while
nothing is measured, and a bench, a sweep or `--drive` gets the sampler's full rate for as long
as it runs (`PowerWorker.full_rate`). The server is polled at most once a second (the live
token rate and the run chart are per second) and no faster than the screen repaints; the run
chart, whose bars are per second, is redrawn at most once a second too.
The setting itself (default, bounds, check) is `precmon/refresh.py`'s, where the CLI reads it too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from precmon.refresh import DEFAULT_REFRESH_S

SERVER_POLL_MIN_S = 1.0  # the live token rate is per second: never asked more often
CHART_MIN_S = 1.0  # the run chart draws a bar a second: redrawn no more often
IDLE_WATTS_MIN_HZ = 1.0  # while nothing is measured: one reading a second keeps the per-second W chart whole
EXTRAS_MAX_HZ = 2.0  # clocks, temperature, memory: the sampler's own extras rate
# Watch mode hides the Power panel, the only place the extras show: read them once a minute
# meanwhile (docs/benchmarks.md "Why the constants": what each read costs).
WATCH_EXTRAS_HZ = 1.0 / 60.0
# Watch mode's J/token window: one energy-counter read closes it, and NVML's costs milliseconds of
# CPU in the driver: read at every poll it would be a large share of watch mode's own CPU.
JPT_WINDOW_MIN_S = 4.0


@dataclass(frozen=True)
class Pace:
    refresh_s: float = DEFAULT_REFRESH_S

    @property
    def paint_s(self) -> float:
        """Power snapshots and the live panels' repaint."""
        return self.refresh_s

    @property
    def chart_s(self) -> float:
        """The run chart's redraw: its rate reading and its watts second land at different
        moments, so a fast refresh would draw it twice a second for one new bar each."""
        return max(CHART_MIN_S, self.refresh_s)

    @property
    def server_poll_s(self) -> float:
        """Health, /metrics and the live token rate."""
        return max(SERVER_POLL_MIN_S, self.refresh_s)

    @property
    def jpt_polls(self) -> int:
        """Server polls per watch-mode J/token window (at least `JPT_WINDOW_MIN_S` long)."""
        return max(1, math.ceil(JPT_WINDOW_MIN_S / self.server_poll_s - 1e-9))

    @property
    def jpt_window_s(self) -> float:
        return self.jpt_polls * self.server_poll_s

    @property
    def idle_watts_hz(self) -> float:
        """The sampler's watts rate while no bench, sweep or --drive runs."""
        return max(IDLE_WATTS_MIN_HZ, 1.0 / self.refresh_s)

    @property
    def idle_extras_hz(self) -> float:
        return min(EXTRAS_MAX_HZ, 1.0 / self.refresh_s)

    @property
    def watch_extras_hz(self) -> float:
        """The extras' rate while watch mode hides the Power panel (nothing is measured)."""
        return min(WATCH_EXTRAS_HZ, self.idle_extras_hz)
