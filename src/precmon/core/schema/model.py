"""The results model `precmon.results/1` (docs/design.md §5), declared once.

These dataclasses are the file format, the measurement's in-memory record and what every reader
(the report, the TUI, the exporter) reads: a `Bench` fills a `VariantResult`, the sweep folds it
into a `ResultsDoc` (sweep/fold.py), the store writes that document (core/schema/codec.py
`to_json`, in declaration order), and `report.load` reads a file back into the same types after
checking every declared field (core/schema/check.py). The checks, the codec, the published JSON
Schema (docs/schema/precmon.results-1.json) and docs/design.md §5's field table are all read off
these declarations (`spec.table`), so adding a result field is one `spec(...)` line here plus the
code that measures it.

Conventions: a field is None (or its empty default) until measured and is then left out of the
file, unless its spec says `always`. Keys a newer file adds are kept in `more` and written back
after the declared ones. Free-form objects whose keys belong to a server or a probe (a server's
`flags`, `validity` figures, a compute path) stay `dict[str, Any]`; their documented keys are in
docs/design.md §5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from precmon.core.registry import empty_metrics
from precmon.core.schema.spec import SCHEMA, STATUSES, spec
from precmon.core.settings import QUALITY_CONVENTIONS

JSON = dict[str, Any]


@dataclass
class RunExtra:
    """A run's `extra` object (docs/design.md §5 "`extra` of a run")."""

    n_chunks: int | None = spec("chunks received")
    n_text_chunks: int | None = spec("chunks with text")
    ttft_from: str | None = spec("where TTFT was taken (a one-token answer without printable text)")
    ttft_overhead_ms: float | None = spec("TTFT − the server's prompt time, ms", ranged=False)
    ttfo_s: float | None = spec("time to the first non-reasoning content")
    prompt_tokens_mismatch: str | None = spec("the tokenizer's and the usage's counts, where they differ")
    power_channel: str | None = spec("the headline power channel's id")
    window_unix_s: Any = spec("the power window's [start, end], Unix seconds", kind="json", checked=False)
    power_w_per_s: list[float] | None = spec("headline watts averaged per second of the window")
    power_windows: Any = spec("every channel's whole-request window", kind="json", checked=False)
    power_window: str | None = spec('decode runs, cut: "first token → end of stream"')
    energy_tokens: int | None = spec("decode runs, cut: the tokens the window's energy divides by")
    prefill_part: JSON | None = spec("decode runs, cut: the cut-out prefill part")
    streams: int | None = spec("concurrency: the stream count")
    wall_s: float | None = spec("concurrency: the window, s")
    total_tok_s: float | None = spec("concurrency: all tokens ÷ the window")
    per_user_tok_s: float | None = spec("concurrency: median over the streams")
    per_user_tok_s_min: float | None = spec("concurrency: slowest stream")
    per_user_tok_s_max: float | None = spec("concurrency: fastest stream")
    ttft_p50_s: float | None = spec("concurrency: TTFT p50 over the streams")
    ttft_p99_s: float | None = spec("concurrency: TTFT p99 over the streams")
    stream_decode_tok_s: list[float] | None = spec("concurrency: each stream's decode tok/s")
    stream_ttft_s: list[float] | None = spec("concurrency: each stream's TTFT")
    energy_j_per_token: float | None = spec("concurrency: the window's energy ÷ all its tokens")
    server_parallel: Any = spec(
        "concurrency: the streams the server ran at once, as observed", kind="json", checked=False
    )
    aggregate_tok_s: float | None = spec("older files: total_tok_s", legacy=True)
    per_stream_tok_s: float | None = spec("older files: per_user_tok_s", legacy=True)
    ttft_s: float | None = spec("older files: ttft_p50_s", legacy=True)
    concurrency: int | None = spec("older files: the stream count", legacy=True)
    order_index: int | None = spec("interleaved sweeps: the run's place in the session's order")
    validity: JSON | None = spec('the run\'s own figures of §4 "Trust"')
    expected_cached: int | None = spec("depth runs: the cached count a valid run reports")
    cache_tolerance: Any = spec("depth runs: [below, above] the cached count may differ by", kind="json", checked=False)
    new_tokens: int | None = spec("depth runs: prompt tokens beyond the cached ones")
    depth_cache: str | None = spec("depth runs: why the cache was not checked")
    # several nodes (`--power-from`, power/fleet.py): who drew what in this window
    power_by_node: Any = spec(
        "several nodes: each node's part of the window (node, power_w, energy_j, method, channel, edge_ms)",
        kind="json",
        checked=False,
    )
    nodes_missing: list[str] | None = spec("several nodes: those that gave no power (the summed figures are n/a)")
    more: JSON = field(default_factory=dict)  # keys a newer file adds


