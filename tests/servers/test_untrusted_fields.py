"""Every field from a server is untrusted: odd-but-valid JSON gives a defined outcome, never a traceback.

Each case is a shape a real server or proxy can send (issue 11 #2, #7): the outcome is a valid
run, an invalid run whose reason names the field, or a one-line ServerError.
"""

from __future__ import annotations

import json
import math
import time

import pytest

from precmon.measure.timing import validate
from precmon.servers.base import ServerError, StreamRequest, StreamResult
from precmon.servers.protocols.llamacpp import LlamaCppServer
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.tgi import TGIServer
from precmon.servers.protocols.vllm import VLLMServer
from precmon.servers.wire.fields import (
    MAX_TOKENS,
    FieldError,
    count_field,
    dict_field,
    float_field,
    int_field,
    list_field,
    str_field,
    token_ids,
)
from tests.fakes.wire_servers import Scripted, ScriptedServer, sse

REQ = StreamRequest(prompt="a b c", max_tokens=2, timeout_s=10)
TEXT = {"choices": [{"index": 0, "text": " tok", "finish_reason": None}]}


def final(usage: object) -> dict:
    return {"choices": [{"index": 0, "text": "", "finish_reason": "length"}], "usage": usage}


def usage(prompt: object = 4, completion: object = 2) -> dict:
    return {"prompt_tokens": prompt, "completion_tokens": completion}


def openai_stream(*events: object, cls: type = OpenAIServer, **routes: Scripted) -> StreamResult:
    path = "POST " + cls.completions_path
    with ScriptedServer({path: Scripted(chunks=sse(*events)), **routes}) as srv:
        s = cls(srv.url, timeout_s=10)
        try:
            return s.stream(REQ)
        finally:
            s.close()


# ---- the helpers ---------------------------------------------------------------------------------
def test_int_field_accepts_integers_in_range_only():
    obj = {"a": 12, "s": "12", "f": 12.0, "half": 12.5, "neg": -1, "big": 1e30, "t": True, "nan": math.nan}
    assert [int_field(obj, k) for k in ("a", "s", "f")] == [12, 12, 12]
    assert [int_field(obj, k) for k in ("half", "neg", "big", "t", "nan", "missing")] == [None] * 6
    assert int_field([1], "a") is None and int_field(None, "a") is None and int_field("x", "a") is None
    assert int_field({"a": 5}, "a", min=6) is None


def test_float_str_dict_list_fields():
    assert float_field({"x": "1.5"}, "x") == 1.5 and float_field({"x": math.inf}, "x") is None
    assert float_field({"x": False}, "x") is None and float_field({"x": 10**400}, "x") is None
    assert (
        str_field({"x": "ok"}, "x") == "ok" and str_field({"x": 3}, "x") is None and str_field({"x": ""}, "x") is None
    )
    assert dict_field({"x": [1]}, "x") == {} and dict_field({"x": {"a": 1}}, "x") == {"a": 1}
    assert list_field({"x": {"a": 1}}, "x") == [] and list_field(7, "x") == []
    assert token_ids([1, 2, {"id": 3}]) == [1, 2, 3]
    assert token_ids([1, "2"]) is None and token_ids("123") is None and token_ids([1, {"id": -1}]) is None


@pytest.mark.parametrize("value", [-5, 1e30, MAX_TOKENS + 1, 3.5, True, math.nan, "x", [], {}])
def test_count_field_rejects_impossible_counts_naming_the_field(value):
    with pytest.raises(FieldError, match=r"usage\.prompt_tokens = "):
        count_field({"prompt_tokens": value}, "prompt_tokens", where="usage")
    assert count_field({}, "prompt_tokens", where="usage") is None


# ---- OpenAI-compatible streams -------------------------------------------------------------------
def test_choices_null_and_not_a_list_are_skipped():
    res = openai_stream({"choices": [None]}, {"choices": "x"}, {"choices": {"0": 1}}, TEXT, TEXT, final(usage()))
    assert validate(res, 2) is None and res.n_chunks == 6 and len(res.text_chunk_times_s) == 2


