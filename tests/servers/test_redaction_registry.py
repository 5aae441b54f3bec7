"""Credentials never reach an error or a stored URL (issue 11 #15); one kind registry (issue 18)."""

from __future__ import annotations

import inspect

import pytest

from precmon.cli.parser import SERVER_KINDS
from precmon.measure.bench import Bench, BenchSettings
from precmon.servers import detect
from precmon.servers.base import Server, ServerError, StreamRequest
from precmon.servers.kinds import DETECTION_ORDER, KIND_NAMES, KINDS, USUAL_PORTS
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.openai import OpenAIServer
from tests.fakes.wire_servers import Scripted, ScriptedServer, WireBehaviour, WireServer, sse
from tests.servers.truth import words_prompt

SECRET_BODY = (
    b'{"error": "bad request", "echo": {"headers": {"Authorization": "Bearer sk-live0123456789abcdef"}, '
    b'"api_key": "hunter2hunter2"}, "pad": "' + b"x" * 10000 + b'"}'
)


def with_credentials(url: str) -> str:
    return url.replace("http://", "http://alice:s3cret-pass@")


def assert_clean(text: str) -> None:
    for secret in ("sk-live0123456789abcdef", "hunter2hunter2", "s3cret-pass", "alice"):
        assert secret not in text


def test_an_echoed_key_in_an_error_body_is_redacted_and_the_line_bounded():
    routes = {"POST /v1/completions": Scripted(500, SECRET_BODY), "GET /v1/models": Scripted(401, SECRET_BODY)}
    with ScriptedServer(routes) as srv:
        s = OpenAIServer(with_credentials(srv.url), api_key="sk-live0123456789abcdef")
        with pytest.raises(ServerError) as stream_err:
            s.stream(StreamRequest(prompt="a", max_tokens=1, timeout_s=5))
        with pytest.raises(ServerError) as get_err:
            s.list_models()
        assert s.url == srv.url.replace("http://", "http://***@")
        s.close()
    for exc, path, status in ((stream_err.value, "/v1/completions", 500), (get_err.value, "/v1/models", 401)):
        msg = str(exc)
        assert msg.startswith(f"HTTP {status} from http://***@127.0.0.1:") and path in msg
        assert '"error": "bad request"' in msg and len(msg) < 300 and exc.http_status == status
        assert_clean(msg)


def test_an_error_event_in_a_stream_is_redacted():
    chunks = sse({"error": {"message": "invalid key Bearer sk-live0123456789abcdef for api_key=hunter2hunter2"}})
    with ScriptedServer({"POST /v1/completions": Scripted(chunks=chunks)}) as srv:
        s = OpenAIServer(srv.url)
        res = s.stream(StreamRequest(prompt="a", max_tokens=1, timeout_s=5))
        s.close()
    assert res.error.startswith("server error in stream: invalid key Bearer ***")
    assert_clean(res.error)


def test_stored_server_urls_are_redacted():
    b = WireBehaviour(kind="ollama", itl_s=0.0, loaded={"fake-model"})
    with WireServer(b) as srv:
        url = with_credentials(srv.url)
        s = detect.make_server(url)
        settings = BenchSettings(
            output_tokens=2, decode_prompt_tokens=8, prefill_tokens=[], ttft_tokens=None, repeats=1, warmup=0, idle_s=0
        )
        result = Bench(s, settings).run()
        s.close()
        (entry,) = detect.discover_servers([url], host="127.0.0.9", timeout_s=1.0)
    assert result.server.url == srv.url.replace("http://", "http://***@") and result.status == "ok"
    assert entry["url"].startswith("http://***@") and entry["kind"] == "ollama"
    with pytest.raises(ServerError) as err:
        detect.detect_kind("http://bob:topsecret@127.0.0.1:9")
    assert "topsecret" not in str(err.value) and "cannot connect to http://***@127.0.0.1:9" in str(err.value)


# ---- the registry --------------------------------------------------------------------------------
def test_one_registry_read_by_detection_discovery_and_the_cli():
    assert tuple(detect.ADAPTERS) == KIND_NAMES and SERVER_KINDS == ["auto", *KIND_NAMES]
    assert (
        detect.USUAL_PORTS
        == USUAL_PORTS
        == {8000: "vllm", 8080: "llamacpp", 11434: "ollama", 30000: "sglang", 1234: "lmstudio", 3000: "tgi"}
    )
    for k in KINDS:
        cls = detect.ADAPTERS[k.name]
        assert cls.kind == k.name
        assert (cls.probe_path is not None) == (k.detect_order is not None)
    assert [k.name for k in DETECTION_ORDER] == ["llamacpp", "sglang", "ollama", "lmstudio", "tgi", "vllm"]


@pytest.mark.parametrize("name", KIND_NAMES)
def test_every_adapter_has_what_the_server_protocol_promises(name):
    cls = detect.ADAPTERS[name]
    members = [m for m in dir(Server) if not m.startswith("_")]
    for m in members:
        assert hasattr(cls, m) or m in ("kind", "url"), m
    s = cls("http://127.0.0.1:9")
    assert isinstance(s.url, str) and s.kind == name
    assert list(inspect.signature(s.stream).parameters)[0] == "req"
    s.close()


def test_ollama_streams_retry_a_stale_keep_alive_connection():
    # Every connection is closed under the client on its second request: the pool's kept-alive
    # connection is stale, and the shared streaming loop retries once on a fresh one.
    final = b'{"response": "", "done": true, "done_reason": "length", "prompt_eval_count": 3, "eval_count": 1}\n'
    routes = {
        "GET /api/version": Scripted(body={"version": "0.6"}),
        "POST /api/generate": Scripted(chunks=[b'{"response": "x", "done": false}\n', final]),
    }
    with ScriptedServer(routes, drop_reused=True) as srv:
        s = OllamaServer(srv.url)
        assert s.health()
        res = s.stream(StreamRequest(prompt=words_prompt(2), max_tokens=1, model="m", timeout_s=5))
        s.close()
    assert res.error is None and res.text == "x" and res.completion_tokens == 1
