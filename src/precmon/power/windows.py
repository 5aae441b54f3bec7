"""Energy windows: from a stream of samples to energy, average and peak watts over one phase.

Two methods, as docs/design.md §4 asks:
- "counter": the difference of a cumulative energy counter (NVML total energy, RAPL, spbm)
  between the first and last reading of the phase. Exact whatever the sample rate.
- "integrated": the trapezoid rule over the watts samples. Only as good as the sample rate,
  so it is the fallback for sources without a counter, a counter that did not tick, and a counter
  too coarse for the window: one that advances in steps of `counter_step_s` (NVML: ~0.1 s) is used
  only over windows of at least COUNTER_MIN_STEPS steps, where one step is at most 2% of the
  window (a coarse counter over a short window reads far above or below the instant watts:
  docs/benchmarks.md "Why the constants").
Accumulation is incremental (O(1) per sample), so a phase may outlast the history buffers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .base import ROUND_TRIP_S, SCOPE_RANK, Channel, EnergyWindow, Sample

COUNTER_MIN_STEPS = 50


@dataclass
class WindowAccumulator:
    """Running totals of one channel over one open phase."""

    channel_id: str
    scope: str
    first_w: Sample | None = None  # first sample with watts
    last_w: Sample | None = None
    first_counter: Sample | None = None  # first sample with a counter value
    last_counter: Sample | None = None
    # The watts and counter values of the samples above (never None once those are set).
    first_watts: float = 0.0
    last_watts: float = 0.0
    first_counter_j: float = 0.0
    last_counter_j: float = 0.0
    energy_j: float = 0.0  # trapezoid integral so far
    peak_watts: float | None = None
    n_samples: int = 0
    counter_step_s: float | None = None  # the channel's, where its counter is coarse
    node: str | None = None  # the channel's node (None: this machine)

    def add(self, s: Sample) -> None:
        counter_j = s.energy_j
        if counter_j is not None and math.isfinite(counter_j):
            if self.last_counter is None or s.t_s > self.last_counter.t_s:
                if self.first_counter is None:
                    self.first_counter, self.first_counter_j = s, counter_j
                self.last_counter, self.last_counter_j = s, counter_j
        watts = s.watts
        if watts is None or not math.isfinite(watts):
            return
        last = self.last_w
        if last is not None and s.t_s <= last.t_s:
            return  # a repeat (tegrastats between two lines) or out of order: no new information
        if last is None:
            self.first_w, self.first_watts = s, watts
        else:
            self.energy_j += (s.t_s - last.t_s) * (watts + self.last_watts) / 2
        self.last_w, self.last_watts = s, watts
        self.n_samples += 1
        self.peak_watts = watts if self.peak_watts is None else max(self.peak_watts, watts)

    def window(self, phase: str, wall_duration_s: float) -> EnergyWindow | None:
        """The finished window, or None when the channel gave nothing usable in this phase."""
        span_w = (self.last_w.t_s - self.first_w.t_s) if self.first_w and self.last_w else 0.0
        counter = self._counter_window(phase, span_w)
        if counter is not None and not self._too_coarse(counter, span_w):
            return counter
        return self._integrated_window(phase, wall_duration_s, counter)

    def _counter_window(self, phase: str, span_w: float) -> EnergyWindow | None:
        """The counter's window over the phase, or None when it has no two readings that cover
        (nearly) all of the watts samples' span, or did not tick between them."""
        c0, c1 = self.first_counter, self.last_counter
        # A counter read that missed a boundary (a late read) covers only part of the phase: its
        # energy would be too small for the phase, so it must cover (nearly) all of it.
        if c0 is None or c1 is None or not (c1.t_s > c0.t_s and c1.t_s - c0.t_s >= 0.9 * span_w):
            return None
        delta_j = self.last_counter_j - self.first_counter_j
        if not delta_j > 0:  # zero: the counter did not tick in so short a phase; integrate instead
            return None
        dur = c1.t_s - c0.t_s
        return EnergyWindow(
            self.channel_id,
            self.scope,
            phase,
            dur,
            delta_j,
            delta_j / dur,
            self.peak_watts,
            "counter",
            self.n_samples,
            start_s=c0.t_s,
            node=self.node,
            edge_s=self._edge_s(c0, c1),
        )

    def _too_coarse(self, counter: EnergyWindow, span_w: float) -> bool:
        """Whether to set a coarse counter aside for the integral: only over a window of fewer than
        COUNTER_MIN_STEPS steps, and only for samples dense enough to do better (one per two steps
        at least): two edge readings of a stalled sampler would be a straight line, not a measurement."""
        return (
            self.counter_step_s is not None
            and counter.duration_s < COUNTER_MIN_STEPS * self.counter_step_s
            and span_w > 0
            and self.n_samples - 1 >= span_w / (2 * self.counter_step_s)
        )

    def _integrated_window(
        self, phase: str, wall_duration_s: float, counter: EnergyWindow | None
    ) -> EnergyWindow | None:
        """The trapezoid integral's window (`counter`: the coarse counter's, set aside but kept for
        comparison); None without a watts sample."""
        w0, w1 = self.first_w, self.last_w
        if w0 is None or w1 is None:
            return None
        span = w1.t_s - w0.t_s
        if span > 0:
            return EnergyWindow(
                self.channel_id,
                self.scope,
                phase,
                span,
                self.energy_j,
                self.energy_j / span,
                self.peak_watts,
                "integrated",
                self.n_samples,
                counter_energy_j=counter.energy_j if counter is not None else None,
                start_s=w0.t_s,
                node=self.node,
                edge_s=self._edge_s(w0, w1),
            )
        # One sample only (a phase shorter than a sample period): hold it over the phase.
        watts = self.first_watts
        return EnergyWindow(
            self.channel_id,
            self.scope,
            phase,
            wall_duration_s,
            watts * wall_duration_s,
            watts,
            self.peak_watts,
            "integrated",
            self.n_samples,
            start_s=None,
            node=self.node,
            edge_s=self._edge_s(self.first_w, self.first_w) if self.first_w else None,
        )

    def _edge_s(self, first: Sample, last: Sample) -> float | None:
        """Half of each edge reading's round trip, added: None for this machine's readings."""
        if self.node is None:
            return None
        return (first.extra.get(ROUND_TRIP_S, 0.0) + last.extra.get(ROUND_TRIP_S, 0.0)) / 2


