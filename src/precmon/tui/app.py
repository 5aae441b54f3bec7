"""`PrecmonApp`: the panels, the keys, and the glue between worker messages and widgets.

The app owns state (the growing results document, which measurement runs) and routes each
message to the widget that shows it. Workers (in `workers.py`) do every blocking thing; the
sweep table repaints from a 4 Hz interval, so a fast stream of landed runs costs one repaint
per tick however many arrive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Footer, Header

from precmon.measure.bench import BenchSettings
from precmon.sweep.events import Log, Progress, RunLanded, SweepFinished, VariantFinished, VariantStarted
from precmon.tui.live import LiveResults
from precmon.tui.messages import Measure, Power, Server
from precmon.tui.screens.confirm_quit import ConfirmQuit
from precmon.tui.screens.help import HelpScreen
from precmon.tui.widgets.power_panel import PowerPanel
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.sweep_table import SweepTable
from precmon.tui.widgets.watch_view import WatchView
from precmon.tui.workers import WorkersMixin, default_meter_factory

MeterFactory = Callable[[], tuple[Any, list[Any], "str | None"]]
REPAINT_S = 0.25


class PrecmonApp(WorkersMixin, App[int]):
    """The interactive TUI. Every argument is optional: with none it shows power and waits."""

    CSS_PATH = "precmon.tcss"
    TITLE = "precmon"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-wide")]
    BINDINGS = [
        Binding("b", "bench", "Bench"),
        Binding("s", "sweep", "Sweep start/stop"),
        Binding("e", "export", "Export"),
        Binding("w", "toggle_watch", "Watch"),
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
        sweep_spec: Any = None,
        out_dir: Path | str | None = None,
        auto_sweep: bool = False,
        watch: bool = False,
        drive: bool = False,
        settings: BenchSettings | None = None,
        meter_factory: MeterFactory = default_meter_factory,
        initial_results: dict[str, Any] | None = None,
        poll_server: bool = True,
        discover: bool = False,
    ) -> None:
        super().__init__()
        self.url, self.model, self.server_kind, self.api_key = url, model, server_kind, api_key
        self.sweep_spec, self.auto_sweep, self.drive, self.settings = sweep_spec, auto_sweep, drive, settings
        self.out_dir = Path(out_dir) if out_dir else None
        self.meter_factory, self.poll_server = meter_factory, poll_server
        # without a URL, look once on the usual local ports (the CLI asks; tests leave it off)
        self.discover = discover and not url
        self._search: str | None = "looking on the usual local ports…" if self.discover else None
        self.live = LiveResults(initial_results)
        self._shutdown_event, self._stop = threading.Event(), threading.Event()
        self._measuring: str | None = None  # "bench" | "sweep" while one runs
        self._plan: dict[str, tuple[str | None, str | None]] = {}
        self._table_dirty = True
        self._was_healthy: bool | None = None
        self._power: Any = None
        self._stamp = time.strftime("%Y%m%d-%H%M%S")
        self.metrics_model = model  # llama.cpp routers scrape /metrics?model=: the model in use
        self.sub_title = url or ("looking for a server…" if self.discover else "no server")
        self.set_reactive(PrecmonApp.watching, watch)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        with VerticalScroll(id="main"):
            with Horizontal(id="top"):
                yield PowerPanel(id="power")
                yield ServerPanel(self.url, id="server")
            yield SweepTable(id="sweep")
        yield WatchView(id="watch")
        yield ProgressLog(id="progress")
        yield Footer()

    def on_mount(self) -> None:
        self.screen.set_class(self.watching, "-watch")
        self.power_worker()
        if self.discover:
            self._base(ServerPanel).searching(self._search)
            self.discover_worker()
        self._start_server_workers()
        self._base(WatchView).status(self._watch_status())
        self.set_interval(REPAINT_S, self._repaint)
        self._apply_width(self.size.width)
        if self.auto_sweep:
            self.action_sweep()

    def on_unmount(self) -> None:
        self._stop.set()
        self._shutdown_event.set()

    def on_resize(self, event: Any) -> None:
        self._apply_width(event.size.width)

    def _apply_width(self, width: int) -> None:
        wide = width >= 110
        self._base(PowerPanel).spark_width = 16 if wide else 12
        self._base(SweepTable).spark_width = 8 if wide else 3
        self._base(ServerPanel).compact = not wide
        self._order_panels()

    def _order_panels(self) -> None:
        """At 80 columns the sweep table goes on top once it has columns: it is what a sweep is for."""
        main, sweep, top = self._base("#main"), self._base(SweepTable), self._base("#top")
        table_first = self.size.width < 110 and bool(self.live.doc["variants"])
        if table_first != (main.children[0] is sweep):
            main.move_child(sweep, before=top) if table_first else main.move_child(sweep, after=top)

    def _base(self, selector: Any) -> Any:
        """A widget of the main screen, also while help or the quit dialog is on top (events keep
        landing then; `self.query_one` would search the dialog and fail)."""
        return self.screen_stack[0].query_one(selector)

    def _repaint(self) -> None:
        if self._table_dirty:
            self._table_dirty = False
            self._base(SweepTable).doc = self.live.doc
            self._order_panels()

    def results_dir(self) -> Path:
        """--out, else ./precmon-results/<session start>/ (one folder per session)."""
        folder = self.out_dir or Path("precmon-results") / self._stamp
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # ---- power and server messages ------------------------------------------------------------
    @on(Power.Sampled)
    def _power_sampled(self, msg: Power.Sampled) -> None:
        snap = self._power = msg.snapshot
        if not self.watching:  # hidden widgets are not re-rendered: watch mode stays cheap
            self._base(PowerPanel).snapshot = snap
        else:
            src = f"{snap.headline_scope} scope, live" if snap.headline_w is not None else "n/a — no watts here"
            self._base(WatchView).show_watts(snap.headline_w, src)

    @on(Server.Probed)
    def _server_probed(self, msg: Server.Probed) -> None:
        self._base(ServerPanel).probed(
            msg.healthy,
            kind=msg.kind,
            version=msg.version,
            model=msg.model,
            precision=msg.quantization,
            error=msg.error,
        )
        if self._was_healthy is not None and msg.healthy != self._was_healthy:
            self._base(ProgressLog).log_line(
                "server is back" if msg.healthy else f"server went away: {msg.error}", error=not msg.healthy
            )
        self._was_healthy = msg.healthy

    @on(Server.Discovered)
    def _server_discovered(self, msg: Server.Discovered) -> None:
        """Use the first healthy server found; name the others, and say where we looked if none."""
        from precmon.servers.detect import USUAL_PORTS

        if self.url:
            return
        healthy = [e for e in msg.entries if e.get("healthy")]
        if not healthy:
            ports = ", ".join(str(p) for p in USUAL_PORTS)
            self._search = f"no server — none on the usual local ports ({ports}), still looking; pass --url"
            if msg.error:
                self._search = f"no server — looking failed: {msg.error}; pass --url"
            self._base(ServerPanel).searching(self._search)
            self.sub_title = "no server"
        else:
            first = healthy[0]
            self.url = first["url"]
            others = [e["url"] for e in healthy[1:]]
            self._search = "found on a usual port" + (f"; also {', '.join(others)}" if others else "")
            self._base(ServerPanel).found(self.url, self._search)
            self.sub_title = self.url
            choose = f"also: {', '.join(others)}; pass --url to choose" if others else "pass --url to choose another"
            self._base(ProgressLog).log_line(f"found {first.get('kind') or 'a server'} at {self.url} ({choose})")
            self._start_server_workers()
        self._base(WatchView).status(self._watch_status())

    def _start_server_workers(self) -> None:
        if self.url and self.poll_server:
            self.server_worker()
        if self.url and self.drive:
            self.drive_worker()

    @on(Server.MetricsScraped)
    def _metrics_scraped(self, msg: Server.MetricsScraped) -> None:
        self._base(ServerPanel).metrics(msg.rates, msg.error)
        if self.watching and not self.drive:
            view = self._base(WatchView)
            rates = msg.rates
            tok = rates.generation_tok_s if rates is not None else None
            view.show_tok_s(tok, "/metrics: all clients" if rates is not None else f"n/a — {msg.error or '…'}")
            view.show_j_per_token(
                msg.j_per_token, "energy ÷ tokens, last scrape" if msg.j_per_token else "n/a — needs watts and traffic"
            )

    @on(Server.DriveMeasured)
    def _drive_measured(self, msg: Server.DriveMeasured) -> None:
        if msg.run is not None:
            self._base(ServerPanel).request_measured(msg.run)
        view = self._base(WatchView)
        if msg.error:
            view.status(f"--drive: {msg.error}")
        if msg.run is not None and msg.run.ok:
            view.show_tok_s(msg.run.decode_tok_s, "--drive: last measured request")
            view.show_j_per_token(
                msg.j_per_token,
                "--drive: decode energy ÷ tokens" if msg.j_per_token else "n/a — needs a power source with watts",
            )

    # ---- measurement messages -------------------------------------------------------------------
    @on(Measure.Planned)
    def _planned(self, msg: Measure.Planned) -> None:
        self._plan = {v.label: (v.precision, v.model) for v in msg.spec.variants}
        self.live.set_meta(settings=msg.spec.settings_dict(), host=self._host())

    @on(Measure.EventArrived)
    def _event(self, msg: Measure.EventArrived) -> None:
        ev, log = msg.event, self._base(ProgressLog)
        if isinstance(ev, VariantStarted):
            precision, model = self._plan.get(ev.label, (None, None))
            self.live.apply(ev, precision, model)
            self._base(ServerPanel).probed(True, model=model, precision=precision or ev.label)
            self.metrics_model = model or self.metrics_model
            log.log_line(f"{msg.source}: measuring {ev.label} ({ev.index + 1}/{ev.total})")
        elif isinstance(ev, Progress):
            log.progress(ev.done, ev.total, f"{ev.label}: {ev.text}")
        elif isinstance(ev, RunLanded):
            self.live.apply(ev)
            self._base(ServerPanel).request_measured(ev.run)
        elif isinstance(ev, VariantFinished):
            self.live.apply(ev)
            errs = f" — {ev.result.errors[0]}" if ev.result.errors and ev.result.status != "ok" else ""
            log.log_line(f"{ev.result.label}: {ev.result.status}{errs}", error=ev.result.status == "failed")
        elif isinstance(ev, Log):
            log.log_line(ev.text)
        elif isinstance(ev, SweepFinished):
            what = "stopped; kept" if ev.interrupted else "finished"
            log.log_line(f"sweep {what}: {ev.results_path}")
        self._table_dirty = True

    @on(Measure.Ended)
    def _ended(self, msg: Measure.Ended) -> None:
        self._measuring = None
        progress = self._base(ProgressLog)
        progress.idle()
        if msg.error:
            progress.log_line(f"{msg.source} failed: {msg.error}", error=True)
            self.notify(msg.error, title=f"{msg.source} failed", severity="error")

    @on(Measure.Exported)
    def _exported(self, msg: Measure.Exported) -> None:
        if msg.error:
            self.notify(msg.error, title="export failed", severity="error")
            return
        self._base(ProgressLog).log_line(f"exported to {msg.folder}")
        self.notify(f"{msg.folder}/\n{', '.join(msg.files)}", title="Exported", timeout=8)

    # ---- keys -----------------------------------------------------------------------------------
    def action_bench(self) -> None:
        if self._refuse_if_busy() or not self._need_url("bench"):
            return
        self._measuring, self._stop = "bench", threading.Event()
        self.bench_worker(self._stop)

    def action_sweep(self) -> None:
        if self._measuring == "sweep":
            self._stop.set()
            self._base(ProgressLog).log_line("stopping the sweep after the request in flight…")
            return
        if self._refuse_if_busy() or (self.sweep_spec is None and not self._need_url("sweep")):
            return
        self._measuring, self._stop = "sweep", threading.Event()
        self.sweep_worker(self._stop)

    def action_export(self) -> None:
        if not self.live.has_results:
            self.notify("nothing measured yet: press b or s first", severity="warning")
            return
        if not (self.live.doc.get("host") or {}).get("hostname"):
            self.live.set_meta(host=self._host())  # a bench-only session has no runner to set it
        self.export_worker(self.live.exportable(), self.results_dir(), self.export_screenshot())

    def action_toggle_watch(self) -> None:
        self.watching = not self.watching

    def watch_watching(self, watching: bool) -> None:
        self.screen.set_class(watching, "-watch")
        if self.is_mounted:
            self._base(WatchView).status(self._watch_status())
            if not watching and self._power is not None:
                self._base(PowerPanel).snapshot = self._power

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        if self._measuring is None or isinstance(self.screen, ConfirmQuit):
            self._stop.set()
            self.exit(0)
            return

        def answered(quit_: bool | None) -> None:
            if quit_:
                self._stop.set()
                self.exit(0)

        self.push_screen(ConfirmQuit(str(self.results_dir())), answered)

    def _refuse_if_busy(self) -> bool:
        if self._measuring:
            self.notify(f"a {self._measuring} is running (s stops a sweep)", severity="warning")
        return bool(self._measuring)

    def _need_url(self, what: str) -> bool:
        if not self.url:
            self.notify(f"no server to {what} — start precmon with --url URL", severity="warning")
        return bool(self.url)

    def _watch_status(self) -> str:
        if not self.url:
            if self._search and self._search.endswith("…"):
                return f"{self._search} (watch shows power meanwhile)"
            if self._search and "still looking" in self._search:
                return "no server yet — looking on the usual local ports every 5 s, or pass --url (power meanwhile)"
            return "no server — pass --url (watch shows power only)"
        how = (
            "driving a steady load of measured requests"
            if self.drive
            else "passive: reading the server's /metrics (no load from precmon; --drive adds one)"
        )
        return f"{self.url} · {how} · w: back to the tables"
