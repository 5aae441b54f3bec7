"""One fold from sweep events to a results document (docs/design.md §5): `fold(doc, event)`.

The results store folds each finished variant into the document it writes as results.json
(sweep/store.py), and the TUI folds every event into the document its sweep table and `e`
export read (tui/live.py), so how an event changes a document is said here once.

A column is one measurement, not one label: a bench of `Q4_K_M` and a later sweep variant
labelled `Q4_K_M` are two columns. An event goes to the newest column of its label that is
being measured (`RUNNING`); a start takes over its planned column (`PENDING`) where there is one;
a finished variant with neither replaces the newest column of its label (a sweep's earlier record
of the same variant, read back by `--resume`), else it is a new column. `RUNNING` and `PENDING`
are never written to a file: `saved(doc)` leaves those columns out.

Pure: the document passed in is never changed; the one returned shares what did not change.
"""

from __future__ import annotations

import copy
from dataclasses import replace

from precmon.core.schema import ResultsDoc, VariantResult
from precmon.sweep.events import RunLanded, SweepEvent, VariantFinished, VariantStarted

RUNNING = "running"  # the variant being measured (not a docs/design.md §5 status: never saved)
PENDING = "pending"  # a planned variant not started yet (never saved either)
UNSAVED = (RUNNING, PENDING)


def new_document() -> ResultsDoc:
    """A document before anything is measured."""
    return ResultsDoc(created=None, precmon_version=None)


def fold(doc: ResultsDoc, event: SweepEvent) -> ResultsDoc:
    """`doc` with `event` in it; the same `doc` for an event that changes no column. The
    records an event carries are copied: the measurement goes on changing its own."""
    cols = doc.variants
    if isinstance(event, VariantStarted):
        i = _newest(cols, event.label, PENDING)
        old = cols[i] if i is not None else None
        precision = event.precision or (old.precision if old else None)
        col = column(event.label, precision, event.model or (old.model if old else None), RUNNING)
        return _put(doc, i, col)
    if isinstance(event, RunLanded):
        i = _newest(cols, event.label, RUNNING)
        if i is None:  # a run of a variant whose start was not seen: its column starts now
            doc = fold(doc, VariantStarted(event.label, 0, 1, ""))
            i = len(doc.variants) - 1
        col = doc.variants[i]
        return _put(doc, i, replace(col, runs=[*col.runs, copy.deepcopy(event.run)]))
    if isinstance(event, VariantFinished):
        label = event.result.label
        i = _newest(cols, label, RUNNING)
        i = _newest(cols, label, PENDING) if i is None else i
        i = _newest(cols, label) if i is None else i
        return _put(doc, i, copy.deepcopy(event.result))
    return doc


def column(label: str, precision: str | None, model: str | None, status: str) -> VariantResult:
    """A column before its variant is finished (`status` is `RUNNING` or `PENDING`)."""
    return VariantResult(label, precision, model, status=status)


def planned(doc: ResultsDoc, variants: list[tuple[str, str | None, str | None]]) -> ResultsDoc:
    """A sweep's plan is known: one `PENDING` column per variant (label, precision, model),
    replacing the columns of an earlier plan never started."""
    kept = without_pending(doc)
    return replace(kept, variants=[*kept.variants, *(column(*v, PENDING) for v in variants)])


def without_pending(doc: ResultsDoc) -> ResultsDoc:
    """The planned columns never started are gone (the sweep ended or stopped)."""
    return replace(doc, variants=[c for c in doc.variants if c.status != PENDING])


def failed_measuring(doc: ResultsDoc, error: str) -> ResultsDoc:
    """Columns still `RUNNING` when their measurement broke become failed with `error` first,
    keeping their runs."""
    cols = [replace(c, status="failed", errors=[error, *c.errors]) if c.status == RUNNING else c for c in doc.variants]
    return replace(doc, variants=cols)


def saved(doc: ResultsDoc) -> ResultsDoc:
    """The document as a file holds it: no column being measured or planned."""
    return replace(doc, variants=[c for c in doc.variants if c.status not in UNSAVED])


def _newest(cols: list[VariantResult], label: str, status: str | None = None) -> int | None:
    """Index of the newest column labelled `label` (with `status`, when given)."""
    for i in range(len(cols) - 1, -1, -1):
        if cols[i].label == label and (status is None or cols[i].status == status):
            return i
    return None


def _put(doc: ResultsDoc, i: int | None, col: VariantResult) -> ResultsDoc:
    """A new document with column `i` replaced by `col` (None: `col` added last)."""
    cols = list(doc.variants)
    if i is None:
        cols.append(col)
    else:
        cols[i] = col
    return replace(doc, variants=cols)
