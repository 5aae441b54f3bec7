"""Too few runs for a 95% interval is said, not left blank (issue 30, "say when n is too small for
one"): `bench --quick` measures decode twice, and its report showed no "±" and no word why (an
earlier one printed the bogus −96…524 of a 2-run t-interval). Every renderer that shows the
interval says "n=2: no CI" in the cell and "n = 2: too few for an interval …" under the table,
from one wording (`report.fmt.too_few_for_interval`)."""

from __future__ import annotations

import csv
import io

from report_helpers import typed
from rich.console import Console

from precmon.core.schema import ResultsDoc
from precmon.report.export import render
from precmon.report.fmt import too_few_for_interval
from precmon.report.render.csv import to_csv
from precmon.report.render.terminal import report_renderable, to_rich_table
from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import render_table

SHORT, LONG = "n=2: no CI", "n = 2: too few for an interval (a 95% CI needs 3 runs)"


def _doc(decode_runs: list[float]) -> ResultsDoc:
    """One variant, as `bench --quick` writes it: its decode runs and no recorded statistics."""
    return typed(
        {
            "schema": "precmon.results/1",
            "settings": {"repeats": len(decode_runs)},
            "variants": [
                {
                    "label": "Q4_0",
                    "status": "ok",
                    "metrics": {"decode_tok_s": 214.0, "prefill_ms_per_token": {}, "ttft_s": {}},
                    "runs": [{"phase": "decode", "ok": True, "decode_tok_s": v} for v in decode_runs],
                }
            ],
        }
    )


def _terminal(doc: ResultsDoc, whole: bool = False) -> str:
    """What `precmon bench` prints (the table), or `precmon report` (`whole`); the caption wraps at
    the table's width, so whitespace is folded."""
    console = Console(width=160, record=True, color_system=None)
    console.print(report_renderable(doc) if whole else to_rich_table(doc))
    return " ".join(console.export_text().split())


def _tui(doc: ResultsDoc) -> str:
    console = Console(width=160, record=True, color_system=None)
    console.print(render_table(build_table(doc), spark_width=8))  # the wide layout, the one with "±"
    return console.export_text()


def test_one_wording_in_one_place():
    assert too_few_for_interval(2) == LONG and too_few_for_interval(2, short=True) == SHORT


def test_the_cell_knows_it_has_too_few_runs():
    cell = build_table(_doc([214.0, 120.0])).row("decode_tok_s").cells[0]
    assert cell.n == 2 and cell.half_width is None and cell.too_few and cell.spread == SHORT


def test_every_renderer_says_n_is_too_small():
    doc = _doc([214.0, 120.0])
    outputs = {
        "terminal": _terminal(doc),
        "markdown": render(doc, "md"),
        "html": render(doc, "html"),
        "report": _terminal(doc, whole=True),
        "tui": _tui(doc),
    }
    for name, text in outputs.items():
        assert SHORT in text, name
        if name != "tui":  # the panel has no room for notes; the cell says it
            assert LONG in text, name
    assert "−96" not in outputs["markdown"] and "±" not in outputs["markdown"].split("## Roofline")[0]


def test_csv_keeps_its_numeric_columns_n_says_why_there_is_no_interval():
    """The CI columns stay numbers for spreadsheets (docs/design.md §3); n = 2 beside empty ones."""
    rows = list(csv.DictReader(io.StringIO(to_csv(_doc([214.0, 120.0])))))
    decode = next(r for r in rows if r["metric"] == "decode_tok_s")
    assert (decode["n"], decode["ci95_low"], decode["ci95_high"]) == ("2", "", "")


def test_one_run_says_it_too():
    assert "n=1: no CI" in _terminal(_doc([214.0]))


def test_three_runs_show_the_interval_and_no_note():
    text = _terminal(_doc([210.0, 214.0, 218.0]))
    assert "±" in text and "no CI" not in text and "too few" not in text
    assert "no CI" not in render(_doc([210.0, 214.0, 218.0]), "md")
