"""Property tests: whatever a server sends, the servers layer gives a defined outcome.

Generated JSON-ish bodies and byte streams go through the functions that parse them: the SSE
and NDJSON framings, every adapter's chunk handling, and every adapter's identity calls
(`version`, `list_models`, `model_info`, `tokenize`) with any body at any endpoint. The outcome
is a value, an invalid run with a reason, or a ServerError, never another exception. Budgets
are bounded (`max_examples`) so the file runs in seconds.
"""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precmon.servers.base import ServerError, StreamRequest, StreamResult
from precmon.servers.detect import ADAPTERS
from precmon.servers.protocols.lmstudio import LMStudioServer
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.tgi import TGIServer
from precmon.servers.protocols.vllm import VLLMServer
from precmon.servers.wire.fields import MAX_TOKENS, as_float, as_int
from precmon.servers.wire.http import Reply
from precmon.servers.wire.sse import SSEParser
from precmon.servers.wire.stream import NDJSONSink, SSEJsonSink

FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KEYS = (
    "choices text delta content reasoning_content finish_reason usage prompt_tokens completion_tokens "
    "prompt_tokens_details cached_tokens timings cache_n prompt_ms error message token special details "
    "generated_tokens input_length response thinking done done_reason eval_count eval_duration "
    "prompt_eval_count prompt_eval_duration load_duration total_duration stats tokens_per_second "
    "time_to_first_token generation_time runtime model_info quant data id max_model_len meta n_ctx "
    "n_ctx_train size n_params status value failed models name model parameter_size quantization_level "
    "context_length version sha model_id model_dtype max_input_tokens max_total_tokens build_info "
    "default_generation_settings model_path model_alias tokens general.parameter_count "
    "general.architecture dtype quantization kv_cache_dtype served_model_name state type "
    "max_context_length compatibility_type path"
).split()
ODD_STRINGS = (
    "12",
    "4096",
    "-1",
    "1e30",
    "NaN",
    "",
    "length",
    "stop",
    "\xff\x00\x1b[2J",
    "fake-model",
    "m.gguf",
    "[DONE]",
    "loaded",
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(ODD_STRINGS)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=6)
    ),
    max_leaves=24,
)
objects = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6)


def shaped(spec: Any) -> st.SearchStrategy[Any]:
    """Values shaped like `spec` (dict: keys that may appear; [x]: a list of x; None: anything),
    each level sometimes replaced by any JSON value, so near-valid bodies are common."""
    if spec is None:
        return json_values
    if isinstance(spec, list):
        return st.lists(shaped(spec[0]), max_size=3) | json_values
    return st.fixed_dictionaries({}, optional={k: shaped(v) for k, v in spec.items()}) | json_values


CHOICE = {"text": None, "delta": {"content": None, "reasoning_content": None}, "finish_reason": None}
OPENAI_CHUNK = {
    "choices": [CHOICE],
    "usage": {"prompt_tokens": None, "completion_tokens": None, "prompt_tokens_details": {"cached_tokens": None}},
    "timings": {"cache_n": None, "prompt_ms": None, "predicted_per_second": None},
    "error": {"message": None},
    "stats": {"tokens_per_second": None, "time_to_first_token": None, "generation_time": None},
    "runtime": {"name": None, "version": None},
    "model_info": {"quant": None},
    "token": {"text": None, "special": None},
    "details": {"finish_reason": None, "generated_tokens": None, "input_length": None},
}
OLLAMA_FINAL = {
    k: None
    for k in (
        "done_reason eval_count eval_duration prompt_eval_count prompt_eval_duration load_duration total_duration "
        "response thinking error"
    ).split()
}
ENTRY = {
    "id": None,
    "max_model_len": None,
    "meta": {"n_ctx": None, "size": None, "n_params": None},
    "status": {"value": None, "failed": None},
    "path": None,
}
TAG = {
    "name": None,
    "model": None,
    "size": None,
    "context_length": None,
    "details": {"parameter_size": None, "quantization_level": None},
}
BODIES = {
    "/v1/models": {"data": [ENTRY]},
    "/models": {"data": [ENTRY]},
    "/props": {
        "build_info": None,
        "model_path": None,
        "model_alias": None,
        "default_generation_settings": {"n_ctx": None},
    },
    "/tokenize": {"tokens": [None]},
    "/version": {"version": None},
    "/api/version": {"version": None},
    "/api/tags": {"models": [TAG]},
    "/api/ps": {"models": [TAG]},
    "/api/show": {
        "details": TAG["details"],
        "model_info": {"general.architecture": None, "general.parameter_count": None},
    },
    "/get_server_info": {
        k: None for k in "version dtype quantization kv_cache_dtype context_length served_model_name model_path".split()
    },
    "/api/v0/models": {
        "data": [{k: None for k in "id type state max_context_length quantization compatibility_type".split()}]
    },
    "/info": {k: None for k in "model_id model_dtype max_input_tokens max_total_tokens version sha".split()},
}
REQ = StreamRequest(prompt="a b c", max_tokens=4, model="fake-model")


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    parts, last = [], 0
    for p in points:
        parts.append(data[last:p])
        last = p
    parts.append(data[last:])
    return parts


def check_result(res: StreamResult) -> None:
    """What the measurement layer relies on, whatever the server sent."""
    for n in (res.prompt_tokens, res.completion_tokens, res.cached_tokens):
        assert n is None or (isinstance(n, int) and 0 <= n <= MAX_TOKENS), n
    assert res.error is None or (isinstance(res.error, str) and "\n" not in res.error)
    assert res.finish_reason is None or isinstance(res.finish_reason, str)
    assert all(isinstance(t, str) for t in res.text_parts)
    for v in res.server_timings.values():
        assert not isinstance(v, float) or math.isfinite(v), res.server_timings
    json.dumps(res.server_timings, allow_nan=False)  # what the results file will hold


