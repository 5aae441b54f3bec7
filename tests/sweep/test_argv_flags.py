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


def test_a_kv_flag_without_a_value_claims_no_type():
    """`-ctk` at the argv's end (or followed by another flag) gave the server no value; precmon read
    it as llama-server's f16 default, and took the next flag as the value of the one before."""
    from precmon.sweep.argv_flags import flags_from_argv, launched_kv

    assert launched_kv(["llama-server", "-m", "m.gguf", "-ctk"]) is None
    assert flags_from_argv(["llama-server", "-ctk", "-ctv", "q8_0"]) == {"cache_type_v": "q8_0"}
    assert launched_kv(["llama-server", "-ctk", "-ctv", "q8_0"]) is None
    assert launched_kv(["llama-server", "-ctk", "q8_0"]) == {"k": "q8_0", "v": "f16"}
    assert flags_from_argv(["llama-server", "-ngl", "-1"]) == {"n_gpu_layers": -1}  # a negative number is a value
