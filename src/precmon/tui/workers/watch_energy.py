"""Watch mode's J/token: one energy window every few server polls, over the tokens of those polls.

NVML's energy counter costs milliseconds of CPU a read, so the window is not closed every poll:
`Pace.jpt_polls` polls (about 4 s) make one window, and its energy is divided by the tokens all
those polls counted. A poll without a token count makes that window's J/token n/a, never a
smaller divisor. Headless apart from the meter it is handed; the server worker owns one.
"""

from __future__ import annotations

from typing import Any

from precmon.measure.nodes import expected_nodes
from precmon.power.energy import joules_per_token
from precmon.power.fleet import fleet
from precmon.servers.watch import live_rate, metrics

PHASE = "watch"  # the meter phase of watch mode's energy windows


class JPerTokenWindow:
    """The open window: whether it is open, its tokens so far and how many polls it has had."""

    def __init__(self, polls: int) -> None:
        self.polls = polls  # polls per window: `Pace.jpt_polls`
        self.open = False
        self.tokens: int | None = 0  # None: a poll of this window had no token count
        self.polls_done = 0

    def step(
        self, meter: Any, rates: metrics.LiveRates | None, live: live_rate.LiveRate | None
    ) -> tuple[bool, float | None]:
        """One poll: (whether the window closed with it, its J/token or None). `meter`: the power
        worker's measuring meter while the watch view shows J/token, else None."""
        if meter is None:
            return True, None
        if not self.open:
            meter.begin(PHASE)
            self.open, self.tokens, self.polls_done = True, 0, 0
            return False, None
        tokens = interval_tokens(rates, live)
        self.tokens = None if tokens is None or self.tokens is None else self.tokens + tokens
        self.polls_done += 1
        if self.polls_done < self.polls:
            return False, None
        # one boundary read ends this window and opens the next; over several nodes their sum (n/a
        # when one missed it)
        w = fleet(meter.lap(PHASE), expected_nodes(meter)).total
        total, self.tokens, self.polls_done = self.tokens, 0, 0
        return True, joules_per_token(w.energy_j, total) if w is not None and total else None


def interval_tokens(rates: metrics.LiveRates | None, live: live_rate.LiveRate | None) -> int | None:
    """Tokens generated over the last interval: the live count where there is one (llama.cpp's
    `/metrics` counter moves only at a request's end), else the `/metrics` counter's delta."""
    if live is not None and live.tok_s is not None and live.interval_s:
        return round(live.tok_s * live.interval_s)
    if rates is not None and rates.generation_tok_s:
        return round(rates.generation_tok_s * rates.interval_s)
    return None
