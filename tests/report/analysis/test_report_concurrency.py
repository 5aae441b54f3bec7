"""The report's Concurrency section: one row per variant and level, the Pareto front marked, a
queued level named, in every format; older files read under the curve's names."""

from __future__ import annotations

import json

from report_helpers import typed
from rich.console import Console

from precmon.core.schema import ResultsDoc
from precmon.report.analysis.concurrency import concurrency_rows, pareto_levels
from precmon.report.export import render
from precmon.report.render.csv import csv_rows
from precmon.report.render.terminal import report_renderable


def _level(per_user: float, total: float, jpt: float | None, front: bool | None = None) -> dict:
    f = {"per_user_tok_s": per_user, "total_tok_s": total, "ttft_p50_s": 0.1, "ttft_p99_s": 0.3}
    f |= {"energy_j_per_token": jpt, "per_user_tok_s_min": per_user - 1, "per_user_tok_s_max": per_user + 1}
    return f | ({"pareto_front": front} if front is not None else {})


def _doc(levels: dict, label: str = "Q4<b>|x", runs: list | None = None) -> ResultsDoc:
    variant = {"label": label, "precision": "q4", "status": "ok", "errors": [], "metrics": {"concurrency": levels}}
    return typed({"schema": "precmon.results/1", "settings": {}, "variants": [variant | {"runs": runs or []}]})


LEVELS = {"1": _level(40.0, 38.0, 0.5), "4": _level(30.0, 110.0, 0.2), "8": _level(12.0, 95.0, 0.3)}


def test_rows_mark_the_front_worked_out_for_a_file_that_does_not_record_it():
    rows = concurrency_rows(_doc(LEVELS))
    assert [(r.level, r.on_front) for r in rows] == [("1", True), ("4", True), ("8", False)]
    assert rows[1].cells == ("Q4<b>|x", "4", "30.0 (29.0–31.0)", "110.0", "0.100", "0.300", "0.200", "yes")
    assert pareto_levels(LEVELS) == {"1", "4"}


def test_a_recorded_front_is_shown_as_recorded():
    levels = {"1": _level(40.0, 38.0, None, True), "4": _level(30.0, 110.0, None, False)}
    assert [r.on_front for r in concurrency_rows(_doc(levels))] == [True, False]


def test_a_queued_level_is_named_in_the_section():
    runs = [{"phase": "concurrency", "ok": True, "extra": {"streams": 8, "server_parallel": {"total_slots": 4}}}]
    rows = concurrency_rows(_doc(LEVELS, runs=runs))
    assert [r.cells[1] for r in rows] == ["1", "4", "8 (queued)"]


def test_every_format_carries_the_section():
    doc = _doc(LEVELS)
    md = render(doc, "md")
    assert "## Concurrency" in md
    assert "| Q4&lt;b&gt;\\|x | 8 | 12.0 (11.0–13.0) | 95.0 | 0.100 | 0.300 | 0.300 | no |" in md
    assert "| Q4&lt;b&gt;\\|x | 4 | 30.0 (29.0–31.0) | 110.0 | 0.100 | 0.300 | 0.200 | **yes** |" in md
    html = render(doc, "html")
    assert '<table id="concurrency">' in html and "Q4&lt;b&gt;|x" in html and "<b>|x" not in html
    csv = [r[2:5] for r in csv_rows(doc)]
    assert ("concurrency_pareto_front", "8", "false") in csv and ("concurrency_energy_j_per_token", "4", "0.2") in csv
    assert json.loads(render(doc, "json"))["variants"][0]["metrics"]["concurrency"]["4"]["per_user_tok_s"] == 30.0
    console = Console(width=140, record=True)
    console.print(report_renderable(doc))
    text = console.export_text()
    assert "Concurrency" in text and "Pareto front" in text and "29.0–31.0" in text


def test_no_section_without_concurrency(cpu_doc):
    assert concurrency_rows(cpu_doc) == ()
    assert "## Concurrency" not in render(cpu_doc, "md")