def test_usage_counts_as_strings_or_integral_floats_are_read():
    res = openai_stream(TEXT, TEXT, final(usage("4", 2.0)))
    assert (res.prompt_tokens, res.completion_tokens) == (4, 2) and validate(res, 2) is None


@pytest.mark.parametrize("bad", [-5, 1e30, 2.5, True, "NaN"])
def test_impossible_usage_makes_the_run_invalid_with_a_reason(bad):
    res = openai_stream(TEXT, TEXT, final(usage(prompt=bad)))
    reason = validate(res, 2)
    assert reason and "usage.prompt_tokens" in reason and res.prompt_tokens is None


def test_nan_prompt_tokens_literal_is_invalid():
    res = openai_stream(TEXT, TEXT, b'{"choices": [], "usage": {"prompt_tokens": NaN, "completion_tokens": 2}}')
    assert "usage.prompt_tokens" in validate(res, 2)


def test_odd_usage_and_timings_shapes():
    res = openai_stream(TEXT, TEXT, {**final([1, 2]), "timings": {"prompt_ms": "x", "cache_n": [1], "ok": 1.5}})
    assert res.prompt_tokens is None and res.server_timings == {"prompt_ms": "x", "ok": 1.5}
    res = openai_stream(TEXT, TEXT, final({**usage(), "prompt_tokens_details": [3]}))
    assert res.cached_tokens is None and validate(res, 2) is None


def test_list_finish_reason_and_odd_error_objects():
    res = openai_stream(TEXT, TEXT, {"choices": [{"text": "", "finish_reason": ["length"]}], "usage": usage()})
    assert res.finish_reason == "['length']" and validate(res, 2) is None
    res = openai_stream({"error": [1, 2]})
    assert res.error.startswith("server error in stream: [1, 2]")


@pytest.mark.parametrize("body", [b'"a string"', b"42", b"null", b"[1, 2]", b"[[[[[[[[[[[[[[[[["])
def test_stream_events_that_are_not_objects(body):
    res = openai_stream(TEXT, body)
    assert res.error and "malformed stream" in res.error


@pytest.mark.parametrize(
    ("body", "content_type", "shown"),
    [
        (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html", "502 Bad Gateway"),
        (json.dumps(final(usage())).encode(), "application/json", '"finish_reason"'),  # stream: true ignored
    ],
)
def test_a_whole_body_where_a_stream_was_asked_is_named(body, content_type, shown):
    """A proxy's HTTP 200 error page, or a server that ignores `stream: true`, was reported as
    "stream ended without [DONE] (truncated)": the user looked for a cut connection, not the page."""
    path = "POST " + OpenAIServer.completions_path
    with ScriptedServer({path: Scripted(body=body, content_type=content_type)}) as srv:
        s = OpenAIServer(srv.url, timeout_s=10)
        try:
            res = s.stream(REQ)
        finally:
            s.close()
    assert res.error and res.error.startswith("not an event stream") and shown in res.error, res.error


def test_non_utf8_bytes_in_a_stream_and_a_body():
    res = openai_stream(
        b'{"choices": [{"text": "\xff\xfe ok", "finish_reason": "length"}], "usage": '
        b'{"prompt_tokens": 4, "completion_tokens": 1}}'
    )
    assert res.error is None and "\ufffd" in res.text
    with ScriptedServer({"/v1/models": Scripted(body=b'{"data": "\xff"}')}) as srv:
        s = OpenAIServer(srv.url)
        with pytest.raises(ServerError, match="not JSON"):
            s.list_models()
        s.close()


# ---- identity endpoints --------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body,expect",
    [
        ({"data": [{"id": "m", "max_model_len": "4096"}]}, [("m", 4096)]),
        ([{"id": "m", "max_model_len": 2048}], [("m", 2048)]),  # a bare list instead of {data: [...]}
        ({"data": [None, 3, {"id": 7}, {"id": "m", "max_model_len": -1}]}, [("m", None)]),
        ({"data": {"id": "m"}}, []),
        ("a string", []),
        (None, []),
    ],
)
def test_v1_models_shapes(body, expect):
    with ScriptedServer({"/v1/models": Scripted(body=body)}) as srv:
        s = VLLMServer(srv.url)
        assert [(m.name, m.context_tokens) for m in s.list_models()] == expect
        s.close()


