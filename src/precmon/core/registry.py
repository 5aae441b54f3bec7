"""Every metric precmon reports, in one table (docs/design.md §4 and §5).

A metric used to be defined in six places (the empty `metrics` of a results file, the report's
rows, the CSV export, the definitions under exports, the CLI's help and the TUI's help). Now each
of those reads `METRICS`: adding a metric means one `Metric(...)` here, its name in `KEY`
(core/metric_keys.py), its rows in docs/design.md §4 and, for a new run field, the run's schema
(docs/design.md §2 says exactly which), plus the code that measures it. This module sits in
`precmon.core`, below every layer that reads it, and imports nothing but the core's phase table
(core/phases.py: a metric's `phase` is one of its names) and the glossary's entries
(core/definitions.py: a metric's `definition` is one of them).

Order of `METRICS` is the order of keys in a results file's `metrics` object and of the CSV
export; `row` places a metric in the comparison table; `Definition.rank` places a definition in
the glossary printed under exports and in the help (`glossary`, `help_lines`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from precmon.core.definitions import (
    CHUNK_DEF,
    DECODE_DEF,
    DEPTH_DEF,
    ENERGY_DEF,
    FIT_DEF,
    KV_DEF,
    NOTES,
    POWER_DEF,
    PREFILL_DEF,
    QUALITY_DEF,
    TTFT_DEF,
    Definition,
)
from precmon.core.phases import (
    CONCURRENCY,
    DECODE,
    DEPTH_DECODE,
    DEPTH_FILL,
    DEPTH_PREFILL,
    LONG_CONTEXT_DECODE,
    PREFILL,
    TTFT,
)

Better = Literal["higher", "lower"]
RatioKind = Literal["speedup", "change", "none"]
#: "scalar": one number; "sized": {size: number} (prompt or context tokens); "nested":
#: {level: {field: number}} (concurrency: one object per stream count); "grid": {group: {size:
#: number}} (prefill at depth: {depth: {prompt size: ms/token}}).
Shape = Literal["scalar", "sized", "nested", "grid"]


@dataclass(frozen=True)
class Metric:
    """One metric of a variant's `metrics` object.

    Attributes:
        key: the name in CSV exports, and in `metrics` unless `doc_key` says otherwise.
        label: the table's row label; sized metrics format `{size}` (e.g. "4K"), nested ones
            `{streams}` (e.g. "4 streams").
        unit: "tok/s", "ms/token", "s", "W", "J/token", "GB", "ms".
        better: which direction is better.
        ratio_kind: "speedup" (× faster, > 1 is better), "change" (relative change, −23%) or "none"
            (quality: a KL or a share is already "against the baseline"; a % change of a % is two scales).
        aggregate: how the value is made from the runs (documentation).
        digits: decimals the value is rounded to when written (measure/bench.py reads them here).
        shape: see `Shape`.
        always: present in every results file (None, or {} when sized) even when not measured;
            False: only where measured (and only then a CSV row).
        row: position in the comparison table (None: not a table row).
        phase: the run phase the per-run series comes from (a name of core/phases.py; "" for none).
        run_field: the run's field holding one run's value.
        series: how the report reads the per-run series: "run_field" (the default), "prefill",
            "power", "idle", "energy", "level" (a nested metric: one value per repeat of its level)
            or "none".
        size_key: the run's field naming its size (sized and grid metrics).
        group_key: the run's field naming the outer level of a grid metric (`depth_tokens`).
        settings_key: the settings' key listing the planned sizes, so a planned size that nobody
            could measure still shows as a row of "n/a".
        doc_key / field: for nested metrics, the key in `metrics` and the field inside each level.
        legacy_field: the name older results files give `field` (read when `field` is absent).
        definition: the glossary entry, if any.
        reduce: "median": measure/bench.py makes the value itself, as the median of `run_field`
            over the valid runs of `phase` (per size for sized metrics), so such a metric needs
            only this entry and the code that fills the run field; "server_median": the same
            over `server_timings[server_field]` × `server_scale` (the server's own figure for
            each run; only a finite value > 0 counts); "measured": the measuring code computes
            it (energy windows, the server's prefill rate, the model's size...).
        server_field / server_scale: see `reduce` ("ttft_ms" × 0.001 gives seconds).
        scale: the table shows value × scale (top-1 agreement: a fraction in the file, % in the table).
        error_key: the metric holding this one's ± (half its 95% interval, same unit and scale),
            shown in the cell where there are no runs to make one (quality: over positions).
    """

    key: str
    label: str
    unit: str
    better: Better
    ratio_kind: RatioKind
    aggregate: str
    digits: int = 2
    shape: Shape = "scalar"
    always: bool = True
    row: int | None = None
    phase: str = ""
    run_field: str = ""
    series: str = "run_field"
    size_key: str = "target_prompt_tokens"
    group_key: str = ""
    settings_key: str | None = None
    doc_key: str = ""
    field: str = ""
    legacy_field: str = ""
    definition: Definition | None = None
    reduce: Literal["median", "server_median", "measured"] = "measured"
    server_field: str = ""
    server_scale: float = 1.0
    scale: float = 1.0
    error_key: str = ""

    @property
    def metrics_key(self) -> str:
        """The key of this metric in a variant's `metrics`."""
        return self.doc_key or self.key


