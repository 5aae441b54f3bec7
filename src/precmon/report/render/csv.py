"""The CSV export: long format, one row per variant × metric (× size), for spreadsheets and pandas.

Beside each value, the run count and 95% CI of the metric's `metrics_stats` where it has one. The
metrics are the cells of core/cells.py's walk (the registry's order, one step per shape: scalar,
sized, grid, nested), the walk the loader checks and `metrics_stats` is keyed by; a comparison
adds the environment keys that differ between its files.

CSV is safe to open: a text cell that a spreadsheet would run as a formula (it starts with `=`,
`+`, `-`, `@`, a tab or a carriage return; a label can come from a shared sweep file or a
server's model name) gets a leading apostrophe, the usual rule; a number stays a number.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from typing import Any

from precmon.core import registry
from precmon.core.cells import Cell, metric_cells, size_order
from precmon.core.metric_keys import KEY
from precmon.core.schema import Fit, ResultsDoc
from precmon.report.analysis.concurrency import pareto_levels
from precmon.report.fmt import is_number
from precmon.report.sections import Report
from precmon.report.table import variant_stats
from precmon.untrusted import visible

CSV_HEADER = ("variant", "precision", "metric", "size", "value", "unit", "n", "ci95_low", "ci95_high")
CsvRow = tuple[str, str, str, str, str, str, str, str, str]
_NO_STATS = ("", "", "")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def spreadsheet_safe(cell: str) -> str:
    """`cell` with a leading apostrophe where a spreadsheet would run it as a formula; a plain
    number (`-0.5`, `1e-05`) is left as it is, so it still reads as one."""
    if cell.startswith(_FORMULA_START) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _write(rows: Sequence[tuple[str, ...]], header: tuple[str, ...] | None = None) -> str:
    """The CSV text of `rows`, every cell made safe to open (`spreadsheet_safe`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    if header is not None:
        writer.writerow(header)
    writer.writerows(tuple(spreadsheet_safe(c) for c in row) for row in rows)
    return buf.getvalue()


def _csv_value(value: Any) -> str:
    return (
        repr(float(value))
        if is_number(value) and not isinstance(value, int)
        else (str(value) if is_number(value) else "")
    )


def _stats_cells(stats: dict[str, Any], key: str) -> tuple[str, str, str]:
    """(n, ci95_low, ci95_high) of `stats[key]`, "" for what it lacks."""
    st = stats.get(key)
    if not isinstance(st, dict):
        return ("", "", "")
    ci = st.get("ci95")
    low, high = ci if isinstance(ci, list) and len(ci) == 2 else (None, None)
    return (_csv_value(st.get("n")), _csv_value(low), _csv_value(high))


def _cell_row(who: tuple[str, str], c: Cell, stats: dict[str, Any]) -> CsvRow:
    """One cell (core/cells.py) as a row: a scalar in the table's unit (top-1 agreement in %), a
    grid cell's size as "512@d4096", the cell's `metrics_stats` beside it."""
    value = c.value * c.metric.scale if c.metric.shape == "scalar" and is_number(c.value) else c.value
    where = f"{c.size}@d{c.depth}" if c.metric.shape == "grid" else str(c.size)
    return (*who, c.metric.key, visible(where), _csv_value(value), c.metric.unit, *_stats_cells(stats, c.stats_key))


def _metric_rows(who: tuple[str, str], m: dict[str, Any], stats: dict[str, Any]) -> list[CsvRow]:
    """A row per cell of the variant's `metrics`, in the walk's order (scalar, sized, grid, nested);
    each level of `concurrency` ends with "concurrency_pareto_front" true/false, levels whose
    object holds none of the registry's fields too."""
    rows: list[CsvRow] = []
    by_level: dict[str, list[CsvRow]] = {}
    for c in metric_cells(m):
        if c.metric.metrics_key == KEY.concurrency:
            by_level.setdefault(str(c.size), []).append(_cell_row(who, c, stats))
        else:
            rows.append(_cell_row(who, c, stats))
    levels = m.get(KEY.concurrency)
    if isinstance(levels, dict):
        front = pareto_levels(levels)
        for level in sorted(levels, key=size_order):
            on = "true" if str(level) in front else "false"
            rows += by_level.get(str(level), [])
            rows.append((*who, "concurrency_pareto_front", visible(str(level)), on, "", *_NO_STATS))
    return rows


def csv_rows(doc: ResultsDoc) -> list[CsvRow]:
    """(variant, precision, metric, size, value, unit, n, ci95_low, ci95_high) rows; value "" where
    not measured, n and the CI "" where the metric has no statistics (docs/design.md §5
    `metrics_stats`; worked out from the runs for files that do not record them).

    Text from the file (labels, precisions, sizes) has terminal escapes removed and control
    characters shown (`untrusted.visible`): the CSV often goes to a terminal. Metrics come from
    `precmon.core.registry` in its order: scalar ones first, then sized ones
    (one row per size), grid ones (prefill at depth: one row per depth and size, size "512@d4096"),
    then nested ones (concurrency: metric "concurrency_<field>" with the stream
    count as the size, and "concurrency_pareto_front" true/false per level). Unknown numeric
    scalar metrics that later versions add are listed last, then the memory fit's inputs
    (`fit_usable_bytes`, `fit_weights_bytes`, and `fit_basis`/`fit_reason`/`fit_check` as text),
    then the variant's warnings (metric "warning", the line as the value; docs/design.md §4).
    """
    known = {m.metrics_key for m in registry.metrics()}
    rows: list[CsvRow] = []
    for v in doc.variants:
        who = (visible(v.label), visible(v.precision or ""))
        m, stats = v.metrics, variant_stats(v)
        rows += _metric_rows(who, m, stats)
        for key in sorted(k for k in m if k not in known and (is_number(m[k]) or m[k] is None)):
            rows.append((*who, visible(key), "", _csv_value(m[key]), "", *_NO_STATS))
        rows += _fit_rows(who, v.fit)
        rows += [(*who, "warning", "", visible(w), "", *_NO_STATS) for w in v.warnings or []]
    return rows


def _fit_rows(who: tuple[str, str], fit: Fit | None) -> list[CsvRow]:
    """The memory fit's inputs and where they came from (its figures are the `fit_*` metric rows)."""
    if fit is None:
        return []
    rows: list[CsvRow] = [
        (*who, name, "", _csv_value(value), "B", *_NO_STATS)
        for name, value in (("fit_usable_bytes", fit.usable_bytes), ("fit_weights_bytes", fit.weights_bytes))
    ]
    texts = (("fit_basis", fit.basis), ("fit_reason", fit.reason), ("fit_check", fit.check))
    return rows + [(*who, name, "", visible(text), "", *_NO_STATS) for name, text in texts if isinstance(text, str)]


def to_csv(doc: ResultsDoc) -> str:
    return _write(list(csv_rows(doc)), CSV_HEADER)


def report_csv(report: Report) -> str:
    """The CSV of a report; a comparison adds one row per differing environment key and file:
    variant = the file, metric = "fingerprint:<key>", value = that file's value (text)."""
    rows = [
        (visible(name), "", visible(f"fingerprint:{d.key}"), "", visible(value), "")
        for d in report.fingerprint_diff
        for name, value in zip(report.fingerprint_files, d.values, strict=False)
    ]
    return to_csv(report.doc) + _write(rows)
