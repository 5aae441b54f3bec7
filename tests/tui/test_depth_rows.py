"""The TUI's sweep table shows decode vs depth: one row per depth and the "Decode kept" row,
whose cells carry the sparkline of decode tok/s per depth (report/depth_rows.py)."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from precmon.core.schema import ResultsDoc, from_json
from precmon.report.sparkline import sparkline
from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import render_table

DATA = Path(__file__).parents[1] / "report" / "data" / "depth_tiny.json"


def test_sweep_table_draws_decode_vs_depth_as_a_sparkline():
    doc = json.loads(DATA.read_text(encoding="utf-8"))
    console = Console(width=120, record=True, color_system=None)
    console.print(render_table(build_table(from_json(ResultsDoc, doc)), spark_width=8))
    text = console.export_text()
    line = next(x for x in text.splitlines() if "Decode kept d0→d4096" in x)
    assert "62.5" in line and sparkline([400.0, 250.0], 8) in line
    assert "Decode @ d4096" in text and "Prefill 512 @ d4096" in text
