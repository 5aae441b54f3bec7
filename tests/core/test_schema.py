"""The field table (precmon.core.schema) is the one statement of the results schema: the dataclasses
write in its order, the TypedDicts hold its keys, and the loader and the record checks apply its
rules with the same one-line messages."""

from __future__ import annotations

import copy
import dataclasses
import json
import typing
from pathlib import Path

import pytest
from precmon.core.schema.records import Run, VariantResult, check_run_dict, check_variant_dict

from precmon.core import schema
from precmon.core.registry import empty_metrics
from precmon.core.schema import Field
from precmon.core.schema import model as schema_model
from precmon.core.schema.check import RecordError
from precmon.report.load import validate
from precmon.report.model import DocumentError

ROOT = Path(__file__).resolve().parents[2]
RESULTS = sorted((ROOT / "tests" / "report" / "data").glob("*.json")) + sorted(
    (ROOT / "tests" / "tui" / "data").glob("*results.json")
)

#: A scalar kind and the annotation its TypedDict key has (`from __future__ import annotations`: text).
SCALAR = {"text": "str | None", "int": "int | None", "number": "float | None", "bool": "bool", "texts": "list[str]"}


def test_the_derived_tuples_name_the_run_fields_of_each_kind():
    assert schema.RUN_INT_FIELDS == (
        "prompt_tokens", "output_tokens", "cached_tokens", "target_prompt_tokens", "repeat", "depth_tokens"
    )  # fmt: skip
    assert schema.RUN_FLOAT_FIELDS == (
        "ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99", "power_w", "energy_j"
    )  # fmt: skip
    assert schema.DERIVED_FIELDS == ("ttft_s", "decode_tok_s", "prefill_ms_per_token", "itl_ms_p50", "itl_ms_p99")
    assert schema.STATUSES == ("ok", "partial", "failed")


def test_the_dataclasses_hold_the_table_fields():
    assert tuple(f.name for f in dataclasses.fields(Run)) == schema.names(schema.RUN)
    own = tuple(f.name for f in dataclasses.fields(VariantResult) if f.name not in ("extra", "notes"))
    assert own == schema.names(schema.VARIANT, extra=False)


@pytest.mark.parametrize(
    "typed,table",
    [
        (schema_model.RunDoc, schema.RUN),
        (schema_model.RunExtraDoc, schema.RUN_EXTRA),
        (schema_model.VariantDoc, schema.VARIANT),
        (schema_model.HostDoc, schema.HOST),
        (schema_model.GpuDoc, schema.GPU),
        (schema_model.PowerSourceDoc, schema.POWER_SOURCE),
        (schema_model.ResultsDoc, schema.DOCUMENT),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_each_typed_dict_has_exactly_the_keys_of_its_table(typed, table: tuple[Field, ...]):
    hints = {k: getattr(v, "__forward_arg__", v) for k, v in typed.__annotations__.items()}  # ForwardRef → text
    assert list(hints) == [f.name for f in table], "a field added to the table goes into the TypedDict too"
    for f in table:
        want = "str" if f.required and f.kind == "text" else SCALAR.get(f.kind)
        if f.kind == "numbers":
            want = "list[float]"
        if want is not None and not f.choices:
            assert hints[f.name] == want, f"{typed.__name__}.{f.name}: {hints[f.name]}, the table says {f.kind}"
        elif f.kind in ("object", "metrics", "stats"):
            assert hints[f.name].startswith(("dict[", "HostDoc", "RunExtraDoc")), f.name
        elif f.kind in ("objects", "records"):
            assert hints[f.name].startswith("list["), f.name
    assert typed.__total__ is False and typing.is_typeddict(typed)


def test_each_known_extra_key_is_marked_extra_and_every_own_key_is_not():
    assert all(f.extra for f in schema.RUN_EXTRA + schema.VARIANT_EXTRA)
    assert not any(f.extra for f in schema.RUN + schema.DOCUMENT)
    assert schema.names(schema.VARIANT, extra=False) == (
        "label", "precision", "model", "server", "status", "errors", "metrics", "runs"
    )  # fmt: skip


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.name)
def test_records_of_real_files_read_back_whole_and_write_in_the_table_order(path: Path):
    doc = json.loads(path.read_text(encoding="utf-8"))
    for v in doc["variants"]:
        back = VariantResult.from_dict(copy.deepcopy(v)).to_dict()
        assert back == v | {"metrics": empty_metrics() | v["metrics"]}  # nothing lost, unmeasured metrics null
        again = VariantResult.from_dict(json.loads(json.dumps(back))).to_dict()
        assert json.dumps(again, ensure_ascii=False) == json.dumps(back, ensure_ascii=False)
        assert list(back)[:8] == list(schema.names(schema.VARIANT, extra=False))
        for r in v.get("runs") or []:
            keys = list(Run.from_dict(r).to_dict())
            assert keys == [k for k in schema.names(schema.RUN) if k in keys]


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
        check_variant_dict(doc["variants"][0], "variants[0]")
    assert str(record.value) == f"variants[0].{message}"


def test_an_invalid_run_needs_only_the_right_types():
    run = {"phase": "decode", "ok": False, "reason": "HTTP 500", "prompt_tokens": -3, "decode_tok_s": 1e300}
    check_run_dict(run, "run")  # what the server said stays, out of every median
    with pytest.raises(RecordError, match=r"^run\.prompt_tokens: expected an integer, got 1.5$"):
        check_run_dict(run | {"prompt_tokens": 1.5}, "run")


def test_a_newer_files_keys_are_kept():
    v = VariantResult.from_dict(
        {"label": "x", "from_the_future": {"a": 1}, "runs": [{"phase": "p", "extra": {"z": 1}}]}
    )
    assert v.extra == {"from_the_future": {"a": 1}} and v.runs[0].extra == {"z": 1}
    assert v.to_dict()["from_the_future"] == {"a": 1}
