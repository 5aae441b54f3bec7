"""Watch mode's readouts and state line: what arrived since the last refresh, drawn at once.

The power and server workers keep their own clocks; drawn as they land, each reading would cost
a repaint of its own. The app's handlers park the newest watts, live rate and closed J/token
window here, and `draw` paints them together at the refresh tick. `--drive`'s measured requests
and its stops go to the same readouts, with the last good figure marked stale while it fails.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from precmon.servers.watch.rate_window import RateWindow, WindowRate
from precmon.tui import server_view as sv
from precmon.tui.messages import PowerSnapshot
from precmon.tui.watch_state import WatchState, scope_name, watch_state
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.watch_view import WatchView

if TYPE_CHECKING:
    from precmon.tui.app import PrecmonApp
    from precmon.tui.workers.server_worker import ServerWorker


def failing_text(failures: int, since_unix_s: float) -> str:
    """ "3 failed requests since 18:02:11" (local time: what the room's clock says)."""
    plural = "" if failures == 1 else "s"
    return f"{failures} failed request{plural} since {time.strftime('%H:%M:%S', time.localtime(since_unix_s))}"


class WatchRoutes:
    """The watch view's side of the app."""

    def __init__(self, app: PrecmonApp) -> None:
        self.app = app
        self.watts_due: PowerSnapshot | None = None  # arrived, drawn at the next refresh
        self.rate_due: ServerWorker.LiveRateRead | None = None
        self.jpt_due: tuple[float | None] | None = None  # a closed J/token window, until drawn
        self.live_rate: Any = None  # the last LiveRate read (the state line names its source)
        self.drive_failed = False
        self.shown: WindowRate | None = None  # the window figure drawn last (its `unsure` names the state line)

    @property
    def view(self) -> WatchView:
        return self.app.base(WatchView)

    @property
    def window(self) -> RateWindow:
        """The big tok/s: the last few seconds' reads, the window the Server panel shows too."""
        return self.app.server_routes.window

    def live_rate_read(self, msg: ServerWorker.LiveRateRead) -> None:
        """Watch mode's tok/s is the live rate (the server's own counter of tokens so far), never a
        counter that moves only at a request's end; a server without one says so."""
        rate = msg.rate
        self.app.server_routes.live_rate(rate)  # into the window both screens show
        self.app.trace.add_rate(rate)
        self.live_rate = rate
        if self.app.watching and not self.app.drive:
            self.rate_due = msg  # drawn at the next refresh
            if msg.jpt_closed:
                self.jpt_due = (msg.j_per_token,)

    def draw(self) -> None:
        """The readouts from what arrived since the last refresh, in one repaint."""
        snap, msg, jpt = self.watts_due, self.rate_due, self.jpt_due
        self.watts_due = self.rate_due = self.jpt_due = None
        went_stale = self._went_stale()
        if snap is None and msg is None and jpt is None and not went_stale:
            return
        view = self.view
        self.labels()
        if snap is not None:
            src = f"{snap.headline_scope} scope, live" if snap.headline_w is not None else "n/a — no watts here"
            view.show_watts(snap.headline_w, src)
        if msg is not None or went_stale:
            self._draw_tok_s(view, self.live_rate)
        if jpt is not None:  # a J/token window closed since the last refresh
            window = f"last {self.app.pace.jpt_window_s:g} s"
            view.show_j_per_token(jpt[0], f"energy ÷ tokens, {window}" if jpt[0] else "n/a — needs watts and traffic")

    def _went_stale(self) -> bool:
        """No live reading for a while, and the figure shown is not marked stale yet."""
        w = self.window.rate(time.monotonic())
        return w is not None and w.stale and not (self.shown is not None and self.shown.stale)

    def _draw_tok_s(self, view: WatchView, rate: Any) -> None:
        """The big tok/s: the window's figure, marked (⚠, the state line says why) when unsure."""
        shown = self.shown = None
        if rate is None:
            return
        if rate.tok_s is None:  # the state line below says why a server has no live source
            source = "n/a — no live source (below)" if rate.unavailable else f"n/a — {rate.error or 'no reading'}"
            view.show_tok_s(None, source)
        elif (shown := self.window.rate(time.monotonic())) is not None:
            self.shown = shown
            if shown.unsure:
                view.show_tok_s(shown.tok_s, f"⚠ {shown.unsure.split(' — ')[0]}: see below", unsure=True)
            else:
                caveat = f" ({rate.caveat})" if rate.caveat else ""
                view.show_tok_s(shown.tok_s, f"live: {rate.source}, last {shown.span_s:.0f} s{caveat}")
        if not self.drive_failed:
            view.status(self.status())

    def drive_measured(self, msg: ServerWorker.DriveMeasured) -> None:
        self.app.server_routes.change(sv.request_measured, msg.run)
        if not msg.run.ok or msg.run.decode_tok_s is None:
            return  # the worker says why in DriveStopped (a "valid" answer without tokens too)
        view = self.view
        if self.drive_failed:
            self.drive_failed = False
            view.status(self.status())
            self.app.base(ProgressLog).log_line("--drive: the steady load is running again")
        view.show_tok_s(msg.run.decode_tok_s, "--drive: last measured request")
        view.show_j_per_token(
            msg.j_per_token,
            "--drive: decode energy ÷ tokens" if msg.j_per_token else "n/a — needs a power source with watts",
        )

    def drive_stopped(self, msg: ServerWorker.DriveStopped) -> None:
        """FAILING: how many requests in a row, the decisive reason, since when; tok/s and J/token
        go to n/a (the last good figure is no news about a failing server) until one succeeds."""
        self.drive_failed = True
        when = f"retrying in {msg.retry_in_s:.0f} s"  # until quit: it recovers when the server does
        line = f"--drive stopped: {failing_text(msg.failures, msg.since_unix_s)} — {msg.error} — {when}"
        view = self.view
        view.status(WatchState("FAILING", line))
        view.show_tok_s(None, "n/a — requests failing (below)")
        view.show_j_per_token(None, "n/a — requests failing (below)")
        self.app.server_routes.change(sv.drive_failing, f"{failing_text(msg.failures, msg.since_unix_s)} — {msg.error}")
        self.app.base(ProgressLog).log_line(line, error=True)

    def labels(self) -> None:
        """The state line and the readouts' titles: whose tokens, which watts' scope. A `--drive`
        stop line stays until a request succeeds (`drive_measured` restores the state)."""
        app, power = self.app, self.app.power
        view, scope = self.view, power.headline_scope if power else None
        if not self.drive_failed:
            view.status(self.status())
        view.titles("precmon's load" if app.drive or app.measuring else "all clients", scope and scope_name(scope))

    def status(self) -> WatchState:
        app = self.app
        unsure = self.shown.unsure if self.shown is not None and app.watching else None
        return watch_state(app.url, app.drive, self.live_rate, app.search, app.measuring, unsure)