class EnergyTotals:
    """Each channel's energy since the sampler started, for the exporter's `*_joules_total`: the
    hardware counter's newest value where the channel keeps one, else the running integral of
    its samples (the same O(1) accumulation as a window, one open for the sampler's life)."""

    def __init__(self, channels: Iterable[Channel]) -> None:
        self._accs = {c.id: WindowAccumulator(c.id, c.scope, node=c.node) for c in channels if c.has_watts}

    def add(self, s: Sample) -> None:
        acc = self._accs.get(s.channel_id)
        if acc is not None:
            acc.add(s)

    def totals(self) -> dict[str, tuple[float, str, float]]:
        """Channel id → (joules, "counter" | "integrated", time.monotonic() of the newest reading)."""
        out = {}
        for cid, acc in self._accs.items():
            if acc.last_counter is not None:
                out[cid] = (acc.last_counter_j, "counter", acc.last_counter.t_s)
            elif acc.last_w is not None:
                out[cid] = (acc.energy_j, "integrated", acc.last_w.t_s)
        return out


def window_from_samples(
    samples: Iterable[Sample],
    scope: str = "gpu",
    phase: str = "phase",
    wall_duration_s: float = 0.0,
    counter_step_s: float | None = None,
) -> EnergyWindow | None:
    """One channel's window from a finished list of samples (tests, offline analysis)."""
    acc: WindowAccumulator | None = None
    for s in samples:
        acc = acc or WindowAccumulator(s.channel_id, scope, counter_step_s=counter_step_s)
        acc.add(s)
    return acc.window(phase, wall_duration_s) if acc else None


def _headline_key(scope: str, counter: bool, watts: float) -> tuple[int, bool, float]:
    """The one ranking rule: widest scope (SCOPE_RANK, unknown scopes last), then an energy counter,
    then the larger power (of two module-rank channels, the one that contains the other draws more)."""
    return (SCOPE_RANK.get(scope, 99), not counter, -watts)


def headline(windows: Iterable[EnergyWindow]) -> EnergyWindow | None:
    """The window to headline: the widest scope (SCOPE_RANK); on a tie the counter method,
    then the larger power. Windows without finite watts are never headlined.
    """
    usable = [w for w in windows if math.isfinite(w.avg_watts)]
    if not usable:
        return None
    return min(usable, key=lambda w: _headline_key(w.scope, w.method == "counter", w.avg_watts))


def headline_now(channels: Iterable[Channel], latest: Mapping[str, Sample]) -> tuple[Channel, float] | None:
    """The channel to headline right now and its newest watts: `headline`'s rule over the newest
    sample of every channel with watts (a channel with an energy counter ranks as the counter method).

    The live power panel and the sweep's cool-down wait use it, so the number they show is the
    channel a measurement would report.
    """
    best: tuple[Channel, float] | None = None
    for ch in channels:
        s = latest.get(ch.id)
        if not ch.has_watts or s is None or s.watts is None or not math.isfinite(s.watts):
            continue
        key = _headline_key(ch.scope, ch.has_energy_counter, s.watts)
        if best is None or key < _headline_key(best[0].scope, best[0].has_energy_counter, best[1]):
            best = (ch, s.watts)
    return best
