"""The state the TUI keeps between messages, in plain Python (no textual): testable alone.

`LiveResults` holds the results document (docs/design.md §5) while a sweep or bench fills it,
folding each sweep event in with `precmon.sweep.fold.fold`, the fold the results store writes
results.json with. The sweep table rebuilds `precmon.report.table.build_table(doc)` from it;
nothing here computes a metric.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from precmon.core.schema import ResultsDoc
from precmon.sweep import fold as folding
from precmon.sweep.events import RunLanded, VariantFinished, VariantStarted
from precmon.sweep.fold import PENDING, RUNNING, UNSAVED

__all__ = ["PENDING", "RUNNING", "UNSAVED", "LiveResults"]


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
