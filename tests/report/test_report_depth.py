"""Context depth in the reports: llama-bench's `ppN @ dD` / `tgM @ dD` rows (golden), one table
row per depth, the "Decode kept" row whose sparkline is decode vs depth, CSV rows and the HTML
chart, from a hand-written file (tests/report/data/depth_tiny.json: d0 and d4096, two variants,
one d4096 decode run excluded as depth-not-cached)."""

from __future__ import annotations

import re
import statistics

import pytest
from report_helpers import check_golden, load, load_doc

from precmon.core.cells import RowKey
from precmon.core.schema import ResultsDoc
from precmon.report.export import render
from precmon.report.load import DocumentError, load_document
from precmon.report.table import build_table


@pytest.fixture
def depth_doc() -> ResultsDoc:
    return load_doc("depth_tiny.json")


def test_llama_bench_depth_golden(depth_doc):
    check_golden("depth_tiny.llama-bench.md", render(depth_doc, "llama-bench"))


def test_llama_bench_depth_rates_are_the_depth_runs(depth_doc):
    v = depth_doc.variants[0]
    ok = [r for r in v.runs if r.phase == "depth_decode" and r.depth_tokens == 4096 and r.ok]
    rates = [r.decode_tok_s for r in ok]
    pp = [1000 / r.prefill_ms_per_token for r in v.runs if r.phase == "depth_prefill" and r.depth_tokens]
    text = render(depth_doc, "llama-bench")
    want = rf"tg128 @ d4096 \|\s+{statistics.fmean(rates):.2f} ± {statistics.stdev(rates):.2f} \|"
    assert re.search(want, text), want
    assert f"{statistics.fmean(pp):.2f} ± {statistics.stdev(pp):.2f} |" in text
    assert text.count("pp512 |") == 2  # d0 is the plain pp512, once per variant (not twice)


def test_llama_bench_depth_rows_from_metrics_without_runs(depth_doc):
    for v in depth_doc.variants:
        v.runs = []
    text = render(depth_doc, "llama-bench")
    assert "pp512 @ d4096 |" in text and "tg128 @ d4096 |" in text
    assert "1612.90 ± n/a |" in text  # 1000 / 0.62 ms/token, no stdev without runs or stats


def test_table_has_one_row_per_depth_and_the_curve(depth_doc):
    table = build_table(depth_doc)
    labels = [r.label for r in table.rows]
    assert {"Decode @ d0", "Decode @ d4096", "Prefill 512 @ d4096", "Cache fill @ d4096"} <= set(labels)
    curve = table.row(RowKey("decode_tok_s_at_depth", sub="curve"))
    assert curve is not None and curve.label == "Decode kept d0→d4096"
    assert curve.cells[0].value == 62.5  # 250 / 400
    assert curve.cells[0].series == (400.0, 250.0)  # the sparkline: decode per depth
    assert labels.index("Decode kept d0→d4096") == labels.index("Decode @ d4096") + 1


def test_excluded_depth_run_is_not_in_the_series(depth_doc):
    row = build_table(depth_doc).row(RowKey("decode_tok_s_at_depth", "4096"))
    assert row is not None and 50.0 not in row.cells[0].series


def test_csv_rows_per_depth_and_size(depth_doc):
    text = render(depth_doc, "csv")
    assert "F16,f16,decode_tok_s_at_depth,4096,250.0,tok/s,3," in text
    assert "F16,f16,prefill_ms_per_token_at_depth,512@d4096,0.62,ms/token,3," in text
    assert "F16,f16,depth_fill_ms,4096,1410.5,ms,,," in text


def test_html_draws_decode_vs_depth(depth_doc):
    page = render(depth_doc, "html")
    assert "Decode vs context depth" in page and "<polyline" in page
    assert page.count("<polyline") == 2  # one line per variant


def test_the_settings_line_names_the_depths(depth_doc):
    assert "context depths d0, d4096 (the prefix served from the prompt cache)" in render(depth_doc, "md")


def test_a_file_without_depth_has_no_depth_rows(cpu_doc):
    assert not any("@ d" in r.label for r in build_table(cpu_doc).rows)
    assert "Decode vs context depth" not in render(cpu_doc, "html")


def test_loader_accepts_depth_zero_and_refuses_a_bad_depth_key(tmp_path):
    import json

    depth_doc = load("depth_tiny.json")
    path = tmp_path / "r.json"
    path.write_text(json.dumps(depth_doc))
    load_document(path)
    depth_doc["variants"][0]["metrics"]["prefill_ms_per_token_at_depth"]["-1"] = {"512": 0.1}
    path.write_text(json.dumps(depth_doc))
    with pytest.raises(DocumentError, match="prefill_ms_per_token_at_depth"):
        load_document(path)
