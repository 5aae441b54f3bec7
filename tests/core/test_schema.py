"""The results model (precmon.core.schema) is declared once, as the dataclasses of
core/schema/model.py: the field table is read off them, the codec writes in their order and reads
every real results file back whole, and the loader and the record checks apply their rules with
the same one-line messages."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from precmon.core import schema
from precmon.core.registry import empty_metrics
from precmon.core.schema import (
    Fit,
    Gpu,
    Host,
    HostNode,
    NodePower,
    PowerIdle,
    PowerSource,
    Preflight,
    Quality,
    RecordError,
    ResultsDoc,
    Run,
    RunExtra,
    ServerInfo,
    VariantResult,
    from_json,
    load,
    names,
    run_from_json,
    table,
    to_json,
    variant_from_json,
)
from precmon.report.load import validate
from precmon.report.model import DocumentError

ROOT = Path(__file__).resolve().parents[2]
RECORDS = (ResultsDoc, Host, Gpu, PowerSource, VariantResult, ServerInfo, PowerIdle, Run, RunExtra, NodePower, HostNode)
RECORDS += (Preflight, Fit, Quality)


def _schema_of(path: Path) -> Any:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc.get("schema") if isinstance(doc, dict) else None


def _results_files() -> list[Path]:
    """The report's and the TUI's test files, and every results file published under docs/results."""
    published = [p for p in sorted((ROOT / "docs" / "results").rglob("*.json")) if _schema_of(p) == schema.SCHEMA]
    return (
        sorted((ROOT / "tests" / "report" / "data").glob("*.json"))
        + sorted((ROOT / "tests" / "tui" / "data").glob("*results.json"))
        + published
    )


RESULTS = _results_files()


def test_the_derived_tuples_name_the_run_fields_of_each_kind():
    assert schema.RUN_INT_FIELDS == (
        "prompt_tokens", "output_tokens", "cached_tokens", "target_prompt_tokens", "repeat", "depth_tokens"
    )  # fmt: skip
    assert schema.RUN_FLOAT_FIELDS == (
        "ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99", "power_w", "energy_j"
    )  # fmt: skip
    assert schema.DERIVED_FIELDS == ("ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99")
    assert schema.STATUSES == ("ok", "partial", "failed")


# fmt: off
#: Every declared field and the kind read off its annotation (or named by its spec), in the order
#: written; an object's record after it. A field added to the model is added here.
KINDS: dict[type, list[tuple[Any, ...]]] = {
    ResultsDoc: [
        ("schema", "text"), ("created", "text"), ("precmon_version", "text"), ("host", "object", Host),
        ("settings", "object"), ("variants", "records", VariantResult), ("non_finite", "texts"),
    ],
    Host: [
        ("hostname", "text"), ("platform", "text"), ("cpu_count", "int"), ("gpus", "objects", Gpu),
        ("power_sources", "objects", PowerSource), ("sampler", "object"), ("fingerprint", "json"),
        ("nodes", "objects", HostNode),
        ("preflight", "object", Preflight),
    ],
    Gpu: [("name", "text"), ("id", "text")],
    PowerSource: [("id", "text"), ("kind", "text"), ("label", "text"), ("scope", "text"), ("method", "text")],
    VariantResult: [
        ("label", "text"), ("precision", "text"), ("model", "text"), ("server", "object", ServerInfo),
        ("status", "text"), ("errors", "texts"), ("metrics", "metrics"), ("runs", "records", Run),
        ("model_info", "object"), ("memory_source", "text"), ("power_idle", "object", PowerIdle),
        ("chat_template_tokens", "int"), ("chat_template_from", "text"), ("partial_reason", "text"),
        ("metrics_stats", "stats"), ("warnings", "texts"), ("validity", "object"), ("repeats_stopped_by", "object"),
        ("repeats_n", "object"), ("strategy", "text"), ("launch", "json"), ("kv_cache_dtype", "text"),
        ("kv_cache_read_back", "object"), ("kv_memory", "object"), ("quality", "object", Quality),
        ("quality_reference", "object"), ("answer", "object"), ("weights", "object"), ("compute_path", "object"),
        ("model_size_bytes", "number"), ("power_by_node", "objects", NodePower), ("plan", "object"),
        ("fit", "object", Fit),
    ],
    Preflight: [("findings", "texts"), ("checks", "object"), ("facts", "object")],
    Quality: [
        ("baseline", "text"), ("positions", "int"), ("top_k", "int"), ("text", "text"), ("text_sha256", "text"),
        ("seconds", "number"), ("baseline_topk_mass", "number"), ("topk_target_mass", "number"),
        ("top_k_listed_mean", "number"), ("baseline_ppl", "number"), ("notes", "texts"), ("ppl_reason", "text"),
        ("reason", "text"), ("convention", "text"), ("windows", "int"), ("window_tokens", "int"),
        ("kld_tail_nats", "number"), ("reference", "text"),
    ],
    Fit: [
        ("usable_bytes", "int"), ("basis", "text"), ("weights_bytes", "int"), ("weights_from", "text"),
        ("kv_bytes_per_token", "int"), ("users_at", "object"), ("context_for_users", "object"),
        ("server_capacity_tokens", "int"), ("check", "text"), ("reason", "text"),
    ],
    ServerInfo: [
        ("kind", "text"), ("url", "text"), ("endpoint", "text"), ("version", "text"), ("flags", "object"),
        ("flags_from", "text"), ("launch_flags", "object"),
    ],
    PowerIdle: [
        ("power_w", "number"), ("channel", "text"), ("windows", "json"), ("power_w_per_s", "numbers"),
        ("by_node", "json"), ("nodes_missing", "texts"),
    ],
    Run: [
        ("phase", "text"), ("prompt_tokens", "int"), ("output_tokens", "int"), ("ttft_s", "number"),
        ("decode_tok_s", "number"), ("prefill_ms_per_token", "number"), ("itl_ms_p50", "number"),
        ("itl_ms_p99", "number"), ("power_w", "number"), ("energy_j", "number"), ("cached_tokens", "int"),
        ("server_timings", "object"), ("ok", "bool"), ("reason", "text"), ("target_prompt_tokens", "int"),
        ("repeat", "int"), ("extra", "object", RunExtra), ("depth_tokens", "int"), ("concurrency", "int"),
    ],
    RunExtra: [
        ("n_chunks", "int"), ("n_text_chunks", "int"), ("ttft_from", "text"), ("ttft_overhead_ms", "number"),
        ("ttfo_s", "number"), ("prompt_tokens_mismatch", "text"), ("power_channel", "text"),
        ("window_unix_s", "json"), ("power_w_per_s", "numbers"), ("power_windows", "json"),
        ("power_window", "text"), ("energy_tokens", "int"), ("prefill_part", "object"), ("streams", "int"),
        ("wall_s", "number"), ("total_tok_s", "number"), ("per_user_tok_s", "number"),
        ("per_user_tok_s_min", "number"), ("per_user_tok_s_max", "number"), ("ttft_p50_s", "number"),
        ("ttft_p99_s", "number"), ("stream_decode_tok_s", "numbers"), ("stream_ttft_s", "numbers"),
        ("energy_j_per_token", "number"), ("server_parallel", "json"), ("aggregate_tok_s", "number"),
        ("per_stream_tok_s", "number"), ("ttft_s", "number"), ("concurrency", "int"), ("order_index", "int"),
        ("validity", "object"), ("expected_cached", "int"), ("cache_tolerance", "json"), ("new_tokens", "int"),
        ("depth_cache", "text"), ("power_by_node", "json"), ("nodes_missing", "texts"),
    ],
    NodePower: [
        ("node", "text"), ("url", "text"), ("power_idle_w", "number"), ("power_decode_w", "number"),
        ("power_prefill_w", "number"), ("energy_decode_j_per_token", "number"), ("energy_idle_j", "number"),
        ("energy_decode_j", "number"), ("energy_prefill_j", "number"), ("windows_missing", "int"),
        ("edge_ms", "number"),
    ],
    HostNode: [
        ("name", "text"), ("url", "text"), ("exporter", "text"), ("power_sources", "objects", PowerSource),
        ("unmeasured", "text"), ("problem", "text"),
    ],
}
# fmt: on


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_each_declared_fields_kind_is_read_off_its_annotation(record: type):
    got = [(f.name, f.kind, f.record) if f.record else (f.name, f.kind) for f in table(record)]
    assert got == KINDS[record]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_every_dataclass_field_is_declared_so_none_is_silently_left_out_of_the_file(record: type):
    # `table` skips a field without a spec: it would be neither written nor read
    in_memory = ["more"] + (["notes"] if record is VariantResult else [])
    assert [f.name for f in dataclasses.fields(record)] == [*names(record, legacy=True), *in_memory]


def test_the_keys_written_leave_out_only_the_legacy_ones():
    assert names(Run) == names(Run, legacy=True)[:-1] and "concurrency" not in names(Run)
    assert not {"aggregate_tok_s", "per_stream_tok_s", "ttft_s", "concurrency"} & set(names(RunExtra))
    assert names(VariantResult)[:8] == ("label", "precision", "model", "server", "status", "errors", "metrics", "runs")


def _as_written(doc: dict[str, Any]) -> dict[str, Any]:
    """What the codec writes back for a file: the file itself, its unmeasured always-present metrics
    null (as precmon writes them) and a host's absent lists of GPUs and power sources empty."""
    want = copy.deepcopy(doc)
    want["host"] = {"gpus": [], "power_sources": []} | want["host"]
    for v in want["variants"]:
        v["metrics"] = empty_metrics() | v["metrics"]
    return want


