"""The power worker: owns the meter, posts a `PowerSampled` snapshot once a refresh.

The meter is opened in the worker's thread (NVML and sysfs reads block) and stopped there when the
app quits. The other workers ask this one for `measuring_meter()` (a meter with watts, or None)
and `host()` (the results document's host block). While nothing is measured the sampler reads at
the pace's idle rates; a bench, a sweep or `--drive` holds `full_rate()` while it runs, which puts
the sampler back at the rates it was made with (`precmon.tui.pace`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from precmon.core.schema import Host
from precmon.measure.results import host_from_meter
from precmon.power.remote import open_nodes
from precmon.power.sampler import PowerSampler
from precmon.tui.messages import PowerSampled
from precmon.tui.pace import Pace
from precmon.tui.power_view import power_snapshot
from precmon.tui.workers.background import Post, Quitting

DEFAULT_PACE = Pace()

OPEN_WAIT_S = 20.0  # how long a measurement waits for the sources to open (NVML opens in < 1 s)

MeterFactory = Callable[[], tuple[Any, list[Any], "str | None"]]


def default_meter_factory(power_from: Sequence[str] = ()) -> tuple[Any, list[Any], str | None]:
    """A started PowerSampler over every source found here and the `--power-from` nodes (a node
    that does not answer stays in, without channels: every window then names it missing), the
    absences, and a note if it failed."""
    try:
        nodes = open_nodes(power_from) if power_from else []
        # the energy counter only at phase boundaries: between them nothing here reads it (NVML:
        # ~4 ms of driver CPU a read, `power/nvml.py`)
        sampler = PowerSampler(counter_period_s=None, nodes=nodes)
        sampler.start()
    except Exception as exc:  # a broken source must never keep the UI from starting
        return None, [], f"power sampling failed to start: {type(exc).__name__}: {exc}"
    return sampler, list(sampler.unavailable), None


class PowerWorker:
    """Samples the meter for the Power panel and the watch view."""

    def __init__(
        self,
        post: Post,
        quitting: Quitting,
        meter_factory: MeterFactory = default_meter_factory,
        pace: Pace = DEFAULT_PACE,
        power_from: Sequence[str] = (),
    ) -> None:
        """`power_from`: other nodes' exporters, read by the default factory (`--power-from`)."""
        if power_from and meter_factory is default_meter_factory:
            meter_factory = partial(default_meter_factory, power_from)
        self.post, self.quitting, self.meter_factory, self.pace = post, quitting, meter_factory, pace
        self.meter: Any = None
        self._opened = threading.Event()  # set once the factory has returned (with or without a meter)
        self._rate_lock = threading.Lock()
        self._full_holders = 0  # benches, sweeps and --drive loops running now
        self._full_rates: tuple[float, float] | None = None  # the meter's own rates, read when it opens
        self._watching = False  # watch mode: the Power panel is hidden, its extras are not read

    def start(self) -> None:
        self.quitting.spawn("power", self._loop)

    def wait_ready(self, timeout_s: float = OPEN_WAIT_S) -> bool:
        """Block (a worker thread, never the event loop) until the sources are opened: True when
        they are. A measurement started at mount (`--sweep` with auto start, `precmon demo`) would
        otherwise begin before NVML is open and measure the whole sweep without power, every
        power row n/a beside a live Power panel."""
        deadline = time.monotonic() + timeout_s
        while not self._opened.wait(0.1):
            if self.quitting.is_set or time.monotonic() > deadline:
                return False
        return True

    def _loop(self) -> None:
        try:
            meter, unavailable, note = self.meter_factory()
            if meter is not None and hasattr(meter, "set_rates"):
                with self._rate_lock:
                    self._full_rates = (meter.rate_hz, meter.extras_hz)
                    self._apply_rates(meter)
            self.meter = meter  # before `_opened`: a waiter wakes to the meter, not to None
        finally:
            self._opened.set()
        try:
            last = None
            while not self.quitting.is_set:
                snap = power_snapshot(meter, unavailable, note=note)
                if snap != last:  # an unchanged reading costs no repaint
                    self.post(PowerSampled(snap))
                    last = snap
                self.quitting.wait(self.pace.paint_s)
        finally:
            if meter is not None:
                meter.stop()

    @contextmanager
    def full_rate(self) -> Iterator[None]:
        """The sampler at its full rates while the block runs (a bench, a sweep, `--drive`'s
        load): windows and per-second traces get every reading they would get headless."""
        with self._rate_lock:
            self._full_holders += 1
            self._apply_rates(self.meter)
        try:
            yield
        finally:
            with self._rate_lock:
                self._full_holders -= 1
                self._apply_rates(self.meter)

    def watching(self, on: bool) -> None:
        """Watch mode shows watts only: the extras (clocks, temperature, memory, host CPU) of the
        hidden Power panel are read at `Pace.watch_extras_hz` meanwhile, and at once on the way back."""
        with self._rate_lock:
            self._watching = on
            self._apply_rates(self.meter)

    def _apply_rates(self, meter: Any) -> None:
        """Full rates while anything holds `full_rate`, else the pace's idle ones (under `_rate_lock`)."""
        if meter is None or self._full_rates is None:
            return
        if self._full_holders:
            rates = self._full_rates
        else:
            extras_hz = self.pace.watch_extras_hz if self._watching else self.pace.idle_extras_hz
            rates = (
                min(self.pace.idle_watts_hz, self._full_rates[0]),
                min(extras_hz, self._full_rates[1]),
            )
        if (meter.rate_hz, meter.extras_hz) != rates:
            meter.set_rates(*rates)

    def measuring_meter(self) -> Any:
        """The meter to hand to a measurement: only one that has a channel with watts."""
        m = self.meter
        return m if m is not None and any(c.has_watts for c in m.channels()) else None

    def host(self) -> Host:
        return host_from_meter(self.meter)
