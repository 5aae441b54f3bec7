"""Exports: JSON as-is, CSV long format, Markdown/HTML content, export_all."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from report_helpers import load

from precmon.core.registry import empty_metrics
from precmon.report.export import export_all, render, to_json
from precmon.report.render.csv import CSV_HEADER, csv_rows, to_csv


def _as_written(name: str) -> dict[str, Any]:
    """A data file as precmon writes it: unchanged, but for the always-present metrics it left out,
    which read as null (empty for sized ones), as a sweep's store always wrote them."""
    doc = load(name)
    for v in doc["variants"]:
        v["metrics"] = empty_metrics() | v["metrics"]
    return doc


def test_json_is_the_document_unchanged(spark_doc):
    assert json.loads(to_json(spark_doc)) == _as_written("spark_8b.json")


def test_csv_one_row_per_variant_metric_size(cpu_doc):
    rows = list(csv.reader(io.StringIO(to_csv(cpu_doc))))
    assert tuple(rows[0]) == CSV_HEADER
    # 9 scalar metrics + prefill×2 + ttft×1 + server prefill×2 per variant
    assert len(rows) - 1 == 3 * (9 + 2 + 1 + 2)
    # n and the 95% CI from the runs (this file records no metrics_stats): 751.0, 756.2, 760.9 →
    # mean 756.033, s = sqrt(49.0467 / 2) = 4.9521, half = 4.303 · 4.9521 / √3 = 12.303
    assert ["Q4_K_M", "int4", "decode_tok_s", "", "756.2", "tok/s", "3", "743.73", "768.34"] in rows
    assert ["F16", "fp16", "prefill_ms_per_token", "1024", "0.55", "ms/token"] == next(
        r[:6] for r in rows if r[:4] == ["F16", "fp16", "prefill_ms_per_token", "1024"]
    )
    assert ["F16", "fp16", "memory_gb", "", "0.26", "GB", "", "", ""] in rows  # no runs behind it


def test_csv_lists_a_metric_not_always_present_only_where_measured(cpu_doc):
    cpu_doc.variants[0].metrics["server_itl_ms_mean"] = 4.25  # vLLM's own ITL, from /metrics
    rows = [r[:6] for r in csv_rows(cpu_doc)]
    itl = [r for r in rows if r[2] == "server_itl_ms_mean"]
    assert itl == [("F16", "fp16", "server_itl_ms_mean", "", "4.25", "ms")]  # no empty rows for the others


def test_csv_nulls_concurrency_and_unknown_metrics(spark_doc):
    spark_doc.variants[0].metrics["kv_cache_gb"] = 2.5  # a key a later version might add
    rows = csv_rows(spark_doc)
    rows = [r[:6] for r in rows]
    assert ("NVFP4", "nvfp4", "prefill_ms_per_token", "16384", "", "ms/token") in rows
    assert ("INT4-AWQ", "int4", "decode_tok_s", "", "", "tok/s") in rows
    assert ("FP8", "fp8", "concurrency_total_tok_s", "4", "86.5", "tok/s") in rows  # an older file's aggregate
    assert ("FP8", "fp8", "concurrency_pareto_front", "4", "true", "") in rows
    assert not [r for r in rows if r[2] == "concurrency_ttft_p99_s"]  # not in the older file: no empty rows
    assert ("FP16", "bf16", "long_context_decode_tok_s", "32768", "9.6", "tok/s") in rows
    assert ("FP16", "bf16", "kv_cache_gb", "", "2.5", "") in rows


def test_markdown_contents(spark_doc):
    md = render(spark_doc, "md", baseline="FP8")
    assert "| Metric | FP16 (bf16) | FP8 (fp8, baseline) |" in md
    assert "## Roofline" in md and "## Which precision for which workload" in md
    assert "## Monthly energy at decode load" in md and "## Metric definitions" in md
    assert "- **INT4-AWQ** (failed): server did not become healthy" in md


def test_markdown_escapes_pipes(cpu_doc):
    cpu_doc.variants[0].label = "F16|x"
    assert "F16\\|x" in render(cpu_doc, "md")


def test_html_is_standalone_and_escaped(spark_doc):
    spark_doc.variants[0].label = "<script>alert(1)</script>"
    page = render(spark_doc, "html")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no external assets
    assert page.count("<svg") == 4  # decode, prefill, power, J/token
    assert '<table id="comparison">' in page


def test_export_all(tmp_path, cpu_doc):
    paths = export_all(cpu_doc, tmp_path / "out", hours_per_day=8)
    assert set(paths) == {"json", "csv", "md", "html"}
    assert paths["md"] == tmp_path / "out" / "results.md"
    assert all(p.exists() for p in paths.values())
    assert "kWh/month at 8 h/day" in paths["md"].read_text(encoding="utf-8")
    assert json.loads(paths["json"].read_text(encoding="utf-8")) == _as_written("cpu_tiny.json")
    assert not list((tmp_path / "out").glob(".*tmp"))


def test_unknown_format(cpu_doc):
    with pytest.raises(ValueError, match="unknown report format 'xml'"):
        render(cpu_doc, "xml")


def test_failed_export_write_leaves_no_temporary_file(cpu_doc, tmp_path):
    import pytest

    from precmon.report.export import write_export

    (tmp_path / "r.md").mkdir()
    with pytest.raises(OSError):
        write_export(cpu_doc, "md", tmp_path / "r.md")
    assert [p.name for p in tmp_path.iterdir()] == ["r.md"]
