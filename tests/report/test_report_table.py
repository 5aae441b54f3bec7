"""The comparison table model: rows, ratio maths, baselines, null and failed variants."""

from __future__ import annotations

import pytest
from report_helpers import typed

from precmon.core.cells import RowKey
from precmon.report.fmt import format_change, format_speedup, format_value
from precmon.report.render.terminal import to_rich_table
from precmon.report.sparkline import sparkline
from precmon.report.table import LABEL_CHARS, BaselineError, build_table, short_label


def test_rows_in_report_order(cpu_doc):
    keys = [r.key.stats_key for r in build_table(cpu_doc).rows]
    assert keys == [
        "decode_tok_s",
        "prefill_ms_per_token:512",
        "prefill_ms_per_token:1024",
        "ttft_s:1024",
        "power_decode_w",
        "power_prefill_w",
        "power_idle_w",
        "energy_decode_j_per_token",
        "memory_gb",
    ]


def test_concurrency_and_long_context_rows_only_when_measured(spark_doc):
    keys = [r.key.stats_key for r in build_table(spark_doc).rows]
    # an older file (aggregate_tok_s, per_stream_tok_s, ttft_s) reads under the curve's names, and
    # gets no rows for what it never measured (TTFT p99, J/token)
    assert "concurrency:4:total_tok_s" in keys and "concurrency:1:ttft_p50_s" in keys
    assert not [k for k in keys if k.endswith(("ttft_p99_s", "energy_j_per_token"))]
    assert keys[-2:] == ["long_context_decode_tok_s:4096", "long_context_decode_tok_s:32768"]
    row = build_table(spark_doc).row(RowKey("concurrency_total_tok_s", "4"))
    assert (row.label, row.unit, row.better) == ("4 streams: total", "tok/s", "higher")
    assert [c.value for c in row.cells[:3]] == [48.0, 86.5, 128.3]
    assert build_table(spark_doc).row(RowKey("concurrency_per_user_tok_s", "4")).cells[0].value == 12.0


def test_decode_ratio_is_value_over_baseline(cpu_doc):
    row = build_table(cpu_doc).row("decode_tok_s")
    assert [c.value for c in row.cells] == [402.1, 553.4, 756.2]
    assert row.cells[0].ratio is None and row.cells[0].ratio_text == ""
    assert row.cells[2].ratio == pytest.approx(756.2 / 402.1)
    assert [c.ratio_text for c in row.cells] == ["", "1.38×", "1.88×"]


def test_prefill_ratio_is_speedup_baseline_over_value(cpu_doc):
    row = build_table(cpu_doc).row(RowKey("prefill_ms_per_token", "1024"))
    assert row.better == "lower" and row.unit == "ms/token"
    assert row.cells[1].ratio == pytest.approx(0.55 / 0.50)  # Q8_0 faster than F16: > 1
    assert row.cells[2].ratio == pytest.approx(0.55 / 0.64)  # Q4_K_M slower on this CPU: < 1
    assert [c.ratio_text for c in row.cells] == ["", "1.10×", "0.86×"]


def test_power_and_energy_ratios_are_changes(cpu_doc):
    t = build_table(cpu_doc)
    assert [c.ratio_text for c in t.row("power_decode_w").cells] == ["", "−5%", "−9%"]
    assert [c.ratio_text for c in t.row("energy_decode_j_per_token").cells] == ["", "−31%", "−52%"]
    assert t.row("energy_decode_j_per_token").cells[2].ratio == pytest.approx(0.0496 / 0.1025)
    assert t.row("power_prefill_w").cells[2].ratio_text == "+2%"


def test_baseline_by_label_case_insensitive(cpu_doc):
    t = build_table(cpu_doc, baseline="q4_k_m")
    assert t.baseline.label == "Q4_K_M" and t.columns[2].is_baseline
    assert t.row("decode_tok_s").cells[0].ratio_text == "0.53×"


def test_unknown_baseline_names_the_labels(cpu_doc):
    with pytest.raises(BaselineError, match=r"'FP8' is not a variant \(have: F16, Q8_0, Q4_K_M\)"):
        build_table(cpu_doc, baseline="FP8")


def test_null_reads_na_and_failed_reads_failed(spark_doc):
    t = build_table(spark_doc)
    col = t.columns[3]
    assert (col.label, col.status) == ("INT4-AWQ", "failed")
    assert col.error.startswith("server did not become healthy within 900 s")
    cells = t.row(RowKey("prefill_ms_per_token", "16384")).cells
    nvfp4 = cells[2]
    assert (nvfp4.value, nvfp4.text, nvfp4.status, nvfp4.ratio_text) == (None, "n/a", "missing", "")
    assert (cells[3].text, cells[3].status) == ("failed", "failed")
    # a failed variant keeps what it did measure (idle power before the server died)
    assert t.row("power_idle_w").cells[3].text == "10.0"


def test_default_baseline_skips_a_failed_first_variant(spark_doc):
    spark_doc.variants.insert(0, spark_doc.variants.pop())  # INT4-AWQ (failed) first
    t = build_table(spark_doc)
    assert t.baseline.label == "FP16"


