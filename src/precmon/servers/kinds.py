"""The server kinds precmon speaks to: one record per kind, holding what precmon can do with it.

Each kind names its adapter class, the ports it usually listens on and its place in the
detection order (most specific probe first; a generic `{"version": ...}` at `/version` last,
since several servers could answer it; `openai` is the fallback, never probed), and what the
layers above need to know of it: how it gives quality, whose log names its compute path, where
its live tok/s and its Prometheus gauges are, how its prefix cache counts, whether the demo can
start one. Every module outside `precmon.servers` asks `capabilities(kind)` instead of comparing
kind names (`tests/servers/test_kind_names_owned.py`). This module imports no adapter and no
httpx, so `precmon --help` stays fast: `ServerKind.adapter()` imports the class when a server is
opened, `ServerKind.log_reader_fn()` the log reader when a log is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from precmon.core.server_names import DISPLAY_NAMES

if TYPE_CHECKING:
    from precmon.servers.adapter import Adapter
    from precmon.servers.compute_path import ComputePath


#: The request shapes every kind can be benched with (`--endpoint`, sweep key `endpoint`; docs/design.md
#: §3): a raw prompt, or the prompt as one user message in the model's chat template. Here, not in
#: `servers.base`, so the CLI parser can offer them without importing an adapter module.
ENDPOINTS = ("completions", "chat")

#: How a kind gives teacher-forced distributions (docs/design.md §4 "Quality" table): one request
#: per position (llama.cpp), `prompt_logprobs` in one request (vLLM), or the legacy completions'
#: `echo` + `logprobs` (a plain OpenAI-compatible server; it lists at most 5 per position).
QUALITY_METHODS = ("per-position", "prompt_logprobs", "echo")
#: Where a kind's live tok/s comes from (servers/watch/live_rate.py): a `/metrics` counter that
#: moves per engine step, or `/slots`' per-slot decoded counts.
LIVE_METRICS, LIVE_SLOTS = "metrics", "slots"
NO_LIVE_COUNTER = "this server exposes no counter that moves during a request (/metrics per step, or /slots)"
#: A reported KV block size above this is not believed (servers report `block_size` in server.flags).
MAX_BLOCK_TOKENS = 4096


@dataclass(frozen=True)
class KvLog:
    """How a launched server is made to log its KV cache's size (sweep/kv_memory.py reads it).

    Attributes:
        programs: the executables' names that start such a server (`llama-server`).
        verbosity_flags: flags that set its log level: one given by the user is left as it is.
        flags: what precmon adds where none is given.
    """

    programs: tuple[str, ...]
    verbosity_flags: tuple[str, ...]
    flags: tuple[str, ...]


# llama-server logs `llama_kv_cache: size = …` only at -lv 4 and above, not at its default level.
LLAMA_KV_LOG = KvLog(("llama-server",), ("-lv", "--verbosity", "--log-verbosity", "-v", "--verbose"), ("-lv", "4"))


@dataclass(frozen=True)
class MetricNames:
    """Where each live figure lives in one kind's `/metrics` (alternatives: newest name first)."""

    generation_tokens: tuple[str, ...] = ()
    prompt_tokens: tuple[str, ...] = ()
    generation_tokens_hist_sum: tuple[str, ...] = ()  # TGI counts tokens in a histogram's _sum
    prompt_tokens_hist_sum: tuple[str, ...] = ()
    decode_busy_seconds: tuple[str, ...] = ()  # llama.cpp: time spent generating
    ttft_hist: tuple[str, ...] = ()
    itl_hist: tuple[str, ...] = ()
    running: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    kv_usage_ratio: tuple[str, ...] = ()
    prefix_hits: tuple[str, ...] = ()
    prefix_queries: tuple[str, ...] = ()
    prefix_hit_ratio_gauge: tuple[str, ...] = ()


