"""vLLM, SGLang and LM Studio adapters against fakes of their wire formats, with known timing."""

from __future__ import annotations

import pytest

from precmon.measure.timing import validate
from precmon.servers.base import ServerError, StreamRequest
from precmon.servers.protocols.lmstudio import LMStudioServer
from precmon.servers.protocols.sglang import SGLangServer
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.wire_servers import WireBehaviour, WireServer
from tests.servers.truth import assert_matches_truth, truth_decode_tok_s, words_prompt

ADAPTER = {"vllm": VLLMServer, "sglang": SGLangServer, "lmstudio": LMStudioServer}


@pytest.mark.parametrize("kind", ["vllm", "sglang", "lmstudio"])
@pytest.mark.parametrize("tokens_per_chunk", [1, 4])
def test_stream_matches_truth(kind, tokens_per_chunk):
    b = WireBehaviour(
        kind=kind, itl_s=0.004, tokens_per_chunk=tokens_per_chunk, prefill_s_per_token=0.0004, loaded={"fake-model"}
    )
    with WireServer(b) as srv:
        s = ADAPTER[kind](srv.url)
        assert s.health()  # a warm keep-alive connection, as after the bench's warm-up request
        res = s.stream(StreamRequest(prompt=words_prompt(100), max_tokens=48, model="fake-model", nonce="n1"))
        s.close()
    assert_matches_truth(res, b.log[-1], 48)
    assert res.cached_tokens == 0


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_fixed_length_and_cache_salt_in_payload(kind):
    # The fake stops early unless ignore_eos/min_tokens are honoured, and its prefix cache is
    # keyed by cache_salt: the same prompt twice with fresh salts is never served from cache.
    b = WireBehaviour(
        kind=kind,
        itl_s=0.0,
        stop_after=5,
        honour_ignore_eos=True,
        prefix_cache=True,
        honour_cache_salt=True,
        honour_cache_prompt=False,
    )
    with WireServer(b) as srv:
        s = ADAPTER[kind](srv.url)
        for nonce in ("salt-1", "salt-2"):
            res = s.stream(StreamRequest(prompt=words_prompt(40), max_tokens=20, nonce=nonce))
            assert validate(res, 20) is None
        same = s.stream(StreamRequest(prompt=words_prompt(40), max_tokens=20, nonce="salt-2"))
        s.close()
    body = b.requests[0]
    assert body["ignore_eos"] is True and body["min_tokens"] == 20 and body["cache_salt"] == "salt-1"
    assert body["stream_options"] == {"include_usage": True}
    assert same.cached_tokens == 39 and "prompt cache hit" in validate(same, 20)


def test_vllm_identity_tokenizer_and_version():
    with WireServer(WireBehaviour(kind="vllm", n_ctx=8192)) as srv:
        s = VLLMServer(srv.url)
        assert s.health() and s.version() == "0.9.1"
        info = s.model_info(None)
        assert info.name == "fake-model" and info.context_tokens == 8192
        assert info.quantization is None and info.dtype is None and "unknown" in info.source
        assert len(s.tokenize("[x] a b c", "fake-model")) == 5
        s.close()


def test_vllm_per_request_metrics_equal_server_truth():
    b = WireBehaviour(kind="vllm", itl_s=0.003, prefill_s_per_token=0.0005)
    with WireServer(b) as srv:
        s = VLLMServer(srv.url)
        res = s.stream(StreamRequest(prompt=words_prompt(64), max_tokens=30, nonce="m1"))
        s.close()
    t = b.log[-1]
    st = res.server_timings
    assert st["ttft_ms"] == pytest.approx((t["t_first"] - t["t_recv"]) * 1000, rel=1e-6)
    assert st["predicted_per_second"] == pytest.approx(truth_decode_tok_s(t), rel=1e-6)
    assert st["prompt_per_second"] == pytest.approx(64 / (t["t_first"] - t["t_recv"]), rel=1e-6)
    assert st["prefix_cache_hit_tokens"] == 0


