"""The metric registry is the one place a metric is defined (issue 18, build 1).

The proof: a metric registered only in `precmon.core.registry` (monkeypatched here) with a
value in a results document shows in the comparison table, in the CSV, Markdown and HTML exports,
in the glossary under them, in `precmon --help`, in the TUI help and in an empty `metrics` object;
nothing else is touched.
"""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from precmon.cli.parser import build_parser
from precmon.core import registry
from precmon.core.cells import RowKey
from precmon.core.definitions import Definition
from precmon.core.registry import Metric
from precmon.core.schema import VariantResult
from precmon.report.export import render
from precmon.report.table import build_table

SPEC_DEF = Definition(
    "Speculative acceptance", "accepted draft tokens ÷ drafted tokens.", "accepted / drafted draft tokens", 65
)
SPEC = Metric(
    "spec_acceptance",
    "Draft acceptance",
    "ratio",
    "higher",
    "change",
    "median of the valid runs",
    row=75,
    phase="decode",
    run_field="spec_acceptance",
    definition=SPEC_DEF,
)
LONG = Metric(
    "kv_cache_gb",
    "KV cache ({size} context)",
    "GB",
    "lower",
    "change",
    "one value per context size",
    shape="sized",
    row=85,
    settings_key="kv_tokens",
)


@pytest.fixture
def extended(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, SPEC, LONG))


@pytest.fixture
def doc_with_new(cpu_doc):
    for i, v in enumerate(cpu_doc.variants):
        v.metrics["spec_acceptance"] = 0.5 + i / 10
        v.metrics["kv_cache_gb"] = {"4096": 1.25 + i}
        for r in v.runs:
            if r.phase == "decode":
                r.more["spec_acceptance"] = 0.5 + i / 10  # a run field the model does not declare (yet)
    cpu_doc.settings["kv_tokens"] = [4096, 8192]
    return cpu_doc


def test_registered_metric_is_a_table_row(extended, doc_with_new):
    table = build_table(doc_with_new)
    keys = [r.key.stats_key for r in table.rows]
    assert keys.index("spec_acceptance") == keys.index("energy_decode_j_per_token") + 1
    row = table.row("spec_acceptance")
    assert row is not None and (row.label, row.unit, row.better) == ("Draft acceptance", "ratio", "higher")
    assert [c.value for c in row.cells] == [0.5, 0.6, 0.7]
    assert row.cells[0].series  # per-run values read from the run field the registry names
    assert table.row(RowKey("kv_cache_gb", "4096")) is not None
    assert table.row(RowKey("kv_cache_gb", "8192")) is not None  # planned in settings, not measured: n/a
    assert table.row(RowKey("kv_cache_gb", "4096")).label == "KV cache (4K context)"  # type: ignore[union-attr]


def test_registered_metric_in_every_export(extended, doc_with_new):
    csv = render(doc_with_new, "csv")
    assert "F16,fp16,spec_acceptance,,0.5,ratio" in csv
    assert "kv_cache_gb,4096,1.25,GB" in csv
    md = render(doc_with_new, "md")
    assert "| Draft acceptance (ratio) |" in md
    assert "**Speculative acceptance**: accepted draft tokens" in md
    assert "KV cache (4K context) (GB)" in md
    html = render(doc_with_new, "html")
    assert "Draft acceptance" in html and "<b>Speculative acceptance</b>" in html


def test_registered_metric_in_help_texts(extended):
    cli_help = build_parser().format_help()
    assert "Speculative acceptance" in cli_help and "accepted / drafted draft tokens" in cli_help
    pytest.importorskip("textual")
    from precmon.tui.screens.help import help_renderable

    out = io.StringIO()
    Console(file=out, width=200).print(help_renderable())
    assert "Speculative acceptance" in out.getvalue()


def test_registered_metric_in_empty_metrics(extended):
    m = VariantResult("x", None, None, {}).metrics
    assert m["spec_acceptance"] is None and m["kv_cache_gb"] == {}
    assert list(m)[:3] == ["decode_tok_s", "itl_ms_p50", "itl_ms_p99"]


def test_registry_keys_unique_and_complete():
    keys = [m.key for m in registry.metrics()]
    assert len(keys) == len(set(keys))
    assert list(registry.empty_metrics()) == [
        "decode_tok_s",
        "itl_ms_p50",
        "itl_ms_p99",
        "prefill_ms_per_token",
        "ttft_s",
        "power_idle_w",
        "power_decode_w",
        "power_prefill_w",
        "energy_decode_j_per_token",
        "memory_gb",
        "server_decode_tok_s",
        "server_prefill_ms_per_token",
        "server_ttft_s",
    ]