# ---- framings -----------------------------------------------------------------------------------
@FAST
@given(st.binary(max_size=300), st.lists(st.integers(min_value=0), max_size=6))
def test_sse_parser_takes_any_bytes_in_any_split(data, cuts):
    whole = SSEParser()
    expect = whole.feed(data) + whole.flush()
    parser = SSEParser()
    got = [ev for part in split(data, cuts) for ev in parser.feed(part)] + parser.flush()
    assert got == expect


@FAST
@given(
    st.lists(shaped(OLLAMA_FINAL) | st.binary(max_size=20), max_size=6), st.lists(st.integers(min_value=0), max_size=6)
)
def test_ndjson_sink_takes_any_lines_in_any_split(values, cuts):
    data = b"".join(v if isinstance(v, bytes) else json.dumps(v).encode() + b"\n" for v in values)
    s = OllamaServer("http://127.0.0.1:9")
    finals = []
    for parts in ([data], split(data, cuts)):
        res = StreamResult(sent_s=0.0)
        sink = NDJSONSink(res, s._on_line)
        for i, part in enumerate(parts):
            sink.feed(part, float(i))
        sink.end(99.0)
        s._finish(sink.final, res, REQ, 0, None)
        check_result(res)
        finals.append((sink.final, res.completion_tokens, res.text))
    s.close()
    assert finals[0] == finals[1]


# ---- chunk handling of every streaming protocol -------------------------------------------------
def sse_bytes(events: list[Any]) -> bytes:
    out = b""
    for ev in events:
        data = ev if isinstance(ev, bytes) else json.dumps(ev).encode()
        out += b"data: " + data + b"\n\n"
    return out


@FAST
@given(
    st.sampled_from([OpenAIServer, LMStudioServer, TGIServer, VLLMServer]),
    st.lists(shaped(OPENAI_CHUNK) | st.binary(max_size=12), max_size=6),
    st.lists(st.integers(min_value=0), max_size=4),
    st.booleans(),
)
def test_every_sse_protocol_handles_any_chunks(cls, events, cuts, done):
    s = cls("http://127.0.0.1:9")
    res = StreamResult(sent_s=0.0)
    sink = SSEJsonSink(res, s._on_chunk)
    for i, part in enumerate(split(sse_bytes(events) + (b"data: [DONE]\n\n" if done else b""), cuts)):
        sink.feed(part, float(i))
    sink.end(99.0)
    s.close()
    check_result(res)


@FAST
@given(
    st.fixed_dictionaries({}, optional={k: json_values for k in OLLAMA_FINAL}),
    st.integers(min_value=0, max_value=100),
    st.none() | st.integers(min_value=0, max_value=100),
)
def test_ollama_final_object_any_shape(final, shared, expected):
    s = OllamaServer("http://127.0.0.1:9")
    res = StreamResult(sent_s=0.0)
    s._on_line(json.dumps({**final, "done": True}).encode(), 1.0, res)
    s._finish({**final, "done": True}, res, REQ, shared, expected)
    s.close()
    check_result(res)


# ---- identity calls of every adapter, with any body at any endpoint -----------------------------
class CannedHttp:
    """Stands in for HttpClient: every path answers with a generated body (or fails)."""

    url = "http://127.0.0.1:9"

    def __init__(self, bodies: dict[str, Any], default: Any, fail: bool) -> None:
        self.bodies, self.default, self.fail = bodies, default, fail

    def _body(self, path: str) -> Any:
        if self.fail and hash(path) % 3 == 0:
            raise ServerError(f"HTTP 404 from {self.url}{path}: nope", 404)
        return self.bodies.get(path.split("?")[0], self.default)

    def get_json(self, path: str, timeout_s: float) -> Any:
        return self._body(path)

    def post_json(self, path: str, payload: Any, timeout_s: float) -> Any:
        return self._body(path)

    def request(self, method: str, path: str, timeout_s: float, payload: Any = None) -> Reply:
        return Reply(200, json.dumps(self._body(path)).encode())

    def get(self, path: str, timeout_s: float) -> Reply:
        body = self._body(path)
        return Reply(200, body.encode() if isinstance(body, str) else json.dumps(body).encode())

    def close(self) -> None:
        pass


PATHS = (
    "/v1/models /models /props /tokenize /version /metrics /api/version /api/tags /api/ps /api/show "
    "/api/generate /get_server_info /api/v0/models /info /health"
).split()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(ADAPTERS)),
    st.fixed_dictionaries({}, optional={path: shaped(spec) for path, spec in BODIES.items()}),
    json_values,
    st.booleans(),
    st.none() | st.sampled_from(["fake-model", "m.gguf"]),
)
def test_every_adapter_identity_call_gives_a_value_or_a_server_error(kind, bodies, default, fail, model):
    s = ADAPTERS[kind]("http://127.0.0.1:9", timeout_s=1.0)
    s.http.close()
    s.http = CannedHttp(bodies, default, fail)  # type: ignore[assignment]
    calls = (
        s.health,
        s.version,
        s.list_models,
        lambda: s.model_info(model),
        lambda: s.tokenize("a b", model),
    )
    for call in calls:
        try:
            out = call()
        except ServerError as exc:
            assert "\n" not in str(exc)
            continue
        if isinstance(out, list):
            assert all(isinstance(t, int) for t in out) or all(hasattr(m, "name") for m in out)
    for note in s.notes:
        assert isinstance(note, str)


@FAST
@given(json_values)
def test_number_readers_return_the_type_asked_or_none(value):
    n = as_int(value)
    assert n is None or (type(n) is int and n >= 0)
    x = as_float(value)
    assert x is None or (type(x) is float and math.isfinite(x))