MEDIAN = "median of the valid runs"

# fmt: off
METRICS: tuple[Metric, ...] = (
    Metric("decode_tok_s", "Decode", "tok/s", "higher", "speedup", MEDIAN, 2, row=10, phase=DECODE,
           run_field="decode_tok_s", definition=DECODE_DEF, reduce="median"),
    Metric("itl_ms_p50", "Chunk latency p50", "ms", "lower", "speedup", MEDIAN + " (p50 of each run)", 3,
           phase=DECODE, run_field="itl_ms_p50", definition=CHUNK_DEF, reduce="median"),
    Metric("itl_ms_p99", "Chunk latency p99", "ms", "lower", "speedup", MEDIAN + " (p99 of each run)", 3,
           phase=DECODE, run_field="itl_ms_p99", definition=CHUNK_DEF, reduce="median"),
    Metric("prefill_ms_per_token", "Prefill ({size} prompt)", "ms/token", "lower", "speedup",
           MEDIAN + " per prompt size", 5, "sized", row=20, phase=PREFILL, run_field="prefill_ms_per_token",
           series="prefill", settings_key="prefill_tokens", definition=PREFILL_DEF, reduce="median"),
    Metric("ttft_s", "TTFT ({size} prompt)", "s", "lower", "speedup", MEDIAN + " per prompt size", 4, "sized",
           row=30, phase=TTFT, run_field="ttft_s", settings_key="ttft_tokens", definition=TTFT_DEF,
           reduce="median"),
    Metric("power_idle_w", "Idle power", "W", "lower", "change", "average watts of the idle window", 2,
           row=60, series="idle", definition=POWER_DEF),
    Metric("power_decode_w", "Power under decode", "W", "lower", "change", MEDIAN + " (average watts each)", 2,
           row=40, phase=DECODE, run_field="power_w", series="power", definition=POWER_DEF, reduce="median"),
    Metric("power_prefill_w", "Power under prefill", "W", "lower", "change",
           "energy of all prefill runs ÷ their time", 2, row=50, phase=PREFILL, run_field="power_w",
           series="power", definition=POWER_DEF),
    Metric("energy_decode_j_per_token", "Energy per token", "J/token", "lower", "change",
           MEDIAN + " (decode-window energy ÷ its tokens)", 5, row=70, phase=DECODE, series="energy",
           definition=ENERGY_DEF),
    Metric("memory_gb", "Memory", "GB", "lower", "change", "the model's size as the server reports it", 4,
           row=80, series="none"),
    Metric("weights_bits_per_weight", "Bits per weight", "bpw", "lower", "change",
           "all tensor bytes × 8 ÷ all weights, from the GGUF header of the file the server loaded "
           "(what the file holds, not what its name says)", 3, always=False, row=79, series="none"),
    Metric("kv_bytes_per_token", "KV memory / 1K tokens", "MiB", "lower", "change",
           "the KV cache's size ÷ the tokens it holds, in bytes (the table shows MiB per 1,024 tokens)", 0,
           always=False, row=81, series="none", definition=KV_DEF, scale=1024 / 2**20),
    Metric("kv_capacity_tokens", "KV capacity", "tokens", "higher", "speedup",
           "context tokens the whole KV cache holds, all sequences together", 0,
           always=False, row=82, series="none", definition=KV_DEF),
    Metric("kv_longest_context_tokens", "Longest context that fits", "tokens", "higher", "speedup",
           "the longest single sequence the KV cache holds", 0,
           always=False, row=83, series="none", definition=KV_DEF),
    Metric("kv_max_concurrency_at_ctx", "Sequences of the server's context that fit", "sequences", "higher",
           "speedup", "sequences of the server's configured context length that fit in the KV cache at once", 2,
           always=False, row=84, series="none", definition=KV_DEF),
    # Memory fit (docs/design.md §4 "Memory fit"): the `fit` record's figures, by context and by users.
    Metric("fit_users_at", "Users that fit at {size} context", "users", "higher", "change",
           "sequences of that context that fit beside the weights in the usable memory", 0, "sized",
           always=False, row=85, series="none", definition=FIT_DEF),
    Metric("fit_context_for_users", "Context that fits, {depth} user(s)", "tokens", "higher", "change",
           "the longest context each of that many users can have beside the weights", 0, "sized",
           always=False, row=86, series="none", definition=FIT_DEF),
    Metric("server_decode_tok_s", "Server-reported decode", "tok/s", "higher", "speedup",
           MEDIAN + " (the server's own timings)", 2, phase=DECODE, reduce="server_median",
           server_field="predicted_per_second"),
    Metric("server_itl_ms_mean", "Server-reported inter-token latency (mean)", "ms", "lower", "speedup",
           MEDIAN + " (the server's own mean per run)", 3, always=False, phase=DECODE,
           reduce="server_median", server_field="itl_ms_mean"),
    Metric("server_prefill_ms_per_token", "Server-reported prefill ({size} prompt)", "ms/token", "lower",
           "speedup", MEDIAN + " per prompt size (the server's own timings)", 5, "sized", phase=PREFILL),
    Metric("server_ttft_s", "Server-reported TTFT ({size} prompt)", "s", "lower", "speedup",
           MEDIAN + " per prompt size (the server's own arrival → first token)", 4, "sized", phase=TTFT,
           reduce="server_median", server_field="ttft_ms", server_scale=0.001),
    Metric("long_context_decode_tok_s", "Decode at {size} context", "tok/s", "higher", "speedup",
           MEDIAN + " per context size", 2, "sized", always=False, row=100, phase=LONG_CONTEXT_DECODE,
           run_field="decode_tok_s", reduce="median"),
    # Context depth (docs/design.md §4 "Context depth"): only in files of a plan with `depth`.
    Metric("decode_tok_s_at_depth", "Decode @ d{depth}", "tok/s", "higher", "speedup", MEDIAN + " per depth", 2,
           "sized", always=False, row=102, phase=DEPTH_DECODE, run_field="decode_tok_s", size_key="depth_tokens",
           settings_key="depth", definition=DEPTH_DEF, reduce="median"),
    Metric("prefill_ms_per_token_at_depth", "Prefill {size} @ d{depth}", "ms/token", "lower", "speedup",
           MEDIAN + " per depth and new-prompt size", 5, "grid", always=False, row=103, phase=DEPTH_PREFILL,
           run_field="prefill_ms_per_token", group_key="depth_tokens", definition=DEPTH_DEF, reduce="median"),
    Metric("depth_fill_ms", "Cache fill @ d{depth}", "ms", "lower", "speedup",
           "one cold prefill of the D-token prefix per depth", 2, "sized", always=False, row=104,
           phase=DEPTH_FILL, size_key="depth_tokens", definition=DEPTH_DEF),
    # Concurrency (docs/design.md §4 "Concurrency"): one object per level, made by
    # measure/concurrency/curve.py from the level's repeats; `legacy_field` reads older files.
    Metric("concurrency_total_tok_s", "{streams}: total", "tok/s", "higher", "speedup",
           "median of the repeats (all tokens ÷ the window)", 2, "nested", always=False, row=90,
           phase=CONCURRENCY, series="level", doc_key="concurrency", field="total_tok_s",
           legacy_field="aggregate_tok_s"),
    Metric("concurrency_per_user_tok_s", "{streams}: per user", "tok/s", "higher", "speedup",
           "median over the streams of all repeats", 2, "nested", always=False, row=90, phase=CONCURRENCY,
           series="level", doc_key="concurrency", field="per_user_tok_s", legacy_field="per_stream_tok_s"),
    Metric("concurrency_ttft_p50_s", "{streams}: TTFT p50", "s", "lower", "speedup",
           "p50 over the streams of all repeats", 4, "nested", always=False, row=90, phase=CONCURRENCY,
           series="level", doc_key="concurrency", field="ttft_p50_s", legacy_field="ttft_s"),
    Metric("concurrency_ttft_p99_s", "{streams}: TTFT p99", "s", "lower", "speedup",
           "p99 over the streams of all repeats", 4, "nested", always=False, row=90, phase=CONCURRENCY,
           series="level", doc_key="concurrency", field="ttft_p99_s"),
    Metric("concurrency_energy_j_per_token", "{streams}: energy per token", "J/token", "lower", "change",
           "median of the repeats (the window's energy ÷ all its tokens)", 5, "nested", always=False, row=90,
           phase=CONCURRENCY, series="level", doc_key="concurrency", field="energy_j_per_token"),
    # Quality (docs/design.md §4 "Quality"): only in files of a sweep or bench with quality on.
    Metric("quality_kld_mean", "KL div vs {baseline}", "nats", "lower", "none",
           "mean over the positions of KL(baseline ‖ variant)", 9, always=False, row=110, series="none",
           definition=QUALITY_DEF, error_key="quality_kld_mean_err95"),
    Metric("quality_kld_p99", "KL div p99 vs {baseline}", "nats", "lower", "none",
           "99th percentile over the positions", 9, always=False, row=111, series="none",
           definition=QUALITY_DEF),
    Metric("quality_top1_agree", "Same top vs {baseline}", "%", "higher", "none",
           "share of positions whose most probable tokens agree (0-1; the table shows %)", 4,
           always=False, row=112, series="none", definition=QUALITY_DEF, scale=100.0,
           error_key="quality_top1_agree_err95"),
    Metric("quality_ppl", "Perplexity", "ppl", "lower", "change",
           "exp(−mean log-probability of the text's own next tokens)", 3, always=False, row=113,
           series="none", definition=QUALITY_DEF),
    # The trusted format (llama-perplexity --kl-divergence's figures; measure/quality/score.py).
    Metric("quality_kld_mean_err95", "KL div ± (95%)", "nats", "lower", "none",
           "1.96 × the standard error of the mean KL over the positions", 9, always=False, series="none"),
    Metric("quality_kld_max", "KL div max vs {baseline}", "nats", "lower", "none",
           "the largest per-position KL", 9, always=False, row=111, series="none", definition=QUALITY_DEF),
    Metric("quality_top1_agree_err95", "Same top ± (95%)", "%", "lower", "none",
           "1.96 × the binomial standard error of the share (0-1; the table shows %)", 4, always=False,
           series="none", scale=100.0),
    Metric("quality_ppl_ratio", "PPL ratio vs {baseline}", "×", "lower", "none",
           "exp(mean of ln p_baseline − ln p_variant of the text's own tokens)", 5, always=False, row=114,
           series="none", definition=QUALITY_DEF, error_key="quality_ppl_ratio_err95"),
    Metric("quality_ppl_ratio_err95", "PPL ratio ± (95%)", "×", "lower", "none",
           "1.96 × its standard error (delta method)", 5, always=False, series="none"),
    Metric("quality_rms_dp", "RMS Δp vs {baseline}", "%", "lower", "none",
           "√mean (p_variant − p_baseline)² of the text's own token (0-1; the table shows %)", 6,
           always=False, row=115, series="none", definition=QUALITY_DEF, scale=100.0,
           error_key="quality_rms_dp_err95"),
    Metric("quality_rms_dp_err95", "RMS Δp ± (95%)", "%", "lower", "none",
           "1.96 × its standard error (0-1; the table shows %)", 6, always=False, series="none", scale=100.0),
)
# fmt: on


