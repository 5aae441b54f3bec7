"""Exports of a results document: one dispatch from a format name to its renderer, and the file writes.

JSON is the docs/design.md §5 document as the model writes it (`to_json`, here: it renders
nothing; a comparison's is `model.compare_json`). The other
formats live one module each under `report/render/`: CSV (`render/csv.py`, long format with the
run count and 95% CI), Markdown and standalone HTML (`render/markdown.py`, `render/html/`: the
whole report) and llama-bench's table (`render/llamabench.py`). Every format renders a
`sections.Report` (`RENDERERS`), the same for `precmon report` and `precmon compare`; the format
names come from `formats.FORMATS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from precmon.core import schema
from precmon.core.schema import ResultsDoc
from precmon.report import formats
from precmon.report.model import CompareDoc, compare_json
from precmon.report.render.csv import report_csv
from precmon.report.render.html.page import render_html
from precmon.report.render.llamabench import render_llama_bench
from precmon.report.render.markdown import render_markdown
from precmon.report.sections import Report, build_compare, build_report

FORMATS = formats.names()
EXPORTED = formats.exported()
SUFFIX = {name: formats.suffix(name) for name in FORMATS}


def to_json(doc: ResultsDoc) -> str:
    """The results document as precmon writes it (docs/design.md §5: `core.schema.to_json`), or a
    comparison's `precmon.compare/1`."""
    obj = compare_json(doc) if isinstance(doc, CompareDoc) else schema.to_json(doc)
    return json.dumps(obj, indent=2, ensure_ascii=False) + "\n"


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
