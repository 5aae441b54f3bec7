"""The settings a launched server's argv states, for `variant.server.launch_flags` (docs/design.md §5).

A server tells only part of how it runs (llama-server's `/props` has no batch size or KV cache
type, vLLM's `/metrics` no dtype or quantization), but a variant that precmon launched has its
whole command line. These are the flags that change speed, precision or memory; anything else
in the argv stays only in `launch`. The argv is credential-redacted before it is read.
"""

from __future__ import annotations

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


def flags_from_argv(argv: list[str]) -> dict[str, object]:
    """The known speed/precision/memory flags of a launch argv (`--x=v` and `--x v` forms)."""
    args = redact_argv(list(argv))
    out: dict[str, object] = {}
    i = 0
    while i < len(args):
        arg = args[i]
        name, eq, inline = arg.partition("=")
        if name in VALUE_FLAGS:
            if eq:
                out[VALUE_FLAGS[name]] = _value(inline)
            elif i + 1 < len(args):
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
