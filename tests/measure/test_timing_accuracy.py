"""precmon's numbers against a local server whose timing is known (server-side truth log)."""

from __future__ import annotations

import pytest

from precmon.core.settings import BenchSettings
from precmon.measure.prompts import PromptBuilder
from precmon.measure.timing import measure_once
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from tests.fakes.measure import measure
from tests.fakes.timed_server import Behaviour, TimedServer

# wall-clock figures against a known truth at a tight tolerance: .ci/run's Python 3.12 pass runs
# these in one process, after its two-worker pass (another worker's load would move them)
pytestmark = pytest.mark.timing


def truth_decode(entry: dict) -> float:
    return (entry["tokens"] - 1) / (entry["t_last"] - entry["t_first"])


def one(behaviour: Behaviour, prompt_tokens: int = 64, max_tokens: int = 64):
    with TimedServer(behaviour) as srv:
        server = make_server(srv.url)
        prompt = PromptBuilder(lambda t: len(t.split()) + 1).build(prompt_tokens)
        run, res = measure_once(server, "decode", prompt, max_tokens, None, 30.0)
        server.close()
        return run, res, (behaviour.log[-1] if behaviour.log else None)


@pytest.mark.parametrize("tokens_per_chunk", [1, 3])
def test_decode_rate_matches_truth_including_bundled_chunks(tokens_per_chunk):
    run, res, truth = one(Behaviour(itl_s=0.005, tokens_per_chunk=tokens_per_chunk), max_tokens=60)
    assert run.ok, run.reason
    assert run.output_tokens == 60  # from usage, not from the 60/tokens_per_chunk chunks
    assert run.decode_tok_s == pytest.approx(truth_decode(truth), rel=0.03)


def test_ttft_and_prefill_match_truth():
    run, res, truth = one(Behaviour(prefill_s_per_token=0.001, base_latency_s=0.02), prompt_tokens=200)
    true_ttft = truth["t_first"] - truth["t_recv"]
    assert run.ok
    assert run.prompt_tokens == 200
    # The client's TTFT includes sending the request and reading the chunk: a little above the truth.
    # (+10 ms: HTTP plus the in-process fake sharing the GIL and 2 cores with the client)
    assert true_ttft <= run.ttft_s <= true_ttft * 1.05 + 0.010
    assert run.prefill_ms_per_token == pytest.approx(run.ttft_s * 1000 / 200)


def test_pings_and_role_only_first_chunk_do_not_count_as_first_token():
    b = Behaviour(ping_every=2, role_first=True, base_latency_s=0.05, prefill_s_per_token=0.0)
    with TimedServer(b) as srv:
        from precmon.servers.base import StreamRequest

        server = make_server(srv.url, kind="openai")
        server.completions_path = "/v1/chat/completions"  # chat shape: role-only first delta
        res = server.stream(StreamRequest(prompt="a b c", max_tokens=10))
        truth = b.log[-1]
    assert res.completion_tokens == 10
    assert res.ttft_s >= truth["t_first"] - truth["t_recv"]  # not the early role chunk


def test_prefix_cache_hit_is_detected_and_invalidates_the_run():
    b = Behaviour(prefix_cache=True, honour_cache_prompt=False)
    with TimedServer(b) as srv:
        server = make_server(srv.url)
        fixed = PromptBuilder(lambda t: len(t.split()) + 1).build(100, nonce="same")
        run1, _ = measure_once(server, "prefill", fixed, 1, None, 30.0)
        run2, _ = measure_once(server, "prefill", fixed, 1, None, 30.0)
    assert run1.ok
    assert not run2.ok and "cache hit" in run2.reason


def test_fresh_nonces_defeat_a_prefix_cache():
    b = Behaviour(prefix_cache=True, honour_cache_prompt=False)
    with TimedServer(b) as srv:
        server = make_server(srv.url)
        builder = PromptBuilder(lambda t: len(t.split()) + 1)
        runs = [measure_once(server, "prefill", builder.build(100), 1, None, 30.0)[0] for _ in range(3)]
    assert all(r.ok and r.cached_tokens == 0 for r in runs)


def test_early_stop_is_invalid_not_a_wrong_rate():
    run, _, _ = one(Behaviour(stop_after=20), max_tokens=64)
    assert not run.ok and "early stop" in run.reason


def test_missing_usage_is_invalid():
    run, _, _ = one(Behaviour(usage=False), max_tokens=16)
    assert not run.ok and "usage" in run.reason


def test_truncated_stream_is_invalid():
    run, _, _ = one(Behaviour(truncate_after=10), max_tokens=64)
    assert not run.ok
    assert "truncated" in run.reason or "closed" in run.reason


def test_malformed_stream_is_invalid():
    run, _, _ = one(Behaviour(malformed_after=5), max_tokens=16)
    assert not run.ok and "malformed" in run.reason


def test_http_error_is_one_clear_server_error():
    with TimedServer(Behaviour(http_status=500)) as srv:
        server = make_server(srv.url)
        prompt = PromptBuilder(None).build(10)
        with pytest.raises(ServerError, match="HTTP 500"):
            measure_once(server, "decode", prompt, 8, None, 30.0)


def test_refused_connection_is_one_clear_line():
    with pytest.raises(ServerError, match="cannot connect"):
        make_server("http://127.0.0.1:9", kind="auto")


def test_bench_medians_exclude_invalid_runs_and_clip_to_context():
    b = Behaviour(itl_s=0.002, n_ctx=1024)
    with TimedServer(b) as srv:
        settings = BenchSettings(
            output_tokens=32,
            decode_prompt_tokens=16,
            prefill_tokens=[100, 400, 2000],
            ttft_tokens=4096,
            repeats=3,
            warmup=1,
        )
        res = measure(make_server(srv.url), settings)
    m = res.metrics
    assert res.status == "ok", res.errors
    assert set(m["prefill_ms_per_token"]) == {"100", "400", "2000"}
    assert m["prefill_ms_per_token"]["2000"] is None
    assert any("prefill 2000 skipped" in e for e in res.errors)
    # TTFT has one size: beyond the context it is measured at the largest prompt that fits, and said
    assert any("ttft 4096 beyond the server's context (1024 tokens): measured at 1023 tokens" in e for e in res.errors)
    assert set(m["ttft_s"]) == {"1023"} and m["ttft_s"]["1023"] > 0
    # the server's own timing of the same three measured requests (the first 32-token one is the warm-up)
    decode_truth = sorted(truth_decode(e) for e in [e for e in b.log if e["tokens"] == 32][-3:])
    assert m["decode_tok_s"] == pytest.approx(decode_truth[1], rel=0.05)
    assert m["server_decode_tok_s"] is not None
    phases = [r.phase for r in res.runs]
    assert phases.count("warmup") == 1 and phases.count("decode") == 3 and phases.count("prefill") == 6