@pytest.mark.parametrize("props", [[1, 2], "x", {"default_generation_settings": [1]}, {"build_info": 5}])
@pytest.mark.parametrize("tokens", [{"tokens": "abc"}, {"tokens": [1, "x"]}, {}, [1, 2], None])
def test_odd_props_and_tokenize(props, tokens):
    routes = {
        "GET /props": Scripted(body=props),
        "GET /v1/models": Scripted(body={"data": [{"id": "m.gguf", "meta": {"n_ctx_train": "x", "size": -3}}]}),
        "POST /tokenize": Scripted(body=tokens),
    }
    with ScriptedServer(routes) as srv:
        s = LlamaCppServer(srv.url)
        info = s.model_info(None)
        assert info is not None and info.name == "m.gguf" and info.context_tokens is None and info.size_bytes is None
        assert s.version() is None
        assert s.tokenize("a b") is None
        s.close()


# ---- Ollama and TGI ------------------------------------------------------------------------------
def ollama_final(**kw: object) -> bytes:
    import json

    f = {"response": "", "done": True, "done_reason": "length", "prompt_eval_count": 4, "eval_count": 2}
    return (json.dumps({**f, **kw}) + "\n").encode()


def ollama_stream(last: bytes) -> StreamResult:
    tok = b'{"response": " tok", "done": false}\n'
    routes = {"POST /api/generate": Scripted(chunks=[tok, tok, last], content_type="application/x-ndjson")}
    with ScriptedServer(routes) as srv:
        s = OllamaServer(srv.url)
        try:
            return s.stream(StreamRequest(prompt="a b c", max_tokens=2, model="m", timeout_s=10))
        finally:
            s.close()


def test_ollama_durations_as_strings_are_read():
    res = ollama_stream(ollama_final(eval_duration="2000000", prompt_eval_duration="1000000", load_duration="0"))
    assert validate(res, 2) is None
    assert res.server_timings["predicted_per_second"] == pytest.approx(1000.0)
    assert res.server_timings["prompt_ms"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"eval_duration": -1}, "final.eval_duration"),
        ({"eval_duration": "soon"}, "final.eval_duration"),
        ({"prompt_eval_count": -5}, "final.prompt_eval_count"),
        ({"eval_count": 1e30}, "final.eval_count"),
        ({"load_duration": [1]}, "final.load_duration"),
    ],
)
def test_ollama_impossible_values_make_the_run_invalid(kw, field):
    res = ollama_stream(ollama_final(**kw))
    reason = validate(res, 2)
    assert reason and field in reason


def test_ollama_odd_lines_and_done_reason():
    res = ollama_stream(b'"text"\n[1]\n' + ollama_final(done_reason=["stop"]))
    assert "malformed stream: unexpected str" in res.error and res.completion_tokens == 2


def test_tgi_list_finish_reason_and_odd_details():
    tok = {"token": {"id": 1, "text": " tok", "special": False}}
    last = {
        "token": {"id": 2, "text": 5, "special": "no"},
        "details": {"finish_reason": ["length"], "generated_tokens": 2, "input_length": 4},
    }
    with ScriptedServer({"POST /generate_stream": Scripted(chunks=sse(tok, last, done=False))}) as srv:
        s = TGIServer(srv.url)
        res = s.stream(REQ)
        bad = {"token": None, "details": {"finish_reason": "length", "generated_tokens": -2}}
        srv.routes["POST /generate_stream"] = Scripted(chunks=sse(tok, bad, done=False))
        res_bad = s.stream(REQ)
        s.close()
    assert res.finish_reason == "['length']" and res.completion_tokens == 2 and len(res.text_chunk_times_s) == 2
    assert "details.generated_tokens" in validate(res_bad, 2)