def test_vllm_metrics_reveal_a_prefix_cache_hit_the_usage_hides():
    b = WireBehaviour(kind="vllm", itl_s=0.0, prefix_cache=True, honour_cache_prompt=False)
    b.usage = True
    with WireServer(b) as srv:
        s = VLLMServer(srv.url)
        s.stream(StreamRequest(prompt=words_prompt(30), max_tokens=4, nonce=None))
        # usage without prompt_tokens_details (vLLM without --enable-prompt-tokens-details)
        b.final_extra = lambda final, truth: (b.record(truth), final["usage"].pop("prompt_tokens_details"))
        res = s.stream(StreamRequest(prompt=words_prompt(30), max_tokens=4, nonce=None))
        s.close()
    assert res.server_timings["prefix_cache_hit_tokens"] == 29
    assert res.cached_tokens == 29


def test_vllm_without_metrics_endpoint_still_streams():
    b = WireBehaviour(kind="vllm", itl_s=0.0, metrics=False)
    with WireServer(b) as srv:
        s = VLLMServer(srv.url)
        res = s.stream(StreamRequest(prompt=words_prompt(10), max_tokens=8))
        res2 = s.stream(StreamRequest(prompt=words_prompt(10, "zz"), max_tokens=8))
        s.close()
    assert validate(res, 8) is None and validate(res2, 8) is None
    assert "ttft_ms" not in res.server_timings


def test_sglang_identity():
    with WireServer(WireBehaviour(kind="sglang", n_ctx=32768)) as srv:
        s = SGLangServer(srv.url)
        info = s.model_info(None)
        assert (info.quantization, info.dtype, info.context_tokens) == ("fp8", "bfloat16", 32768)
        assert s.version() == "0.4.6" and len(s.tokenize("a b", None)) == 3
        s.close()


def test_lmstudio_identity_stats_and_jit_load():
    b = WireBehaviour(kind="lmstudio", itl_s=0.002, load_s=0.3, quantization="Q8_0", n_ctx=4096)
    with WireServer(b) as srv:
        s = LMStudioServer(srv.url)
        models = {m.name: m for m in s.list_models()}
        assert models["fake-model"].quantization == "Q8_0" and models["fake-model"].loaded is False
        assert models["fake-model"].context_tokens == 4096
        s.ensure_loaded("fake-model", timeout_s=10)  # the JIT load happens here, not in a measurement
        assert s.model_info("fake-model").loaded
        res = s.stream(StreamRequest(prompt=words_prompt(50), max_tokens=24, model="fake-model"))
        s.close()
    assert_matches_truth(res, b.log[-1], 24)
    assert res.server_timings["predicted_per_second"] > 0 and "ttft_ms" in res.server_timings
    assert s.version() == "llama.cpp-linux-x86_64 1.29.0"
    assert b.requests[-1]["model"] == "fake-model"


def test_lmstudio_early_stop_is_invalid():
    b = WireBehaviour(kind="lmstudio", itl_s=0.0, stop_after=7, loaded={"fake-model"})
    with WireServer(b) as srv:
        s = LMStudioServer(srv.url)
        res = s.stream(StreamRequest(prompt=words_prompt(10), max_tokens=20, model="fake-model"))
        s.close()
    assert res.completion_tokens == 7 and "early stop" in validate(res, 20)


@pytest.mark.parametrize("kind", ["vllm", "sglang", "lmstudio"])
def test_broken_streams_and_http_errors(kind):
    for knob, expect in (("truncate_after", "truncated"), ("malformed_after", "malformed")):
        b = WireBehaviour(kind=kind, itl_s=0.0, loaded={"fake-model"}, **{knob: 3})
        with WireServer(b) as srv:
            s = ADAPTER[kind](srv.url)
            res = s.stream(StreamRequest(prompt=words_prompt(10), max_tokens=10, model="fake-model"))
            s.close()
        assert res.error and expect in res.error
    with WireServer(WireBehaviour(kind=kind, http_status=503, loaded={"fake-model"})) as srv:
        s = ADAPTER[kind](srv.url)
        with pytest.raises(ServerError, match="HTTP 503"):
            s.stream(StreamRequest(prompt="x", max_tokens=2, model="fake-model"))
        s.close()


def test_slow_start_is_timed_not_mistaken():
    # A server that takes long before its first token (big prefill): TTFT measures it.
    b = WireBehaviour(kind="vllm", itl_s=0.004, base_latency_s=0.25, prefill_s_per_token=0.0)
    with WireServer(b) as srv:
        s = VLLMServer(srv.url)
        s.health()
        res = s.stream(StreamRequest(prompt=words_prompt(20), max_tokens=32))
        s.close()
    assert_matches_truth(res, b.log[-1], 32)
    assert res.ttft_s >= 0.25
