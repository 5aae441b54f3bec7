"""Property tests: any results record, results file, journal or sweep file gives a valid object or
one error of the documented class (exit 2: ResultsError, RecordError, SpecError), never another
exception escaping to the user. Bounded example budgets keep the file under 20 s."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precmon.core.schema import (
    SCHEMA,
    Host,
    RecordError,
    Run,
    RunExtra,
    VariantResult,
    names,
    run_from_json,
    to_json,
    variant_from_json,
)
from precmon.measure.results import ResultsError, dumps_strict, load_results
from precmon.sweep.spec import ALL_VARIANT_KEYS, SpecError, SweepSpec, parse_spec
from precmon.sweep.store import ResultStore

FAST = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
RUN_FIELDS = list(names(Run, legacy=True))
RUN_EXTRA_FIELDS = list(names(RunExtra, legacy=True))
VARIANT_FIELDS = list(names(VariantResult, legacy=True))
METRIC_KEYS = ["decode_tok_s", "prefill_ms_per_token", "ttft_s", "power_idle_w", "memory_gb", "concurrency"]


def near(keys: list[str], values: st.SearchStrategy) -> st.SearchStrategy:
    """Objects with the schema's keys (some missing) and odd values: closer to real files than noise."""
    return st.dictionaries(st.sampled_from(keys + ["other"]), values, max_size=len(keys) + 1)


run_like = near(RUN_FIELDS, json_values) | st.fixed_dictionaries(
    {"phase": st.sampled_from(["decode", "prefill", "ttft"])},
    optional={k: scalars for k in RUN_FIELDS if k not in ("phase", "extra")}
    | {"extra": near(RUN_EXTRA_FIELDS, json_values)},
)
variant_like = near(
    VARIANT_FIELDS,
    json_values | st.lists(run_like, max_size=3) | near(METRIC_KEYS, json_values),
) | st.fixed_dictionaries(
    {"label": st.text(max_size=8)},
    optional={
        "status": st.sampled_from(["ok", "partial", "failed", "weird"]),
        "runs": st.lists(run_like, max_size=3),
        "metrics": near(METRIC_KEYS, json_values),
        "errors": st.lists(st.text(max_size=8) | scalars, max_size=3),
    },
)


@FAST
@given(run_like | json_values)
def test_run_from_json_is_a_run_or_a_record_error(d):
    try:
        run = run_from_json(d)
    except RecordError as exc:
        assert "\n" not in str(exc)
        return
    written = json.loads(dumps_strict(to_json(run)))
    assert to_json(run_from_json(written)) == written


@FAST
@given(variant_like | json_values)
def test_variant_from_json_is_a_variant_or_a_record_error(d):
    try:
        v = variant_from_json(d)
    except RecordError as exc:
        assert "\n" not in str(exc)
        return
    text = dumps_strict(to_json(v))  # whatever was read can be written as strict JSON
    json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(AssertionError(name)))


documents = st.fixed_dictionaries(
    {"schema": st.sampled_from([SCHEMA, "other"]), "variants": st.lists(variant_like, max_size=3) | json_values},
    optional={"created": json_values, "settings": json_values, "host": json_values},
)


@settings(FAST, max_examples=80)
@given(doc=documents | json_values, journal=st.lists(json_values | st.binary(max_size=20), max_size=4))
def test_resume_loads_a_document_or_refuses_it_in_one_line(tmp_path_factory, doc, journal):
    out: Path = tmp_path_factory.mktemp("out")
    (out / "results.json").write_text(json.dumps(doc, allow_nan=True))
    with open(out / "journal.jsonl", "wb") as f:
        for rec in journal:
            f.write(rec if isinstance(rec, bytes) else json.dumps(rec).encode() + b"\n")
    notes: list[str] = []
    try:
        load_results(out / "results.json")
        ResultStore(out, {}, Host(), on_note=notes.append).load_existing()
    except ResultsError as exc:
        assert "\n" not in str(exc) and str(out) in str(exc)
    assert all("\n" not in n for n in notes)


# ---- the sweep file --------------------------------------------------------------------------
def toml_value(x) -> str:
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return "nan" if math.isnan(x) else ("inf" if x == math.inf else ("-inf" if x == -math.inf else repr(x)))
    if isinstance(x, int):
        return str(x)
    if isinstance(x, str):
        return json.dumps(x)
    if isinstance(x, list):
        return "[" + ", ".join(toml_value(v) for v in x) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in x.items()) + "}"


toml_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
    st.sampled_from(["http://127.0.0.1:1", "auto", "llamacpp", "x"]),
)
toml_values = (
    toml_scalars | st.lists(toml_scalars, max_size=3) | st.dictionaries(st.text(max_size=5), toml_scalars, max_size=2)
)
keys = st.sampled_from(list(ALL_VARIANT_KEYS) + ["colour", "defaults", "variant"])
tables = st.dictionaries(keys, toml_values, max_size=6)


def spec_text(defaults: dict | None, variants: list[dict]) -> str:
    parts = []
    if defaults is not None:
        parts.append("[defaults]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in defaults.items()))
    for v in variants:
        parts.append("[[variant]]\n" + "".join(f"{k} = {toml_value(x)}\n" for k, x in v.items()))
    return "\n".join(parts)


def _one_line_or_spec(text: str) -> None:
    try:
        spec = parse_spec(text)
    except SpecError as exc:
        assert "\n" not in str(exc).strip() or "not valid TOML" in str(exc)
        return
    assert isinstance(spec, SweepSpec) and spec.variants


@FAST
@given(st.none() | tables, st.lists(tables, max_size=3))
def test_generated_sweep_documents_parse_or_give_a_spec_error(defaults, variants):
    _one_line_or_spec(spec_text(defaults, variants))


lines = st.one_of(
    st.sampled_from(["[defaults]", "[[variant]]", "[variant]", "[[defaults]]", "", "# c", "[x.y]"]),
    st.builds(lambda k, v: f"{k} = {toml_value(v)}", keys, toml_values),
    st.text(max_size=20),
)


@FAST
@given(st.lists(lines, max_size=12))
def test_toml_ish_text_parses_or_gives_a_spec_error(text_lines):
    _one_line_or_spec("\n".join(text_lines))
