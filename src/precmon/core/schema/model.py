"""The results document (docs/design.md §5) as types: the field table (core/schema/__init__.py) for mypy.

TypedDicts rather than dataclasses: the document is also the JSON export unchanged and the TUI
builds one incrementally while a sweep runs, so the report reads the same dicts it is given, now
with names and types mypy can check. Each TypedDict holds exactly the keys of its table
(`schema.RUN`, `RUN_EXTRA`, `VARIANT`, `HOST`, `GPU`, `POWER_SOURCE`, `DOCUMENT`), typed by their
kind; tests/core/test_schema.py holds them to it, so a field added to the table and not here (or
the other way round) fails there. `report.load.load_document` is the one way a file becomes a
`ResultsDoc`; `report/model.py` re-exports these names.
"""

from __future__ import annotations

from typing import Any, TypedDict


class GpuDoc(TypedDict, total=False):
    name: str | None
    id: str | None


class PowerSourceDoc(TypedDict, total=False):
    id: str | None
    kind: str | None
    label: str | None
    scope: str | None
    method: str | None


class HostDoc(TypedDict, total=False):
    hostname: str | None
    platform: str | None
    cpu_count: int | None
    gpus: list[GpuDoc]
    power_sources: list[PowerSourceDoc]
    sampler: dict[str, Any]
    fingerprint: dict[str, Any]  # measure/trust/fingerprint.py; any JSON shape in a file from disk


class RunExtraDoc(TypedDict, total=False):
    """A run's `extra` (docs/design.md §5 "`extra` of a run"); older files' names at the end."""

    n_chunks: int | None
    n_text_chunks: int | None
    ttft_from: str | None
    ttft_overhead_ms: float | None
    ttfo_s: float | None
    prompt_tokens_mismatch: str | None
    power_channel: str | None
    window_unix_s: Any
    power_w_per_s: list[float]
    power_windows: Any
    power_window: str | None
    energy_tokens: int | None
    prefill_part: dict[str, Any]
    streams: int | None
    wall_s: float | None
    total_tok_s: float | None
    per_user_tok_s: float | None
    per_user_tok_s_min: float | None
    per_user_tok_s_max: float | None
    ttft_p50_s: float | None
    ttft_p99_s: float | None
    stream_decode_tok_s: list[float]
    stream_ttft_s: list[float]
    energy_j_per_token: float | None
    server_parallel: Any
    aggregate_tok_s: float | None
    per_stream_tok_s: float | None
    ttft_s: float | None
    concurrency: int | None
    order_index: int | None
    validity: dict[str, Any]
    expected_cached: int | None
    cache_tolerance: Any
    new_tokens: int | None
    depth_cache: str | None


class RunDoc(TypedDict, total=False):
    phase: str
    prompt_tokens: int | None
    output_tokens: int | None
    ttft_s: float | None
    decode_tok_s: float | None
    prefill_ms_per_token: float | None
    itl_ms_p50: float | None
    itl_ms_p99: float | None
    power_w: float | None
    energy_j: float | None
    cached_tokens: int | None
    server_timings: dict[str, Any]
    ok: bool
    reason: str | None
    target_prompt_tokens: int | None
    repeat: int | None
    extra: RunExtraDoc
    depth_tokens: int | None
    concurrency: int | None  # older files: the stream count on the run, not in `extra`


class VariantDoc(TypedDict, total=False):
    label: str
    precision: str | None
    model: str | None
    server: dict[str, Any]
    status: str
    errors: list[str]
    metrics: dict[str, Any]  # keys and shapes from precmon.core.registry
    runs: list[RunDoc]
    model_info: dict[str, Any]
    memory_source: str | None
    power_idle: dict[str, Any]
    chat_template_tokens: int | None
    chat_template_from: str | None
    partial_reason: str | None
    metrics_stats: dict[str, Any]
    warnings: list[str]  # docs/design.md §4 "Trust": one line each, starting with a code
    validity: dict[str, Any]
    repeats_stopped_by: dict[str, Any]
    repeats_n: dict[str, Any]
    strategy: str | None
    launch: Any
    kv_cache_dtype: str | None
    kv_cache_read_back: dict[str, Any]
    kv_memory: dict[str, Any]  # sweep/kv_memory.py: the figures and `from`, or `reason`
    quality: dict[str, Any]
    quality_reference: dict[str, Any]
    answer: dict[str, Any]
    weights: dict[str, Any]
    compute_path: dict[str, Any]
    model_size_bytes: float | None


class ResultsDoc(TypedDict, total=False):
    schema: str
    created: str | None
    precmon_version: str | None
    host: HostDoc
    settings: dict[str, Any]
    variants: list[VariantDoc]
    non_finite: list[str]
