"""The results schema `precmon.results/1` (docs/design.md §5) as one field table.

Every reader and writer of a results record asks these tables: `Run.to_dict` and
`VariantResult.to_dict` (core/schema/records.py) write in their order, `schema.check` validates by
them (the `report` loader and the `check_*_dict` of a record read back: one set of rules, one set
of messages), and the typed model (core/schema/model.py, the TypedDicts report/ and tui/ read) is
tested against them key for key. A key that used to travel unnamed in a run's `extra` or among a
variant's extra keys has a row here (`extra=True`), so it is named and typed; keys a newer file
adds are still kept and ignored.

Adding a field: one `Field` row here, the attribute of the dataclass or TypedDict it lives in
(tests/core/test_schema.py says which when it is missing), and the code that fills it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SCHEMA = "precmon.results/1"
#: Largest magnitude a measured number may have (no tok/s, W, J, GB or token count reaches it).
MAX_VALUE = 1e12
#: A variant's `status`, best first.
STATUSES = ("ok", "partial", "failed")

#: How a field is read. "text", "int", "number", "bool": one JSON value; "object": an object (with
#: `fields` where its keys are known); "texts" / "numbers": a list of them; "objects": a list of
#: objects of `fields`; "records": a list of records of `fields` (runs, variants); "metrics": a
#: variant's `metrics`, walked by the registry (core/cells.py); "stats": `metrics_stats`; "json":
#: any JSON value.
Kind = Literal[
    "text", "int", "number", "bool", "object", "texts", "numbers", "objects", "records", "metrics", "stats", "json"
]


@dataclass(frozen=True)
class Field:
    """One key of a results record.

    Attributes:
        name: the key on disk (never renamed).
        kind: see `Kind`.
        required: absence is a fault (`label`, `phase`, `variants`); every other field may be
            absent or null, except a "bool" or one with `choices`, which may only be absent.
        ranged: a number from 0 to MAX_VALUE (in a run: only where the run is valid; an invalid
            run keeps what the server said and needs only the right type).
        checked: readers check its type; False: documented and typed, read as any JSON (the
            loader never checked it, and a file that holds something else still loads).
        extra: where it lives in memory: a run's `Run.extra`, a variant's `VariantResult.extra`
            (on disk: inside the run's `extra` object, beside a variant's own keys).
        legacy: written by older versions only (read, never written).
        derived: a run figure derived from the server's numbers and the client's clock: negative
            or non-finite makes the run invalid (`measure/checks.impossible_derived`).
        choices: the values a text may take.
        fields: the known keys of an object, or of each item of "objects" / "records".
        what: one line for people.
    """

    name: str
    kind: Kind
    required: bool = False
    ranged: bool = True
    checked: bool = True
    extra: bool = False
    legacy: bool = False
    derived: bool = False
    choices: tuple[str, ...] = ()
    fields: tuple[Field, ...] = ()
    what: str = ""


def _x(
    name: str,
    kind: Kind,
    what: str = "",
    *,
    checked: bool = False,
    legacy: bool = False,
    ranged: bool = True,
    fields: tuple[Field, ...] = (),
) -> Field:
    """A known key of a run's `extra` or among a variant's extra keys (unchecked unless told)."""
    return Field(name, kind, ranged=ranged, checked=checked, extra=True, legacy=legacy, fields=fields, what=what)


# fmt: off
#: The known keys of a run's `extra` (docs/design.md §5 "`extra` of a run").
RUN_EXTRA: tuple[Field, ...] = (
    _x("n_chunks", "int", "chunks received"),
    _x("n_text_chunks", "int", "chunks with text"),
    _x("ttft_from", "text", "where TTFT was taken (a one-token answer without printable text)"),
    _x("ttft_overhead_ms", "number", "TTFT − the server's prompt time, ms"),
    _x("ttfo_s", "number", "time to the first non-reasoning content"),
    _x("prompt_tokens_mismatch", "text", "the tokenizer's and the usage's counts, where they differ"),
    _x("power_channel", "text", "the headline power channel's id"),
    _x("window_unix_s", "json", "the power window's [start, end], Unix seconds"),
    _x("power_w_per_s", "numbers", "headline watts averaged per second of the window", checked=True),
    _x("power_windows", "json", "every channel's whole-request window"),
    _x("power_window", "text", "decode runs, cut: \"first token → end of stream\""),
    _x("energy_tokens", "int", "decode runs, cut: the tokens the window's energy divides by"),
    _x("prefill_part", "object", "decode runs, cut: the cut-out prefill part"),
    _x("streams", "int", "concurrency: the stream count"),
    _x("wall_s", "number", "concurrency: the window, s"),
    _x("total_tok_s", "number", "concurrency: all tokens ÷ the window"),
    _x("per_user_tok_s", "number", "concurrency: median over the streams"),
    _x("per_user_tok_s_min", "number", "concurrency: slowest stream"),
    _x("per_user_tok_s_max", "number", "concurrency: fastest stream"),
    _x("ttft_p50_s", "number", "concurrency: TTFT p50 over the streams"),
    _x("ttft_p99_s", "number", "concurrency: TTFT p99 over the streams"),
    _x("stream_decode_tok_s", "numbers", "concurrency: each stream's decode tok/s"),
    _x("stream_ttft_s", "numbers", "concurrency: each stream's TTFT"),
    _x("energy_j_per_token", "number", "concurrency: the window's energy ÷ all its tokens"),
    _x("server_parallel", "json", "concurrency: the streams the server ran at once, as observed"),
    _x("aggregate_tok_s", "number", "older files: total_tok_s", legacy=True),
    _x("per_stream_tok_s", "number", "older files: per_user_tok_s", legacy=True),
    _x("ttft_s", "number", "older files: ttft_p50_s", legacy=True),
    _x("concurrency", "int", "older files: the stream count", legacy=True),
    _x("order_index", "int", "interleaved sweeps: the run's place in the session's order"),
    _x("validity", "object", "the run's own figures of §4 \"Trust\""),
    _x("expected_cached", "int", "depth runs: the cached count a valid run reports"),
    _x("cache_tolerance", "json", "depth runs: [below, above] the cached count may differ by"),
    _x("new_tokens", "int", "depth runs: prompt tokens beyond the cached ones"),
    _x("depth_cache", "text", "depth runs: why the cache was not checked"),
)

#: A run (`Run`, docs/design.md §5 "Run"), in the order written.
RUN: tuple[Field, ...] = (
    Field("phase", "text", required=True, what="precmon.core.phases"),
    Field("prompt_tokens", "int", what="from the server's usage"),
    Field("output_tokens", "int", what="from the server's usage"),
    Field("ttft_s", "number", derived=True),
    Field("decode_tok_s", "number", derived=True),
    Field("prefill_ms_per_token", "number", derived=True),
    Field("itl_ms_p50", "number", derived=True),
    Field("itl_ms_p99", "number", derived=True),
    Field("power_w", "number"),
    Field("energy_j", "number"),
    Field("cached_tokens", "int"),
    Field("server_timings", "object", what="what the server reported"),
    Field("ok", "bool", what="valid: counts in medians (always written)"),
    Field("reason", "text", what="why the run is invalid"),
    Field("target_prompt_tokens", "int"),
    Field("repeat", "int"),
    Field("extra", "object", fields=RUN_EXTRA),
    Field("depth_tokens", "int", what="context depth: tokens already in context, cached"),
    Field("concurrency", "int", checked=False, legacy=True, what="older files: the stream count"),
)

SERVER: tuple[Field, ...] = (
    Field("kind", "text"),
    Field("url", "text", checked=False),
    Field("endpoint", "text", checked=False),
    Field("version", "text"),
    Field("flags", "object", checked=False),
    Field("flags_from", "text", checked=False),
    Field("launch_flags", "object", checked=False),
)
POWER_IDLE: tuple[Field, ...] = (
    Field("power_w", "number", checked=False),
    Field("channel", "text", checked=False),
    Field("windows", "json", checked=False),
    Field("power_w_per_s", "numbers"),
)

#: A variant's extra keys (docs/design.md §5 "Variant"), after its own keys on disk.
VARIANT_EXTRA: tuple[Field, ...] = (
    _x("model_info", "object", "name, size_bytes, n_params, context_tokens, ..."),
    _x("memory_source", "text", "where memory_gb came from"),
    _x("power_idle", "object", "the idle window", checked=True, fields=POWER_IDLE),
    _x("chat_template_tokens", "int", "chat endpoint: the template's own tokens"),
    _x("chat_template_from", "text", "chat endpoint: how they were counted"),
    _x("partial_reason", "text", "partial variants: why"),
    _x("metrics_stats", "stats", "metric key → n, median, mean, stdev, cv, ci95", checked=True),
    _x("warnings", "texts", "one-line strings, each starting with a code", checked=True),
    _x("validity", "object", "the figures of §4 \"Trust\"", checked=True),
    _x("repeats_stopped_by", "object", "with target_ci_pct: what stopped each phase's repeats"),
    _x("repeats_n", "object", "with target_ci_pct: the runs made per phase and size"),
    _x("strategy", "text", "sweeps: launch | model | url"),
    _x("launch", "json", "launched variants: the argv"),
    _x("kv_cache_dtype", "text", "the declared KV cache type"),
    _x("kv_cache_read_back", "object", "the KV cache type as the server tells it"),
    _x("kv_memory", "object", "sweep/kv_memory.py: the figures and `from`, or `reason`"),
    _x("quality", "object", "quality scoring: baseline, positions, top_k, ..."),
    _x("quality_reference", "object", "bench --quality: the precmon.quality_ref/1 object"),
    _x("answer", "object", "quality runs: the greedy answer to the fixed question (measure/answer.py)"),
    _x("weights", "object", "the GGUF header's tensor types, shares, bits_per_weight, main_type, file_type"),
    _x(
        "compute_path",
        "object",
        "backend, device, capability, engine, kernel; vLLM: version, quantization, kernels, fallbacks (or reason):"
        " measure/labels/true_label.py",
    ),
    _x("model_size_bytes", "number", "read for the roofline; precmon does not write it", checked=True, ranged=False),
)

#: A variant (`VariantResult`), in the order written: its own keys, then `VARIANT_EXTRA`.
VARIANT: tuple[Field, ...] = (
    Field("label", "text", required=True),
    Field("precision", "text"),
    Field("model", "text"),
    Field("server", "object", fields=SERVER),
    Field("status", "text", choices=STATUSES),
    Field("errors", "texts", what="one-line strings, decisive cause first"),
    Field("metrics", "metrics", what="keys and shapes from precmon.core.registry"),
    Field("runs", "records", fields=RUN),
    *VARIANT_EXTRA,
)

GPU: tuple[Field, ...] = (Field("name", "text"), Field("id", "text", checked=False))
POWER_SOURCE: tuple[Field, ...] = (
    Field("id", "text"),
    Field("kind", "text", checked=False),
    Field("label", "text", checked=False),
    Field("scope", "text"),
    Field("method", "text", checked=False),
)
HOST: tuple[Field, ...] = (
    Field("hostname", "text"),
    Field("platform", "text", checked=False),
    Field("cpu_count", "int", checked=False),
    Field("gpus", "objects", fields=GPU),
    Field("power_sources", "objects", fields=POWER_SOURCE),
    Field("sampler", "object", checked=False),
    Field("fingerprint", "object", checked=False, what="measure/trust/fingerprint.py; any JSON shape from disk"),
)

#: A results document, in the order written (`schema` is checked first, on its own).
DOCUMENT: tuple[Field, ...] = (
    Field("schema", "text", required=True, checked=False),
    Field("created", "text"),
    Field("precmon_version", "text"),
    Field("host", "object", fields=HOST),
    Field("settings", "object", what="the plan (its keys: the plan-settings table)"),
    Field("variants", "records", required=True, fields=VARIANT),
    Field("non_finite", "texts", checked=False, what="where a non-finite float was written as null"),
)
# fmt: on


def names(table: tuple[Field, ...], *, extra: bool | None = None, legacy: bool = False) -> tuple[str, ...]:
    """The keys of `table`: all, or only those in (`extra=True`) / outside (False) the `extra` dict;
    `legacy=False` leaves out the keys only older files have."""
    return tuple(f.name for f in table if (extra is None or f.extra == extra) and (legacy or not f.legacy))


#: The run fields by kind, and those derived from the server's numbers.
RUN_INT_FIELDS = tuple(f.name for f in RUN if f.kind == "int" and not f.legacy)
RUN_FLOAT_FIELDS = tuple(f.name for f in RUN if f.kind == "number" and not f.legacy)
DERIVED_FIELDS = tuple(f.name for f in RUN if f.derived)
NOT_A_RESULTS_FILE = f"not a precmon results file (schema must be {SCHEMA!r})"
