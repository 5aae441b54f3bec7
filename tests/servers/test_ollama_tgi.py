"""Ollama (native NDJSON) and TGI (/generate_stream) adapters against fakes with known timing."""

from __future__ import annotations

import pytest

from precmon.measure.timing import validate
from precmon.servers.base import ServerError, StreamRequest
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.tgi import TGIServer
from tests.fakes.wire_servers import WireBehaviour, WireServer
from tests.servers.truth import assert_matches_truth, truth_decode_tok_s, words_prompt


def ollama(b: WireBehaviour, *reqs: StreamRequest, **kw):
    with WireServer(b) as srv:
        s = OllamaServer(srv.url)
        s.health()
        out = [s.stream(r, **kw) for r in reqs]
        s.close()
    return out


def test_ollama_stream_matches_truth_and_server_timings():
    b = WireBehaviour(kind="ollama", itl_s=0.004, prefill_s_per_token=0.0004, role_first=True, loaded={"fake-model"})
    (res,) = ollama(b, StreamRequest(prompt=words_prompt(100), max_tokens=48, model="fake-model"))
    t = b.log[-1]
    assert_matches_truth(res, t, 48)
    assert res.cached_tokens == 0 and res.finish_reason == "length"
    st = res.server_timings
    assert st["predicted_n"] == 48 and st["prompt_n"] == 100
    # eval_count ÷ eval_duration (Ollama's "eval rate"): close to, not equal to, (n-1)/span
    assert st["predicted_per_second"] == pytest.approx(truth_decode_tok_s(t), rel=0.1)
    assert st["prompt_per_second"] == pytest.approx(100 / (t["t_prefill_end"] - t["t_recv"]), rel=0.01)
    body = b.requests[-1]
    assert body["raw"] is True and body["options"]["num_predict"] == 48 and body["stream"] is True


def test_ollama_default_model_and_thinking_counts_as_text():
    b = WireBehaviour(kind="ollama", itl_s=0.0, loaded={"other-model"})
    (res,) = ollama(b, StreamRequest(prompt=words_prompt(10), max_tokens=6))
    assert b.requests[-1]["model"] == "other-model"  # the loaded one
    assert validate(res, 6) is None
    s = OllamaServer("http://127.0.0.1:9")
    from precmon.servers.base import StreamResult

    r = StreamResult(sent_s=0.0)
    s._on_line(b'{"response": "", "thinking": "hmm", "done": false}', 1.0, r)
    s._on_line(b'{"response": "ok", "done": false}', 2.0, r)
    assert (r.first_text_s, r.first_content_s, r.text) == (1.0, 2.0, "ok")
    s.close()


def test_ollama_early_stop_is_invalid():
    b = WireBehaviour(kind="ollama", itl_s=0.0, stop_after=9, loaded={"fake-model"})
    (res,) = ollama(b, StreamRequest(prompt=words_prompt(10), max_tokens=32, model="fake-model"))
    assert res.finish_reason == "stop" and res.completion_tokens == 9
    assert "early stop" in validate(res, 32)


def test_ollama_load_inside_a_request_is_flagged_and_ensure_loaded_prevents_it():
    b = WireBehaviour(kind="ollama", itl_s=0.0, load_s=0.3, loaded={"other-model"})
    (res,) = ollama(b, StreamRequest(prompt=words_prompt(10), max_tokens=4, model="fake-model"))
    assert "loaded the model inside this request" in validate(res, 4)
    b2 = WireBehaviour(kind="ollama", itl_s=0.0, load_s=0.3, loaded={"other-model"})
    with WireServer(b2) as srv:
        s = OllamaServer(srv.url)
        s.ensure_loaded("fake-model", timeout_s=10)
        assert b2.unloads == ["other-model"] and b2.loaded == {"fake-model"}
        res = s.stream(StreamRequest(prompt=words_prompt(10), max_tokens=4, model="fake-model"))
        s.close()
    assert validate(res, 4) is None and res.server_timings.get("load_ms", 0) == 0


def test_ollama_cache_detection():
    # Current Ollama: counts include cached tokens; only a repeated prefix of our own can show it.
    b = WireBehaviour(kind="ollama", itl_s=0.0, prefix_cache=True, loaded={"fake-model"})
    p = words_prompt(60)
    first, again = ollama(b, *[StreamRequest(prompt=p, max_tokens=4, model="fake-model")] * 2)
    assert first.cached_tokens == 0 and again.cached_tokens > 50
    assert "prompt cache hit" in validate(again, 4)
    # Old Ollama: prompt_eval_count counts uncached tokens only; known prompt size reveals it.
    b = WireBehaviour(kind="ollama", itl_s=0.0, prefix_cache=True, old_ollama_counts=True, loaded={"fake-model"})
    prompts = [words_prompt(30, "aaaa") + " x y", words_prompt(30, "aaaa") + " z q"]
    ra, rb = ollama(
        b, *[StreamRequest(prompt=q, max_tokens=4, model="fake-model") for q in prompts], expected_prompt_tokens=32
    )
    assert ra.cached_tokens == 0 and rb.cached_tokens >= 29
    # ...and the whole prompt cached: no prompt_eval_count at all.
    b = WireBehaviour(kind="ollama", itl_s=0.0, prefix_cache=True, old_ollama_counts=True, loaded={"fake-model"})
    _, whole = ollama(b, *[StreamRequest(prompt=words_prompt(20, "bbbb"), max_tokens=4, model="fake-model")] * 2)
    assert "whole prompt came from its cache" in validate(whole, 4)
    # Fresh nonces: no false alarm.
    b = WireBehaviour(kind="ollama", itl_s=0.0, prefix_cache=True, loaded={"fake-model"})
    runs = ollama(
        b, *[StreamRequest(prompt=words_prompt(30, f"{i:012x}"), max_tokens=4, model="fake-model") for i in range(4)]
    )
    assert all(r.cached_tokens == 0 for r in runs)


