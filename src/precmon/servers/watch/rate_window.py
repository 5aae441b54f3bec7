"""Watch mode's big tok/s: the live readings of the last few seconds, and whether to trust them.

Measured on the 2-core test machine (docs/benchmarks.md, "Watch mode's live rate under load"):
each one-second `/slots` reading agreed with the server's own clock (`timings_per_token`) to a
few percent, but under load (a) the server's own pace swung between 0 and 45 tok/s from one
second to the next (llama.cpp's threads wait for each other when the box is shared), so one
second said nothing about the request's rate (3.95 read while the request ran at 28.3); (b) a
`/slots` answer that took 100–150 ms put a reading 13–23% off; (c) the number on screen was up
to 2 s old. So the readout shows tokens ÷ seconds over the readings of the last `WINDOW_S`, and
says it is unsure (a reason, never a silent number) when:

- the readings in the window disagree by more than `UNEVEN_REL` around their mean (uneven);
- precmon's own reads ran late (`LATE_FACTOR` × the poll interval between two reads);
- the reads' round trips leave the window's length unsure by more than `TIMING_REL`;
- the window holds fewer than `FEW_TOKENS` tokens (a starved server at 1–2 tok/s: measured, the
  figure was then 0.6 while the last 5 s ran at 1.3);
- no reading arrived for `STALE_POLLS` poll intervals (the figure shown would be stale).

Pure: the TUI keeps one per server it shows (`tui/server_follow.py`) and feeds it each `LiveRate`;
watch mode's readout and the main screen's Server panel both show its figure, so the two screens
never disagree about the same second. `brief` is the reason in a few words, for the panel's row.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from precmon.servers.watch.live_rate import LiveRate

WINDOW_S = 5.0  # the readout's window: five one-second readings
UNEVEN_REL = 0.35  # a reading farther than this from the window's mean makes the figure unsure
UNEVEN_MIN_TOKENS = 3.0  # below this many tokens per reading, a token more or less is no unevenness
LATE_FACTOR = 1.6  # a read this many poll intervals after the last is late (precmon was starved)
TIMING_REL = 0.10  # reads' round trips over this share of the window: its length is unsure
STALE_POLLS = 3.0  # no reading for this many poll intervals: the figure shown is stale
FEW_TOKENS = 12.0  # fewer tokens in the window (but some): a token or two either way is > 15%


@dataclass(frozen=True)
class WindowRate:
    """The readout's figure: `tok_s` over `span_s` seconds, and why it is unsure (None: it is not).

    `stale`: no reading came for a while; the figure is the last one, not now. `brief`: `unsure`
    in a few words ("uneven pace"), where a row has no room for the whole reason."""

    tok_s: float | None
    span_s: float
    unsure: str | None = None
    stale: bool = False
    brief: str | None = None


@dataclass(frozen=True)
class _Reading:
    end_s: float
    interval_s: float
    tokens: float
    timing_s: float


class RateWindow:
    """The live readings of the last `window_s` seconds (one server's; `clear` on another)."""

    def __init__(self, poll_s: float, window_s: float = WINDOW_S) -> None:
        self.poll_s, self.window_s = poll_s, window_s
        self._readings: deque[_Reading] = deque()
        self.last_s: float | None = None  # when the newest reading was taken
        self.arrived_s: float | None = None  # when it reached us (time.monotonic): staleness is from here

    def clear(self) -> None:
        self._readings.clear()
        self.last_s = self.arrived_s = None

    def add(self, rate: LiveRate, now_s: float) -> None:
        """A live reading with a number, arrived at `now_s`; one without (an error, no source)
        empties the window."""
        if rate.tok_s is None or rate.interval_s is None or rate.taken_s is None or rate.interval_s <= 0:
            self.clear()
            return
        self._readings.append(_Reading(rate.taken_s, rate.interval_s, rate.tok_s * rate.interval_s, rate.timing_s))
        self.last_s, self.arrived_s = rate.taken_s, now_s
        while self._readings and self._readings[-1].end_s - self._readings[0].end_s >= self.window_s - 1e-9:
            self._readings.popleft()  # keep readings whose intervals fit in the window

    def rate(self, now_s: float) -> WindowRate | None:
        """The figure at `now_s` (time.monotonic), or None before the first reading."""
        if not self._readings or self.arrived_s is None:
            return None
        rs = list(self._readings)
        span = sum(r.interval_s for r in rs)
        tokens = sum(r.tokens for r in rs)
        tok_s = tokens / span
        age = now_s - self.arrived_s
        if age > STALE_POLLS * self.poll_s:
            why = f"stale — no live reading for {age:.0f} s (precmon's reads stopped)"
            return WindowRate(tok_s, span, why, True, f"stale: no reading for {age:.0f} s")
        unsure = _unsure(rs, tok_s, span, self.poll_s)
        return WindowRate(tok_s, span, unsure and unsure[1], brief=unsure and unsure[0])


def _unsure(rs: list[_Reading], tok_s: float, span_s: float, poll_s: float) -> tuple[str, str] | None:
    """(a few words, the whole reason) why the window's figure may be off (the first reason that
    holds), or None."""
    late = max(r.interval_s for r in rs)
    if late > LATE_FACTOR * poll_s:
        return "reads ran late", f"unsure — precmon's reads ran late ({late:.1f} s apart, every {poll_s:g} s asked)"
    timing = sum(r.timing_s for r in rs)
    if timing > TIMING_REL * span_s:
        slowest = 1000 * max(r.timing_s for r in rs)
        return "slow answers", f"unsure — slow answers ({slowest:.0f} ms) blur the read times"
    tokens = sum(r.tokens for r in rs)
    if 0 < tokens < FEW_TOKENS:
        return "few tokens", f"unsure — only {tokens:.0f} tokens in {span_s:.0f} s"
    rates = [r.tokens / r.interval_s for r in rs]
    if len(rs) >= 2 and max(r.tokens for r in rs) >= UNEVEN_MIN_TOKENS:
        lo, hi = min(rates), max(rates)
        if hi > tok_s * (1 + UNEVEN_REL) or lo < tok_s * (1 - UNEVEN_REL):
            return "uneven pace", f"unsure — uneven: {lo:.3g}–{hi:.3g} tok/s within {span_s:.0f} s"
    return None