@dataclass(frozen=True)
class ServerKind:
    """One kind of server: its name (`--server NAME`), adapter, where it usually listens, and what
    precmon can do with it (the defaults: nothing, said why where a reader shows it)."""

    name: str
    module: str  # precmon.servers.protocols.<module>
    class_name: str
    ports: tuple[int, ...] = ()
    detect_order: int | None = None  # None: never probed (the generic fallback)
    quality: str | None = None  # one of QUALITY_METHODS; None: quality is n/a on it
    no_quality: str = "not researched yet"  # why, where `quality` is None
    log_reader: str | None = None  # "module:function" under precmon.servers: its log → a ComputePath
    log_not_launched: str = ""  # why a server of it that precmon did not start has no compute path
    live_rate: str | None = None  # LIVE_METRICS or LIVE_SLOTS; None: no counter moves mid-request
    no_live_rate: str = NO_LIVE_COUNTER  # why, where `live_rate` is None
    gauges: MetricNames = MetricNames()
    metrics_prefix: str | None = None  # its metric names' prefix: what a scrape of an unknown kind is
    metrics_hint: str = ""  # how to turn its `/metrics` on, where it is off by default
    metrics_by_model: bool = False  # `/metrics?model=NAME` is one model's (llama.cpp's router mode)
    cache_block_tokens: int = 1  # the prefix cache keeps whole blocks of this many tokens...
    block_size_flag: str | None = None  # ...unless server.flags[this] reports the block size
    demo_order: int | None = None  # its place among `precmon demo --engine`'s choices; None: no demo
    kv_log: KvLog | None = None  # a launched server's log states its KV cache only with these flags

    @property
    def display(self) -> str:
        """The kind's name in a table a person reads (core/server_names.py)."""
        return DISPLAY_NAMES.get(self.name, self.name)

    def adapter(self) -> type[Adapter]:
        cls = getattr(importlib.import_module(f"precmon.servers.protocols.{self.module}"), self.class_name)
        assert cls.kind == self.name, f"{self.class_name}.kind is {cls.kind!r}, registered as {self.name!r}"
        return cls

    def log_reader_fn(self) -> Callable[[str], ComputePath | None] | None:
        """The function that reads this kind's server log into a compute path; None: not read."""
        if self.log_reader is None:
            return None
        module, _, function = self.log_reader.partition(":")
        found = importlib.import_module(f"precmon.servers.{module}")
        reader: Callable[[str], ComputePath | None] = getattr(found, function)
        return reader

    def prefix_block_tokens(self, flags: Mapping[str, object]) -> int:
        """How many tokens the prefix cache keeps or drops at once: the block size the server
        reports (`server.flags`), else the kind's default (1: it counts exactly)."""
        size = flags.get(self.block_size_flag) if self.block_size_flag else None
        valid = isinstance(size, int) and not isinstance(size, bool) and 0 < size <= MAX_BLOCK_TOKENS
        return size if valid and isinstance(size, int) else self.cache_block_tokens


