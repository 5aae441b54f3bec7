"""One measured request and its power: the bench's steps, a concurrency level's window and
`watch --drive` all go through here, so a run's power is glued to it one way.

`PhaseMeter` is zeus's `begin_window(key)` / `end_window(key) -> Measurement` over the power
meter: `end` returns a typed `Measurement` (every channel's window, the headline one by the one
rule of power/windows.py, its per-second watts and its Unix span) instead of loose `extra` keys;
`Measurement.apply` writes it into the run the way results files have always had it. Phase names
are `precmon.core.phases`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from precmon.core.phases import DECODE_WINDOW, IDLE
from precmon.core.schema import Run
from precmon.measure import nodes as node_power
from precmon.measure.decode_window import cut_prefill
from precmon.measure.prompts import Prompt
from precmon.measure.timing import measure_once
from precmon.power.base import EnergyMeter, EnergyWindow
from precmon.power.fleet import Fleet, fleet
from precmon.servers.base import Server, StreamResult

#: The meter key of `watch --drive`'s requests (their runs are decode runs; the key keeps their
#: window apart from a bench's phases on the same meter).
DRIVE_WINDOW = "drive"


@dataclass(frozen=True)
class Measurement:
    """The power of one phase window.

    Attributes:
        phase: the run's phase (what `apply` cuts at the first token, for a decode-window phase).
        t0_s: `time.monotonic()` when the window began.
        windows: one per channel with watts (of every node).
        headline: the widest-scope window (power/windows.py); over several nodes their sum
            (power/fleet.py). None when no channel had watts, or a node expected gave none.
        per_second_w: the headline channel's watts averaged per second of the window (sparklines;
            none for a sum of nodes, which is known over the whole window only).
        unix_span_s: the window as [start, end] Unix seconds (to line up an independent power log).
        nodes: each node's window and those missing (`Fleet`).
        parts: over several nodes, each node's part (`extra.power_by_node`, measure/nodes.py).
    """

    phase: str
    t0_s: float
    windows: tuple[EnergyWindow, ...]
    headline: EnergyWindow | None
    per_second_w: tuple[float, ...]
    unix_span_s: tuple[float, float] | None
    nodes: Fleet = Fleet(None)
    parts: tuple[dict[str, object], ...] = ()

    def apply(self, run: Run, meter: EnergyMeter, sres: StreamResult | None = None, extras: bool = True) -> None:
        """The run's `power_w`, `energy_j` (a decode-window phase: first token → end) and, with
        `extras`, its `power_channel`, `window_unix_s`, `power_w_per_s` and `power_windows`; over
        several nodes also `power_by_node` and `nodes_missing`."""
        if self.nodes.several:
            run.extra.power_by_node = [dict(p) for p in self.parts]
            run.extra.nodes_missing = [n or node_power.local_name() for n in self.nodes.missing] or None
        w = self.headline
        if w is None:
            return
        run.power_w, run.energy_j = w.avg_watts, w.energy_j
        if extras:
            run.extra.power_channel = w.channel_id
            run.extra.window_unix_s = list(self.unix_span_s) if self.unix_span_s else None
            run.extra.power_w_per_s = list(self.per_second_w)
            run.extra.power_windows = [_window_dict(x) for x in self.windows]
        if self.phase in DECODE_WINDOW and sres is not None:
            several = list(self.nodes.by_node.values()) if self.nodes.several else []
            cut_prefill(meter, self.t0_s, w, run, sres, several)


class PhaseMeter:
    """`begin(phase)` / `end(phase) -> Measurement` over an `EnergyMeter`; without a meter every
    call is a no-op and `end` returns None, so callers need no `if meter` of their own."""

    def __init__(self, meter: EnergyMeter | None) -> None:
        self.meter = meter
        self._t0: dict[str, float] = {}
        self._expected = node_power.expected_nodes(meter) if meter is not None else []
        self._urls = node_power.urls(meter)

    def begin(self, phase: str, key: str | None = None) -> None:
        """Open the window of `phase` (on the meter as `key`, default the phase itself)."""
        if self.meter is not None:
            self._t0[key or phase] = time.monotonic()
            self.meter.begin(key or phase)

    def end(self, phase: str, key: str | None = None) -> Measurement | None:
        """Close the window and measure it (None without a meter)."""
        if self.meter is None:
            return None
        key = key or phase
        windows = self.meter.end(key)
        t0 = self._t0.pop(key, time.monotonic())
        f = fleet(windows, self._expected)
        w = f.total
        per_s = self._per_second(w.channel_id, t0) if w is not None and not f.several else ()
        span = _unix_span(w, t0) if w is not None else None
        parts: tuple[dict[str, object], ...] = ()
        if f.several:
            duration = w.duration_s if w is not None else next((x.duration_s for x in f.by_node.values()), 0.0)
            parts = tuple(node_power.parts(f, duration, self._urls))
        return Measurement(phase, t0, tuple(windows), w, per_s, span, f, parts)

    def end_into(self, phase: str, run: Run, sres: StreamResult | None = None) -> Measurement | None:
        """`end(phase)`, its measurement written into `run` (`Measurement.apply`)."""
        measured = self.end(phase)
        if measured is not None and self.meter is not None:
            measured.apply(run, self.meter, sres)
        return measured

    def abandon(self, phase: str, key: str | None = None) -> None:
        """Close a window whose request failed: nothing is measured."""
        if self.meter is not None:
            self.meter.end(key or phase)
            self._t0.pop(key or phase, None)

    def _per_second(self, channel_id: str, t0: float) -> tuple[float, ...]:
        assert self.meter is not None
        now = time.monotonic()
        buckets: dict[int, list[float]] = {}
        for smp in self.meter.history(channel_id, now - t0 + 1.0):
            if smp.t_s >= t0 and smp.watts is not None:
                buckets.setdefault(int(smp.t_s - t0), []).append(smp.watts)
        return tuple(round(sum(b) / len(b), 2) for _, b in sorted(buckets.items()))


def measure_request(
    server: Server,
    power: PhaseMeter,
    phase: str,
    prompt: Prompt,
    max_tokens: int,
    model: str | None,
    timeout_s: float,
    *,
    repeat: int | None = None,
    endpoint: str = "completions",
    reuse_prefix: bool = False,
    key: str | None = None,
    before: Callable[[], None] | None = None,
) -> tuple[Run, StreamResult, Measurement | None]:
    """One timed request inside its own power window: (run, stream, measurement).

    The window opens just before the request is sent (`before` runs inside it, just before the
    send: the validity probe's reading) and closes after the last byte; a request that raises
    (ServerError) closes it unmeasured and propagates. The measurement is not applied: the
    caller decides which of its parts the run keeps (`Measurement.apply`).
    """
    power.begin(phase, key)
    try:
        if before is not None:
            before()
        run, sres = measure_once(server, phase, prompt, max_tokens, model, timeout_s, repeat, endpoint, reuse_prefix)
    except BaseException:
        power.abandon(phase, key)
        raise
    return run, sres, power.end(phase, key)


def measure_idle(power: PhaseMeter, seconds: float, check_stop: Callable[[], None]) -> Run:
    """The idle window: `seconds` with the server ready and no load (`check_stop` every 0.1 s);
    its run (phase idle, never recorded) carries the measurement."""
    power.begin(IDLE)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        check_stop()
        time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
    run = Run(phase=IDLE, prompt_tokens=None, output_tokens=None)
    power.end_into(IDLE, run)
    return run


def _window_dict(x: EnergyWindow) -> dict[str, object]:
    d: dict[str, object] = {
        "channel": x.channel_id,
        "scope": x.scope,
        "avg_w": round(x.avg_watts, 3),
        "energy_j": round(x.energy_j, 4),
        "method": x.method,
        "seconds": round(x.duration_s, 4),
    }
    if x.counter_energy_j is not None:
        d["counter_energy_j"] = round(x.counter_energy_j, 4)
    return d


def _unix_span(w: EnergyWindow, t0_s: float | None) -> tuple[float, float] | None:
    """The window as [start, end] Unix seconds, so an independent power log (nvidia-smi's CSV with
    wall-clock stamps) can be lined up with each run; the window itself is on the monotonic clock."""
    start = w.start_s if w.start_s is not None else t0_s
    if start is None:
        return None
    to_unix = time.time() - time.monotonic()
    return (round(start + to_unix, 3), round(start + w.duration_s + to_unix, 3))
