"""What a bench's or sweep's events change: the live results, the run chart, the server shown.

The measure worker posts `precmon.sweep.events` as they happen (`messages.SweepEventArrived`);
`MeasureFlow` folds each into the live results document (`LiveResults`), starts the run chart's
trace for a new variant, follows the variant's server (`ServerFollow`) and returns the Server
panel's next `ServerView`; the app assigns it and the document to its reactives, and the progress
log says what happened (`ProgressLog.event`). Plain Python: no textual, and it never imports the app.
"""

from __future__ import annotations

from precmon.core.schema import Host
from precmon.sweep.events import RunLanded, SweepEvent, VariantFinished, VariantStarted
from precmon.sweep.spec import SweepSpec
from precmon.tui import server_view as sv
from precmon.tui.live import LiveResults
from precmon.tui.run_trace import RunTrace
from precmon.tui.server_follow import ServerFollow
from precmon.tui.server_view import ServerView
from precmon.tui.workers.server_worker import ServerWorker

Plan = tuple[str | None, str | None]  # a sweep variant's (precision, model)


class MeasureFlow:
    """The measurement's side of the app: the sweep's plan and what each event changes."""

    def __init__(self, live: LiveResults, follow: ServerFollow, trace: RunTrace, worker: ServerWorker) -> None:
        self.live, self.follow, self.trace, self.worker = live, follow, trace, worker
        self.plan: dict[str, Plan] = {}  # label → (precision, model)

    def planned(self, spec: SweepSpec, host: Host) -> None:
        """A sweep's plan is known: every variant has a column from the start, "pending"."""
        variants = spec.variants
        self.plan = {v.label: (v.precision, v.model) for v in variants}
        self.follow.plan(variants)
        self.live.plan([(v.label, v.precision, v.model) for v in variants])
        self.live.set_meta(settings=spec.settings_dict(), host=host)

    def event(self, ev: SweepEvent, view: ServerView) -> tuple[ServerView, bool]:
        """Fold `ev` in: the Server panel's next view (`view` itself when unchanged), and whether
        the live results changed."""
        if isinstance(ev, VariantStarted):
            precision, model = self.plan.get(ev.label, (None, None))
            changed = self.live.apply(ev, precision, model)
            self.trace.start(ev.label)
            if (url := self.follow.follow(ev.label)) is not None:  # without --url: the variant's own server
                view = sv.follow(url, f"sweep: {ev.label}")
            self.worker.metrics_model = model or self.worker.metrics_model
            return sv.measuring(view, model, precision or ev.label), changed  # health: as probed, not assumed
        if isinstance(ev, RunLanded):
            view = sv.request_measured(view, ev.run)
            if view.healthy is False:  # a launched server came up after the panel last looked
                self.worker.probe_soon()
            return view, self.live.apply(ev)
        if isinstance(ev, VariantFinished):
            label = ev.result.label
            if self.follow.stopped(label):
                view = sv.stopped_by_sweep(view, f"stopped by the sweep (launched variant {label})")
            return view, self.live.apply(ev)
        return view, False

    def ended(self, error: str | None) -> bool:
        """The bench or sweep returned: the variants it never started go, and a column still
        "measuring…" after a failure fails with `error` (keeping its runs). True if the live
        results changed."""
        changed = self.live.drop_pending()
        if error:
            changed = self.live.fail_measuring(error) or changed
        return changed
