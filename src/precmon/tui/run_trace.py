"""Per-second series for the run chart: tok/s from the server's own token counts, W from the sampler.

During a bench or sweep the chart under the sweep table shows, second by second, what the
server generated and what the headline power channel drew. Neither number is derived from
stream chunks: a chunk can carry several tokens, and llama.cpp sends `usage`/`timings` only in
its last chunk (checked on llama-server b0: `timings` arrives once, with `finish_reason`). So
tok/s comes from the live-rate source (`precmon.servers.watch.live_rate`: llama.cpp `/slots` token
counts, vLLM's per-step counter), read once a second by the server worker, and each reading's
`source` is what the chart names. W is the mean of the sampler's readings in each second.

Plain Python (no textual): `RunTrace` is fed by the app and read by the chart widget.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from precmon.power.base import Sample
from precmon.servers.watch.live_rate import LiveRate

TRACE_SECONDS = 180  # the longest chart (a 180-column terminal shows one second a column)


def watts_per_second(samples: Iterable[Sample]) -> tuple[tuple[int, float], ...]:
    """(whole monotonic second, mean watts of the samples in it), oldest first; gaps stay gaps."""
    sums: dict[int, list[float]] = {}
    for s in samples:
        if s.watts is None or not math.isfinite(s.watts):
            continue
        acc = sums.setdefault(math.floor(s.t_s), [0.0, 0.0])
        acc[0] += s.watts
        acc[1] += 1.0
    return tuple((sec, total / n) for sec, (total, n) in sorted(sums.items()))


def fill_seconds(points: Sequence[tuple[int, float]], last_s: int | None = None) -> list[float | None]:
    """One value per second from the first point to `last_s` (default the last point); None in gaps."""
    if not points:
        return []
    first, end = points[0][0], points[-1][0] if last_s is None else last_s
    out: list[float | None] = [None] * (end - first + 1) if end >= first else []
    for sec, value in points:
        if first <= sec <= end:
            out[sec - first] = value
    return out


@dataclass(frozen=True)
class TraceView:
    """What the chart draws: per-second values (None: no reading that second) and their sources."""

    label: str | None
    tok_s: tuple[float | None, ...]
    tok_source: str
    watts: tuple[float | None, ...]
    watts_source: str

    @property
    def empty(self) -> bool:
        """Nothing to draw (no live source, no watts, or a replay): the chart then gives its rows back."""
        return not any(v is not None for v in (*self.tok_s, *self.watts))


class RunTrace:
    """The per-second tok/s readings and the latest per-second watts, for the variant running."""

    def __init__(self, poll_s: float = 1.0) -> None:
        """`poll_s`: how often the live rate is read (`Pace.server_poll_s`): a reading fills the
        whole seconds of its interval up to that many, so a 2 s poll draws no gaps; a reading
        after a missed poll still leaves the missed second empty."""
        self.label: str | None = None
        self._span_max = max(1, math.ceil(poll_s))
        self._tok: deque[tuple[int, float]] = deque(maxlen=TRACE_SECONDS)
        every = "once a second" if self._span_max == 1 else f"every {poll_s:g} s"
        self._tok_source = f"waiting for the live token rate (read {every})"
        self._watts: tuple[tuple[int, float], ...] = ()
        self._watts_source = "waiting for the power sampler"
        self._view: TraceView | None = None  # the last view, until something changes

    def start(self, label: str) -> None:
        """A variant (or a bench) began: its chart starts empty."""
        self.label, self._view = label, None
        self._tok.clear()

    def add_rate(self, rate: LiveRate) -> None:
        """One live-rate reading: the tokens the server counted over its interval, per second."""
        self._view = None
        if rate.tok_s is None:
            why = rate.unavailable or f"n/a — {rate.error or 'no reading'}"
            self._tok_source = f"tok/s n/a: {why}"
            return
        sec = math.floor(rate.taken_s) if rate.taken_s is not None else (self._tok[-1][0] + 1 if self._tok else 0)
        if self._tok and self._tok[-1][0] == sec:  # two readings in one second: their mean
            self._tok[-1] = (sec, (self._tok[-1][1] + rate.tok_s) / 2)
            return
        # a reading over a longer poll (`--refresh-s 2` polls every 2 s) is the rate of each whole
        # second it covers: the chart stays one bar a second, without gaps
        span = min(self._span_max, max(1, round(rate.interval_s or 1.0))) if rate.taken_s is not None else 1
        after = self._tok[-1][0] if self._tok else None
        for s in range(sec - span + 1, sec + 1):
            if after is None or s > after:
                self._tok.append((s, rate.tok_s))
        self._tok_source = f"tok/s each second from {rate.source} (the server's token counts, all clients)"

    def set_watts(self, per_second: Sequence[tuple[int, float]], scope: str | None, label: str | None) -> None:
        """The sampler's per-second means of the headline channel, whole seconds only (the newest,
        still filling, is left out): the view changes once a second, not with every snapshot."""
        whole = tuple(per_second[-TRACE_SECONDS - 1 : -1])
        if per_second:
            source = f"W each second, {scope or '?'} scope: {label or 'headline channel'}"
        else:
            source = "W n/a: no power source with watts here (precmon doctor)"
        if (whole, source) != (self._watts, self._watts_source):
            self._watts, self._watts_source, self._view = whole, source, None

    def view(self) -> TraceView:
        """The series to draw; the same object until a reading changes it (no repaint then)."""
        if self._view is None:
            tok, watts = tuple(fill_seconds(list(self._tok))), tuple(fill_seconds(self._watts))
            self._view = TraceView(self.label, tok, self._tok_source, watts, self._watts_source)
        return self._view
