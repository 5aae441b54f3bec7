"""Exports of a results document: JSON, CSV, Markdown and standalone HTML, by one dispatch.

JSON is the docs/design.md §5 document unchanged. CSV is long-format, one row per variant × metric
(× size), for spreadsheets and pandas, with the run count and 95% CI of the metric's
`metrics_stats` beside the value where it has one. Markdown and HTML carry the whole report (table with
ratios and sparklines, roofline note, advice, monthly energy, metric definitions); they live in
`markdown.py` and `htmlpage.py`. Every format renders a `sections.Report` (`RENDERERS`), the same
for `precmon report` and `precmon compare`; the format names come from `formats.FORMATS`.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precmon.core import registry
from precmon.report import formats
from precmon.report.concurrency import pareto_levels
from precmon.report.fmt import is_number, size_sort_key
from precmon.report.htmlpage import render_html
from precmon.report.llamabench import render_llama_bench
from precmon.report.markdown import render_markdown
from precmon.report.model import ResultsDoc
from precmon.report.rows import metrics_of
from precmon.report.sections import Report, build_compare, build_report
from precmon.report.table import variant_stats
from precmon.untrusted import visible

FORMATS = formats.names()
EXPORTED = formats.exported()
SUFFIX = {name: formats.suffix(name) for name in FORMATS}

CSV_HEADER = ("variant", "precision", "metric", "size", "value", "unit", "n", "ci95_low", "ci95_high")
CsvRow = tuple[str, str, str, str, str, str, str, str, str]


def to_json(doc: ResultsDoc) -> str:
    """The results document as written by precmon (docs/design.md §5), unchanged."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


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
    scalar = [m for m in table if m.shape == "scalar"]
    sized = [m for m in table if m.shape == "sized"]
    nested = [m for m in table if m.shape == "nested"]
    grid = [m for m in table if m.shape == "grid"]
    known = {m.metrics_key for m in table}
    rows: list[CsvRow] = []
    none = ("", "", "")
    for v in doc.get("variants") or []:
        if not isinstance(v, dict):
            continue
        label, prec = visible(str(v.get("label", ""))), visible(str(v.get("precision") or ""))
        m, stats = metrics_of(v), variant_stats(v)
        for s in scalar:
            if not s.always and s.key not in m:  # measured only on some servers or plans: no row where absent
                continue  # (the server's ITL; quality, in files that planned it only)
            value = m.get(s.key)
            value = value * s.scale if is_number(value) else value  # the unit is the table's (%)
            rows.append((label, prec, s.key, "", _csv_value(value), s.unit, *_stats_cells(stats, s.key)))
        for s in sized:
            values = m.get(s.key)
            if isinstance(values, dict):
                for size in sorted(values, key=size_sort_key):
                    st = _stats_cells(stats, f"{s.key}:{size}")
                    rows.append((label, prec, s.key, visible(str(size)), _csv_value(values[size]), s.unit, *st))
        for g in grid:  # {depth: {size: value}}: the size column reads "512@d4096"
            levels = m.get(g.key)
            levels = levels if isinstance(levels, dict) else {}
            for depth in sorted(levels, key=size_sort_key):
                entry = levels[depth] if isinstance(levels[depth], dict) else {}
                for size in sorted(entry, key=size_sort_key):
                    st = _stats_cells(stats, f"{g.key}:{depth}:{size}")
                    where = visible(f"{size}@d{depth}")
                    rows.append((label, prec, g.key, where, _csv_value(entry[size]), g.unit, *st))
        for doc_key in dict.fromkeys(n.metrics_key for n in nested):
            levels = m.get(doc_key)
            if not isinstance(levels, dict):
                continue
            front = pareto_levels(levels) if doc_key == "concurrency" else set()
            for level in sorted(levels, key=size_sort_key):
                entry = levels[level] if isinstance(levels[level], dict) else {}
                for n in (n for n in nested if n.metrics_key == doc_key):
                    if n.field not in entry and n.legacy_field not in entry:
                        continue  # an older file: no TTFT p99, no J/token
                    value = _csv_value(entry.get(n.field, entry.get(n.legacy_field)))
                    st = _stats_cells(stats, f"{doc_key}:{level}:{n.field}")
                    rows.append((label, prec, n.key, visible(str(level)), value, n.unit, *st))
                if doc_key == "concurrency":
                    on = "true" if str(level) in front else "false"
                    rows.append((label, prec, "concurrency_pareto_front", visible(str(level)), on, "", *none))
        for key in sorted(k for k in m if k not in known and (is_number(m[k]) or m[k] is None)):
            rows.append((label, prec, visible(key), "", _csv_value(m[key]), "", *none))
        for w in v.get("warnings") or []:
            if isinstance(w, str):
                rows.append((label, prec, "warning", "", visible(w), "", *none))
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


RENDERERS: dict[str, Callable[[Report], str]] = {
    "json": lambda report: to_json(report.doc),
    "csv": report_csv,
    "md": render_markdown,
    "html": render_html,
    "llama-bench": render_llama_bench,
}


def render_report(report: Report, fmt: str) -> str:
    """A built `Report` in format `fmt` (one of `formats.names()`)."""
    if fmt not in RENDERERS:
        raise ValueError(f"unknown report format {fmt!r} (use one of: {', '.join(FORMATS)})")
    return RENDERERS[fmt](report)


def render(doc: ResultsDoc, fmt: str, **options: Any) -> str:
    """The document in format `fmt` ("json", "csv", "md", "html").

    Options (they change Markdown and HTML only): baseline, hours_per_day, price_per_kwh, bandwidth_gbs.
    """
    if fmt not in RENDERERS:
        raise ValueError(f"unknown report format {fmt!r} (use one of: {', '.join(FORMATS)})")
    return render_report(build_report(doc, **options), fmt)


def render_compare(docs: list[ResultsDoc], fmt: str, names: list[str] | None = None, group: str = "file") -> str:
    """Several documents side by side in `fmt` (the CSV and JSON hold the merged document);
    `group` is the column order (`compare.GROUPS`)."""
    if fmt not in RENDERERS:
        raise ValueError(f"unknown compare format {fmt!r} (use one of: {', '.join(FORMATS)})")
    return render_report(build_compare(docs, names, group), fmt)


def _write(text: str, path: Path) -> Path:
    """Written to a temporary name (unique per process) and renamed, so a reader never sees half a
    file; on a failure the temporary file is removed and the OSError raised."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_export(doc: ResultsDoc, fmt: str, path: Path, **options: Any) -> Path:
    """Write one export of `doc` in format `fmt` to `path`."""
    return _write(render(doc, fmt, **options), Path(path))


def export_all(
    doc: ResultsDoc, out_dir: Path, stem: str = "results", formats: tuple[str, ...] = EXPORTED, **options: Any
) -> dict[str, Path]:
    """Write every format into `out_dir` as `<stem>.json/.csv/.md/.html` (the report built once).

    Returns:
        {format: path written}, e.g. {"json": Path("out/results.json"), ...}.
    """
    report = build_report(doc, **options)
    return {fmt: _write(render_report(report, fmt), Path(out_dir) / f"{stem}{SUFFIX[fmt]}") for fmt in formats}