def test_series_are_valid_runs_only(spark_doc):
    t = build_table(spark_doc)
    assert t.row("decode_tok_s").cells[0].series == (13.4, 13.5, 13.5)
    # NVFP4's 16K prefill runs were all cache hits (ok: false): no series, no value
    assert t.row(RowKey("prefill_ms_per_token", "16384")).cells[2].series == ()
    assert t.row(RowKey("ttft_s", "8192")).cells[1].series == (2.88, 2.9, 2.93)
    energy = t.row("energy_decode_j_per_token").cells[0].series
    assert energy[1] == pytest.approx(649.8 / 256)


def test_partial_document_while_a_sweep_runs():
    doc = typed(
        {
            "schema": "precmon.results/1",
            "settings": {"prefill_tokens": [512]},
            "variants": [{"label": "F16", "metrics": {"decode_tok_s": 402.1}}, {"label": "Q8_0"}],
        }
    )
    t = build_table(doc)
    assert t.row("decode_tok_s").cells[1].text == "n/a"
    assert t.row(RowKey("prefill_ms_per_token", "512")).cells[0].text == "n/a"
    assert t.row("decode_tok_s").best_index() == 0


def test_empty_document():
    t = build_table(typed({"variants": []}))
    assert t.columns == () and t.baseline is None
    assert all(r.cells == () for r in t.rows)


def test_value_lookup(cpu_doc):
    t = build_table(cpu_doc)
    assert t.value("memory_gb", "Q8_0") == 0.14
    assert t.value("nope", "Q8_0") is None


def test_rich_table_renders(cpu_doc):
    from rich.console import Console

    console = Console(width=120, record=True, color_system=None)
    console.print(to_rich_table(cpu_doc))
    text = console.export_text()
    assert "Decode (tok/s)" in text and "756.2 1.88×" in text and "−52%" in text


def test_a_long_label_leaves_room_for_the_other_columns(cpu_doc):
    """A 300-character label took the whole width at 80 columns: rich squeezed every other
    variant's column to nothing, so their numbers vanished from `report` and headless sweeps."""
    from rich.console import Console

    cpu_doc.variants[2].label = "x" * 300
    console = Console(width=80, record=True, color_system=None)
    console.print(to_rich_table(cpu_doc))
    text = console.export_text()
    assert "402.1" in text and "553.4" in text and "756.2" in text
    a, b = short_label("Llama-3.1-8B-Instruct-FP8"), short_label("Llama-3.1-8B-Instruct-FP16")
    assert a != b and len(a) == len(b) == LABEL_CHARS and a.startswith("Llama") and a.endswith("FP8")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "n/a"),
        (402.1, "402.1"),
        (34.25, "34.2"),
        (2.534, "2.53"),
        (0.0496, "0.0496"),
        (0.5, "0.500"),
        (0, "0"),
        (float("nan"), "n/a"),
        (True, "n/a"),
        ("12", "n/a"),
    ],
)
def test_format_value(value, text):
    assert format_value(value) == text


def test_format_ratios():
    assert format_speedup(1.8806) == "1.88×"
    assert format_speedup(None) == ""
    assert format_change(0.77) == "−23%"
    assert format_change(1.05) == "+5%"
    assert format_change(1.001) == "±0%"


def test_sparkline():
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([]) == ""
    assert sparkline([5, 5, 5]) == "▄▄▄"
    assert sparkline([1, None, 8]) == "▁ █"
    assert sparkline([1, 8], lo=0, hi=14) == "▁▅"  # 8/14 of 7 steps = level 4
    assert sparkline(list(range(100)), width=10) == "▁▂▃▃▄▅▆▆▇█"  # bucket means 4.5, 14.5 … 94.5
    assert len(sparkline(list(range(100)), width=10)) == 10
    assert sparkline([1, 2], width=10) == "▁█"
    assert sparkline([1, 2], width=0) == ""


def test_concurrency_rows_have_the_runs_series():
    """Concurrency runs record their level as `extra.streams` (measure/concurrency/run.py): the row's
    sparkline reads those runs (it read `extra.concurrency`, which nothing writes, so it was empty)."""

    run = {
        "phase": "concurrency",
        "prompt_tokens": 128,
        "output_tokens": 64,
        "ok": True,
        "extra": {"streams": 4, "aggregate_tok_s": 81.0, "per_stream_tok_s": 20.2, "ttft_s": 0.4},
    }
    variant = {
        "label": "A",
        "precision": "fp16",
        "status": "ok",
        "errors": [],
        "metrics": {"concurrency": {"4": {"aggregate_tok_s": 81.0, "per_stream_tok_s": 20.2, "ttft_s": 0.4}}},
        "runs": [run],
    }
    doc = {"schema": "precmon.results/1", "settings": {}, "variants": [variant]}
    row = build_table(typed(doc)).row(RowKey("concurrency_total_tok_s", "4"))
    assert list(row.cells[0].series) == [81.0]
    # the curve's runs: one value per repeat, from the run's own figure
    runs = [{**run, "repeat": i, "extra": {"streams": 4, "total_tok_s": x}} for i, x in enumerate((80.0, 84.0))]
    variant["runs"] = runs
    variant["metrics"] = {"concurrency": {"4": {"total_tok_s": 82.0, "ttft_p99_s": None}}}
    table = build_table(typed(doc))
    assert list(table.row(RowKey("concurrency_total_tok_s", "4")).cells[0].series) == [80.0, 84.0]
    assert table.row(RowKey("concurrency_ttft_p99_s", "4")).cells[0].text == "n/a"  # planned, not measured