VLLM_GAUGES = MetricNames(
    generation_tokens=("vllm:generation_tokens_total",),
    prompt_tokens=("vllm:prompt_tokens_total",),
    ttft_hist=("vllm:time_to_first_token_seconds",),
    itl_hist=("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    running=("vllm:num_requests_running",),
    waiting=("vllm:num_requests_waiting",),
    kv_usage_ratio=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    prefix_hits=("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    prefix_queries=("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    prefix_hit_ratio_gauge=("vllm:gpu_prefix_cache_hit_rate",),
)
LLAMACPP_GAUGES = MetricNames(
    generation_tokens=("llamacpp:tokens_predicted_total",),
    prompt_tokens=("llamacpp:prompt_tokens_total",),
    decode_busy_seconds=("llamacpp:tokens_predicted_seconds_total",),
    running=("llamacpp:requests_processing",),
    waiting=("llamacpp:requests_deferred",),
    kv_usage_ratio=("llamacpp:kv_cache_usage_ratio",),
)
SGLANG_GAUGES = MetricNames(
    generation_tokens=("sglang:generation_tokens_total",),
    prompt_tokens=("sglang:prompt_tokens_total",),
    ttft_hist=("sglang:time_to_first_token_seconds",),
    itl_hist=("sglang:inter_token_latency_seconds", "sglang:time_per_output_token_seconds"),
    running=("sglang:num_running_reqs",),
    waiting=("sglang:num_queue_reqs",),
    kv_usage_ratio=("sglang:token_usage",),
    prefix_hit_ratio_gauge=("sglang:cache_hit_rate",),
)
TGI_GAUGES = MetricNames(
    generation_tokens_hist_sum=("tgi_request_generated_tokens",),
    prompt_tokens_hist_sum=("tgi_request_input_length",),
    itl_hist=("tgi_request_mean_time_per_token_duration",),
    running=("tgi_batch_current_size",),
    waiting=("tgi_queue_size",),
)

# In discovery order: with several servers up, the TUI picks the first healthy one listed here.
KINDS: tuple[ServerKind, ...] = (
    ServerKind("openai", "openai", "OpenAIServer", quality="echo"),
    ServerKind(
        "vllm",
        "vllm",
        "VLLMServer",
        (8000,),
        detect_order=5,
        quality="prompt_logprobs",
        log_reader="vllm_compute_path:from_vllm_log",
        log_not_launched=(
            "vLLM names its kernels only in its own start-up log, and precmon did not start this server "
            "(a sweep variant with `launch` lets precmon read it)"
        ),
        live_rate=LIVE_METRICS,
        gauges=VLLM_GAUGES,
        metrics_prefix="vllm:",
        cache_block_tokens=128,  # its CPU back end's default block, where the server reports none
        block_size_flag="block_size",
        demo_order=1,
    ),
    ServerKind(
        "llamacpp",
        "llamacpp",
        "LlamaCppServer",
        (8080,),
        detect_order=0,
        quality="per-position",
        log_reader="compute_path:from_llama_log",
        log_not_launched="the server's log is not precmon's to read (it did not start this server)",
        live_rate=LIVE_SLOTS,
        gauges=LLAMACPP_GAUGES,
        metrics_prefix="llamacpp:",
        metrics_hint=" (start llama-server with --metrics)",
        metrics_by_model=True,
        demo_order=0,
        kv_log=LLAMA_KV_LOG,
    ),
    ServerKind(
        "ollama",
        "ollama",
        "OllamaServer",
        (11434,),
        detect_order=2,
        no_quality="Ollama gives log-probs of generated tokens only and takes text, not token ids, as a prompt",
        no_live_rate="Ollama reports token counts only when a request ends (no /metrics, no per-slot counts)",
    ),
    ServerKind(
        "sglang",
        "sglang",
        "SGLangServer",
        (30000,),
        detect_order=1,
        live_rate=LIVE_METRICS,
        gauges=SGLANG_GAUGES,
        metrics_prefix="sglang:",
        metrics_hint=" (start SGLang with --enable-metrics)",
    ),
    ServerKind(
        "lmstudio",
        "lmstudio",
        "LMStudioServer",
        (1234,),
        detect_order=3,
        no_live_rate="LM Studio reports token counts only when a request ends",
    ),
    ServerKind(
        "tgi",
        "tgi",
        "TGIServer",
        (3000,),
        detect_order=4,
        no_live_rate="TGI counts generated tokens only when a request ends",
        gauges=TGI_GAUGES,
        metrics_prefix="tgi_",
    ),
)
FALLBACK = "openai"

KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
BY_NAME: dict[str, ServerKind] = {k.name: k for k in KINDS}
DETECTION_ORDER: tuple[ServerKind, ...] = tuple(
    sorted((k for k in KINDS if k.detect_order is not None), key=lambda k: k.detect_order or 0)
)
USUAL_PORTS: dict[int, str] = {port: k.name for k in KINDS for port in k.ports}
#: `precmon demo --engine`'s choices, the default first: the kinds the test bed can start.
DEMO_ENGINES: tuple[str, ...] = tuple(
    k.name for k in sorted((k for k in KINDS if k.demo_order is not None), key=lambda k: k.demo_order or 0)
)


def capabilities(kind: str | None) -> ServerKind:
    """The record of `kind`. A kind precmon does not know (an old results file's, None before
    detection) gets a record with none of the abilities, each with the defaults' reasons."""
    known = BY_NAME.get(kind or "")
    return known if known is not None else ServerKind(kind or "", "", "")


def with_kv_log(argv: list[str]) -> list[str]:
    """`argv` with the flags that make its server log its KV cache's size (`KvLog`), where its
    program is one that needs them and no log level of the user's is given; else `argv` as is."""
    program = Path(argv[0]).name if argv else ""
    record = next((k.kv_log for k in KINDS if k.kv_log is not None and program in k.kv_log.programs), None)
    if record is None:
        return list(argv)
    given = {a.split("=", 1)[0] for a in argv[1:]}
    return list(argv) if given & set(record.verbosity_flags) else [*argv, *record.flags]