@dataclass
class Run:
    """One measured request (or one concurrency level) of a variant."""

    RECORD: ClassVar[bool] = True  # checked as a run: its numbers ranged only where it is valid

    phase: str = spec("precmon.core.phases", required=True)
    prompt_tokens: int | None = spec("from the server's usage")
    output_tokens: int | None = spec("from the server's usage")
    ttft_s: float | None = spec("request sent → first chunk with text, s", derived=True)
    decode_tok_s: float | None = spec("(completion tokens − 1) ÷ (last − first text chunk)", derived=True)
    prefill_ms_per_token: float | None = spec("TTFT × 1000 ÷ prompt tokens", derived=True)
    itl_ms_p50: float | None = spec("chunk gap p50, ms", derived=True)
    itl_ms_p99: float | None = spec("chunk gap p99, ms", derived=True)
    power_w: float | None = spec("average power over the run's window, W")
    energy_j: float | None = spec("energy over the run's window, J")
    cached_tokens: int | None = spec("prompt tokens the server served from its cache")
    server_timings: JSON = spec("what the server reported", factory=dict)
    ok: bool = spec("valid: counts in medians (always written)", default=True, always=True)
    reason: str | None = spec("why the run is invalid")
    target_prompt_tokens: int | None = spec("the prompt size asked for")
    repeat: int | None = spec("the repeat's index, from 0")
    extra: RunExtra = spec("the run's other figures", factory=RunExtra)
    depth_tokens: int | None = spec("context depth: tokens already in context, cached")
    concurrency: int | None = spec("older files: the stream count", legacy=True)
    more: JSON = field(default_factory=dict)


@dataclass
class ServerInfo:
    """A variant's `server`: what it was measured on."""

    kind: str | None = spec("the server kind (precmon.servers.kinds)")
    url: str | None = spec("where it answered (credentials redacted)")
    endpoint: str | None = spec("completions | chat")
    version: str | None = spec("the server's version, where it tells")
    flags: JSON | None = spec("how the server says it runs (servers.base.ReportsFlags)")
    flags_from: str | None = spec("where `flags` came from")
    launch_flags: JSON | None = spec("what a launched variant's argv says (sweep/argv_flags.py)")
    more: JSON = field(default_factory=dict)


@dataclass
class PowerIdle:
    """A variant's idle window."""

    power_w: float | None = spec("average idle power, W")
    channel: str | None = spec("the headline channel's id")
    windows: Any = spec("every channel's window", kind="json", checked=False)
    power_w_per_s: list[float] | None = spec("headline watts per second of the window")
    by_node: Any = spec("several nodes: each node's part, as a run's `extra.power_by_node`", kind="json", checked=False)
    nodes_missing: list[str] | None = spec("several nodes: those that gave no idle power (power_w is then n/a)")
    more: JSON = field(default_factory=dict)


