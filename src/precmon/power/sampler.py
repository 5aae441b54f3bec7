"""The power sampler: every source read in the background, history kept, phases measured.

One daemon thread reads all the cheap sources (sysfs files, psutil: microseconds each); a source
that calls into a driver and can stall (NVML on a GPU that fell off the bus: a `BlockingSource`
with `blocking = True`) gets a thread of its own, so it delays only itself. Each wake-up of a
thread costs CPU, so there are as few as that allows. The measurement thread never waits on any
of them for longer than `boundary_timeout_s`.

Phases: `begin(phase)` wakes every source for a read *now* (so energy counters are read at the
phase boundary, not up to one period before), waits for those reads up to the timeout, and opens
one accumulator per channel; every later sample of that channel is added to it; `end(phase)`
does the same boundary read and returns one `EnergyWindow` per channel with watts.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from precmon.core.phases import IDLE

from .base import (
    SCOPE_RANK,
    BlockingSource,
    Channel,
    EnergyWindow,
    GatedCounterSource,
    Node,
    NodeSource,
    PacedSource,
    PowerSource,
    Sample,
    Unavailable,
)
from .fleet import edge_covered
from .gpu import GpuFact, GpuFactsSource
from .windows import EnergyTotals, WindowAccumulator, headline


def _reader(source: PowerSource) -> Callable[[bool, bool], list[Sample]]:
    """`read(full, counters)` of a source: a gated counter is read only when asked for."""
    if isinstance(source, GatedCounterSource) and source.expensive_counter:
        return source.read
    return lambda full, counters: source.read(full)


def _blocking(source: PowerSource) -> bool:
    return isinstance(source, BlockingSource) and source.blocking


def _paced(group: list[PowerSource]) -> float | None:
    """The period of a thread whose one source is read at its own pace (another node), else None."""
    return group[0].period_s if len(group) == 1 and isinstance(group[0], PacedSource) else None


class _Worker(threading.Thread):
    def __init__(
        self,
        sampler: PowerSampler,
        sources: list[PowerSource],
        period_s: float,
        extras_period_s: float,
        counter_period_s: float | None = 5.0,
    ):
        super().__init__(name="precmon-power-" + "+".join(s.kind for s in sources), daemon=True)
        self.sampler, self.sources = sampler, sources
        self.readers = [(s, _reader(s)) for s in sources]
        self.has_watts = any(c.has_watts for s in sources for c in s.channels())
        self.period_s, self.extras_period_s = period_s, extras_period_s
        self.paced = _paced(sources)  # its own period, whatever `set_rates` says
        self.counter_period_s = math.inf if counter_period_s is None else counter_period_s
        self.boundary_pending = False
        self.rescheduled = False
        # A raw lock as a wake-up flag: held = nothing pending, released = read now. Acquiring it
        # with a timeout is the cheapest timed wait Python has (an Event allocates a lock per wait),
        # and the wait is what a sampler does most.
        self._wake = threading.Lock()
        self._wake.acquire()
        self.done = threading.Condition()
        self.waiters = 0
        self.last_read_start = -1.0
        self.errors: dict[str, str] = {}  # source kind → error of its last read
        self.stopping = False

    def read_since(self, t_s: float) -> bool:
        """Whether a read started at or after `t_s` (a boundary read has been made)."""
        return self.last_read_start >= t_s

    def wake(self, boundary: bool = False) -> None:
        if boundary:
            self.boundary_pending = True
        try:
            self._wake.release()
        except RuntimeError:
            pass  # a wake-up is already pending

    def run(self) -> None:
        next_t = time.monotonic()
        last_full = last_counters = -1e9
        while not self.stopping:
            delay = next_t - time.monotonic()
            if delay > 0:
                self._wake.acquire(timeout=delay)
            else:
                self._wake.acquire(blocking=False)  # consume a pending wake-up, if any
            if self.stopping:
                break
            t_start = time.monotonic()
            # a little slack: a tick 1 ms early must not push the extras a whole period back
            full = t_start - last_full >= self.extras_period_s - 0.25 * self.period_s
            counters = self.boundary_pending or t_start - last_counters >= self.counter_period_s
            self.boundary_pending = False
            for source, read in self.readers:
                try:
                    samples = read(full, counters)
                    self.errors.pop(source.kind, None)
                except Exception as e:  # noqa: BLE001 - a source bug must not kill the sampler
                    samples, self.errors[source.kind] = [], f"{type(e).__name__}: {e}"
                self.sampler._ingest(samples)
            if full:
                last_full = t_start
            if counters:
                last_counters = t_start
            self.last_read_start = t_start
            if self.waiters:
                with self.done:
                    self.done.notify_all()
            now = time.monotonic()
            if self.rescheduled:  # `set_rates`: the new period counts from this read
                self.rescheduled = False
                next_t = now + self.period_s
            elif now >= next_t:
                next_t = max(next_t + self.period_s, now)  # late: skip ahead, never burst


class PowerSampler:
    """Samples every power source in the background; implements `EnergyMeter`.

    Args:
        sources: opened sources; None discovers them (and closes them again on `stop()`).
        rate_hz: samples per second of watts and counters (default 10).
        history_s: seconds of samples kept per channel for `history()` (sparklines).
        extras_hz: rate of the slow extras (clocks, temperature, memory, host CPU).
        boundary_timeout_s: the longest `begin`/`end` wait for a boundary read.
        counter_period_s: how often a costly energy counter (`GatedCounterSource`) is read
            between phase boundaries; None: only at boundaries (the TUI: nothing it shows reads
            the counter between them; the exporter's energy total does).
        nodes: other machines (power/remote/ `open_nodes`), read beside `sources`, closed on `stop()`.
    """

    def __init__(
        self,
        sources: list[PowerSource] | None = None,
        rate_hz: float = 10.0,
        history_s: float = 300.0,
        extras_hz: float = 2.0,
        boundary_timeout_s: float = 0.5,
        counter_period_s: float | None = 5.0,
        nodes: Sequence[PowerSource] = (),
    ) -> None:
        self.unavailable: list[Unavailable] = []
        self._owned = list(nodes)  # closed on stop: the nodes, and the sources discovered here
        if sources is None:
            from .discover import discover_sources

            found = discover_sources()
            sources, self.unavailable = found.sources, found.unavailable
            self._owned += sources
        self.sources = list(sources) + list(nodes)
        self.rate_hz, self.extras_hz = rate_hz, extras_hz
        self.boundary_timeout_s = boundary_timeout_s
        self._lock = threading.RLock()
        self._channels = {c.id: c for s in self.sources for c in s.channels()}
        maxlen = max(16, int(history_s * max(rate_hz, extras_hz) * 1.2))
        self._buffers: dict[str, deque[Sample]] = {cid: deque(maxlen=maxlen) for cid in self._channels}
        self._extras: dict[str, dict[str, float]] = {cid: {} for cid in self._channels}
        # phase → (time.monotonic() at its start, its boundary read's request time, accumulators)
        self._phases: dict[str, tuple[float, float, dict[str, WindowAccumulator]]] = {}
        self._totals = EnergyTotals(self._channels.values())  # the exporter's `*_joules_total`
        groups = [[s] for s in self.sources if _blocking(s)]
        shared = [s for s in self.sources if not _blocking(s)]
        groups += [shared] if shared else []
        self._workers: list[_Worker] = []
        for g in groups:
            has_watts = any(c.has_watts for s in g for c in s.channels())
            period = _paced(g) or (1.0 / rate_hz if has_watts else 1.0 / extras_hz)
            self._workers.append(_Worker(self, g, period, 1.0 / extras_hz, counter_period_s))
        self._started = False

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> PowerSampler:
        with self._lock:
            if not self._started:
                self._started = True
                for w in self._workers:
                    w.start()
        return self

    def stop(self) -> None:
        for w in self._workers:
            w.stopping = True
            w.wake()
        for w in self._workers:
            if w.is_alive():
                w.join(timeout=1.0)  # a hung read stays behind as a daemon; we do not wait for it
        for s in self._owned:
            s.close()

    def __enter__(self) -> PowerSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set_rates(self, rate_hz: float, extras_hz: float) -> None:
        """Read at these rates from now on (the TUI reads slowly while nothing is measured and at
        the full rate while something is: `precmon.tui.workers.power_worker`). The history keeps its length
        in samples, so a slower rate keeps more seconds."""
        self.rate_hz, self.extras_hz = rate_hz, extras_hz
        for w in self._workers:
            w.period_s = w.paced or (1.0 / rate_hz if w.has_watts else 1.0 / extras_hz)
            w.extras_period_s = 1.0 / extras_hz
            w.rescheduled = True
            w.wake()  # the next read now, then the new period (a long wait must not outlast it)

    # data ------------------------------------------------------------------------------------
    def channels(self) -> list[Channel]:
        return list(self._channels.values())

    def _ingest(self, samples: list[Sample]) -> None:
        with self._lock:
            for s in samples:
                buf = self._buffers.get(s.channel_id)
                if buf is None or (buf and s.t_s <= buf[-1].t_s):
                    continue
                buf.append(s)
                if s.extra:
                    self._extras[s.channel_id].update(s.extra)
                self._totals.add(s)
                for _, _, accs in self._phases.values():
                    acc = accs.get(s.channel_id)
                    if acc is not None:
                        acc.add(s)

    def latest(self) -> dict[str, Sample]:
        """The newest sample of each channel, with the newest value of every extra merged in."""
        with self._lock:
            return {cid: replace(buf[-1], extra=dict(self._extras[cid])) for cid, buf in self._buffers.items() if buf}

    def history(self, channel_id: str, seconds: float) -> list[Sample]:
        """The samples of the last `seconds` of one channel, oldest first (for sparklines)."""
        cutoff = time.monotonic() - seconds
        with self._lock:
            buf = self._buffers.get(channel_id)
            return [s for s in buf if s.t_s >= cutoff] if buf else []

    def errors(self) -> dict[str, str]:
        """Source kind → the error of its last read, for sources whose last read failed."""
        return {kind: err for w in self._workers for kind, err in w.errors.items()}

    def energy_totals(self) -> dict[str, tuple[float, str, float]]:
        """Channel id → (joules, method, time.monotonic() of the reading) of this machine's channels
        with watts: the hardware counter's newest value where the channel has one ("counter"),
        else the integral of every sample since the sampler started ("integrated")."""
        with self._lock:
            return self._totals.totals()

    def nodes(self) -> list[Node]:
        """The other machines whose power this meter reads (`--power-from`), in the order given."""
        return [s.node for s in self.sources if isinstance(s, NodeSource)]

    def read_now(self, wait_s: float = 0.25) -> None:
        """Read every source now, waiting for them up to `wait_s` (an exporter's `/power?fresh=1`:
        another machine's window edge, whose read gives up at 0.4 s: one stalled source here must
        cost that node its stale channel, not every channel's answer)."""
        self._boundary_read(wait_s)

    def power_sources_info(self) -> list[dict[str, object]]:
        """`host.power_sources` of the results file: every channel of this machine with watts,
        widest scope first (another node's are in `nodes()`)."""
        chans = [c for c in self._channels.values() if c.has_watts and c.node is None]
        chans.sort(key=lambda c: SCOPE_RANK.get(c.scope, 99))
        return [
            {
                "id": c.id,
                "kind": c.kind,
                "label": c.label,
                "scope": c.scope,
                "method": "counter" if c.has_energy_counter else "integrated",
            }
            for c in chans
        ]

    def gpu_facts(self) -> list[GpuFact]:
        """`gpu_facts()` of every source that has them (NVML), for the bench's validity checks."""
        facts: list[GpuFact] = []
        for s in self.sources:
            if isinstance(s, GpuFactsSource):
                try:
                    facts.extend(s.gpu_facts())
                except Exception:  # noqa: BLE001 - a driver fault costs the facts, never the bench
                    continue
        return facts

    # phases ----------------------------------------------------------------------------------
    def _boundary_read(self, wait_s: float | None = None) -> float:
        """Wake every source with watts for a read now; wait for them up to `wait_s` (default
        the boundary timeout).

        Returns the monotonic time of the request: reads at or after it are boundary reads."""
        if not self._started:
            self.start()
        t_req = time.monotonic()
        workers = [w for w in self._workers if w.is_alive() and w.has_watts]
        for w in workers:
            with w.done:
                w.waiters += 1
            w.wake(boundary=True)
        deadline = t_req + (self.boundary_timeout_s if wait_s is None else wait_s)
        for w in workers:
            with w.done:
                left = max(0.0, deadline - time.monotonic())
                w.done.wait_for(partial(w.read_since, t_req), timeout=left)
                w.waiters -= 1
        return t_req

    def begin(self, phase: str) -> None:
        """Start measuring `phase` (reopening it if it is already open)."""
        t_req = self._boundary_read()
        with self._lock:
            self._phases[phase] = (time.monotonic(), t_req, self._open_accumulators(t_req))

    def _open_accumulators(self, t_req: float) -> dict[str, WindowAccumulator]:
        """One accumulator per channel with watts, seeded with the boundary read (under the lock)."""
        accs = {}
        for cid, ch in self._channels.items():
            if not ch.has_watts:
                continue
            acc = accs[cid] = WindowAccumulator(cid, ch.scope, counter_step_s=ch.counter_step_s, node=ch.node)
            buf = self._buffers[cid]
            if not buf:
                continue
            # The boundary read carries the counter; a periodic tick after it may not (NVML
            # reads its costly counter only at boundaries), so seed with both, in time order.
            boundary = next((s for s in reversed(buf) if s.energy_j is not None and s.t_s >= t_req), None)
            if boundary is not None and boundary is not buf[-1]:
                acc.add(boundary)
            acc.add(buf[-1])  # the boundary read (or, if it was late, the newest before it)
        return accs

    def end(self, phase: str) -> list[EnergyWindow]:
        """Stop measuring `phase`; one window per channel that had watts (KeyError if not begun)."""
        with self._lock:
            if phase not in self._phases:
                raise KeyError(f"power phase {phase!r} was not begun")
        t_end = self._boundary_read()
        with self._lock:
            t0, t_begin, accs = self._phases.pop(phase)
        return self._windows(phase, accs, time.monotonic() - t0, t_begin, t_end)

    def _windows(
        self, phase: str, accs: dict[str, WindowAccumulator], wall_s: float, t_begin: float, t_end: float
    ) -> list[EnergyWindow]:
        """The closed phase's windows; another node's only where its readings at both edges came
        in time (power/fleet.py `edge_covered`)."""
        out = []
        for acc in accs.values():
            w = acc.window(phase, wall_s)
            if w is not None and edge_covered(
                w, self._channels[acc.channel_id], t_begin, t_end, self.boundary_timeout_s
            ):
                out.append(w)
        return out

    def lap(self, phase: str) -> list[EnergyWindow]:
        """`end(phase)` and `begin(phase)` at one boundary read: back-to-back windows (watch mode's
        J/token each poll) for half the reads; the boundary sample closes one and opens the next."""
        with self._lock:
            if phase not in self._phases:
                raise KeyError(f"power phase {phase!r} was not begun")
        t_req = self._boundary_read()
        with self._lock:
            t0, t_begin, accs = self._phases.pop(phase)
            now = time.monotonic()
            self._phases[phase] = (now, t_req, self._open_accumulators(t_req))
        return self._windows(phase, accs, now - t0, t_begin, t_req)

    def idle_power(self, seconds: float = 3.0, phase: str = IDLE) -> list[EnergyWindow]:
        """Measure a window of `seconds` with no load (the caller makes sure there is none)."""
        self.begin(phase)
        time.sleep(seconds)
        return self.end(phase)

    headline = staticmethod(headline)
