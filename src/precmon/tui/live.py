"""The state the TUI keeps between messages, in plain Python (no textual): testable alone.

`LiveResults` holds the results document (docs/design.md §5) while a sweep or bench fills it: the sweep
layer's events add runs to the variant in progress and replace it with the finished result.
The sweep table rebuilds `precmon.report.table.build_table(doc)` from it; nothing here
computes a metric. `power_snapshot` reads a sampler into rows for the Power panel; it runs in
the power worker's thread, since the sampler's lock and history copy must not block painting.
"""

from __future__ import annotations

import copy
from typing import Any

from precmon.measure.results import SCHEMA, empty_metrics
from precmon.power.base import SCOPE_RANK, EnergyMeter, Unavailable
from precmon.power.windows import headline_now
from precmon.sweep.events import RunLanded, VariantFinished, VariantStarted
from precmon.tui.messages import PowerRow, PowerSnapshot
from precmon.tui.run_trace import watts_per_second

RUNNING = "running"  # status of the variant being measured (not a docs/design.md §5 status: never exported)
PENDING = "pending"  # a planned variant not started yet (TUI only, like RUNNING: never exported)
UNSAVED = (RUNNING, PENDING)


class LiveResults:
    """A results document that grows as measurements land.

    A column is one measurement, not one label: a bench of `Q4_K_M` and a later sweep variant
    labelled `Q4_K_M` (even a stopped one) are two columns, and both are exported. Runs and the
    finished result go to the newest column of that label that is still being measured.
    """

    def __init__(self, doc: dict[str, Any] | None = None) -> None:
        self.doc: dict[str, Any] = copy.deepcopy(doc) if doc else {"schema": SCHEMA, "variants": []}
        self.doc.setdefault("variants", [])

    def _measuring(self, label: str) -> int | None:
        """Index of the newest column labelled `label` that is still being measured."""
        for i in range(len(self.doc["variants"]) - 1, -1, -1):
            v = self.doc["variants"][i]
            if v.get("label") == label and v.get("status") == RUNNING:
                return i
        return None

    @staticmethod
    def _column(label: str, precision: str | None, model: str | None, status: str) -> dict[str, Any]:
        return {
            "label": label,
            "precision": precision,
            "model": model,
            "server": {},
            "status": status,
            "errors": [],
            "metrics": empty_metrics(),
            "runs": [],
        }

    def plan(self, variants: list[tuple[str, str | None, str | None]]) -> None:
        """A sweep's plan is known: one "pending" column per variant (label, precision, model), so the
        whole plan shows from the start; `start` turns each into the column being measured."""
        self.drop_pending()
        self.doc["variants"].extend(self._column(lab, prec, model, PENDING) for lab, prec, model in variants)

    def drop_pending(self) -> bool:
        """Remove planned columns never started (the sweep ended or stopped); True if there were some."""
        before = len(self.doc["variants"])
        self.doc["variants"] = [v for v in self.doc["variants"] if v.get("status") != PENDING]
        return len(self.doc["variants"]) != before

    def start(self, label: str, precision: str | None = None, model: str | None = None) -> int:
        """The column for `label`, measuring: its planned column if there is one, else a new one; its index."""
        for i, v in enumerate(self.doc["variants"]):
            if v.get("label") == label and v.get("status") == PENDING:
                self.doc["variants"][i] = self._column(
                    label, precision or v.get("precision"), model or v.get("model"), RUNNING
                )
                return i
        self.doc["variants"].append(self._column(label, precision, model, RUNNING))
        return len(self.doc["variants"]) - 1

    def add_run(self, label: str, run: Any) -> None:
        i = self._measuring(label)
        if i is None:
            i = self.start(label)
        self.doc["variants"][i]["runs"].append(run.to_dict())

    def finish(self, result: Any) -> None:
        d = result.to_dict()
        i = self._measuring(d["label"])
        if i is None:  # finished without starting (a resumed sweep's done variant): its planned column
            i = next(
                (
                    j
                    for j, v in enumerate(self.doc["variants"])
                    if v.get("label") == d["label"] and v.get("status") == PENDING
                ),
                None,
            )
        if i is None:
            self.doc["variants"].append(d)
        else:
            self.doc["variants"][i] = d

    def fail_measuring(self, error: str) -> bool:
        """Columns still "measuring…" when their measurement broke become failed with `error`,
        keeping their runs (so `e` exports them); True if there was one."""
        hit = False
        for v in self.doc["variants"]:
            if v.get("status") == RUNNING:
                v["status"], v["errors"] = "failed", [error, *v.get("errors", [])]
                hit = True
        return hit

    def apply(self, event: Any, precision: str | None = None, model: str | None = None) -> bool:
        """Fold one sweep event in; True when the table changed."""
        if isinstance(event, VariantStarted):
            self.start(event.label, precision, model)
        elif isinstance(event, RunLanded):
            self.add_run(event.label, event.run)
        elif isinstance(event, VariantFinished):
            self.finish(event.result)
        else:
            return False
        return True

    def set_meta(self, **keys: Any) -> None:
        """host / settings / created of the document (from the runner), for exports."""
        self.doc.update({k: v for k, v in keys.items() if v is not None})

    def exportable(self) -> dict[str, Any]:
        """The document without the in-progress or planned variants (they have no medians yet)."""
        doc = copy.deepcopy(self.doc)
        doc["variants"] = [v for v in doc["variants"] if v.get("status") not in UNSAVED]
        return doc

    @property
    def running(self) -> bool:
        """A column is being measured now (a bench's, or a sweep variant's)."""
        return any(v.get("status") == RUNNING for v in self.doc["variants"])

    @property
    def has_results(self) -> bool:
        return any(v.get("status") not in UNSAVED for v in self.doc["variants"])


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
