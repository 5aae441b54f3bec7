"""The results document (docs/design.md §5) as types.

TypedDicts rather than dataclasses: the document is also the JSON export unchanged and the TUI
builds one incrementally while a sweep runs, so the report reads the same dicts it is given, now
with names and types mypy can check. `report.load.load_document` is the one way a file becomes a
`ResultsDoc`: it reads, parses and validates it (see there for what is rejected).
"""

from __future__ import annotations

from typing import Any, TypedDict, cast


class GpuDoc(TypedDict, total=False):
    name: str | None
    id: str | None


class PowerSourceDoc(TypedDict, total=False):
    id: str | None
    scope: str | None


class HostDoc(TypedDict, total=False):
    hostname: str | None
    platform: str | None
    cpu_count: int | None
    gpus: list[GpuDoc]
    power_sources: list[PowerSourceDoc]
    fingerprint: dict[str, Any]  # measure/fingerprint.py; any JSON shape in a file from disk


class RunDoc(TypedDict, total=False):
    phase: str
    ok: bool
    reason: str | None
    prompt_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    target_prompt_tokens: int | None
    repeat: int | None
    ttft_s: float | None
    decode_tok_s: float | None
    prefill_ms_per_token: float | None
    itl_ms_p50: float | None
    itl_ms_p99: float | None
    power_w: float | None
    energy_j: float | None
    server_timings: dict[str, Any]
    extra: dict[str, Any]
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
    power_idle: dict[str, Any]
    model_size_bytes: int | None
    warnings: list[str]  # docs/design.md §4 "Trust": one line each, starting with a code
    validity: dict[str, Any]
    kv_memory: dict[str, Any]  # sweep/kv_memory.py: the figures and `from`, or `reason`


class ResultsDoc(TypedDict, total=False):
    schema: str
    created: str | None
    precmon_version: str | None
    host: HostDoc
    settings: dict[str, Any]
    variants: list[VariantDoc]


class SourceDoc(TypedDict):
    file: str | None
    host: str | None
    host_label: str  # the hostname, or "vm#3fa2" where files share a hostname (report/fleet.py)
    created: str | None
    gpus: list[str | None]


class CompareDoc(ResultsDoc, total=False):
    """What `compare.merge_documents` makes: every file's variants, relabelled, and where they came from."""

    group: str  # "file" | "precision": the column order
    sources: list[SourceDoc]
    fingerprint_diff: list[dict[str, Any]]  # {"key", "values"}: only where the files' environments differ


class DocumentError(ValueError):
    """A results file that the report cannot read; the message is one line naming file and field."""


def own_document(doc: dict[str, Any]) -> ResultsDoc:
    """A results document precmon itself just built (`measure.results.results_document`, the sweep
    store, the TUI's live results) as the typed model. Files from disk go through
    `report.load.load_document`, which validates them; precmon's own documents are well formed by
    construction (measure/checks.py validates every record as it is made)."""
    return cast(ResultsDoc, doc)
