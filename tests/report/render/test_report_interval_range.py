"""A 95% interval cut at 0 is printed as a range, not as "±" (audit of issue 30): runs of 10, 200 and
400 tok/s have the interval [0, 687.8] (`stats.describe` cuts it at 0: a rate is never negative),
and "200.0 ±344" read as −144…544. Where the low end was cut, or value − half < 0, every renderer
shows "0–688" instead, from one function (`report.fmt.format_spread`)."""

from __future__ import annotations

import csv
import io

from report_helpers import typed
from rich.console import Console

from precmon.core.schema import ResultsDoc
from precmon.core.stats import describe
from precmon.report.analysis.quality_bands import Measured
from precmon.report.export import render, render_compare
from precmon.report.fmt import below_zero_range, format_spread, range_legend
from precmon.report.render.csv import to_csv
from precmon.report.render.terminal import report_renderable, to_rich_table
from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import LABEL_CUT, LABEL_CUT_TIGHT, layouts, render_table

RANGE = "0\u2013688"  # [0, 687.8]


def _doc(decode_runs: list[float], label: str = "Q4_0") -> ResultsDoc:
    return typed(
        {
            "schema": "precmon.results/1",
            "settings": {"repeats": len(decode_runs)},
            "host": {"hostname": "box"},
            "created": "2026-12-03T10:00:00",
            "variants": [
                {
                    "label": label,
                    "status": "ok",
                    "metrics": {"decode_tok_s": 200.0, "prefill_ms_per_token": {}, "ttft_s": {}},
                    "runs": [{"phase": "decode", "ok": True, "decode_tok_s": v} for v in decode_runs],
                }
            ],
        }
    )


def _console_text(renderable: object) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(renderable)
    return " ".join(console.export_text().split())


def test_the_stored_interval_is_cut_at_zero():
    assert describe([10.0, 200.0, 400.0], digits=1)["ci95"] == [0.0, 687.8]


def test_format_spread_cut_interval_reads_as_a_range():
    assert format_spread(200.0, 343.9, (0.0, 687.8)) == RANGE
    assert format_spread(200.0, 5.24, (195.0, 205.5)) == "\u00b15.2"  # an interval well above 0: ±
    assert format_spread(0.0012, 0.003) == "0\u20130.0042"  # no stored interval: value ± half, cut at 0
    assert format_spread(0.0012, 0.003, prose=True) == "(95%: 0\u20130.0042)"
    assert format_spread(0.05, 0.01, prose=True) == "\u00b1 0.0100"
    assert format_spread(None, None) == ""


def test_a_quantity_that_can_be_negative_keeps_its_plus_minus():
    assert below_zero_range(-5.0, 10.0) is None  # a negative value: the quantity can be negative
    assert below_zero_range(5.0, 10.0, (-5.0, 15.0)) is None  # describe did not cut: runs below 0
    assert below_zero_range(5.0, 10.0) == (0.0, 15.0)


def test_the_cell_shows_the_range():
    cell = build_table(_doc([10.0, 200.0, 400.0])).row("decode_tok_s").cells[0]
    assert cell.ranged and cell.spread == RANGE


def test_every_renderer_shows_the_range_not_plus_minus():
    doc = _doc([10.0, 200.0, 400.0])
    outputs = {
        "terminal": _console_text(to_rich_table(doc)),
        "report": _console_text(report_renderable(doc)),
        "markdown": render(doc, "md"),
        "html": render(doc, "html"),
        "tui": _console_text(render_table(build_table(doc), spark_width=8)),
        "compare": render_compare([doc, _doc([190.0, 200.0, 210.0], "F16")], "md"),
    }
    for name, text in outputs.items():
        assert RANGE in text, name
        assert "\u00b1344" not in text, name
    for name in ("terminal", "report", "markdown", "html", "compare"):
        assert range_legend(RANGE) in outputs[name], name  # the legend names a range of this table
    assert "\u00b110" in outputs["compare"] or "\u00b125" in outputs["compare"]  # the F16 column keeps ±


def test_csv_has_the_interval_as_numbers_and_no_plus_minus():
    rows = list(csv.DictReader(io.StringIO(to_csv(_doc([10.0, 200.0, 400.0])))))
    decode = next(r for r in rows if r["metric"] == "decode_tok_s")
    assert float(decode["ci95_low"]) == 0.0 and "\u00b1" not in to_csv(_doc([10.0, 200.0, 400.0]))


def test_quality_sentence_never_reads_below_zero():
    m = Measured(0.0012, 0.99, "F16", kld_err95_nats=0.003)
    assert m.figures().startswith("mean KL 0.00120 (95%: 0\u20130.0042) nats")
    ok = Measured(0.0123, 0.97, "F16", kld_err95_nats=0.0011)
    assert ok.figures().startswith("mean KL 0.0123 \u00b1 0.00110 nats")


def test_an_interval_recorded_before_the_cut_is_cut_where_every_run_was_positive():
    """Files written before `describe` cut at 0 carry a negative low end (the H200 sweep's 4-stream
    TTFT p50: 0.0485 ±0.12); its runs are all >= 0, so the cell shows the range from 0."""
    doc = _doc([0.01, 0.02, 0.12])
    doc.variants[0].metrics_stats = {
        "decode_tok_s": {"n": 3, "median": 0.02, "mean": 0.05, "stdev": 0.06, "ci95": [-0.099, 0.199]}
    }
    cell = build_table(doc).row("decode_tok_s").cells[0]
    assert cell.spread == "0\u20130.2"
    doc.variants[0].runs[0].decode_tok_s = -0.01  # a quantity with a run below 0 keeps its ±
    assert build_table(doc).row("decode_tok_s").cells[0].spread == "\u00b10.15"


def test_the_tui_table_cuts_labels_before_it_drops_the_interval():
    """A range is wider than "±": at 120 columns the H200 sweep's labels give 4 cells so every
    cell keeps its interval; the narrow layout (no ±) keeps its labels."""
    wide = layouts(8)
    assert wide.index((0, LABEL_CUT_TIGHT, True)) < wide.index((0, LABEL_CUT, False))
    assert all(cut != LABEL_CUT_TIGHT for _, cut, _ in layouts(3))
