"""Optional endpoints degrade to n/a with a reason; they never fail a measurement (issue 11 #3)."""

from __future__ import annotations

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.timing import validate
from precmon.servers.base import StreamRequest
from precmon.servers.detect import detect_kind, make_server
from precmon.servers.protocols.llamacpp import LlamaCppServer
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.sglang import SGLangServer
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.wire_servers import Scripted, ScriptedServer, WireBehaviour, WireServer, sse
from tests.servers.truth import words_prompt

TINY = BenchSettings(
    output_tokens=4, decode_prompt_tokens=8, prefill_tokens=[16], ttft_tokens=None, repeats=1, warmup=0, idle_s=0.0
)


def test_ollama_without_api_ps_benches_and_names_its_model():
    b = WireBehaviour(kind="ollama", itl_s=0.0, ollama_ps=False, loaded={"fake-model"})
    with WireServer(b) as srv:
        assert detect_kind(srv.url) == "ollama"
        s = OllamaServer(srv.url)
        models = s.list_models()
        assert [m.name for m in models] == ["fake-model", "other-model"] and models[0].loaded is None
        info = s.model_info(None)
        assert info.name == "fake-model" and info.quantization == "Q4_K_M" and info.loaded is None
        assert "/api/ps unavailable (HTTP 404" in info.notes and "n/a" in info.notes
        s.ensure_loaded("fake-model", timeout_s=10)
        res = s.stream(StreamRequest(prompt=words_prompt(10), max_tokens=4, model="fake-model"))
        assert validate(res, 4) is None
        result = Bench(s, TINY).run()
        s.close()
    assert result.status == "ok", result.errors
    assert result.model == "fake-model" and result.model_info["quantization"] == "Q4_K_M"
    assert "/api/ps unavailable" in result.model_info["notes"]


def test_llamacpp_without_props_benches_with_a_note():
    completion = sse(
        {"choices": [{"text": " tok", "finish_reason": None}]},
        {
            "choices": [{"text": " tok", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        },
    )
    routes = {
        "GET /v1/models": Scripted(body={"data": [{"id": "tiny-Q8_0.gguf"}]}),
        "GET /props": Scripted(500, b"internal"),
        "POST /v1/completions": Scripted(chunks=completion),
    }
    with ScriptedServer(routes) as srv:
        s = LlamaCppServer(srv.url)
        info = s.model_info(None)
        assert s.version() is None
        res = s.stream(StreamRequest(prompt="a b", max_tokens=2))
        s.close()
    assert info.name == "tiny-Q8_0.gguf" and info.quantization == "Q8_0" and info.context_tokens is None
    assert "/props unavailable (HTTP 500" in info.notes and validate(res, 2) is None


def test_vllm_without_version_or_metrics_and_sglang_without_server_info():
    with WireServer(WireBehaviour(kind="vllm", itl_s=0.0, metrics=False)) as srv:
        s = VLLMServer(srv.url)
        res = s.stream(StreamRequest(prompt=words_prompt(8), max_tokens=4, nonce="x"))
        assert validate(res, 4) is None
        # no figure, and the run says why it has none (a variant counts its runs with server truth)
        assert res.server_timings["source"] == "n/a: /metrics gave no vllm: metrics (HTTP 404)"
        assert any("/metrics" in n for n in s.notes)
        s.close()
    routes = {"GET /version": Scripted(404, {"detail": "Not Found"}), "GET /v1/models": Scripted(body={"data": []})}
    with ScriptedServer(routes) as srv:
        v = VLLMServer(srv.url)
        assert v.version() is None and "/version unavailable" in v.notes[0]
        v.close()
        g = SGLangServer(srv.url)
        assert g.version() is None and g.list_models() == [] and "/get_server_info unavailable" in g.notes[0]
        g.close()


def test_detection_prefers_the_api_that_works_end_to_end():
    # Answers Ollama's /api/version, but not the model list every Ollama request needs: OpenAI it is.
    routes = {"GET /api/version": Scripted(body={"version": "0.1"}), "GET /v1/models": Scripted(body={"data": []})}
    with ScriptedServer(routes) as srv:
        assert detect_kind(srv.url) == "openai"
        assert make_server(srv.url).kind == "openai"
    routes["GET /api/tags"] = Scripted(body={"models": []})
    with ScriptedServer(routes) as srv:
        assert detect_kind(srv.url) == "ollama"
