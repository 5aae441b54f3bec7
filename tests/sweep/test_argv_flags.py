"""The speed/precision/memory flags of a launched server's argv (variant.server.launch_flags)."""

from precmon.sweep.argv_flags import flags_from_argv


def test_llama_server_argv():
    argv = [
        "llama-server",
        "-m",
        "x.gguf",
        "-c",
        "8192",
        "-b",
        "2048",
        "-ub",
        "512",
        "-fa",
        "on",
        "-ctk",
        "q8_0",
        "--cache-type-v=q8_0",
        "--port",
        "8080",
        "-np",
        "4",
    ]
    assert flags_from_argv(argv) == {
        "ctx_size": 8192,
        "batch_size": 2048,
        "ubatch_size": 512,
        "flash_attn": "on",
        "cache_type_k": "q8_0",
        "cache_type_v": "q8_0",
        "parallel": 4,
    }


def test_old_flash_attn_switch_and_vllm_argv():
    assert flags_from_argv(["llama-server", "-fa", "-c", "4096"]) == {"flash_attn": True, "ctx_size": 4096}
    argv = [
        "vllm",
        "serve",
        "m",
        "--dtype",
        "bfloat16",
        "--quantization",
        "fp8",
        "--kv-cache-dtype",
        "fp8",
        "--enable-prefix-caching",
        "--max-model-len=4096",
        "--gpu-memory-utilization",
        "0.9",
    ]
    assert flags_from_argv(argv) == {
        "dtype": "bfloat16",
        "quantization": "fp8",
        "kv_cache_dtype": "fp8",
        "prefix_caching": True,
        "max_model_len": 4096,
        "gpu_memory_utilization": "0.9",
    }


def test_credentials_never_reach_the_flags_and_a_trailing_option_is_ignored():
    flags = flags_from_argv(["vllm", "serve", "--api-key", "sk-secret", "--dtype"])
    assert flags == {} and "sk-secret" not in str(flags)