@dataclass
class NodePower:
    """One node's part of a variant's power (`--power-from`: the model served over several machines)."""

    node: str = spec("the node's name (its exporter's `host`), else its URL's host:port", required=True)
    url: str | None = spec("its exporter's URL; absent for the machine precmon ran on")
    power_idle_w: float | None = spec("its average power over the idle window, W")
    power_decode_w: float | None = spec("median over the decode runs of its average power, W")
    power_prefill_w: float | None = spec("its energy over all prefill runs ÷ their time, W")
    energy_decode_j_per_token: float | None = spec("median over the decode runs of its energy ÷ their tokens")
    energy_idle_j: float | None = spec("its energy over the idle window, J")
    energy_decode_j: float | None = spec("its energy over every measured decode window, J")
    energy_prefill_j: float | None = spec("its energy over every measured prefill window, J")
    windows_missing: int | None = spec("windows it gave no power for (each made the sum n/a: `node-missing:`)")
    edge_ms: float | None = spec(
        "the most its windows' edges may sit off this machine's: half its reads' round trips, ms"
    )
    more: JSON = field(default_factory=dict)


# ---- issue 36: the box checked before measuring, and the memory a precision buys --------------
@dataclass
class Preflight:
    """The box as checked before a bench or sweep started (docs/design.md §4 "Preflight")."""

    findings: list[str] = spec(
        "one line per finding, each starting with its code; [] on a box fit to measure", factory=list, always=True
    )
    checks: JSON = spec("check → ok, the code it found, or n/a with why", factory=dict, always=True)
    facts: JSON | None = spec("the figures read: power limits, clock reasons, governor, swap, HugePages")
    more: JSON = field(default_factory=dict)


@dataclass
class Fit:
    """How many users, and how long a context, fit in this box's memory at this variant's
    precision (docs/design.md §4 "Memory fit"), from what was measured."""

    usable_bytes: int | None = spec("memory a server may hold here, bytes", ranged=False)
    basis: str | None = spec("where usable_bytes came from")
    weights_bytes: int | None = spec("the model's weights, bytes", ranged=False)
    weights_from: str | None = spec("where weights_bytes came from")
    kv_bytes_per_token: int | None = spec("the KV cache's bytes per context token (kv_bytes_per_token)")
    users_at: JSON = spec("context tokens → how many sequences of it fit", factory=dict, always=True)
    context_for_users: JSON = spec(
        "users → the longest context each of them can have, tokens", factory=dict, always=True
    )
    server_capacity_tokens: int | None = spec("the KV tokens the server allocated (kv_capacity_tokens)")
    check: str | None = spec("the server's own allocation set against the fit")
    reason: str | None = spec("n/a: the input that is missing, where the figures are null")
    more: JSON = field(default_factory=dict)


@dataclass
class Quality:
    """A variant's `quality`: what its quality scores were measured on (docs/design.md §4 "Quality")."""

    baseline: str | None = spec("the baseline's label: the reference the scores are against")
    positions: int | None = spec("positions scored")
    top_k: int | None = spec("the most log-probabilities asked for a position")
    text: str | None = spec('the evaluation text: "built-in" or the file\'s name')
    text_sha256: str | None = spec("the text's SHA-256")
    seconds: float | None = spec("the scoring's wall time, s")
    baseline_topk_mass: float | None = spec("mean probability the baseline's listed tokens hold (0-1)")
    topk_target_mass: float | None = spec("adaptive top-K: the share of the probability aimed at")
    top_k_listed_mean: float | None = spec("adaptive top-K: tokens listed per position, on average")
    baseline_ppl: float | None = spec("the baseline's perplexity on the same positions (other variants)")
    notes: list[str] | None = spec("what the scores need said (a short text, a capped top-K, ...)")
    ppl_reason: str | None = spec("why perplexity is n/a")
    reason: str | None = spec("why the quality cells are n/a (also a note in `errors`)")
    # which positions were scored and how the unlisted tail was counted (measure/quality/windows.py, score.py)
    convention: str | None = spec(
        "llama-perplexity | from-start: which positions were scored; files without it scored from-start",
        choices=QUALITY_CONVENTIONS,
    )
    windows: int | None = spec("llama-perplexity convention: the windows scored")
    window_tokens: int | None = spec("llama-perplexity convention: the tokens of a window")
    kld_tail_nats: float | None = spec("the part of the mean KL that estimates the unlisted tokens, nats")
    # a sweep's variant that found no reference: --resume measures it again (sweep/resume.py)
    reference: str | None = spec('"missing": the baseline had no reference to give', choices=("missing",))
    more: JSON = field(default_factory=dict)

    @property
    def scored_as(self) -> str:
        """The convention the scores used: a file from before the key scored from the text's start."""
        return self.convention or QUALITY_CONVENTIONS[1]


