"""bench/peer_parse.py and peer_tools.cores_while_busy: the readers of peer and server output the
side-by-side benchmarks compare precmon with, against literal samples of each tool's output."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from peer_parse import (  # noqa: E402
    benchy_requests,
    decode_requests,
    llama_log_timings,
    precmon_requests,
    vllm_bench_result,
    vllm_metrics_delta,
)
from peer_tools import cores_while_busy  # noqa: E402

# llama-server 0.3.36, one 1-token probe and one 64-token request (lines as printed)
LOG = """\
0.10.353.372 I slot launch_slot_: id  0 | task 130 | processing task, is_child = 0
0.10.401.347 I slot print_timing: id  0 | task 130 | prompt eval time =      47.94 ms /   128 tokens (    0.37 ms per token,  2670.06 tokens per second)
0.10.401.355 I slot print_timing: id  0 | task 130 |        eval time =       0.00 ms /     1 tokens (    0.00 ms per token,     0.00 tokens per second)
0.10.401.356 I slot print_timing: id  0 | task 130 |       total time =      47.94 ms /   129 tokens
0.38.674.874 I slot print_timing: id  0 | task 142 | prompt eval time =     842.06 ms /   129 tokens (    6.58 ms per token,   152.01 tokens per second)
0.38.674.879 I slot print_timing: id  0 | task 142 |        eval time =    3383.89 ms /    64 tokens (   53.71 ms per token,    18.62 tokens per second)
"""


def test_llama_log_timings_pairs_prompt_and_eval_lines_per_task():
    got = llama_log_timings(LOG)
    assert [t["prompt_n"] for t in got] == [128, 129]
    assert got[1]["prompt_ms"] == 842.06
    assert got[1]["predicted_n"] == 64
    assert got[1]["predicted_per_second"] == 18.62  # as printed: 63 steps / 3383.89 ms, not 64 / ...
    assert got[0]["predicted_per_second"] == 0.0  # a 1-token probe has no decode step
    assert decode_requests(got, 64) == [got[1]]


def test_llama_log_timings_skips_a_task_cut_off_mid_slice():
    assert llama_log_timings(LOG.splitlines(keepends=True)[-1]) == []


def test_benchy_requests_reads_per_request_values():
    report = {
        "benchmarks": [
            {"tg_req_throughput": {"mean": 20.0, "values": [18.6, 21.4]}, "e2e_ttft": {"values": [846.9, 386.5]}}
        ]
    }
    assert benchy_requests(report) == {"decode_tok_s": [18.6, 21.4], "ttft_ms": [846.9, 386.5]}


def test_precmon_requests_keeps_decode_runs_and_their_server_timings():
    run = {"phase": "decode", "ok": True, "decode_tok_s": 300.0, "ttft_s": 0.05, "itl_ms_p50": 3.1}
    run |= {"output_tokens": 64, "server_timings": {"predicted_per_second": 310.0, "prompt_ms": 48.0}}
    probe = {"phase": "ttft", "ok": True, "ttft_s": 0.04, "server_timings": {"prompt_ms": 40.0}}
    results = {"variants": [{"runs": [run, probe], "warnings": ["host-busy: x"], "validity": {"host_cpu": {"a": 1}}}]}
    got = precmon_requests(results)
    assert got["decode_tok_s"] == [300.0] and got["ttft_ms"] == [50.0]
    assert got["server_decode_tok_s"] == [310.0] and got["server_ttft_ms"] == [48.0]
    assert got["warnings"] == ["host-busy: x"] and got["host_cpu"] == {"a": 1}


def test_vllm_bench_result_converts_seconds_to_ms():
    result = {"completed": 2, "output_lens": [64, 64], "ttfts": [0.02, 0.03], "itls": [[0.004, 0.006], [0.005]]}
    result |= {"mean_ttft_ms": 25.0, "mean_tpot_ms": 5.0, "mean_itl_ms": 5.0, "median_itl_ms": 5.0}
    got = vllm_bench_result(result)
    assert got["ttft_ms"] == pytest.approx([20.0, 30.0])
    assert got["itl_ms"] == pytest.approx([4.0, 6.0, 5.0])
    assert got["completed"] == 2 and got["mean_tpot_ms"] == 5.0


def _metrics(n: int, ttft_s: float, decode_s: float, itl_s: float, itl_n: int, hits: float) -> str:
    lines = [f'vllm:prefix_cache_hits_total{{engine="0",model_name="m"}} {hits}']
    for name, total, count in (
        ("vllm:request_prompt_tokens", 128 * n, n),
        ("vllm:e2e_request_latency_seconds", ttft_s + decode_s, n),
        ("vllm:time_to_first_token_seconds", ttft_s, n),
        ("vllm:request_prefill_time_seconds", ttft_s, n),
        ("vllm:request_decode_time_seconds", decode_s, n),
        ("vllm:inter_token_latency_seconds", itl_s, itl_n),
    ):
        lines += [
            f'{name}_bucket{{engine="0",le="+Inf",model_name="m"}} {count}',
            f'{name}_sum{{engine="0",model_name="m"}} {total}',
            f'{name}_count{{engine="0",model_name="m"}} {count}',
        ]
    return "\n".join(lines) + "\n"


def test_vllm_metrics_delta_is_the_mean_of_the_requests_in_between():
    before = _metrics(n=5, ttft_s=1.0, decode_s=2.0, itl_s=2.0, itl_n=315, hits=16)
    # two requests of 64 tokens: TTFT 20 + 30 ms, decode 0.252 + 0.378 s over 63 steps each
    after = _metrics(n=7, ttft_s=1.05, decode_s=2.63, itl_s=2.63, itl_n=441, hits=16)
    got = vllm_metrics_delta(before, after, output_tokens=64)
    assert got["requests"] == 2
    assert got["ttft_ms"] == pytest.approx(25.0)
    assert got["decode_ms"] == pytest.approx(315.0)
    assert got["tpot_ms"] == pytest.approx(5.0)
    assert got["itl_ms"] == pytest.approx(5.0)
    assert got["prefix_cache_hits"] == 0
    assert got["prompt_tokens"] == 128


def test_cores_while_busy_counts_only_intervals_the_server_was_serving():
    # (t, tool cpu s, server cpu s): serving from 1 to 3 s (server 1.8 cores); idle before and after
    samples = [(0.0, 0.0, 0.0), (1.0, 0.5, 0.0), (2.0, 0.6, 1.8), (3.0, 0.7, 3.6), (4.0, 1.5, 3.6)]
    got = cores_while_busy(samples)
    assert got["serving_s"] == 2.0
    assert got["tool_cores"] == pytest.approx(0.1)
    assert got["server_cores"] == pytest.approx(1.8)
    assert got["tool_cpu_s_total"] == 1.5
