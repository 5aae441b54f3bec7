"""KV cache memory of a variant: bytes per context token, how many tokens the cache holds, the
longest context and the number of sequences that fit (docs/design.md §4 "KV cache memory", §5).

"FP8 KV halves KV memory and fits longer contexts or more users" is only a number where the
server says how big its cache is; precmon does not estimate it from the model. The servers say:

- llama-server, at `-lv 4` (not at its default verbosity), while loading:
  `llama_kv_cache: size =   16.00 MiB (   512 cells,   8 layers,  2/2 seqs), K (f16): ...`.
  `cells` is per stream and `a/b seqs` is n_seq_max/n_stream: without a unified cache
  (`-kvu`) each of the -np slots has its own stream of `cells` cells, so the size covers
  cells × n_stream tokens. `n_ctx_slot = N` (logged at any verbosity) is the longest request.
- vLLM, at startup: `GPU KV cache size: 262,144 tokens` (`CPU KV cache size` on the CPU
  backend), `Maximum concurrency for 2,048 tokens per request: 128.00x`, and the memory given
  to it (`Available KV cache memory: 12.3 GiB`, on CPU `Explicitly set (1.0/13.96) GiB for KV
  cache`); a server precmon did not launch gives `num_gpu_blocks` × `block_size` through
  `vllm:cache_config_info` (server.flags).

The log is the launched server's own output and untrusted: read bounded, matched by bounded
patterns, numbers range-checked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.core.schema import MAX_VALUE

LOG_LIMIT_BYTES = 4 * 2**20  # the lines come at load time, near the start of the log
MAX_TOKENS = 10**12
LLAMA_FROM = "the server's log (llama_kv_cache)"
VLLM_FROM = "the server's log (vLLM KV cache size)"
FLAGS_FROM = "server.flags (vllm:cache_config_info num_gpu_blocks × block_size)"

_LLAMA = re.compile(
    r"llama_kv_cache: size =\s*(?P<mib>\d{1,9}(?:\.\d{1,6})?) MiB \(\s*(?P<cells>\d{1,12}) cells,"
    r"\s*\d{1,6} layers,\s*\d{1,6}/(?P<streams>\d{1,6}) seqs\)"
)
_LLAMA_SLOT = re.compile(r"n_ctx_slot = (?P<ctx>\d{1,12})")
_VLLM_SIZE = re.compile(r"\b[A-Z]{3} KV cache size: (?P<tokens>\d{1,3}(?:,\d{3}){0,4}|\d{1,13}) tokens")
_VLLM_CONC = re.compile(
    r"Maximum concurrency for (?P<ctx>\d{1,3}(?:,\d{3}){0,4}|\d{1,13}) tokens per request: "
    r"(?P<x>\d{1,12}(?:\.\d{1,6})?)x"
)
_VLLM_GIB = re.compile(
    r"Available KV cache memory: (?P<avail>\d{1,6}(?:\.\d{1,6})?) GiB"
    r"|Explicitly set \((?P<cpu>\d{1,6}(?:\.\d{1,6})?)/\d{1,6}(?:\.\d{1,6})? ?\) GiB for KV cache"
)


@dataclass(frozen=True)
class KvMemory:
    """What the server said about its KV cache; None where it did not say.

    Attributes:
        bytes_per_token: KV cache bytes per context token (all layers, K and V).
        capacity_tokens: context tokens the whole cache holds (all sequences together).
        longest_context_tokens: the longest single sequence the cache can hold.
        context_tokens: the longest request the server is configured to take.
        source: where the figures came from (one of the *_FROM texts).
    """

    bytes_per_token: int | None = None
    capacity_tokens: int | None = None
    longest_context_tokens: int | None = None
    context_tokens: int | None = None
    reported_concurrency: float | None = None  # vLLM's own "Maximum concurrency ...: Y x"
    source: str = ""

    def sequences_that_fit(self, tokens: int) -> int | None:
        """How many sequences of `tokens` context tokens fit in the cache at once (None: unknown).

        A sequence lives in one stream: streams × (tokens per stream // tokens)."""
        cap, per_stream = self.capacity_tokens, self.longest_context_tokens
        if cap is None or per_stream is None or tokens <= 0 or per_stream <= 0:
            return None
        return (cap // per_stream) * (per_stream // tokens)

    def max_concurrency_at_ctx(self) -> float | None:
        """Sequences of the server's configured context that fit: vLLM's own figure, else computed."""
        if self.reported_concurrency is not None:
            return self.reported_concurrency
        fits = self.sequences_that_fit(self.context_tokens) if self.context_tokens else None
        return float(fits) if fits is not None else None


def _int(text: str) -> int | None:
    value = int(text.replace(",", ""))
    return value if 0 < value <= MAX_TOKENS else None


def _per_token(cache_bytes: float, capacity_tokens: int) -> int | None:
    """Bytes per token, None beyond what a results file holds (MAX_VALUE): a log claiming a
    999999999 MiB cache of 1 cell would write a metric precmon's own loader then refuses."""
    value = round(cache_bytes / capacity_tokens)
    return value if 0 < value <= MAX_VALUE else None


def llama_kv_memory(text: str) -> KvMemory | None:
    """From a llama-server log (`-lv 4`); None without its `llama_kv_cache: size` line."""
    m = _LLAMA.search(text)
    if not m:
        return None
    cells, streams = _int(m["cells"]), _int(m["streams"])
    if cells is None or streams is None:
        return None
    capacity = cells * streams
    slot = _LLAMA_SLOT.search(text)
    return KvMemory(
        bytes_per_token=_per_token(float(m["mib"]) * 2**20, capacity),
        capacity_tokens=capacity,
        longest_context_tokens=cells,
        context_tokens=_int(slot["ctx"]) if slot else None,
        source=LLAMA_FROM,
    )


def vllm_kv_memory(text: str) -> KvMemory | None:
    """From a vLLM server log; None without its "KV cache size: N tokens" line."""
    m = _VLLM_SIZE.search(text)
    capacity = _int(m["tokens"]) if m else None
    if capacity is None:
        return None
    conc = _VLLM_CONC.search(text)
    gib = _VLLM_GIB.search(text)
    size = float(gib["avail"] or gib["cpu"]) * 2**30 if gib else None
    return KvMemory(
        bytes_per_token=_per_token(size, capacity) if size else None,
        capacity_tokens=capacity,
        longest_context_tokens=capacity,  # paged: one request may take every block
        context_tokens=_int(conc["ctx"]) if conc else None,
        reported_concurrency=float(conc["x"]) if conc else None,
        source=VLLM_FROM,
    )


def flags_kv_memory(flags: dict[str, Any]) -> KvMemory | None:
    """From vLLM's `cache_config_info` labels: capacity only (num_gpu_blocks × block_size)."""
    blocks, size = flags.get("num_gpu_blocks"), flags.get("block_size")
    if not (isinstance(blocks, int) and isinstance(size, int)) or isinstance(blocks, bool) or blocks <= 0 or size <= 0:
        return None
    capacity = blocks * size
    if capacity > MAX_TOKENS:
        return None
    return KvMemory(capacity_tokens=capacity, longest_context_tokens=capacity, source=FLAGS_FROM)


def read_log(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(LOG_LIMIT_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None


def kv_memory(server_flags: object, log_path: Path | None) -> KvMemory | str:
    """The variant's KV memory, or the one-line reason it is not known."""
    text = read_log(log_path) if log_path is not None else None
    found = (llama_kv_memory(text) or vllm_kv_memory(text)) if text else None
    if found is None and isinstance(server_flags, dict):
        found = flags_kv_memory(server_flags)
    if found is not None:
        return found
    if text is not None:
        return "the server's log names no KV cache size (llama-server logs it at -lv 4; vLLM at startup)"
    return "not reported: KV memory comes from a launched server's log or vLLM's cache_config_info"


def kv_record(found: KvMemory | str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(metrics, kv_memory) for a variant: the registry's `kv_*` metrics (docs/design.md §4) and
    its `kv_memory` record (§5): the figures with `context_tokens` and `from`, or `{"reason"}`."""
    if isinstance(found, str):
        return {}, {"reason": found}
    metrics: dict[str, Any] = {
        KEY.kv_bytes_per_token: found.bytes_per_token,
        KEY.kv_capacity_tokens: found.capacity_tokens,
        KEY.kv_longest_context_tokens: found.longest_context_tokens,
        KEY.kv_max_concurrency_at_ctx: found.max_concurrency_at_ctx(),
    }
    record: dict[str, Any] = {k.removeprefix("kv_"): v for k, v in metrics.items()}
    record |= {"context_tokens": found.context_tokens, "from": found.source}
    return metrics, record
