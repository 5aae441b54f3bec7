"""KV cache memory read from real server logs (tests/sweep/data: lines captured from the cached
test-bed llama-server 0.3.36 and vLLM CPU 0.32.0 on the tiny models): bytes per token, capacity,
the longest context and the sequences that fit, and the reason where a server does not say."""

from __future__ import annotations

from pathlib import Path

import pytest

from precmon.sweep.argv_flags import kv_from_log
from precmon.sweep.kv_memory import (
    FLAGS_FROM,
    LLAMA_FROM,
    VLLM_FROM,
    KvMemory,
    kv_memory,
    kv_record,
    llama_kv_memory,
    vllm_kv_memory,
)

DATA = Path(__file__).parent / "data"
MIB = 2**20


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_llama_two_slots_each_with_its_own_stream():
    # -c 1024 -np 2: "size = 16.00 MiB (512 cells, 8 layers, 2/2 seqs)", n_ctx_slot = 512
    m = llama_kv_memory(text("llama_f16_np2.log"))
    assert m == KvMemory(16384, 1024, 512, 512, None, LLAMA_FROM)  # 8 layers × 512 × (K+V) × 2 bytes
    assert m.max_concurrency_at_ctx() == 2.0
    assert m.sequences_that_fit(256) == 4 and m.sequences_that_fit(1024) == 0  # a stream holds 512


def test_llama_q8_0_holds_a_token_in_17_32_of_f16s_bytes():
    f16, q8 = llama_kv_memory(text("llama_f16_np2.log")), llama_kv_memory(text("llama_q8_0_np2.log"))
    assert q8 is not None and f16 is not None
    assert q8.bytes_per_token == 8704 and q8.bytes_per_token / f16.bytes_per_token == 17 / 32
    assert q8.capacity_tokens == f16.capacity_tokens == 1024  # -c decides capacity, the type its size


def test_llama_unified_cache_is_one_stream_of_all_cells():
    m = llama_kv_memory(text("llama_f16_kvu.log"))  # -np 2 -kvu: "1024 cells, 2/1 seqs", n_ctx_slot 1024
    assert (m.bytes_per_token, m.capacity_tokens, m.longest_context_tokens, m.context_tokens) == (
        16384,
        1024,
        1024,
        1024,
    )
    assert m.max_concurrency_at_ctx() == 1.0 and m.sequences_that_fit(512) == 2


def test_kv_read_back_bytes_per_token_counts_every_stream():
    """The read-back took size ÷ cells: with -np 2 (two streams of 512 cells) that was 32768, twice the truth."""
    assert kv_from_log(DATA / "llama_f16_np2.log") == {"k": "f16", "v": "f16", "kv_bytes_per_token": 16384}


def test_llama_at_default_verbosity_says_nothing_and_the_reason_says_so():
    assert llama_kv_memory(text("llama_default_verbosity.log")) is None
    why = kv_memory({}, DATA / "llama_default_verbosity.log")
    assert why == "the server's log names no KV cache size (llama-server logs it at -lv 4; vLLM at startup)"
    assert kv_record(why) == ({}, {"reason": why})
    assert kv_memory({}, None).startswith("not reported:")


def test_vllm_cpu_bf16_and_fp8_kv():
    bf16, fp8 = vllm_kv_memory(text("vllm_cpu_bf16.log")), vllm_kv_memory(text("vllm_cpu_fp8_kv.log"))
    assert bf16 == KvMemory(4096, 262144, 262144, 2048, 128.0, VLLM_FROM)  # 1 GiB ÷ 262,144 tokens
    assert fp8 == KvMemory(2048, 524288, 524288, 2048, 256.0, VLLM_FROM)
    assert fp8.max_concurrency_at_ctx() == 256.0 and fp8.sequences_that_fit(32768) == 16


def test_vllm_gpu_lines():
    log = (
        "(EngineCore_DP0 pid=1) INFO 12-01 [gpu_worker.py:298] Available KV cache memory: 8.00 GiB\n"
        "(EngineCore_DP0 pid=1) INFO 12-01 [kv_cache_utils.py:1087] GPU KV cache size: 65,536 tokens\n"
        "(EngineCore_DP0 pid=1) INFO 12-01 [kv_cache_utils.py:1091] Maximum concurrency for 32,768 tokens "
        "per request: 2.00x\n"
    )
    assert vllm_kv_memory(log) == KvMemory(131072, 65536, 65536, 32768, 2.0, VLLM_FROM)


def test_cache_config_info_blocks_give_capacity_only():
    m = kv_memory({"num_gpu_blocks": 4096, "block_size": 16}, None)
    assert m == KvMemory(None, 65536, 65536, None, None, FLAGS_FROM)
    metrics, record = kv_record(m)
    assert metrics == {
        "kv_bytes_per_token": None,
        "kv_capacity_tokens": 65536,
        "kv_longest_context_tokens": 65536,
        "kv_max_concurrency_at_ctx": None,
    }
    assert record["from"] == FLAGS_FROM and record["context_tokens"] is None


@pytest.mark.parametrize(
    "flags",
    [{"num_gpu_blocks": "NaN", "block_size": 16}, {"num_gpu_blocks": True, "block_size": 16}, {"block_size": 16}],
)
def test_unusable_blocks_are_not_a_capacity(flags):
    assert isinstance(kv_memory(flags, None), str)


def test_hostile_log_lines_do_not_make_numbers(tmp_path):
    log = tmp_path / "x.log"
    log.write_text(
        "llama_kv_cache: size = 1e309 MiB (0 cells, 8 layers, 1/1 seqs), K (f16): 1 MiB, V (f16): 1 MiB\n"
        "CPU KV cache size: 0 tokens, Maximum concurrency for 99999999999999999 tokens per request: 1x\n"
    )
    assert isinstance(kv_memory({}, log), str)


def test_a_cache_too_big_for_a_results_file_is_no_bytes_per_token():
    """A log's 999999999 MiB for 1 cell (or 999999 GiB for 1 token) gave ~1e15 bytes/token, a
    metric precmon's own loader refuses (beyond 1e12): the whole results file then unreadable."""
    llama = llama_kv_memory("llama_kv_cache: size = 999999999.00 MiB (   1 cells,   8 layers,  1/1 seqs)")
    vllm = vllm_kv_memory("GPU KV cache size: 1 tokens\nAvailable KV cache memory: 999999.0 GiB\n")
    assert llama is not None and llama.bytes_per_token is None and llama.capacity_tokens == 1
    assert vllm is not None and vllm.bytes_per_token is None and vllm.capacity_tokens == 1
