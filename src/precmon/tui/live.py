"""The state the TUI keeps between messages, in plain Python (no textual): testable alone.

`LiveResults` holds the results document (docs/design.md §5) while a sweep or bench fills it,
folding each sweep event in with `precmon.sweep.fold.fold`, the fold the results store writes
results.json with. The sweep table rebuilds `precmon.report.table.build_table(doc)` from it;
nothing here computes a metric. `power_snapshot` reads a sampler into rows for the Power panel;
it runs in the power worker's thread, since the sampler's lock and history copy must not block
painting.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from precmon.core.schema import ResultsDoc
from precmon.power.base import SCOPE_RANK, EnergyMeter, Unavailable
from precmon.power.windows import headline_now
from precmon.sweep import fold as folding
from precmon.sweep.events import RunLanded, VariantFinished, VariantStarted
from precmon.sweep.fold import PENDING, RUNNING, UNSAVED
from precmon.tui.messages import PowerRow, PowerSnapshot
from precmon.tui.run_trace import watts_per_second

__all__ = ["PENDING", "RUNNING", "UNSAVED", "LiveResults", "power_snapshot"]


class LiveResults:
    """A results document that grows as measurements land (`sweep/fold.py`: a column is one
    measurement, not one label; both are exported)."""

    def __init__(self, doc: ResultsDoc | None = None) -> None:
        self.doc: ResultsDoc = copy.deepcopy(doc) if doc else folding.new_document()

    def plan(self, variants: list[tuple[str, str | None, str | None]]) -> None:
        """A sweep's plan is known: one "pending" column per variant (label, precision, model), so the
        whole plan shows from the start; its `VariantStarted` turns each into the column being measured."""
        self.doc = folding.planned(self.doc, variants)

    def drop_pending(self) -> bool:
        """Remove planned columns never started (the sweep ended or stopped); True if there were some."""
        before = len(self.doc.variants)
        self.doc = folding.without_pending(self.doc)
        return len(self.doc.variants) != before

    def fail_measuring(self, error: str) -> bool:
        """Columns still "measuring…" when their measurement broke become failed with `error`,
        keeping their runs (so `e` exports them); True if there was one."""
        if not self.running:
            return False
        self.doc = folding.failed_measuring(self.doc, error)
        return True

    def apply(self, event: Any, precision: str | None = None, model: str | None = None) -> bool:
        """Fold one sweep event in (a start with the plan's precision and model where the event
        has none); True when the table changed."""
        if isinstance(event, VariantStarted) and (precision or model):
            event = dataclasses.replace(event, precision=precision or event.precision, model=model or event.model)
        if not isinstance(event, (VariantStarted, RunLanded, VariantFinished)):
            return False
        self.doc = folding.fold(self.doc, event)
        return True

    def set_meta(self, **keys: Any) -> None:
        """host / settings / created of the document (from the runner), for exports."""
        self.doc = dataclasses.replace(self.doc, **{k: v for k, v in keys.items() if v is not None})

    def exportable(self) -> ResultsDoc:
        """The document without the in-progress or planned variants (they have no medians yet)."""
        return copy.deepcopy(folding.saved(self.doc))

    @property
    def running(self) -> bool:
        """A column is being measured now (a bench's, or a sweep variant's)."""
        return any(v.status == RUNNING for v in self.doc.variants)

    @property
    def has_results(self) -> bool:
        return any(v.status not in UNSAVED for v in self.doc.variants)


def power_snapshot(
    meter: EnergyMeter | None, unavailable: list[Unavailable], history_s: float = 120.0, note: str | None = None
) -> PowerSnapshot:
    """One snapshot of every channel (newest watts, recent history, extras) and every absence."""
    rows: list[PowerRow] = []
    errors: dict[str, str] = {}
    headline = None
    per_s: tuple[tuple[int, float], ...] = ()
    per_s_label: str | None = None
    if meter is not None:
        latest = meter.latest()
        errors = dict(meter.errors())
        chans = sorted(meter.channels(), key=lambda c: (not c.has_watts, SCOPE_RANK.get(c.scope, 99), c.id))
        headline = headline_now(chans, latest)
        for ch in chans:
            s = latest.get(ch.id)
            watts = s.watts if s is not None else None
            hist: tuple[float, ...] = ()
            if ch.has_watts:
                samples = meter.history(ch.id, history_s)
                hist = tuple(x.watts for x in samples if x.watts is not None)
                if headline is not None and ch.id == headline[0].id:
                    per_s, per_s_label = watts_per_second(samples), ch.label
            rows.append(
                PowerRow(
                    ch.id,
                    ch.label,
                    ch.kind,
                    ch.scope,
                    watts,
                    hist,
                    dict(s.extra) if s is not None else {},
                    ch.has_watts,
                    ch.note,
                )
            )
    for u in unavailable:
        rows.append(
            PowerRow(
                u.id or u.kind, u.label or u.kind, u.kind, None, None, available=False, reason=u.reason, has_watts=False
            )
        )
    return PowerSnapshot(
        tuple(rows),
        headline[1] if headline else None,
        headline[0].scope if headline else None,
        errors,
        note,
        per_s,
        per_s_label,
    )
