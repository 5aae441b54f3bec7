"""A variant's `warnings` (docs/design.md §4 "Trust") in every rendering: the column header is
marked, the lines are under the table, escaped; a document without warnings renders as before."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest
from report_helpers import load
from rich.console import Console

from precmon.core.schema import ResultsDoc
from precmon.report.export import render
from precmon.report.load import validate
from precmon.report.model import DocumentError
from precmon.report.render.terminal import to_rich_table
from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import render_table

HOSTILE = "host-busy: other processes used 1.84 cores <script>x</script> | \x1b[31mred [/]"


def _warned(doc: ResultsDoc) -> ResultsDoc:
    d = copy.deepcopy(doc)
    d.variants[0].warnings = [HOSTILE]
    d.variants[0].validity = {"host_cpu": {"other_cores": 1.84}}
    return d


def _text(renderable: Any) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_column_carries_its_warnings(cpu_doc):
    table = build_table(_warned(cpu_doc))
    first = table.columns[0]
    assert first.warnings == (HOSTILE,) and first.mark == " ⚠"
    assert all(c.warnings == () and c.mark == "" for c in table.columns[1:])


def test_terminal_marks_the_header_and_lists_the_line(cpu_doc):
    out = _text(to_rich_table(_warned(cpu_doc)))
    label = cpu_doc.variants[0].label
    assert f"{label} ⚠" in out
    assert f"⚠ {label}: host-busy: other processes used 1.84 cores" in out
    assert "\x1b" not in out  # the escape never reaches the terminal


def test_markdown_and_html_escape_the_line(cpu_doc):
    md = render(_warned(cpu_doc), "md")
    assert "host-busy: other processes used 1.84 cores &lt;script&gt;x&lt;/script&gt; \\|" in md
    assert " ⚠" in md.split("\n| --- |")[0]  # in the header row
    page = render(_warned(cpu_doc), "html")
    assert '<p class="warning"' in page and "&lt;script&gt;x&lt;/script&gt;" in page and "<script>x" not in page


def test_csv_has_one_row_per_warning(cpu_doc):
    rows = [line for line in render(_warned(cpu_doc), "csv").splitlines() if ",warning," in line]
    (row,) = rows
    assert row.startswith(f"{cpu_doc.variants[0].label},") and "\x1b" not in row


def test_no_warnings_no_change(cpu_doc):
    clean = copy.deepcopy(cpu_doc)
    clean.variants[0].warnings = []
    for fmt in ("md", "html", "csv"):
        assert render(clean, fmt) == render(cpu_doc, fmt)


def test_tui_cell_header_marked_and_codes_listed(cpu_doc):
    out = _text(render_table(build_table(_warned(cpu_doc))))
    label = cpu_doc.variants[0].label
    assert f"{label} ⚠" in out and f"⚠ {label}: host-busy" in out
    assert "1.84 cores" not in out  # the TUI shows the codes; the lines are in the exports


@pytest.mark.parametrize(
    ("value", "where"), [("busy", "variants[0].warnings"), ([3], "variants[0].warnings[0]"), ([], None)]
)
def test_loader_checks_warnings(value, where):
    d = load("cpu_tiny.json")
    d["variants"][0]["warnings"] = value
    if where is None:
        validate(d, "r.json")
        return
    with pytest.raises(DocumentError, match="r.json: " + re.escape(where) + ": expected"):
        validate(d, "r.json")
