"""The CSV export: long format, one row per variant × metric (× size), for spreadsheets and pandas.

Beside each value, the run count and 95% CI of the metric's `metrics_stats` where it has one. The
metrics come from `precmon.core.registry` in its order, one step per shape (scalar, sized, grid,
nested); a comparison adds the environment keys that differ between its files.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from precmon.core import registry
from precmon.core.metric_keys import KEY
from precmon.core.registry import Metric
from precmon.report.analysis.concurrency import pareto_levels
from precmon.report.fmt import is_number, size_sort_key
from precmon.report.model import ResultsDoc
from precmon.report.rows import metrics_of
from precmon.report.sections import Report
from precmon.report.table import variant_stats
from precmon.untrusted import visible

CSV_HEADER = ("variant", "precision", "metric", "size", "value", "unit", "n", "ci95_low", "ci95_high")
CsvRow = tuple[str, str, str, str, str, str, str, str, str]
_NO_STATS = ("", "", "")


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


def _scalar_rows(who: tuple[str, str], m: dict[str, Any], stats: dict[str, Any], scalar: list[Metric]) -> list[CsvRow]:
    rows: list[CsvRow] = []
    for s in scalar:
        if not s.always and s.key not in m:  # measured only on some servers or plans: no row where absent
            continue  # (the server's ITL; quality, in files that planned it only)
        value = m.get(s.key)
        value = value * s.scale if is_number(value) else value  # the unit is the table's (%)
        rows.append((*who, s.key, "", _csv_value(value), s.unit, *_stats_cells(stats, s.key)))
    return rows


def _sized_rows(who: tuple[str, str], m: dict[str, Any], stats: dict[str, Any], sized: list[Metric]) -> list[CsvRow]:
    rows: list[CsvRow] = []
    for s in sized:
        values = m.get(s.key)
        if isinstance(values, dict):
            for size in sorted(values, key=size_sort_key):
                st = _stats_cells(stats, f"{s.key}:{size}")
                rows.append((*who, s.key, visible(str(size)), _csv_value(values[size]), s.unit, *st))
    return rows


def _grid_rows(who: tuple[str, str], m: dict[str, Any], stats: dict[str, Any], grid: list[Metric]) -> list[CsvRow]:
    """{depth: {size: value}}: the size column reads "512@d4096"."""
    rows: list[CsvRow] = []
    for g in grid:
        levels = m.get(g.key)
        levels = levels if isinstance(levels, dict) else {}
        for depth in sorted(levels, key=size_sort_key):
            entry = levels[depth] if isinstance(levels[depth], dict) else {}
            for size in sorted(entry, key=size_sort_key):
                st = _stats_cells(stats, f"{g.key}:{depth}:{size}")
                where = visible(f"{size}@d{depth}")
                rows.append((*who, g.key, where, _csv_value(entry[size]), g.unit, *st))
    return rows


def _nested_rows(who: tuple[str, str], m: dict[str, Any], stats: dict[str, Any], nested: list[Metric]) -> list[CsvRow]:
    """One row per level and field; concurrency adds "concurrency_pareto_front" true/false per level."""
    rows: list[CsvRow] = []
    for doc_key in dict.fromkeys(n.metrics_key for n in nested):
        levels = m.get(doc_key)
        if not isinstance(levels, dict):
            continue
        front = pareto_levels(levels) if doc_key == KEY.concurrency else set()
        for level in sorted(levels, key=size_sort_key):
            entry = levels[level] if isinstance(levels[level], dict) else {}
            for n in (n for n in nested if n.metrics_key == doc_key):
                if n.field not in entry and n.legacy_field not in entry:
                    continue  # an older file: no TTFT p99, no J/token
                value = _csv_value(entry.get(n.field, entry.get(n.legacy_field)))
                st = _stats_cells(stats, f"{doc_key}:{level}:{n.field}")
                rows.append((*who, n.key, visible(str(level)), value, n.unit, *st))
            if doc_key == KEY.concurrency:
                on = "true" if str(level) in front else "false"
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
    scalar metrics that later versions add are listed last,
    then the variant's warnings (metric "warning", the line as the value; docs/design.md §4).
    """
    table = registry.metrics()
    by_shape = {shape: [m for m in table if m.shape == shape] for shape in ("scalar", "sized", "grid", "nested")}
    known = {m.metrics_key for m in table}
    rows: list[CsvRow] = []
    for v in doc.get("variants") or []:
        if not isinstance(v, dict):
            continue
        who = (visible(str(v.get("label", ""))), visible(str(v.get("precision") or "")))
        m, stats = metrics_of(v), variant_stats(v)
        rows += _scalar_rows(who, m, stats, by_shape["scalar"])
        rows += _sized_rows(who, m, stats, by_shape["sized"])
        rows += _grid_rows(who, m, stats, by_shape["grid"])
        rows += _nested_rows(who, m, stats, by_shape["nested"])
        for key in sorted(k for k in m if k not in known and (is_number(m[k]) or m[k] is None)):
            rows.append((*who, visible(key), "", _csv_value(m[key]), "", *_NO_STATS))
        for w in v.get("warnings") or []:
            if isinstance(w, str):
                rows.append((*who, "warning", "", visible(w), "", *_NO_STATS))
    return rows


def to_csv(doc: ResultsDoc) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    writer.writerows(csv_rows(doc))
    return buf.getvalue()


def report_csv(report: Report) -> str:
    """The CSV of a report; a comparison adds one row per differing environment key and file:
    variant = the file, metric = "fingerprint:<key>", value = that file's value (text)."""
    text = to_csv(report.doc)
    if not report.fingerprint_diff:
        return text
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for d in report.fingerprint_diff:
        for name, value in zip(report.fingerprint_files, d.values, strict=False):
            writer.writerow((visible(name), "", visible(f"fingerprint:{d.key}"), "", visible(value), ""))
    return text + buf.getvalue()
