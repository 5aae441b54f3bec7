"""Comparing result files from different machines or dates."""

from __future__ import annotations

import copy
import json

from report_helpers import typed

from precmon.core.schema import VariantResult
from precmon.report.analysis.compare import column_label, compare_table, merge_documents
from precmon.report.export import render_compare


def test_columns_are_host_gpu_label_date(cpu_doc, spark_doc):
    t = compare_table([cpu_doc, spark_doc])
    labels = [c.label for c in t.columns]
    assert labels[0] == "ci-runner · CPU · F16 · 2026-11-29"
    assert labels[3] == "spark · GB10 · FP16 · 2026-11-30"
    assert len(labels) == 7
    assert t.baseline.label == labels[0]


def test_sizes_are_the_union(cpu_doc, spark_doc):
    keys = [r.key.stats_key for r in compare_table([cpu_doc, spark_doc]).rows]
    assert [k for k in keys if k.startswith("prefill")] == [
        "prefill_ms_per_token:512",
        "prefill_ms_per_token:1024",
        "prefill_ms_per_token:4096",
        "prefill_ms_per_token:16384",
    ]


def test_same_file_twice_keeps_columns_apart(cpu_doc):
    merged = merge_documents([cpu_doc, cpu_doc], ["a.json", "b.json"])
    labels = [v.label for v in merged.variants]
    assert labels[3] == "ci-runner · CPU · F16 · 2026-11-29 #2"
    assert len(set(labels)) == 6
    assert merged.sources[1].file == "b.json"


def test_two_dates_same_machine(cpu_doc):
    later = copy.deepcopy(cpu_doc)
    later.created = "2026-12-05T08:00:00Z"
    later.variants[2].metrics["decode_tok_s"] = 801.0
    t = compare_table([cpu_doc, later])
    row = t.row("decode_tok_s")
    assert t.columns[5].label == "ci-runner · CPU · Q4_K_M · 2026-12-05"
    assert row.cells[5].value == 801.0 and row.cells[5].ratio_text == "1.99×"


def test_render_formats(cpu_doc, spark_doc):
    docs, names = [cpu_doc, spark_doc], ["a.json", "b.json"]
    assert render_compare(docs, "csv", names).splitlines()[1].startswith("ci-runner · CPU · F16 · 2026-11-29,fp16,")
    assert json.loads(render_compare(docs, "json", names))["schema"] == "precmon.compare/1"
    assert '<table id="comparison">' in render_compare(docs, "html", names)
    assert "- b.json: spark (NVIDIA GB10), 2026-11-30T09:12:00Z" in render_compare(docs, "md", names)


def test_column_label_without_host_or_date():
    assert column_label(typed({}), VariantResult("F16")) == "unknown host · CPU · F16 · undated"