@dataclass
class VariantResult:
    """Everything measured for one precision variant: its own keys, then what it carries."""

    RECORD: ClassVar[bool] = True

    label: str = spec("the column's name", required=True)
    precision: str | None = spec("precision family (core/precision.py)", always=True)
    model: str | None = spec("the model asked for", always=True)
    server: ServerInfo = spec("the server it was measured on", factory=ServerInfo, always=True)
    status: str = spec("ok | partial | failed", default="ok", always=True, choices=STATUSES)
    errors: list[str] = spec("one-line strings, decisive cause first", factory=list, always=True)
    metrics: JSON = spec(
        "keys and shapes from precmon.core.registry", factory=empty_metrics, always=True, kind="metrics"
    )
    runs: list[Run] = spec("every measured request", factory=list, always=True)
    model_info: JSON | None = spec("name, size_bytes, n_params, context_tokens, ...")
    memory_source: str | None = spec("where memory_gb came from")
    power_idle: PowerIdle | None = spec("the idle window")
    chat_template_tokens: int | None = spec("chat endpoint: the template's own tokens")
    chat_template_from: str | None = spec("chat endpoint: how they were counted")
    partial_reason: str | None = spec("partial variants: why")
    metrics_stats: JSON | None = spec("row key → n, median, mean, stdev, cv, ci95", kind="stats")
    warnings: list[str] | None = spec("one-line strings, each starting with a code; [] when clean")
    validity: JSON | None = spec('the figures of §4 "Trust"')
    repeats_stopped_by: JSON | None = spec("with target_ci_pct: what stopped each phase's repeats")
    repeats_n: JSON | None = spec("with target_ci_pct: the runs made per phase and size")
    strategy: str | None = spec("sweeps: launch | model | url")
    launch: Any = spec("launched variants: the argv", kind="json", checked=False)
    kv_cache_dtype: str | None = spec("the declared KV cache type")
    kv_cache_read_back: JSON | None = spec("the KV cache type as the server tells it")
    kv_memory: JSON | None = spec("sweep/kv_memory.py: the figures and `from`, or `reason`")
    quality: Quality | None = spec("quality scoring: what the scores were measured on")
    quality_reference: JSON | None = spec("bench --quality: the precmon.quality_ref/2 object")
    answer: JSON | None = spec("the greedy answer to the fixed question (measure/answer.py)")
    weights: JSON | None = spec("the GGUF header's tensor types, shares, bits_per_weight, main_type, file_type")
    compute_path: JSON | None = spec("backend, device, capability, engine, kernel (measure/labels/true_label.py)")
    model_size_bytes: float | None = spec("read for the roofline; precmon does not write it", ranged=False)
    # several nodes (`--power-from`): the usual power metrics are the nodes' sum
    power_by_node: list[NodePower] | None = spec("several nodes: each node's watts and energy, this machine first")
    # What a resumed sweep compares before it adds anything (sweep/resume.py): the plan that
    # measured this variant, so a changed plan is never mixed into the same table.
    plan: JSON | None = spec(
        "sweeps: the plan that measured it (settings, url, server, model, precision, launch, kv_cache_dtype, "
        "env_sha256, quality)"
    )
    fit: Fit | None = spec('memory fit (§4 "Memory fit"): users and context that fit here')
    more: JSON = field(default_factory=dict)
    # Entries of `errors` that explain a null metric but did not make the variant fail ("no
    # tokenizer endpoint", "prefill 16384 skipped"); in memory only, see `decisive_first`.
    notes: list[str] = field(default_factory=list, repr=False, compare=False)

    def note(self, text: str) -> None:
        """Add an entry to `errors` that is a note, not a cause of failure."""
        self.notes.append(text)
        self.errors.append(text)

    def warn(self, line: str) -> None:
        """Add a warning (a line starting with its code), once."""
        if self.warnings is None:
            self.warnings = []
        if line not in self.warnings:
            self.warnings.append(line)

    def decisive_first(self) -> None:
        """Order `errors` causes first, notes after (each in the order they came).

        A failed column shows `errors[0]` (report, TUI, headless lines): that must be the HTTP 500
        or the crash, not the note about the missing tokenizer that happened to come first.
        """
        causes = [e for e in self.errors if e not in self.notes]
        self.errors[:] = causes + [e for e in self.errors if e in self.notes]

    @property
    def causes(self) -> list[str]:
        return [e for e in self.errors if e not in self.notes]


