"""What a bench or sweep's events change on screen: the table, the Server panel, the log line.

The measure worker posts `precmon.sweep.events` as they happen; the app's handlers hand them here,
which folds each into the live results document (`LiveResults`), follows the variant's server,
and says what happened in the progress log. Split from `app.py` so the app is the glue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from precmon.sweep.events import Log, Progress, RunLanded, SweepFinished, VariantFinished, VariantStarted
from precmon.tui import server_view as sv
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.untrusted import markup, redact

if TYPE_CHECKING:
    from precmon.tui.app import PrecmonApp
    from precmon.tui.workers.measure_worker import MeasureWorker


class MeasureRoutes:
    """The measurement's side of the app."""

    def __init__(self, app: PrecmonApp) -> None:
        self.app = app
        self.plan: dict[str, tuple[str | None, str | None]] = {}  # label → (precision, model)

    def planned(self, msg: MeasureWorker.Planned) -> None:
        app, variants = self.app, msg.spec.variants
        self.plan = {v.label: (v.precision, v.model) for v in variants}
        app.server_routes.plan(variants)
        app.live.plan([(v.label, v.precision, v.model) for v in variants])
        app.table_changed()
        app.live.set_meta(settings=msg.spec.settings_dict(), host=app.power_worker.host())

    def event(self, msg: MeasureWorker.EventArrived) -> None:
        app = self.app
        ev, log = msg.event, app.base(ProgressLog)
        if isinstance(ev, VariantStarted):
            precision, model = self.plan.get(ev.label, (None, None))
            app.live.apply(ev, precision, model)
            app.trace.start(ev.label)
            app.server_routes.follow(ev.label)
            app.server_routes.change(sv.measuring, model, precision or ev.label)  # health: as probed, not assumed
            app.server_worker.metrics_model = model or app.server_worker.metrics_model
            log.log_line(f"{msg.source}: measuring {ev.label} ({ev.index + 1}/{ev.total})")
        elif isinstance(ev, Progress):
            log.progress(ev.done, ev.total, f"{ev.label}: {ev.text}")
        elif isinstance(ev, RunLanded):
            app.live.apply(ev)
            app.server_routes.change(sv.request_measured, ev.run)
            if app.base(ServerPanel).view.healthy is False:  # a launched server came up after the panel last looked
                app.server_worker.probe_soon()
        elif isinstance(ev, VariantFinished):
            app.live.apply(ev)
            app.server_routes.stopped_by_sweep(ev.result.label)
            errs = f" — {ev.result.errors[0]}" if ev.result.errors and ev.result.status != "ok" else ""
            log.log_line(f"{ev.result.label}: {ev.result.status}{errs}", error=ev.result.status == "failed")
        elif isinstance(ev, Log):
            log.log_line(ev.text)
        elif isinstance(ev, SweepFinished):
            what = "stopped; kept" if ev.interrupted else "finished"
            log.log_line(f"sweep {what}: {ev.results_path}")
        app.table_changed()

    def ended(self, msg: MeasureWorker.Ended) -> None:
        app = self.app
        app.measuring = None
        if app.live.drop_pending():  # a stopped or failed sweep: the variants it never started
            app.table_changed()
        progress = app.base(ProgressLog)
        progress.idle()
        if msg.error:
            if app.live.fail_measuring(msg.error):  # never a column left "measuring…"
                app.table_changed()
            progress.log_line(f"{msg.source} failed: {msg.error}", error=True)
            app.notify(markup(redact(msg.error)), title=f"{msg.source} failed", severity="error")
        if not app.live.running:  # the run chart goes with the run, not at the next refresh tick
            app.main_chart_ended()

    def exported(self, msg: MeasureWorker.Exported) -> None:
        app = self.app
        if msg.error:
            app.notify(markup(redact(msg.error)), title="export failed", severity="error")
            return
        app.base(ProgressLog).log_line(f"exported to {msg.folder}")
        app.notify(markup(f"{msg.folder}/\n{', '.join(msg.files)}", one_line=False), title="Exported", timeout=8)
