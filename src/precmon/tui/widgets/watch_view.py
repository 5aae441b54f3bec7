"""Watch mode: three big readouts (tok/s, W, J/token) a room can read from across it.

Passive by default: tok/s comes from the server's live source (everyone's traffic:
`precmon.servers.watch.live_rate`), W from the widest-scope power channel, whose scope the titles
name ("watts · GPU"). With `--drive` the app keeps one steady stream of decode requests going and
the readouts come from those measured requests. Each readout says where its number came from,
since a demo audience will ask; the state line says whose traffic it is (`precmon.tui.watch_state`).
From `CHART_ROWS` rows the per-second chart of the last minutes fills the height below.

The view binds the app's state (`power`, `watching`, `measuring`, `drive`, `url`, `search`) and is
handed the live reads as they arrive (`live_rate_read`, `drive_measured`, `drive_stopped`). The
power and server workers keep their own clocks; drawn as they land, each reading would cost a
repaint of its own, so what arrived is kept and `draw` paints it at the app's refresh tick, at
once. `--drive`'s stops keep the state line on FAILING until a request succeeds again.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.reactive import reactive
from textual.widgets import Static

from precmon.core.schema import Run
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import RateWindow, WindowRate
from precmon.tui.power_view import PowerSnapshot
from precmon.tui.watch_state import WatchState, scope_name, watch_state
from precmon.tui.widgets.blank import Column, Row
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.run_chart import RunChart
from precmon.untrusted import visible

WARN_WORDS = ("NO LIVE SOURCE", "UNSURE", "FAILING")  # drawn yellow: the figures above are not plain fact
FAILING = "n/a — requests failing (below)"


class WatchView(Column):
    """The watch layout: its readouts and state line, from the app's state and the live reads."""

    power: reactive[PowerSnapshot | None] = reactive(None, always_update=True)
    watching: reactive[bool] = reactive(False)
    measuring: reactive[str | None] = reactive(None)  # "bench" | "sweep": precmon's own traffic
    drive: reactive[bool] = reactive(False)
    url: reactive[str | None] = reactive(None)
    search: reactive[str | None] = reactive(None)  # without --url: what the look on the usual ports found

    def __init__(self, window: RateWindow, jpt_window_s: float, **kwargs: object) -> None:
        """`window`: the live reads of the server shown, the one the Server panel's figure comes
        from too; `jpt_window_s`: how long a J/token window is (`Pace.jpt_window_s`)."""
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.window, self.jpt_window_s = window, jpt_window_s
        self._status: tuple[str, str | None] | None = None
        self._readouts: dict[str, Readout] = {}  # id → readout, looked up once (a query walks the DOM)
        self._watts_due: PowerSnapshot | None = None  # arrived, drawn at the next refresh
        self._rate_due = False
        self._jpt_due: tuple[float | None] | None = None  # a closed J/token window, until drawn
        self.live_rate: LiveRate | None = None  # the last read (the state line names its source)
        self.drive_failed = False
        self.shown: WindowRate | None = None  # the window figure drawn last (its `unsure` names the state line)
        self.chart: RunChart  # the per-second chart, from mount

    def compose(self) -> ComposeResult:
        # Each part sits in a blank box of its own (`widgets/blank.py`): Textual redraws, from its
        # cache, every widget whose parent's region overlaps a change, so a readout's new number
        # would also walk its two siblings, the state line and the chart without them.
        with Row(id="readouts"):
            for title, rid in (("decode tok/s", "ro-tok"), ("watts", "ro-watts"), ("J / token", "ro-jpt")):
                with Column(classes="readout-box"):
                    yield Readout(title, id=rid)
        with Column(id="watch-status-box"):
            yield Static("", id="watch-status")
        with Column(id="watch-chart-box"):
            yield RunChart("each second, all clients (newest at the right)", id="watch-chart")

    def on_mount(self) -> None:
        self.chart = self.query_one("#watch-chart", RunChart)
        self._readouts = {r.id or "": r for r in self.query(Readout)}
        for r in self._readouts.values():
            r.peers = tuple(p for p in self._readouts.values() if p is not r)
        self.labels()

    def make_room(self, tall: bool) -> None:
        """The per-second chart below the readouts, where the terminal is tall enough (and it has
        something to draw)."""
        self.chart.set_class(tall, "-shown")
        self.set_class(tall, "-chart")

    # ---- the app's state -----------------------------------------------------------------------
    def watch_power(self, power: PowerSnapshot | None) -> None:
        if self.watching:  # hidden widgets are not drawn: the Power panel draws it meanwhile
            self._watts_due = power

    def watch_watching(self, watching: bool) -> None:
        if watching:
            self._watts_due = self.power  # the readouts start from the newest reading
        self.labels()

    def _relabel(self) -> None:
        self.labels()

    # whose traffic it is and where tok/s comes from: the state line and the titles say so at once
    watch_measuring = watch_drive = watch_url = watch_search = _relabel

    # ---- live reads, drawn at the next refresh --------------------------------------------------
    def live_rate_read(self, rate: LiveRate, j_per_token: float | None, jpt_closed: bool) -> None:
        """Watch mode's tok/s is the live rate (the server's own counter of tokens so far), never a
        counter that moves only at a request's end; a server without one says so. The app has
        added `rate` to `window` first."""
        self.live_rate = rate
        if self.watching and not self.drive:
            self._rate_due = True
            if jpt_closed:
                self._jpt_due = (j_per_token,)

    def draw(self) -> None:
        """The readouts from what arrived since the last refresh, in one repaint."""
        if not self.app.is_running:  # shutting down: a tick found the status line already removed
            return
        snap, rate_due, jpt = self._watts_due, self._rate_due, self._jpt_due
        self._watts_due, self._rate_due, self._jpt_due = None, False, None
        went_stale = self._went_stale()
        if snap is None and not rate_due and jpt is None and not went_stale:
            return
        self.labels()
        if snap is not None:
            src = f"{snap.headline_scope} scope, live" if snap.headline_w is not None else "n/a — no watts here"
            self.show_watts(snap.headline_w, src)
        if rate_due or went_stale:
            self._draw_tok_s(self.live_rate)
        if jpt is not None:  # a J/token window closed since the last refresh
            window = f"last {self.jpt_window_s:g} s"
            self.show_j_per_token(jpt[0], f"energy ÷ tokens, {window}" if jpt[0] else "n/a — needs watts and traffic")

    def _went_stale(self) -> bool:
        """No live reading for a while, and the figure shown is not marked stale yet."""
        w = self.window.rate(time.monotonic())
        return w is not None and w.stale and not (self.shown is not None and self.shown.stale)

    def _draw_tok_s(self, rate: LiveRate | None) -> None:
        """The big tok/s: the window's figure, marked (⚠, the state line says why) when unsure."""
        shown = self.shown = None
        if rate is None:
            return
        if rate.tok_s is None:  # the state line below says why a server has no live source
            source = "n/a — no live source (below)" if rate.unavailable else f"n/a — {rate.error or 'no reading'}"
            self.show_tok_s(None, source)
        elif (shown := self.window.rate(time.monotonic())) is not None:
            self.shown = shown
            if shown.unsure:
                self.show_tok_s(shown.tok_s, f"⚠ {shown.unsure.split(' — ')[0]}: see below", unsure=True)
            else:
                caveat = f" ({rate.caveat})" if rate.caveat else ""
                self.show_tok_s(shown.tok_s, f"live: {rate.source}, last {shown.span_s:.0f} s{caveat}")
        if not self.drive_failed:
            self.show_state(self.state())

    # ---- --drive ---------------------------------------------------------------------------------
    def drive_measured(self, run: Run, j_per_token: float | None) -> bool:
        """A `--drive` request was measured: its decode figures; True when the load runs again
        after a stop (the state line is back from FAILING)."""
        if not run.ok or run.decode_tok_s is None:
            return False  # the worker says why in DriveStopped (a "valid" answer without tokens too)
        recovered, self.drive_failed = self.drive_failed, False
        if recovered:
            self.show_state(self.state())
        self.show_tok_s(run.decode_tok_s, "--drive: last measured request")
        why = "--drive: decode energy ÷ tokens" if j_per_token else "n/a — needs a power source with watts"
        self.show_j_per_token(j_per_token, why)
        return recovered

    def drive_stopped(self, line: str) -> None:
        """FAILING, and `line` (`watch_state.drive_stopped_line`); tok/s and J/token go to n/a (the
        last good figure is no news about a failing server) until a request succeeds."""
        self.drive_failed = True
        self.show_state(WatchState("FAILING", line))
        self.show_tok_s(None, FAILING)
        self.show_j_per_token(None, FAILING)

    # ---- the titles and the state line --------------------------------------------------------------
    def labels(self) -> None:
        """The state line and the readouts' titles: whose tokens, which watts' scope. A `--drive`
        stop line stays until a request succeeds (`drive_measured` restores the state)."""
        if not self._readouts:
            return  # not mounted yet: `on_mount` draws them
        if not self.drive_failed:
            self.show_state(self.state())
        scope = self.power.headline_scope if self.power else None
        self.titles("precmon's load" if self.drive or self.measuring else "all clients", scope and scope_name(scope))

    def state(self) -> WatchState:
        """The state line now (`precmon.tui.watch_state.watch_state`)."""
        unsure = self.shown.unsure if self.shown is not None and self.watching else None
        return watch_state(self.url, self.drive, self.live_rate, self.search, self.measuring, unsure)

    def titles(self, tok_scope: str, power_scope: str | None) -> None:
        """Whose tokens ("all clients", "precmon's load") and which watts ("GPU", "package"; None:
        no channel with watts, the readout says so)."""
        scope = f" · {power_scope}" if power_scope else ""
        self._readouts["ro-tok"].retitle(f"tok/s · {tok_scope}")
        self._readouts["ro-watts"].retitle(f"watts{scope}")
        self._readouts["ro-jpt"].retitle(f"J / token{scope}")

    def show_tok_s(self, value: float | None, source: str, unsure: bool = False) -> None:
        """`unsure`: the figure may be off (the source line and the state line say why)."""
        self._readouts["ro-tok"].show(value, source, unsure)

    def show_watts(self, value: float | None, source: str) -> None:
        self._readouts["ro-watts"].show(value, source)

    def show_j_per_token(self, value: float | None, source: str) -> None:
        self._readouts["ro-jpt"].show(value, source)

    def show_state(self, state: WatchState | str) -> None:
        """The state line: its word (DRIVING, PASSIVE, …) bold, then why; a plain line as it is."""
        key = (state.detail, state.word) if isinstance(state, WatchState) else (state, None)
        if key == self._status:
            return
        self._status = key
        text = Text()
        if key[1] is not None:
            text.append(f" {key[1]} ", style="bold reverse yellow" if key[1] in WARN_WORDS else "bold reverse")
            text.append(" ")
        text.append(visible(key[0]), style="dim" if key[1] is None else "")
        self.query_one("#watch-status", Static).update(text)
