"""Prometheus text → snapshots → live rates, with literal text from each server's format."""

from __future__ import annotations

import math

import pytest

from precmon.servers.base import ServerError
from precmon.servers.watch.metrics import (
    Histogram,
    MetricsPoller,
    metrics_url,
    parse_prometheus,
    rates,
    scrape,
    snapshot_from_text,
)

VLLM_0 = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 0.0
vllm:num_requests_waiting{engine="0",model_name="m"} 0.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.0
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 0.0
vllm:generation_tokens_total{engine="0",model_name="m"} 5000.0
vllm:prompt_tokens_total{engine="0",model_name="m"} 1000.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 2.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.2
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.02",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 100.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 100.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 0.5
"""

# Ten seconds later: 2000 more tokens, 4 more requests (TTFT 0.01–0.1 s each), ITL 10–20 ms.
VLLM_1 = """\
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.42
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 2000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 250.0
vllm:generation_tokens_total{engine="0",model_name="m"} 7000.0
vllm:prompt_tokens_total{engine="0",model_name="m"} 2000.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.01",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 6.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 8.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 8.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 8.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 1.4
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.02",model_name="m"} 2100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 2100.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 2100.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 30.5
"""

LLAMACPP_0 = """\
# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 100
llamacpp:prompt_seconds_total 0.5
llamacpp:tokens_predicted_total 400
llamacpp:tokens_predicted_seconds_total 1
llamacpp:n_decode_total 400
llamacpp:requests_processing 0
llamacpp:requests_deferred 0
"""
LLAMACPP_1 = (
    LLAMACPP_0.replace("tokens_predicted_total 400", "tokens_predicted_total 1200")
    .replace("tokens_predicted_seconds_total 1", "tokens_predicted_seconds_total 3")
    .replace("requests_processing 0", "requests_processing 1")
)

SGLANG = """\
sglang:prompt_tokens_total{model_name="qwen"} 300.0
sglang:generation_tokens_total{model_name="qwen"} 900.0
sglang:num_running_reqs{model_name="qwen"} 2.0
sglang:num_queue_reqs{model_name="qwen"} 0.0
sglang:token_usage{model_name="qwen"} 0.07
sglang:cache_hit_rate{model_name="qwen"} 0.5
sglang:gen_throughput{model_name="qwen"} 123.4
"""

TGI_0 = """\
tgi_request_generated_tokens_bucket{le="10"} 0
tgi_request_generated_tokens_bucket{le="100"} 0
tgi_request_generated_tokens_bucket{le="+Inf"} 0
tgi_request_generated_tokens_sum 0
tgi_request_generated_tokens_count 0
tgi_request_input_length_sum 0
tgi_request_input_length_count 0
tgi_queue_size 0
tgi_batch_current_size 0
"""
TGI_1 = """\
tgi_request_generated_tokens_bucket{le="10"} 0
tgi_request_generated_tokens_bucket{le="100"} 2
tgi_request_generated_tokens_bucket{le="+Inf"} 2
tgi_request_generated_tokens_sum 128
tgi_request_generated_tokens_count 2
tgi_request_input_length_sum 512
tgi_request_input_length_count 2
tgi_request_mean_time_per_token_duration_bucket{le="0.01"} 0
tgi_request_mean_time_per_token_duration_bucket{le="0.02"} 2
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 2
tgi_request_mean_time_per_token_duration_sum 0.03
tgi_request_mean_time_per_token_duration_count 2
tgi_queue_size 1
tgi_batch_current_size 2
"""


def test_parser_labels_escapes_special_values_and_junk():
    s = parse_prometheus('a{x="1",y="q\\"uote"} 2.5\nb +Inf\nc NaN\n  \n# comment\ngarbage line here\nd 3 1700000000\n')
    assert s["a"] == {(("x", "1"), ("y", 'q"uote')): 2.5}
    assert s["b"][()] == math.inf and math.isnan(s["c"][()])
    assert s["d"][()] == 3.0
    assert "garbage" not in s


def test_vllm_rates_from_counter_and_histogram_deltas():
    r = rates(snapshot_from_text(VLLM_0, taken_s=100.0), snapshot_from_text(VLLM_1, taken_s=110.0))
    assert r.kind == "vllm" and r.interval_s == 10.0
    assert r.generation_tok_s == pytest.approx(200.0)
    assert r.prompt_tok_s == pytest.approx(100.0)
    assert r.requests_finished == 4
    assert r.ttft_mean_s == pytest.approx(0.05)  # (1.4 - 1.2) / 4
    assert r.ttft_p50_s == pytest.approx(0.055)  # rank 2 of 4 inside (0.01, 0.1]
    assert r.ttft_p99_s == pytest.approx(0.1 - 0.09 * 0.01)
    assert r.itl_mean_s == pytest.approx(0.015)
    assert r.itl_p50_s == pytest.approx(0.015)
    assert (r.requests_running, r.requests_waiting, r.kv_cache_usage_ratio) == (3.0, 1.0, 0.42)
    assert r.prefix_cache_hit_ratio == pytest.approx(0.25)


def test_llamacpp_rates_have_busy_decode_rate_and_no_histograms():
    r = rates(snapshot_from_text(LLAMACPP_0, taken_s=0.0), snapshot_from_text(LLAMACPP_1, taken_s=4.0))
    assert r.kind == "llamacpp"
    assert r.generation_tok_s == pytest.approx(200.0)
    assert r.decode_busy_tok_s == pytest.approx(400.0)
    assert r.ttft_mean_s is None and r.itl_p50_s is None
    assert r.requests_running == 1


def test_sglang_gauges_and_tgi_token_histograms():
    s = snapshot_from_text(SGLANG, taken_s=0.0)
    r = rates(s, snapshot_from_text(SGLANG, taken_s=1.0))
    assert r.kind == "sglang" and r.generation_tok_s == 0.0
    assert (r.requests_running, r.kv_cache_usage_ratio, r.prefix_cache_hit_ratio) == (2.0, 0.07, 0.5)
    t = rates(snapshot_from_text(TGI_0, taken_s=0.0), snapshot_from_text(TGI_1, taken_s=2.0))
    assert t.kind == "tgi"
    assert t.generation_tok_s == pytest.approx(64.0) and t.prompt_tok_s == pytest.approx(256.0)
    assert t.requests_finished == 2 and t.itl_mean_s == pytest.approx(0.015)
    assert (t.requests_running, t.requests_waiting) == (2.0, 1.0)


def test_counter_reset_counts_from_zero():
    a = snapshot_from_text("vllm:generation_tokens_total 5000\n", taken_s=0.0)
    b = snapshot_from_text("vllm:generation_tokens_total 30\n", taken_s=1.0)
    assert rates(a, b).generation_tok_s == 30.0


def test_quantile_edges():
    assert Histogram((), 0.0, 0.0).quantile(0.5) is None
    h = Histogram(((1.0, 0.0), (2.0, 10.0), (math.inf, 10.0)), 15.0, 10.0)
    assert h.quantile(0.5) == pytest.approx(1.5)
    over = Histogram(((1.0, 0.0), (math.inf, 4.0)), 10.0, 4.0)
    assert over.quantile(0.99) == 1.0  # beyond the last bound: the bound is all we know


def test_metrics_url():
    assert metrics_url("http://h:8080/") == "http://h:8080/metrics"
    assert metrics_url("http://h:8080", model="tiny Q8") == "http://h:8080/metrics?model=tiny%20Q8"
    assert metrics_url("http://h:8080/metrics") == "http://h:8080/metrics"


def test_scrape_and_poller_against_fake_vllm():
    from precmon.servers.base import StreamRequest
    from precmon.servers.protocols.openai import OpenAIServer
    from tests.fakes.wire_servers import WireBehaviour, WireServer
    from tests.servers.truth import words_prompt

    with WireServer(WireBehaviour(kind="vllm", itl_s=0.001)) as srv:
        poller = MetricsPoller(srv.url)
        assert poller.poll() is None
        c = OpenAIServer(srv.url)
        c.stream(StreamRequest(prompt=words_prompt(20), max_tokens=10))
        c.close()
        r = poller.poll()
        poller.close()
        assert r is not None and r.kind == "vllm"
        assert r.requests_finished == 1
        assert r.generation_tok_s and r.generation_tok_s > 0
        t = srv.behaviour.log[0]
        assert r.ttft_mean_s == pytest.approx(t["t_first"] - t["t_recv"], rel=1e-6)
    with WireServer(WireBehaviour(kind="tgi")) as srv, pytest.raises(ServerError, match="HTTP 404"):
        scrape(srv.url)
