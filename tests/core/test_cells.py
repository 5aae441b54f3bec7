"""The walker over a document's cells (precmon.core.cells) yields exactly the metric cells the CSV
export writes, for every results file the report's golden tests read: the CSV (and the table, and
the bench's medians) can walk it instead of their own copies of the registry's shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.core import registry
from precmon.core.cells import Cell, cells, metric_cells, put, run_place
from precmon.core.schema import Run
from precmon.report.load import load_document
from precmon.report.render.csv import csv_rows
from precmon.untrusted import visible

DATA = Path(__file__).resolve().parents[2] / "tests" / "report" / "data"


def _where(c: Cell) -> str:
    return visible(f"{c.size}@d{c.depth}" if c.depth else c.size)


def _value(c: Cell) -> str:
    v = c.value
    if c.metric.shape == "scalar" and isinstance(v, (int, float)) and not isinstance(v, bool):
        v = v * c.metric.scale  # the CSV writes a scalar in the table's unit (%)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return ""
    return repr(float(v)) if isinstance(v, float) else str(v)


@pytest.mark.parametrize("path", sorted(DATA.glob("*.json")), ids=lambda p: p.name)
def test_the_walker_yields_the_cells_the_csv_writes(path: Path):
    doc = load_document(path)
    keys = {m.key for m in registry.metrics()}
    from_csv = [(r[0], r[2], r[3], r[4]) for r in csv_rows(doc) if r[2] in keys]
    walked = [(visible(c.variant), c.metric.key, _where(c), _value(c)) for c in cells(doc)]
    assert walked == from_csv
    assert walked, "every golden file has cells"


def test_stats_keys_and_paths_name_each_shape():
    m = {
        "decode_tok_s": 10.0,
        "ttft_s": {"8192": 2.5, "512": 0.1},
        "prefill_ms_per_token_at_depth": {"4096": {"512": 0.3}},
        "decode_tok_s_at_depth": {"0": 9.0},
        "concurrency": {"4": {"aggregate_tok_s": 40.0, "ttft_p99_s": 0.2}},
    }
    got = {(c.metric.key, c.size, c.depth): (c.stats_key, c.path, c.value) for c in metric_cells(m, path="m")}
    assert got[("decode_tok_s", "", "")] == ("decode_tok_s", "m.decode_tok_s", 10.0)
    assert got[("ttft_s", "8192", "")] == ("ttft_s:8192", "m.ttft_s.8192", 2.5)
    assert got[("prefill_ms_per_token_at_depth", "512", "4096")] == (
        "prefill_ms_per_token_at_depth:4096:512", "m.prefill_ms_per_token_at_depth.4096.512", 0.3
    )  # fmt: skip
    assert got[("decode_tok_s_at_depth", "0", "")] == ("decode_tok_s_at_depth:0", "m.decode_tok_s_at_depth.0", 9.0)
    # a legacy name is read where the current one is absent; the stats key is always the current one
    assert got[("concurrency_total_tok_s", "4", "")] == (
        "concurrency:4:total_tok_s", "m.concurrency.4.aggregate_tok_s", 40.0
    )  # fmt: skip
    assert ("concurrency_energy_j_per_token", "4", "") not in got  # neither name: no cell
    sizes = [c.size for c in metric_cells(m) if c.metric.key == "ttft_s"]
    assert sizes == ["512", "8192"]  # numeric order
    absent = [c for c in metric_cells({}) if c.metric.key == "memory_gb"]
    assert absent and absent[0].value is None  # an always-present scalar has a cell even when absent


def test_a_damaged_shape_reads_as_empty_unless_the_caller_checks_it():
    assert [c for c in metric_cells({"ttft_s": "oops"}) if c.metric.key == "ttft_s"] == []

    def strict(value, path, keys):
        raise ValueError(f"{path}: {keys}")

    with pytest.raises(ValueError, match=r"^ttft_s: sizes$"):
        list(metric_cells({"ttft_s": "oops"}, strict))


def test_put_writes_each_cell_back_where_the_walk_found_it():
    doc = load_document(DATA / "depth_tiny.json")
    for v in doc.variants:
        walked = [c for c in metric_cells(v.metrics) if c.value is not None or c.metric.shape != "scalar"]
        rebuilt: dict = {}
        for c in walked:
            put(rebuilt, c.metric, c.size, c.depth, c.value)
        assert [
            (c.stats_key, c.value) for c in metric_cells(rebuilt) if c.value is not None or c.metric.shape != "scalar"
        ] == [(c.stats_key, c.value) for c in walked]


def test_a_runs_place_is_its_size_and_depth():
    prefill_at_depth = registry.metric("prefill_ms_per_token_at_depth")
    run = Run(phase="depth_prefill", target_prompt_tokens=512, depth_tokens=4096)
    assert run_place(prefill_at_depth, run) == ("512", "4096")
    assert run_place(registry.metric("decode_tok_s_at_depth"), run) == ("4096", "")
    assert run_place(registry.metric("decode_tok_s"), run) == ("", "")
    assert run_place(registry.metric("ttft_s"), Run(phase="ttft")) is None