def _assert_declaration_order(record: Any, written: dict[str, Any]) -> None:
    """`written` holds its record's declared keys in declaration order, then the unknown ones."""
    assert list(written) == [k for k in names(type(record), legacy=True) if k in written] + list(record.more)
    for f in table(type(record)):
        value = getattr(record, f.name)
        if dataclasses.is_dataclass(value) and f.name in written:
            _assert_declaration_order(value, written[f.name])
        elif isinstance(value, list) and f.record is not None:
            for item, item_written in zip(value, written[f.name], strict=True):
                _assert_declaration_order(item, item_written)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_real_file_reads_back_whole_and_writes_in_the_declared_order(path: Path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    typed = load(ResultsDoc, copy.deepcopy(doc), path.name)
    back = to_json(typed)
    assert back == _as_written(doc)  # nothing lost, nothing changed
    _assert_declaration_order(typed, back)
    again = to_json(from_json(ResultsDoc, json.loads(json.dumps(back))))
    assert json.dumps(again, ensure_ascii=False) == json.dumps(back, ensure_ascii=False)
    assert validate(copy.deepcopy(doc), path.name) == typed  # the report's loader reads the same model


def test_the_record_readers_build_the_typed_model():
    d = {
        "label": "q4",
        "server": {"kind": "llamacpp", "url": "http://x"},
        "metrics": {"decode_tok_s": 10.0},
        "power_idle": {"power_w": 20.0, "channel": "gpu0"},
        "warnings": ["W1 hot"],
        "runs": [{"phase": "decode", "decode_tok_s": 10.0, "extra": {"streams": 4}}],
    }
    v = variant_from_json(d)
    assert v.server == ServerInfo(kind="llamacpp", url="http://x")
    assert v.power_idle == PowerIdle(power_w=20.0, channel="gpu0") and v.warnings == ["W1 hot"]
    assert v.metrics["decode_tok_s"] == 10.0 and v.metrics["memory_gb"] is None  # unmeasured: null
    assert v.runs == [Run(phase="decode", decode_tok_s=10.0, extra=RunExtra(streams=4))]
    assert run_from_json({"phase": "ttft", "ok": False}) == Run(phase="ttft", ok=False)


def test_a_newer_files_keys_are_kept_at_every_level():
    new = {"from_the_future": {"a": 1}}
    doc = {
        "schema": schema.SCHEMA,
        "host": {"hostname": "h", "gpus": [{"name": "g"} | new], "power_sources": [{"id": "p"} | new]} | new,
        "settings": {},
        "variants": [
            {
                "label": "x",
                "server": {"kind": "llamacpp"} | new,
                "power_idle": {"power_w": 1.0} | new,
                "runs": [{"phase": "p", "extra": {"streams": 2} | new} | new],
            }
            | new
        ],
    } | new
    typed = load(ResultsDoc, copy.deepcopy(doc), "r.json")
    v = typed.variants[0]
    assert v.power_idle is not None
    kept = [typed, typed.host, typed.host.gpus[0], typed.host.power_sources[0], v, v.server, v.power_idle, v.runs[0]]
    assert all(r.more == new for r in kept + [v.runs[0].extra])
    back = to_json(typed)
    assert list(back)[-1] == "from_the_future"  # after the declared keys
    assert back["host"]["gpus"][0]["from_the_future"] == {"a": 1}
    w = back["variants"][0]
    for written in (back, back["host"], back["host"]["power_sources"][0], w, w["server"], w["power_idle"]):
        assert written["from_the_future"] == {"a": 1}
    assert w["runs"][0]["from_the_future"] == w["runs"][0]["extra"]["from_the_future"] == {"a": 1}


def test_a_field_left_unmeasured_is_left_out_unless_always_written():
    written = to_json(VariantResult("x"))
    assert list(written) == ["label", "precision", "model", "server", "status", "errors", "metrics", "runs"]
    assert written["server"] == {} and written["precision"] is None and written["metrics"] == empty_metrics()
    run = to_json(Run(phase="decode", ok=False))
    assert run == {"phase": "decode", "ok": False}  # `ok` always; the empty extra and timings left out
    v = VariantResult("x")
    v.warn("W1 hot")
    v.warn("W1 hot")
    assert to_json(v)["warnings"] == ["W1 hot"]  # once
    assert to_json(dataclasses.replace(VariantResult("x"), warnings=[]))["warnings"] == []  # [] when clean


def _doc() -> dict:
    return json.loads((ROOT / "tests" / "report" / "data" / "cpu_tiny.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "where,value,message",
    [
        (("metrics", "decode_tok_s"), "fast", 'metrics.decode_tok_s: expected a number, got "fast"'),
        (("metrics", "decode_tok_s"), 1e308, "metrics.decode_tok_s: expected a number from 0 to 1e+12, got 1e+308"),
        (("status",), "great", 'status: expected "ok" or "partial" or "failed", got "great"'),
        (("errors",), "boom", 'errors: expected a list, got "boom"'),
        (("runs", 0, "prompt_tokens"), -5, "runs[0].prompt_tokens: expected an integer from 0 to 1e+12, got -5"),
        (("runs", 0, "ok"), "yes", 'runs[0].ok: expected true or false, got "yes"'),
        (("runs", 0, "extra"), [1], "runs[0].extra: expected an object, got [1]"),
        (("warnings",), [3], "warnings[0]: expected a string, got 3"),
        (("metrics", "ttft_s"), {"abc": 0.5}, 'metrics.ttft_s: expected sizes (positive integers) as keys, got "abc"'),
    ],
)
def test_the_loader_and_the_record_check_say_the_same(where, value, message):
    doc = _doc()
    target = doc["variants"][0]
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = value
    with pytest.raises(DocumentError) as loader:
        validate(doc, "r.json")
    assert str(loader.value) == f"r.json: variants[0].{message}"
    with pytest.raises(RecordError) as record:
        variant_from_json(doc["variants"][0], "variants[0]")
    assert str(record.value) == f"variants[0].{message}"


def test_an_invalid_run_needs_only_the_right_types():
    run = {"phase": "decode", "ok": False, "reason": "HTTP 500", "prompt_tokens": -3, "decode_tok_s": 1e300}
    assert run_from_json(run, "run").prompt_tokens == -3  # what the server said stays, out of every median
    with pytest.raises(RecordError, match=r"^run\.prompt_tokens: expected an integer, got 1.5$"):
        run_from_json(run | {"prompt_tokens": 1.5}, "run")