@pytest.mark.parametrize("cache_n", [-3, 1e30, "x", True])
def test_llamacpp_impossible_cache_n_is_not_a_cache_hit_count(cache_n):
    res = openai_stream(TEXT, TEXT, {**final(usage()), "timings": {"cache_n": cache_n}}, cls=LlamaCppServer)
    assert res.cached_tokens is None and validate(res, 2) is None


def _raw_answer(payload: bytes) -> str:
    """What precmon says when a server answers `payload` bytes to a request (then closes)."""
    import socket
    import threading

    import httpx

    from precmon.servers.wire.http import describe_http_error

    sock = socket.create_server(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1/completions"

    def answer() -> None:
        conn, _ = sock.accept()
        conn.recv(65536)
        conn.sendall(payload)
        conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        with httpx.Client(timeout=5) as client:
            client.get(url)
    except httpx.HTTPError as exc:
        return describe_http_error(url, exc, 5)
    finally:
        thread.join(5)
        sock.close()
    raise AssertionError("no error")


@pytest.mark.parametrize(
    ("payload", "said"),
    [
        (b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n", "malformed HTTP response"),
        (b"HELLO WORLD\r\n\r\n", "malformed HTTP response"),  # not HTTP at all (another service on the port)
        (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc", "closed the connection mid-response"),
    ],
    ids=["huge-header", "not-http", "cut-body"],
)
def test_a_broken_http_answer_is_not_called_a_closed_connection(payload, said):
    """A protocol violation (a 200 kB header, a non-HTTP service on the port) was reported as
    "the server closed the connection mid-response": the user looked for a crash, not a proxy."""
    assert said in _raw_answer(payload)


def test_a_stream_without_line_ends_ends_at_the_line_limit(monkeypatch):
    """A server sending `data: xxxx…` with no line end grew the parser's buffer, copied on every
    read, until --timeout (100 MB in 5 s was seen): it ends at the line limit with the reason."""
    from precmon.servers.wire import sse as sse_module

    monkeypatch.setattr(sse_module, "MAX_LINE_CHARS", 64 * 1024)
    monkeypatch.setattr("precmon.servers.wire.stream.MAX_LINE_CHARS", 64 * 1024)
    path = "POST " + OpenAIServer.completions_path
    chunks = [b"data: " + b"x" * 16384 for _ in range(200)]  # 3.2 MB, never a newline
    with ScriptedServer({path: Scripted(chunks=chunks, content_type="text/event-stream")}) as srv:
        s = OpenAIServer(srv.url, timeout_s=30)
        try:
            started = time.monotonic()
            res = s.stream(REQ)
        finally:
            s.close()
    assert res.error == "malformed stream: a line of more than 0.0625 MiB without a line end", res.error
    assert time.monotonic() - started < 20


def test_the_parsers_refuse_a_line_past_the_limit(monkeypatch):
    from precmon.servers.wire import sse as sse_module
    from precmon.servers.wire.sse import LineTooLong, SSEParser
    from precmon.servers.wire.stream import NDJSONSink

    monkeypatch.setattr(sse_module, "MAX_LINE_CHARS", 100)
    monkeypatch.setattr("precmon.servers.wire.stream.MAX_LINE_CHARS", 100)
    p = SSEParser()
    assert p.feed(b"data: " + b"a" * 50) == []
    with pytest.raises(LineTooLong):
        p.feed(b"a" * 60)
    assert [e.data for e in p.feed(b"\ndata: ok\n\n")] == ["ok"]  # the buffer was dropped, not kept
    sink = NDJSONSink(StreamResult(sent_s=0.0), lambda line, now, res: None)
    with pytest.raises(LineTooLong):
        sink.feed(b"{" * 101, 0.0)
