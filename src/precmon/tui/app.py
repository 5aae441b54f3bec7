"""`PrecmonApp`: the panels, the keys, and the glue between worker messages and widgets.

The app owns view state (the growing results document, which measurement runs) and routes each
message: server events to `server_routes.py` (the Server panel's one value, `server_view.py`),
watch-mode readouts to `watch_routes.py`, a bench's or sweep's events to `measure_routes.py`, and
quitting to `quit_flow.py`. Three workers do every blocking thing, each given what it needs
explicitly (`tui/workers/`: power, server, measure); they run on daemon threads
(`workers/background.py`) so quitting never waits on a stalled server. The live panels and the run
chart repaint once a refresh (`precmon.tui.pace`, `--refresh-s`); the sweep table repaints
`TABLE_BATCH_S` after something landed, so a fast stream of landed runs costs one repaint.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.screen import Screen

from precmon.core.schema import ResultsDoc, Run
from precmon.core.settings import BenchSettings
from precmon.core.stops import Cut, Stop
from precmon.refresh import DEFAULT_REFRESH_S
from precmon.sweep.events import SweepEvent
from precmon.sweep.spec import SweepSpec
from precmon.tui import server_view as sv
from precmon.tui.live import LiveResults
from precmon.tui.measure_routes import MeasureRoutes
from precmon.tui.messages import PowerSnapshot
from precmon.tui.pace import Pace
from precmon.tui.quit_flow import QuitFlow
from precmon.tui.run_trace import RunTrace
from precmon.tui.screens.answers import AnswersScreen
from precmon.tui.screens.help import HelpScreen
from precmon.tui.server_routes import ServerRoutes
from precmon.tui.watch_routes import WatchRoutes
from precmon.tui.widgets.blank import BlankFooter, BlankHeader, BlankScreen, BlankScroll, Row
from precmon.tui.widgets.power_panel import PowerPanel
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.run_chart import MIN_ROWS, RunChart
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.sweep_table import SweepTable
from precmon.tui.widgets.watch_view import WatchView
from precmon.tui.workers.background import Quitting
from precmon.tui.workers.measure_worker import MeasureWorker
from precmon.tui.workers.power_worker import MeterFactory, PowerWorker, default_meter_factory
from precmon.tui.workers.server_worker import ServerConfig, ServerWorker
from precmon.untrusted import redact_url, visible

TABLE_BATCH_S = 0.25  # landed runs within this long of each other are drawn in one repaint
Plan = Mapping[str, tuple[str | None, str | None]]  # label → (precision, model)


class PrecmonApp(App[int]):
    """The interactive TUI. Every argument is optional: with none it shows power and waits."""

    CSS_PATH = "precmon.tcss"
    TITLE = "precmon"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("b", "bench", "Bench"),
        Binding("s", "sweep", "Sweep"),
        Binding("e", "export", "Export"),
        Binding("w", "toggle_watch", "Watch"),
        Binding("a", "answers", "Answers"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
        # Ctrl-C quits like q (Textual's default only says "press ctrl+q"); during a measurement it
        # asks, and a second Ctrl-C at the question means yes.
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]
    watching: reactive[bool] = reactive(False)

    def __init__(
        self,
        url: str | None = None,
        model: str | None = None,
        server_kind: str = "auto",
        api_key: str | None = None,
        sweep_spec: SweepSpec | str | Path | None = None,
        out_dir: Path | str | None = None,
        auto_sweep: bool = False,
        watch: bool = False,
        drive: bool = False,
        settings: BenchSettings | None = None,
        meter_factory: MeterFactory = default_meter_factory,
        initial_results: ResultsDoc | None = None,
        poll_server: bool = True,
        discover: bool = False,
        refresh_s: float = DEFAULT_REFRESH_S,
        report: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.pace = Pace(refresh_s)
        self.config = ServerConfig(url, model, server_kind, api_key, settings or BenchSettings.quick())
        self.sweep_spec, self.auto_sweep, self.drive = sweep_spec, auto_sweep, drive
        self.out_dir = Path(out_dir) if out_dir else None
        self.poll_server = poll_server
        # without a URL, look on the usual local ports every 5 s until one answers (the CLI asks; tests leave it off)
        self.discover = discover and not url
        self.search: str | None = "looking on the usual local ports…" if self.discover else None
        self.live = LiveResults(initial_results)
        if report:  # how the results are judged (`--max-kld`): the sweep table's pick reads it
            self.live.set_meta(settings=dict(report))
        self.trace = RunTrace(
            self.pace.server_poll_s
        )  # per-second tok/s and W of the variant measured now (the run chart)
        self.quitting = Quitting()
        self.power_worker = PowerWorker(self.post_message, self.quitting, meter_factory, self.pace)
        self.server_worker = ServerWorker(
            self.post_message,
            self.quitting,
            self.power_worker,
            self.config,
            self.pace.server_poll_s,
            self.pace.jpt_polls,
        )
        self.measure_worker = MeasureWorker(
            self.post_message, self.quitting, self.power_worker, self.results_dir, report=report
        )
        self._stop = Stop()  # asks the bench or sweep in progress to stop
        self.measuring: str | None = None  # "bench" | "sweep" while one runs
        self.server_routes = ServerRoutes(self, user_url=bool(url))
        self.measure_routes = MeasureRoutes(self)
        self.quit_flow = QuitFlow(self)
        self.watch_routes = WatchRoutes(self)
        self._table_dirty = False
        self._table_timer: Any = None  # the pending table repaint, while one is
        self.power: PowerSnapshot | None = None
        self._chart_drawn_s = -1e9  # monotonic time the run chart was last handed a view (`Pace.chart_s`)
        self._stamp = time.strftime("%Y%m%d-%H%M%S")
        self.sub_title = (
            visible(redact_url(url)) if url else ("looking for a server…" if self.discover else "no server")
        )
        self.set_reactive(PrecmonApp.watching, watch)

    @property
    def url(self) -> str | None:
        return self.config.url

    def get_default_screen(self) -> Screen[Any]:
        return BlankScreen(id="_default")  # the containers draw only their background (`widgets/blank.py`)

    def compose(self) -> ComposeResult:
        yield BlankHeader(show_clock=False, icon="◆")
        with BlankScroll(id="main"):
            with Row(id="top"):
                yield PowerPanel(id="power")
                yield ServerPanel(self.url, id="server")
            yield SweepTable(id="sweep")
            yield RunChart(id="chart")
        yield WatchView(id="watch")
        yield ProgressLog(id="progress")
        yield BlankFooter()

    def on_mount(self) -> None:
        self.screen.set_class(self.watching, "-watch")
        self.server_routes.panel.shown(not self.watching)  # held from here on (`ServerRoutes.panel`)
        self.server_worker.watching = self.watching
        self.power_worker.watching(self.watching)
        self.power_worker.start()
        if self.discover:
            self.server_routes.change(sv.searching, self.search)
            self.server_worker.discover()
        self.start_server_workers()
        self.watch_routes.labels()
        self._charts = (self.base("#chart"), self.base("#watch-chart"), self.base(WatchView))
        self.set_interval(self.pace.paint_s, self._refresh_tick)
        self.table_changed()
        self._apply_width(self.size.width)
        if self.auto_sweep:
            self.action_sweep()

    def on_unmount(self) -> None:
        self.shutdown()

    def shutdown(self, cut: Cut = Cut.STOPPED) -> None:
        """Stop everything at once: the bench or sweep, the loops, and any request in flight
        (a bench's request is abandoned, so it ends and saves what it measured); `cut` is why
        (core/stops.py: a quit, or SIGTERM/SIGHUP)."""
        self._stop.request(cut)
        self.quitting.set()
        if self._table_timer is not None:
            self._table_timer.stop()
            self._table_timer = None

    def on_resize(self, event: events.Resize) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        wide = width >= 110
        self.base(PowerPanel).spark_width = 16 if wide else 12
        self.base(SweepTable).spark_width = 8 if wide else 3
        self.base(ServerPanel).compact = not wide
        self._order_panels()

    def _order_panels(self) -> None:
        """At 80 columns the sweep table goes on top once it has columns: it is what a sweep is for."""
        main, sweep, top = self.base("#main"), self.base(SweepTable), self.base("#top")
        table_first = self.size.width < 110 and bool(self.live.doc.variants)
        if table_first != (main.children[0] is sweep):
            main.move_child(sweep, before=top) if table_first else main.move_child(sweep, after=top)

    def base(self, selector: Any) -> Any:
        """A widget of the main screen, also while help or the quit dialog is on top (events keep
        landing then; `self.query_one` would search the dialog and fail)."""
        return self.screen_stack[0].query_one(selector)

    def table_changed(self) -> None:
        """Something the sweep table shows changed: repaint it `TABLE_BATCH_S` from now (once)."""
        self._table_dirty = True
        if self._table_timer is None and self.is_running:
            self._table_timer = self.set_timer(TABLE_BATCH_S, self._repaint_table)

    def _repaint_table(self) -> None:
        self._table_timer = None
        if self._table_dirty and self.screen_stack:  # a repaint due while the app tears down: none
            self._table_dirty = False
            self.base(SweepTable).doc = self.live.doc
            self._order_panels()

    def _refresh_tick(self) -> None:
        if self.watching:
            self.watch_routes.draw()
        else:
            self.server_routes.tick()  # the panel's live figure, marked once no read came for a while
        # the per-second chart: under the sweep table while measuring, under watch mode's readouts
        # (widgets held since mount: a tick can land while the screen is being torn down on exit)
        main_chart, watch_chart, watch = self._charts
        tall = self.size.height >= MIN_ROWS and not self.trace.view().empty
        main_chart.set_class(tall and (self.measuring is not None or self.live.running), "-shown")
        watch_chart.set_class(tall, "-shown")
        watch.set_class(tall, "-chart")
        chart = watch_chart if self.watching else main_chart
        now = time.monotonic()
        due = now - self._chart_drawn_s >= self.pace.chart_s - self.pace.paint_s / 2  # a tick's jitter
        if due and chart.has_class("-shown") and chart.view is not (view := self.trace.view()):
            chart.view, self._chart_drawn_s = view, now

    def results_dir(self) -> Path:
        """--out, else ./precmon-results/<session start>/ (one folder per session)."""
        folder = self.out_dir or Path("precmon-results") / self._stamp
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # ---- a small public API for scripted scenes (scripts/make_screenshots.py) -------------------
    def show_server(self, healthy: bool = True, **facts: Any) -> None:
        """Fill the Server panel as a probe would (kind, version, model, precision, error)."""
        self.server_routes.change(sv.probed, healthy, **facts)

    def show_request(self, run: Run) -> None:
        """A measured request, as a bench or sweep shows it in the Server panel."""
        self.server_routes.change(sv.request_measured, run)

    def show_drive(self, runs: Iterable[Run]) -> None:
        """Replay measured requests as `--drive`'s steady load (the watch view's readouts)."""
        self.drive = True
        self.watch_routes.labels()  # the state line, and whose tokens the titles name
        for run in runs:
            self.post_message(ServerWorker.DriveMeasured(run, None, None))

    def replay(self, events_: Iterable[SweepEvent], plan: Plan | None = None, source: str = "sweep") -> None:
        """Feed sweep events through the app's own message path, as a running sweep would."""
        self.measure_routes.plan = dict(plan or {})
        for ev in events_:
            self.post_message(MeasureWorker.EventArrived(ev, source))

    # ---- power and server messages ------------------------------------------------------------
    @on(PowerWorker.Sampled)
    def _power_sampled(self, msg: PowerWorker.Sampled) -> None:
        snap = self.power = msg.snapshot
        self.trace.set_watts(snap.headline_per_s, snap.headline_scope, snap.headline_label)
        if not self.watching:  # hidden widgets are not re-rendered: watch mode stays cheap
            self.base(PowerPanel).snapshot = snap
        else:
            self.watch_routes.watts_due = snap  # drawn at the next refresh, with the token rate: one repaint

    @on(ServerWorker.Probed)
    def _server_probed(self, msg: ServerWorker.Probed) -> None:
        self.server_routes.probed(msg)

    @on(ServerWorker.Discovered)
    def _server_discovered(self, msg: ServerWorker.Discovered) -> None:
        self.server_routes.discovered(msg)
        self.base(WatchView).status(self.watch_routes.status())

    def start_server_workers(self) -> None:
        if self.url and self.poll_server:
            self.server_worker.watch()
        if self.url and self.drive:
            self.server_worker.drive()

    @on(ServerWorker.MetricsScraped)
    def _metrics_scraped(self, msg: ServerWorker.MetricsScraped) -> None:
        self.server_routes.change(sv.metrics, msg.rates, msg.error)

    @on(ServerWorker.LiveRateRead)
    def _live_rate_read(self, msg: ServerWorker.LiveRateRead) -> None:
        self.watch_routes.live_rate_read(msg)

    @on(ServerWorker.DriveMeasured)
    def _drive_measured(self, msg: ServerWorker.DriveMeasured) -> None:
        self.watch_routes.drive_measured(msg)

    @on(ServerWorker.DriveStopped)
    def _drive_stopped(self, msg: ServerWorker.DriveStopped) -> None:
        self.watch_routes.drive_stopped(msg)

    # ---- measurement messages -------------------------------------------------------------------
    @on(MeasureWorker.Planned)
    def _planned(self, msg: MeasureWorker.Planned) -> None:
        self.measure_routes.planned(msg)

    @on(MeasureWorker.EventArrived)
    def _event(self, msg: MeasureWorker.EventArrived) -> None:
        self.measure_routes.event(msg)

    @on(MeasureWorker.Ended)
    def _ended(self, msg: MeasureWorker.Ended) -> None:
        self.measure_routes.ended(msg)

    @on(MeasureWorker.Exported)
    def _exported(self, msg: MeasureWorker.Exported) -> None:
        self.measure_routes.exported(msg)

    def main_chart_ended(self) -> None:
        """The run chart under the sweep table goes with the run, not at the next refresh tick."""
        self._charts[0].remove_class("-shown")

    # ---- keys -----------------------------------------------------------------------------------
    def action_bench(self) -> None:
        if self._refuse_if_busy() or not self._need_url("bench"):
            return
        self.measuring, self._stop = "bench", Stop()
        self.measure_worker.bench(self.config, self._stop, self.sweep_spec)

    def action_sweep(self) -> None:
        if self.measuring == "sweep":
            self._stop.set()
            self.base(ProgressLog).log_line("stopping the sweep after the request in flight…")
            return
        if self._refuse_if_busy() or (self.sweep_spec is None and not self._need_url("sweep")):
            return
        self.measuring, self._stop = "sweep", Stop()
        self.measure_worker.sweep(self.config, self.sweep_spec, self._stop)

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
        if not self.is_running:  # set before mount (watch=True): on_mount applies it
            return
        self.screen.set_class(watching, "-watch")
        self.base(ServerPanel).shown(not watching)
        self.watch_routes.labels()
        if watching:
            self.watch_routes.watts_due = self.power  # the readouts start from the newest reading
        if not watching and self.power is not None:
            self.base(PowerPanel).snapshot = self.power

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    def action_answers(self) -> None:
        self.push_screen(AnswersScreen(self.live.doc))

    async def action_quit(self) -> None:
        self.quit_flow.ask()

    def exit_lines(self) -> list[str]:
        """What to print once the screen is gone: where this session's results are."""
        return self.quit_flow.exit_lines()

    def _refuse_if_busy(self) -> bool:
        if self.measuring:
            self.notify(f"a {self.measuring} is running (s stops a sweep)", severity="warning")
        return bool(self.measuring)

    def _need_url(self, what: str) -> bool:
        if not self.url:
            self.notify(f"no server to {what} — start precmon with --url URL", severity="warning")
        return bool(self.url)
