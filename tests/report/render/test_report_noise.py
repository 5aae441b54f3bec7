"""Ratios say when a difference is inside the run-to-run noise (docs/design.md §8 `metrics_stats`):
each cell carries half its 95% CI and whether that CI overlaps the baseline's; every renderer
shows "±" and marks an overlapping ratio with "≈" and a legend."""

from __future__ import annotations

import copy

import pytest
from report_helpers import typed
from rich.console import Console

from precmon.core.schema import ResultsDoc
from precmon.report.fmt import NOISE_LEGEND, NOISE_MARK, format_half_width
from precmon.report.render.html.page import html_table
from precmon.report.render.markdown import markdown_table
from precmon.report.render.terminal import rich_table
from precmon.report.sections import describe_run
from precmon.report.table import build_table


def _doc() -> ResultsDoc:
    def variant(label, decode, runs):
        return {
            "label": label,
            "status": "ok",
            "metrics": {"decode_tok_s": decode, "prefill_ms_per_token": {}, "ttft_s": {}},
            "runs": [{"phase": "decode", "ok": True, "decode_tok_s": v} for v in runs],
        }

    return typed(
        {
            "schema": "precmon.results/1",
            "settings": {},
            "variants": [
                variant("A", 100.0, [98.0, 100.0, 102.0]),  # mean 100, s 2: CI 100 ± 4.303·2/√3 = ±4.97
                variant("B", 103.0, [101.0, 103.0, 105.0]),  # 103 ± 4.97: overlaps A's
                variant("C", 150.0, [148.0, 150.0, 152.0]),  # 150 ± 4.97: apart from A's
            ],
        }
    )


def test_cells_know_their_interval_and_the_overlap_with_the_baseline():
    row = build_table(_doc()).row("decode_tok_s")
    a, b, c = row.cells
    assert a.half_width == pytest.approx(4.97, abs=0.006) and a.noise is None and a.n == 3  # the baseline
    assert b.noise is True and b.ratio_text == "1.03×"
    assert c.noise is False


def test_recorded_metrics_stats_win_over_the_runs():
    doc = _doc()
    doc.variants[0].metrics_stats = {"decode_tok_s": {"n": 5, "ci95": [99.5, 100.5]}}
    doc.variants[1].metrics_stats = {"decode_tok_s": {"n": 5, "ci95": [102.5, 103.5]}}
    b = build_table(doc).row("decode_tok_s").cells[1]
    assert b.n == 5 and b.half_width == pytest.approx(0.5) and b.noise is False


def test_without_two_runs_there_is_no_interval_and_no_mark():
    doc = copy.deepcopy(_doc())
    for v in doc.variants:
        v.runs = v.runs[:1]
    table = build_table(doc)
    assert all(c.half_width is None and c.noise is None for c in table.row("decode_tok_s").cells)
    assert not table.has_stats()
    assert NOISE_LEGEND not in markdown_table(table)


def test_renderers_show_plus_minus_and_the_noise_mark():
    table = build_table(_doc())
    md = markdown_table(table)
    assert f"103.0 ±5.0 (1.03× {NOISE_MARK})" in md and "150.0** ±5.0 (1.50×) " in md
    assert NOISE_LEGEND in md
    html = html_table(table)
    assert "±5.0" in html and "1.03× <span title=" in html and NOISE_LEGEND in html
    console = Console(width=120, record=True, color_system=None)
    console.print(rich_table(table))
    text = console.export_text()
    assert f"103.0 1.03× {NOISE_MARK}" in text and "±5.0" in text and "inside the run-to-run noise" in text
    assert "1.50× " + NOISE_MARK not in text


def test_half_width_has_two_significant_digits():
    assert [format_half_width(x) for x in (5.234, 0.01432, 12.3, 0.0, None)] == ["±5.2", "±0.014", "±12", "±0", ""]


def test_the_description_names_adaptive_repeats():
    doc = _doc()
    doc.settings = {"repeats": 3, "target_ci_pct": 2.5, "max_repeats": 10}
    assert "median of 3 to 10 repeats (until the 95% CI is within 2.5% of the median)" in describe_run(doc)[0]
    doc.settings = {"repeats": 3}
    assert "median of 3 repeats" in describe_run(doc)[0]
