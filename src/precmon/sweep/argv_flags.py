"""The settings a launched server's argv states, for `variant.server.launch_flags` (docs/design.md §5).

A server tells only part of how it runs (llama-server's `/props` has no batch size or KV cache
type, vLLM's `/metrics` no dtype or quantization), but a variant that precmon launched has its
whole command line. These are the flags that change speed, precision or memory; anything else
in the argv stays only in `launch`. The argv is credential-redacted before it is read.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from precmon.core.metric_keys import KEY
from precmon.sweep.kv_memory import llama_kv_memory
from precmon.untrusted import redact_argv

# option spelling → our key; options that take a value
VALUE_FLAGS = {
    # llama-server
    "-c": "ctx_size",
    "--ctx-size": "ctx_size",
    "-b": "batch_size",
    "--batch-size": "batch_size",
    "-ub": "ubatch_size",
    "--ubatch-size": "ubatch_size",
    "-ctk": "cache_type_k",
    "--cache-type-k": "cache_type_k",
    "-ctv": "cache_type_v",
    "--cache-type-v": "cache_type_v",
    "-np": "parallel",
    "--parallel": "parallel",
    "-ngl": "n_gpu_layers",
    "--n-gpu-layers": "n_gpu_layers",
    "-t": "threads",
    "--threads": "threads",
    # vLLM / SGLang
    "--dtype": "dtype",
    "-q": "quantization",
    "--quantization": "quantization",
    "--kv-cache-dtype": "kv_cache_dtype",
    "--max-model-len": "max_model_len",
    "--max-num-seqs": "max_num_seqs",
    "--max-num-batched-tokens": "max_num_batched_tokens",
    "-tp": "tensor_parallel_size",
    "--tensor-parallel-size": "tensor_parallel_size",
    "--gpu-memory-utilization": "gpu_memory_utilization",
}
# options that are switches: spelling → (key, value)
SWITCHES = {
    "--enable-prefix-caching": ("prefix_caching", True),
    "--no-enable-prefix-caching": ("prefix_caching", False),
    "--enforce-eager": ("enforce_eager", True),
    "--no-mmap": ("mmap", False),
}
# llama.cpp's flash attention: a switch in older builds, `-fa on|off|auto` in newer ones
FLASH_ATTN = ("-fa", "--flash-attn")
FLASH_ATTN_VALUES = ("on", "off", "auto", "true", "false", "1", "0")
VALUE_LIMIT = 80


def _value(text: str) -> object:
    text = text[:VALUE_LIMIT]
    try:
        return int(text)
    except ValueError:
        return text


def _is_flag(text: str) -> bool:
    """`-ctv`, `--port`: a flag, not a value (`-1` is a value)."""
    return text.startswith("-") and not text[1:2].isdigit()


def flags_from_argv(argv: list[str]) -> dict[str, object]:
    """The known speed/precision/memory flags of a launch argv (`--x=v` and `--x v` forms).

    A value flag with no value after it (the argv's end, or another flag next) is left out, and the
    flag after it is read as a flag, not as its value.
    """
    args = redact_argv(list(argv))
    out: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in VALUE_FLAGS:
            if eq:
                out[VALUE_FLAGS[name]] = _value(inline)
            elif i + 1 < len(args) and not _is_flag(args[i + 1]):
                out[VALUE_FLAGS[name]] = _value(args[i + 1])
                i += 1
        elif name in FLASH_ATTN:
            if eq:
                out["flash_attn"] = inline[:VALUE_LIMIT]
            elif i + 1 < len(args) and args[i + 1].lower() in FLASH_ATTN_VALUES:
                out["flash_attn"] = args[i + 1].lower()
                i += 1
            else:
                out["flash_attn"] = True
        elif arg in SWITCHES:
            key, value = SWITCHES[arg]
            out[key] = value
        i += 1
    return out


# ---- KV cache type: declared (sweep key `kv_cache_dtype`), launched, read back ------------------
#: llama-server's KV cache type when the argv sets none (`-ctk`/`-ctv` default)
LLAMA_KV_DEFAULT = "f16"
# llama-server at `-lv 4` or more logs "llama_kv_cache: size = ... K (q8_0): 4.25 MiB, V (q8_0): ..."
_KV_LOG = re.compile(
    r"llama_kv_cache: size =\s*(?P<mib>\d{1,9}(?:\.\d{1,6})?) MiB \(\s*(?P<cells>\d{1,12}) cells"
    r".*?K \((?P<k>[A-Za-z0-9_]{1,16})\):.*?V \((?P<v>[A-Za-z0-9_]{1,16})\):"
)
KV_LOG_LIMIT_BYTES = 4 * 2**20  # the line comes at load time, near the start of the log


def _same(a: object, b: object) -> bool:
    return str(a).strip().lower() == str(b).strip().lower()


def _bare_kv_flag(argv: list[str]) -> bool:
    """A KV cache flag with no value after it: the argv's last item, or another flag next."""
    kv = [f for f, key in VALUE_FLAGS.items() if key in ("kv_cache_dtype", "cache_type_k", "cache_type_v")]
    return any(a in kv and (i + 1 == len(argv) or _is_flag(argv[i + 1])) for i, a in enumerate(argv))


def launched_kv(argv: list[str]) -> dict[str, str] | None:
    """The KV cache types a launch argv sets: {"k", "v"} (llama-server's `-ctk`/`-ctv`, the one it
    leaves out at its f16 default) or {"k", "v"} both from vLLM/SGLang's `--kv-cache-dtype`; None
    when the argv says nothing and the program's default is not known here."""
    if _bare_kv_flag(argv):
        return None  # a KV flag without a value (a bare `-ctk` read as the f16 default): nothing to claim
    flags = flags_from_argv(argv)
    if "kv_cache_dtype" in flags:
        kv = str(flags["kv_cache_dtype"])
        return {"k": kv, "v": kv}
    if "cache_type_k" in flags or "cache_type_v" in flags:
        return {
            "k": str(flags.get("cache_type_k", LLAMA_KV_DEFAULT)),
            "v": str(flags.get("cache_type_v", LLAMA_KV_DEFAULT)),
        }
    if argv and Path(argv[0]).name.startswith("llama-server"):
        return {"k": LLAMA_KV_DEFAULT, "v": LLAMA_KV_DEFAULT}
    return None


def kv_mismatch(declared: str, found: dict[str, Any] | None) -> str | None:
    """The found types ("K f16, V q8_0") when `found`'s K or V differs from `declared`, else None."""
    if found is None or (_same(declared, found["k"]) and _same(declared, found["v"])):
        return None
    return f"K {found['k']}, V {found['v']}"


def kv_from_log(path: Path) -> dict[str, Any] | None:
    """The K and V cache types llama-server logged while loading (`-lv 4`), with the KV cache's
    bytes per context token (its size over the tokens it holds, `kv_memory.llama_kv_memory`),
    None when it did not."""
    try:
        with open(path, "rb") as f:
            text = f.read(KV_LOG_LIMIT_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    m = _KV_LOG.search(text)
    if not m:
        return None
    memory = llama_kv_memory(text)  # size ÷ (cells × streams): -np slots without -kvu each have `cells`
    per_token = memory.bytes_per_token if memory else None
    return {"k": m["k"], "v": m["v"], **({KEY.kv_bytes_per_token: per_token} if per_token else {})}


def kv_read_back(server_flags: dict[str, object], log_path: Path | None) -> tuple[dict[str, Any], str] | None:
    """What the server itself says its KV cache types are, and where from: vLLM's
    `cache_config_info` (`server.flags.kv_cache_dtype`), else a launched llama-server's log."""
    kv = server_flags.get("kv_cache_dtype")
    if isinstance(kv, str) and kv:
        return {"k": kv, "v": kv}, "server.flags (vllm:cache_config_info)"
    found = kv_from_log(log_path) if log_path is not None else None
    return (found, "the server's log (llama_kv_cache)") if found else None


def kv_check(
    label: str, declared: str, server_flags: object, log_path: Path | None
) -> tuple[dict[str, Any] | None, str | None]:
    """The KV cache type as the server tells it and, when it contradicts the declaration, the warning.

    Returns:
        `kv_cache_read_back` ({"k", "v", "from"}, with "kv_bytes_per_token" where the log gave the
        cache's size), None where the server did not tell; and a one-line `kv-cache-mismatch:`
        warning naming the variant, or None.
    """
    back = kv_read_back(server_flags if isinstance(server_flags, dict) else {}, log_path)
    if back is None:
        return None, None
    found, source = back
    read_back = {**found, "from": source}
    wrong = kv_mismatch(declared, found)
    if wrong is None:
        return read_back, None
    return read_back, f"kv-cache-mismatch: variant {label!r} declares kv_cache_dtype {declared}, {source} says {wrong}"