def metrics() -> tuple[Metric, ...]:
    """The registry (a function, so a test can extend it with `monkeypatch.setattr(registry, "METRICS", ...)`)."""
    return METRICS


def digits(key: str) -> int:
    """The decimals metric `key` is written with."""
    return metric(key).digits


def metric(key: str) -> Metric:
    """The metric named `key` (KeyError when there is none)."""
    for m in metrics():
        if m.key == key:
            return m
    raise KeyError(key)


def table_metrics() -> list[Metric]:
    """The metrics that are rows of the comparison table, in table order."""
    return sorted((m for m in metrics() if m.row is not None), key=lambda m: m.row or 0)


def glossary(present: Collection[str] = ()) -> tuple[tuple[str, str], ...]:
    """(term, definition) pairs for exports and the TUI help, each definition once, in rank order.

    A metric not in every file (`always=False`, e.g. quality) brings its definition only when its
    key is in `present` (the keys a document has), so a report without it reads as before.
    """
    seen: dict[str, Definition] = {}
    shown = [m.definition for m in metrics() if m.definition is not None and (m.always or m.key in present)]
    for d in shown + list(NOTES):
        seen.setdefault(d.term, d)
    return tuple((d.term, d.text) for d in sorted(seen.values(), key=lambda d: d.rank))


def help_lines() -> list[str]:
    """The metric lines of `precmon --help`: one per definition that has a brief form."""
    seen: dict[str, Definition] = {}
    for d in (m.definition for m in metrics() if m.definition is not None and m.definition.brief):
        seen.setdefault(d.term, d)
    return [f"  {d.term:<18}{d.brief}" for d in sorted(seen.values(), key=lambda d: d.rank)]


def empty_metrics() -> dict[str, Any]:
    """The `metrics` object of a variant before anything is measured (docs/design.md §5)."""
    return {m.key: (None if m.shape == "scalar" else {}) for m in metrics() if m.always}