@dataclass
class Gpu:
    name: str | None = spec("the GPU's name (NVML)")
    id: str | None = spec("its power channel's id")
    more: JSON = field(default_factory=dict)


@dataclass
class PowerSource:
    id: str | None = spec("the channel's id")
    kind: str | None = spec("nvml, amdgpu, spbm, hwmon, jetson, tegrastats, rapl, host")
    label: str | None = spec("the channel's label")
    scope: str | None = spec("gpu, module, soc, package, system, cpu")
    method: str | None = spec("counter | integrated")
    more: JSON = field(default_factory=dict)


@dataclass
class HostNode:
    """Another machine whose power the measurement added (`--power-from URL`)."""

    name: str = spec("the node's name, as `power_by_node` names it", required=True)
    url: str | None = spec("its exporter's URL (credentials redacted)")
    exporter: str | None = spec("precmon | dcgm", choices=("precmon", "dcgm"))
    power_sources: list[PowerSource] = spec("its channels with watts, as its exporter serves them", factory=list)
    unmeasured: str | None = spec("why its power is not measured although it answered (no power source)")
    problem: str | None = spec("why it could not be read when the measurement began")
    more: JSON = field(default_factory=dict)


@dataclass
class Host:
    """What the results were measured on."""

    hostname: str | None = spec("the host's name")
    platform: str | None = spec("platform.platform()")
    cpu_count: int | None = spec("logical CPUs")
    gpus: list[Gpu] = spec("NVML's GPUs", factory=list)
    power_sources: list[PowerSource] = spec("the channels measured, widest scope first", factory=list)
    sampler: JSON | None = spec("headless sweeps: the sampling rates achieved")
    fingerprint: Any = spec("measure/trust/fingerprint.py; any JSON shape from disk", kind="json", checked=False)
    nodes: list[HostNode] | None = spec("the other machines whose power was added (`--power-from`)")
    preflight: Preflight | None = spec('the box checked before measuring (§4 "Preflight")')
    more: JSON = field(default_factory=dict)


@dataclass
class ResultsDoc:
    """A results file: where it was measured, the plan, and the variants."""

    schema: str = spec("precmon.results/1", default=SCHEMA, required=True, checked=False, always=True)
    created: str | None = spec("UTC, seconds", always=True)
    precmon_version: str | None = spec("the version that wrote it", always=True)
    host: Host = spec("what it was measured on", factory=Host, always=True)
    settings: JSON = spec("the plan (its keys: the plan-settings table)", factory=dict, always=True)
    variants: list[VariantResult] = spec("one per column", factory=list, required=True, always=True)
    non_finite: list[str] | None = spec("where a non-finite float was written as null")
    more: JSON = field(default_factory=dict)