def test_ollama_identity_and_switching_facts():
    b = WireBehaviour(kind="ollama", quantization="Q4_K_M", n_ctx=8192, loaded={"fake-model"})
    with WireServer(b) as srv:
        s = OllamaServer(srv.url)
        assert s.version() == "0.6.8" and s.tokenize("x") is None
        info = s.model_info("fake-model")
        assert (info.quantization, info.context_tokens, info.n_params, info.loaded) == (
            "Q4_K_M",
            8192,
            8_030_261_248,
            True,
        )
        names = {m.name: m for m in s.list_models()}
        assert names["other-model"].loaded is False and names["fake-model"].size_bytes == 4_900_000_000
        s.close()


@pytest.mark.parametrize("knob,expect", [("truncate_after", "truncated"), ("malformed_after", "malformed")])
def test_ollama_broken_streams(knob, expect):
    b = WireBehaviour(kind="ollama", itl_s=0.0, loaded={"fake-model"}, **{knob: 3})
    (res,) = ollama(b, StreamRequest(prompt=words_prompt(10), max_tokens=10, model="fake-model"))
    assert res.error and expect in res.error


def test_ollama_http_errors():
    with WireServer(WireBehaviour(kind="ollama", http_status=500, loaded={"fake-model"})) as srv:
        s = OllamaServer(srv.url)
        with pytest.raises(ServerError, match="HTTP 500"):
            s.stream(StreamRequest(prompt="x y", max_tokens=2, model="fake-model"))
        with pytest.raises(ServerError, match="HTTP 404"):
            s.stream(StreamRequest(prompt="x y", max_tokens=2, model="missing"))
        s.close()
    with pytest.raises(ServerError, match="cannot connect"):
        OllamaServer("http://127.0.0.1:9").stream(StreamRequest(prompt="x", max_tokens=1, model="m"))


# ---- TGI ---------------------------------------------------------------------------------------
def tgi(b: WireBehaviour, req: StreamRequest):
    with WireServer(b) as srv:
        s = TGIServer(srv.url)
        s.health()
        res = s.stream(req)
        s.close()
    return res


def test_tgi_stream_matches_truth():
    b = WireBehaviour(kind="tgi", itl_s=0.004, prefill_s_per_token=0.0004)
    res = tgi(b, StreamRequest(prompt=words_prompt(100), max_tokens=48))
    assert_matches_truth(res, b.log[-1], 48)
    assert res.finish_reason == "length"
    assert b.requests[-1]["parameters"] == {
        "max_new_tokens": 48,
        "details": True,
        "return_full_text": False,
        "do_sample": False,
    }


def test_tgi_early_eos_is_invalid_and_input_length_fallback():
    b = WireBehaviour(kind="tgi", itl_s=0.0, stop_after=5, tgi_input_length=False)
    res = tgi(b, StreamRequest(prompt=words_prompt(12), max_tokens=20))
    assert res.completion_tokens == 5 and res.finish_reason == "stop"
    assert res.server_timings["tgi_finish_reason"] == "eos_token" and "</s>" not in res.text
    assert res.prompt_tokens == 12  # counted with /tokenize after the stream
    assert "early stop" in validate(res, 20)


def test_tgi_identity():
    with WireServer(WireBehaviour(kind="tgi", n_ctx=8192)) as srv:
        s = TGIServer(srv.url)
        info = s.model_info(None)
        assert (info.dtype, info.context_tokens, info.quantization) == ("float16", 7169, None)
        assert s.version() == "2.4.0 (0123456)" and len(s.tokenize("a b c")) == 4
        s.close()


@pytest.mark.parametrize("knob,expect", [("truncate_after", "truncated"), ("malformed_after", "malformed")])
def test_tgi_broken_streams(knob, expect):
    res = tgi(WireBehaviour(kind="tgi", itl_s=0.0, **{knob: 3}), StreamRequest(prompt="a b", max_tokens=10))
    assert res.error and expect in res.error


def test_tgi_http_error():
    with WireServer(WireBehaviour(kind="tgi", http_status=422)) as srv:
        s = TGIServer(srv.url)
        with pytest.raises(ServerError, match="HTTP 422"):
            s.stream(StreamRequest(prompt="a", max_tokens=2))
        s.close()
