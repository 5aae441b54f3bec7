"""The report's KV cache rows and lines: MiB per 1K tokens, capacity, longest context, sequences
that fit, and n/a with the reason where the server did not say (docs/design.md §4, §5)."""

from __future__ import annotations

import copy

from report_helpers import load_doc

from precmon.report.analysis.kv import kv_line
from precmon.report.export import render
from precmon.report.table import build_table

F16 = {"bytes_per_token": 16384, "capacity_tokens": 1024, "longest_context_tokens": 512,
       "max_concurrency_at_ctx": 2.0, "context_tokens": 512, "from": "the server's log (llama_kv_cache)"}  # fmt: skip
Q8 = F16 | {"bytes_per_token": 8704}


def with_kv(doc):
    d = copy.deepcopy(doc)
    for v, record in zip(d.variants, (F16, Q8, {"reason": "the server's log names no KV cache size"}), strict=True):
        v.kv_memory = record
        if "reason" not in record:
            v.metrics.update({f"kv_{k}": record[k] for k in list(record)[:4]})
    return d


def test_rows_show_mib_per_1k_tokens_and_ratios(cpu_doc):
    t = build_table(with_kv(cpu_doc))
    mem = t.row("kv_bytes_per_token")
    assert mem.label == "KV memory / 1K tokens" and mem.unit == "MiB"
    assert [c.text for c in mem.cells] == ["16.0", "8.50", "n/a"]
    assert mem.cells[1].ratio_text == "−47%"
    assert [c.text for c in t.row("kv_capacity_tokens").cells] == ["1,024", "1,024", "n/a"]
    assert t.row("kv_longest_context_tokens").cells[0].text == "512"
    assert t.row("kv_max_concurrency_at_ctx").cells[1].text == "2.00"


def test_lines_say_the_context_the_source_and_why_not(cpu_doc):
    md = render(with_kv(cpu_doc), "md")
    assert (
        "KV cache Q8_0: 8.50 MiB / 1K tokens, 1,024 tokens in all, longest context 512, "
        "2 sequences of 512 tokens fit (the server's log (llama_kv_cache))." in md
    )
    assert "KV cache Q4_K_M: n/a (the server's log names no KV cache size)." in md


def test_capacity_only_and_hostile_text():
    line = kv_line("vm\x1b[2J", {"capacity_tokens": 65536, "longest_context_tokens": 65536, "from": "x\x07"})
    assert line == (
        "KV cache vm: memory per token n/a (the server gives no size), 65,536 tokens in all, "
        "longest context 65,536 (x\u2407)."  # the escape stripped, the bell shown
    )


def test_files_without_kv_records_report_as_before():
    md = render(load_doc("cpu_tiny.json"), "md")
    assert "KV cache cpu" not in md and "KV memory" not in md and "KV cache F16" not in md
