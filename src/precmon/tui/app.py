"""`PrecmonApp`: the keys, and the state the screen shows, as reactives the widgets bind to
(`data_bind`): the live results (`results`, folded by `LiveResults`), `measuring`, `watching`,
`drive`, the server shown (`url`, `search`, `server_view`), the newest power snapshot (`power`), the
width (`narrow`). Each worker message (`messages.py`) changes that state: what a measurement's events
change is `measure_flow.py`'s decision, which server to show `server_follow.py`'s, watch mode's
readouts `widgets/watch_view.py`'s. Three workers do every blocking thing (`workers/`: power,
server, measure) on daemon threads, so quitting never waits on a stalled server.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from precmon.core.schema import ResultsDoc, Run
from precmon.core.stops import Cut, Stop
from precmon.sweep.events import SweepEvent
from precmon.tui import messages as m
from precmon.tui import quit_flow
from precmon.tui import server_view as sv
from precmon.tui.config import ServerConfig, TuiConfig
from precmon.tui.live import LiveResults
from precmon.tui.measure_flow import MeasureFlow, Plan
from precmon.tui.pace import Pace
from precmon.tui.power_view import PowerSnapshot
from precmon.tui.run_trace import RunTrace
from precmon.tui.screens.answers import AnswersScreen
from precmon.tui.screens.confirm_quit import ConfirmQuit
from precmon.tui.screens.help import HelpScreen
from precmon.tui.screens.preflight import ask_preflight
from precmon.tui.server_follow import ServerFollow, discovered
from precmon.tui.server_view import ServerView
from precmon.tui.watch_state import drive_stopped_line, failing_text
from precmon.tui.widgets.blank import BlankFooter, BlankHeader, BlankScreen
from precmon.tui.widgets.main_view import MainView
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.run_chart import MIN_ROWS, RunChart
from precmon.tui.widgets.watch_view import WatchView
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.measure_worker import MeasureWorker
from precmon.tui.workers.power_worker import MeterFactory, PowerWorker, default_meter_factory
from precmon.tui.workers.server_worker import ServerWorker
from precmon.untrusted import markup, redact, redact_url, visible

WIDE_COLS = 110  # from this width the Power and Server panels sit side by side (`HORIZONTAL_BREAKPOINTS`)


class PrecmonApp(App[int]):
    """The interactive TUI, started with a `TuiConfig` (none: it shows power and waits)."""

    CSS_PATH = "precmon.tcss"
    TITLE = "precmon"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (WIDE_COLS, "-wide")]
    BINDINGS = [
        Binding("b", "bench", "Bench"),
        Binding("s", "sweep", "Sweep"),
        Binding("e", "export", "Export"),
        Binding("w", "toggle_watch", "Watch"),
        Binding("a", "answers", "Answers"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        # Ctrl-C quits like q (Textual's only says "press ctrl+q"); it asks while measuring (again: yes)
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    watching: reactive[bool] = reactive(False)
    measuring: reactive[str | None] = reactive(None)  # "bench" | "sweep" while one runs
    results: reactive[ResultsDoc] = reactive(ResultsDoc, always_update=True)  # `LiveResults.doc`, passed on as is
    server_view: reactive[ServerView] = reactive(ServerView, always_update=True)
    power: reactive[PowerSnapshot | None] = reactive(None, always_update=True)
    drive: reactive[bool] = reactive(False)  # `--drive`'s steady load runs
    url: reactive[str | None] = reactive(None)  # the server benched and swept: --url, or the one discovery found
    search: reactive[str | None] = reactive(None)  # without --url: "looking…", or what the look found
    narrow: reactive[bool] = reactive(False)  # under `WIDE_COLS` columns

    # held from mount: a tick can land while the screen is torn down on exit (a query would fail)
    _chart: RunChart
    _watch_view: WatchView
    _progress: ProgressLog

    def __init__(
        self,
        config: TuiConfig | None = None,
        meter_factory: MeterFactory = default_meter_factory,
        initial_results: ResultsDoc | None = None,
    ) -> None:
        """`meter_factory` opens the power sources (tests hand a frozen meter); `initial_results`:
        a results document to show from the start (screenshots, tests)."""
        super().__init__()
        self.config = config = config or TuiConfig()
        self.pace = Pace(config.refresh_s)
        self.live = LiveResults(initial_results)
        if config.report:  # how the results are judged (`--max-kld`): the sweep table's pick reads it
            self.live.set_meta(settings=dict(config.report))
        self.trace = RunTrace(self.pace.server_poll_s)  # per-second tok/s and W now (the run chart)
        self.quitting = Quitting()
        self.power_worker = PowerWorker(self.post_message, self.quitting, meter_factory, self.pace, config.power_from)
        server, pace = config.server, self.pace
        self.server_worker = ServerWorker(
            self.post_message, self.quitting, self.power_worker, server, pace.server_poll_s, pace.jpt_polls
        )
        self.measure_worker = MeasureWorker(
            self.post_message, self.quitting, self.power_worker, self.results_dir, report=dict(config.report)
        )
        self.server_follow = ServerFollow(self.server_worker, pace.server_poll_s, bool(config.url), config.poll_server)
        self.measure_flow = MeasureFlow(self.live, self.server_follow, self.trace, self.server_worker)
        self._stop = Stop()  # asks the bench or sweep in progress to stop
        self._chart_drawn_s = -1e9  # monotonic time the run chart was last handed a view (`Pace.chart_s`)
        self._stamp = time.strftime("%Y%m%d-%H%M%S")
        # without a URL, look on the usual local ports every 5 s until one answers (the CLI asks; tests leave it off)
        search = "looking on the usual local ports…" if config.discovering else None
        self.set_reactive(PrecmonApp.watching, config.watch)
        self.set_reactive(PrecmonApp.drive, config.drive)
        self.set_reactive(PrecmonApp.url, config.url)
        self.set_reactive(PrecmonApp.search, search)
        self.set_reactive(PrecmonApp.results, self.live.doc)
        self.set_reactive(PrecmonApp.server_view, ServerView(url=config.url, search=search))
        no_url = "looking for a server…" if config.discovering else "no server"
        self.sub_title = visible(redact_url(config.url)) if config.url else no_url

    @property
    def server_config(self) -> ServerConfig:
        """The server a bench or sweep measures: the one given, or the one discovery found."""
        return replace(self.config.server, url=self.url)

    def get_default_screen(self) -> Screen[Any]:
        return BlankScreen(id="_default")  # the containers draw only their background (`widgets/blank.py`)

    def compose(self) -> ComposeResult:
        app = PrecmonApp
        yield BlankHeader(show_clock=False, icon="◆")
        yield MainView(id="main").data_bind(app.power, app.server_view, app.results, app.watching, app.narrow)
        window, jpt_window_s = self.server_follow.window, self.pace.jpt_window_s
        yield WatchView(window, jpt_window_s, id="watch").data_bind(
            app.power, app.watching, app.measuring, app.drive, app.url, app.search
        )
        yield ProgressLog(id="progress")
        yield BlankFooter()

    def on_mount(self) -> None:
        self._chart, self._watch_view = self.query_one("#chart", RunChart), self.query_one(WatchView)
        self._progress = self.query_one(ProgressLog)
        self.watch_watching(self.watching)
        self.power_worker.start()
        if self.config.discovering:
            self.server_worker.discover()
        self._start_server_workers()
        self.set_interval(self.pace.paint_s, self._refresh_tick)
        self.narrow = self.size.width < WIDE_COLS
        if self.config.auto_sweep:
            self.action_sweep()

    def on_unmount(self) -> None:
        self.shutdown()

    def shutdown(self, cut: Cut = Cut.STOPPED) -> None:
        """Stop the bench or sweep (it saves what it measured) and the loops; `cut` is why (core/stops.py)."""
        self._stop.request(cut)
        self.quitting.set()

    def on_resize(self, event: events.Resize) -> None:
        self.narrow = event.size.width < WIDE_COLS

    def _refresh_tick(self) -> None:
        if self.watching:
            self._watch_view.draw()
        else:  # the panel's live figure, marked once no read came for a while
            self._show_server(self.server_follow.tick(self.server_view))
        # the per-second chart: under the sweep table while measuring, under watch mode's readouts
        tall = self.size.height >= MIN_ROWS and not self.trace.view().empty
        self._chart.set_class(tall and (self.measuring is not None or self.live.running), "-shown")
        self._watch_view.make_room(tall)
        chart = self._watch_view.chart if self.watching else self._chart
        now = time.monotonic()
        due = now - self._chart_drawn_s >= self.pace.chart_s - self.pace.paint_s / 2  # a tick's jitter
        if due and chart.has_class("-shown") and chart.view is not (view := self.trace.view()):
            chart.view, self._chart_drawn_s = view, now

    def results_dir(self) -> Path:
        """--out, else ./precmon-results/<session start>/ (one folder per session)."""
        folder = self.config.out_dir or Path("precmon-results") / self._stamp
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # ---- a small public API for scripted scenes (scripts/make_screenshots.py) -------------------
    def show_server(self, healthy: bool = True, **facts: Any) -> None:
        """Fill the Server panel as a probe would (kind, version, model, precision, error)."""
        self._show_server(sv.probed(self.server_view, healthy, **facts))

    def show_request(self, run: Run) -> None:
        """A measured request, as a bench or sweep shows it in the Server panel."""
        self._show_server(sv.request_measured(self.server_view, run))

    def show_drive(self, runs: Iterable[Run]) -> None:
        """Replay measured requests as `--drive`'s steady load (the watch view's readouts)."""
        self.drive = True
        for run in runs:
            self.post_message(m.DriveMeasured(run, None, None))

    def replay(
        self, events_: Iterable[SweepEvent], plan: Mapping[str, Plan] | None = None, source: str = "sweep"
    ) -> None:
        """Feed sweep events through the app's own message path, as a running sweep would
        (`plan`: label → (precision, model), as a sweep's plan says)."""
        self.measure_flow.plan = dict(plan or {})
        for ev in events_:
            self.post_message(m.SweepEventArrived(ev, source))

    def _show_server(self, view: ServerView) -> None:
        """The Server panel's next view; the title bar names the server it shows."""
        if view.url and view.url != self.server_view.url:
            self.sub_title = visible(redact_url(view.url))
        if view is not self.server_view:  # an event that changed nothing costs no repaint
            self.server_view = view

    # ---- power and server messages ------------------------------------------------------------
    @on(m.PowerSampled)
    def _power_sampled(self, msg: m.PowerSampled) -> None:
        snap = msg.snapshot
        self.trace.set_watts(snap.headline_per_s, snap.headline_scope, snap.headline_label)
        self.power = snap

    @on(m.ServerProbed)
    def _server_probed(self, msg: m.ServerProbed) -> None:
        snap = msg.snapshot
        if not self.server_follow.shows(snap.url) or self.server_view.stopped:
            return  # the last variant's server; or the one the sweep stopped, probed on the worker's last tick
        self._show_server(sv.server(self.server_view, snap))
        if line := self.server_follow.health(snap):
            self._progress.log_line(line, error=not snap.healthy)

    @on(m.ServersDiscovered)
    def _servers_discovered(self, msg: m.ServersDiscovered) -> None:
        if self.url or self.server_follow.followed:
            return
        found = discovered(msg.entries, msg.error)
        self.search = found.search
        if found.url is None:
            self._show_server(sv.searching(self.server_view, found.search))
            self.sub_title = "no server"
            return
        self.url = found.url
        self.server_worker.config = self.server_config
        self._show_server(sv.found(self.server_view, found.url, found.search))
        self._progress.log_line(found.line)
        self._start_server_workers()

    def _start_server_workers(self) -> None:
        if self.url and self.config.poll_server:
            self.server_worker.watch()
        if self.url and self.drive:
            self.server_worker.drive()

    @on(m.MetricsScraped)
    def _metrics_scraped(self, msg: m.MetricsScraped) -> None:
        self._show_server(sv.metrics(self.server_view, msg.rates, msg.error))

    @on(m.LiveRateRead)
    def _live_rate_read(self, msg: m.LiveRateRead) -> None:
        self._show_server(self.server_follow.live_rate(self.server_view, msg.rate))  # the window both screens show
        self.trace.add_rate(msg.rate)
        self._watch_view.live_rate_read(msg.rate, msg.j_per_token, msg.jpt_closed)

    @on(m.DriveMeasured)
    def _drive_measured(self, msg: m.DriveMeasured) -> None:
        self._show_server(sv.request_measured(self.server_view, msg.run))
        if self._watch_view.drive_measured(msg.run, msg.j_per_token):
            self._progress.log_line("--drive: the steady load is running again")

    @on(m.DriveStopped)
    def _drive_stopped(self, msg: m.DriveStopped) -> None:
        line = drive_stopped_line(msg.error, msg.failures, msg.retry_in_s, msg.since_unix_s)
        self._watch_view.drive_stopped(line)
        failing = f"{failing_text(msg.failures, msg.since_unix_s)} — {msg.error}"
        self._show_server(sv.drive_failing(self.server_view, failing))
        self._progress.log_line(line, error=True)

    # ---- measurement messages -------------------------------------------------------------------
    @on(m.PreflightFound)
    def _preflight_found(self, msg: m.PreflightFound) -> None:
        """The box is not fit to measure: measure anyway, or quit (exit 2, as `--strict`)."""
        ask_preflight(self, msg)

    @on(m.SweepPlanned)
    def _sweep_planned(self, msg: m.SweepPlanned) -> None:
        self.measure_flow.planned(msg.spec, self.power_worker.host())
        self.results = self.live.doc

    @on(m.SweepEventArrived)
    def _sweep_event(self, msg: m.SweepEventArrived) -> None:
        view, changed = self.measure_flow.event(msg.event, self.server_view)
        self._show_server(view)
        self._progress.event(msg.event, msg.source)
        if changed:
            self.results = self.live.doc

    @on(m.MeasureEnded)
    def _measure_ended(self, msg: m.MeasureEnded) -> None:
        self.measuring = None
        if self.measure_flow.ended(msg.error):
            self.results = self.live.doc
        self._progress.idle()
        if msg.error:
            self._progress.log_line(f"{msg.source} failed: {msg.error}", error=True)
            self.notify(markup(redact(msg.error)), title=f"{msg.source} failed", severity="error")
        if not self.live.running:  # the run chart goes with the run, not at the next refresh tick
            self._chart.remove_class("-shown")

    @on(m.Exported)
    def _exported(self, msg: m.Exported) -> None:
        if msg.error:
            self.notify(markup(redact(msg.error)), title="export failed", severity="error")
            return
        self._progress.log_line(f"exported to {msg.folder}")
        self.notify(markup(f"{msg.folder}/\n{', '.join(msg.files)}", one_line=False), title="Exported", timeout=8)

    # ---- keys -----------------------------------------------------------------------------------
    def action_bench(self) -> None:
        if not self._can_start("bench"):
            return
        self._stop = Stop()
        self.measuring = "bench"
        self.measure_worker.bench(self.server_config, self._stop, self.config.sweep_spec)

    def action_sweep(self) -> None:
        if self.measuring == "sweep":
            self._stop.set()
            self._progress.log_line("stopping the sweep after the request in flight…")
            return
        if not self._can_start("sweep", needs_url=self.config.sweep_spec is None):
            return
        self._stop = Stop()
        self.measuring = "sweep"
        self.measure_worker.sweep(self.server_config, self.config.sweep_spec, self._stop)

    def action_export(self) -> None:
        if not self.live.has_results:
            self.notify("nothing measured yet: press b or s first", severity="warning")
            return
        if not self.live.doc.host.hostname:
            self.live.set_meta(host=self.power_worker.host())  # a bench-only session has no runner to set it
        self.measure_worker.export(self.live.exportable(), self.results_dir(), self.export_screenshot())

    def action_toggle_watch(self) -> None:
        self.watching = not self.watching

    def watch_watching(self, watching: bool) -> None:
        self.server_worker.watching = watching
        self.power_worker.watching(watching)
        if self.is_running:  # set before mount (watch=True): on_mount applies it
            self.screen.set_class(watching, "-watch")

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_answers(self) -> None:
        self.push_screen(AnswersScreen(self.live.doc))

    async def action_quit(self) -> None:
        """Quit; while a bench or sweep runs, ask first (`quit_flow.py`)."""
        if self.measuring and not isinstance(self.screen, ConfirmQuit) and not self.quitting.is_set:
            self.push_screen(ConfirmQuit(str(self.results_dir())), lambda yes: self._quit() if yes else None)
            return
        self._quit()

    def _quit(self) -> None:
        again = self.quitting.is_set
        self.shutdown()
        if again or not self.measure_worker.busy:
            self.exit(0)
            return
        wait_s = quit_flow.save_wait_s(self.measuring)
        self._progress.log_line(f"quitting: saving what was measured (up to {wait_s:.0f} s; q again: now)…")
        saved = quit_flow.until_saved(self.measure_worker, wait_s, then=self.exit)
        self.run_worker(saved, group="quit", exclusive=True)

    def exit_lines(self) -> list[str]:
        """What to print once the screen is gone: where the results are (`quit_flow.py`)."""
        return quit_flow.exit_lines(self.measure_worker)

    def exit_code(self, code: int) -> int:
        """`code`, or 1 where the session's results went to the rescue folder instead of --out."""
        return quit_flow.exit_code(code, self.measure_worker)

    def _can_start(self, what: str, needs_url: bool = True) -> bool:
        """Nothing else is measured, and there is a server to measure (a sweep file has its own)."""
        if self.measuring:
            self.notify(f"a {self.measuring} is running (s stops a sweep)", severity="warning")
        elif needs_url and not self.url:
            self.notify(f"no server to {what} — start precmon with --url URL", severity="warning")
        return not self.measuring and bool(self.url or not needs_url)
