"""`--endpoint chat`: each adapter's chat route and payload, and the chat stream shapes real servers
send (vLLM's empty role delta and usage-only final chunk, reasoning deltas, llama.cpp's final
chunk with `timings`, Ollama's `/api/chat` lines), read into the same `StreamResult` fields."""

from __future__ import annotations

import json

import pytest

from precmon.servers.base import StreamRequest
from precmon.servers.protocols.llamacpp import LlamaCppServer
from precmon.servers.protocols.ollama import OllamaServer
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.protocols.tgi import TGIServer
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.wire_servers import Scripted, ScriptedServer, sse

CHAT = StreamRequest(prompt="[ab12] time year", max_tokens=3, model="m", nonce="ab12", endpoint="chat")


def chunk(delta: dict | None = None, finish: str | None = None, **extra) -> dict:
    """One `chat.completion.chunk` as vLLM and llama.cpp send it."""
    choice = {"index": 0, "delta": delta if delta is not None else {}, "logprobs": None, "finish_reason": finish}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", "choices": [choice], **extra}


def usage_only(prompt: int, completion: int, **extra) -> dict:
    usage = {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": usage, **extra}


def sent_body(srv: ScriptedServer, path: str) -> dict:
    [raw] = [r[2] for r in srv.requests if r[1] == path]
    return json.loads(raw)


VLLM_CHAT = sse(
    chunk({"role": "assistant", "content": ""}),  # vLLM's first chunk: a role, no text
    chunk({"content": " tok"}),
    chunk({"content": " tok"}),
    chunk({"content": " tok"}, finish="length"),
    usage_only(17, 3),
)


def test_vllm_chat_posts_messages_with_salt_and_min_tokens_and_times_text_not_the_role_chunk():
    # the role chunk comes at once, the first text 0.2 s later (prefill): TTFT is the text's
    routes = {"POST /v1/chat/completions": Scripted(chunks=VLLM_CHAT, gaps_s=(0.2, 0.01, 0.01, 0.01, 0.01))}
    with ScriptedServer(routes) as srv:
        res = VLLMServer(srv.url, per_request_metrics=False).stream(CHAT)
        body = sent_body(srv, "/v1/chat/completions")
    assert body["messages"] == [{"role": "user", "content": "[ab12] time year"}] and "prompt" not in body
    assert body["cache_salt"] == "ab12" and body["min_tokens"] == 3 and body["ignore_eos"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert res.error is None and res.finish_reason == "length"
    assert (res.prompt_tokens, res.completion_tokens) == (17, 3)  # from usage, not from chunks
    assert res.ttft_s is not None and res.ttft_s >= 0.2
    assert len(res.text_chunk_times_s) == 3 and res.text == " tok tok tok"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_deltas_count_as_generated_text(field):
    events = sse(
        chunk({"role": "assistant", "content": ""}),
        chunk({field: "think"}),
        chunk({field: "more"}),
        chunk({"content": "answer"}, finish="length"),
        usage_only(9, 3),
    )
    with ScriptedServer({"POST /v1/chat/completions": Scripted(chunks=events, gap_s=0.05)}) as srv:
        res = OpenAIServer(srv.url).stream(CHAT)
    assert res.error is None and res.completion_tokens == 3
    assert len(res.text_chunk_times_s) == 3  # both reasoning chunks and the answer are timed
    assert res.first_text_s == res.text_chunk_times_s[0] < res.first_content_s == res.last_text_s


def test_llamacpp_chat_sends_cache_prompt_false_and_reads_timings_from_the_final_chunk():
    timings = {"cache_n": 0, "prompt_n": 36, "prompt_ms": 12.5, "predicted_n": 3, "predicted_per_second": 250.0}
    events = sse(
        chunk({"role": "assistant", "content": None}),  # llama.cpp's first chunk: content null
        chunk({"content": " comes"}),
        chunk({"content": " comes"}),
        chunk({"content": " comes"}),
        chunk({}, finish="length"),  # an empty delta carries the finish_reason
        {**usage_only(36, 3), "usage": {**usage_only(36, 3)["usage"], "prompt_tokens_details": {"cached_tokens": 0}}}
        | {"timings": timings},
    )
    with ScriptedServer({"POST /v1/chat/completions": Scripted(chunks=events)}) as srv:
        res = LlamaCppServer(srv.url).stream(CHAT)
        body = sent_body(srv, "/v1/chat/completions")
    assert body["cache_prompt"] is False and body["messages"][0]["content"].startswith("[ab12]")
    assert res.error is None and (res.prompt_tokens, res.completion_tokens, res.cached_tokens) == (36, 3, 0)
    assert res.server_timings["prompt_n"] == 36 and res.server_timings["predicted_per_second"] == 250.0
    assert len(res.text_chunk_times_s) == 3 and res.finish_reason == "length"


def test_completions_stays_the_default_route():
    events = sse({"choices": [{"index": 0, "text": " a", "finish_reason": "length"}]}, usage_only(4, 1))
    with ScriptedServer({"POST /v1/completions": Scripted(chunks=events)}) as srv:
        res = OpenAIServer(srv.url).stream(StreamRequest(prompt="x y", max_tokens=1))
        body = sent_body(srv, "/v1/completions")
    assert body["prompt"] == "x y" and "messages" not in body and res.error is None


def test_ollama_chat_streams_api_chat_with_message_content_and_thinking():
    lines = [
        {"model": "m", "message": {"role": "assistant", "content": "", "thinking": "hmm"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "hi"}, "done": False},
        {"model": "m", "message": {"role": "assistant", "content": "!"}, "done": False},
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "length",
            "prompt_eval_count": 21,
            "prompt_eval_duration": 5_000_000,
            "eval_count": 3,
            "eval_duration": 30_000_000,
            "load_duration": 1_000_000,
        },
    ]
    chunks = [json.dumps(x).encode() + b"\n" for x in lines]
    routes = {"POST /api/chat": Scripted(chunks=chunks, content_type="application/x-ndjson")}
    with ScriptedServer(routes) as srv:
        res = OllamaServer(srv.url).stream(CHAT)
        body = sent_body(srv, "/api/chat")
    assert body["messages"] == [{"role": "user", "content": "[ab12] time year"}]
    assert "prompt" not in body and "raw" not in body and body["options"]["num_predict"] == 3
    assert res.error is None and (res.prompt_tokens, res.completion_tokens) == (21, 3)
    assert len(res.text_chunk_times_s) == 3 and res.text == "hi!"  # the thinking chunk is timed too
    assert res.first_text_s is not None and res.first_content_s is not None
    assert res.first_text_s < res.first_content_s


def test_tgi_chat_uses_its_openai_route():
    with ScriptedServer({"POST /v1/chat/completions": Scripted(chunks=VLLM_CHAT)}) as srv:
        res = TGIServer(srv.url).stream(CHAT)
        body = sent_body(srv, "/v1/chat/completions")
    assert body["messages"][0]["content"] == "[ab12] time year" and body["max_tokens"] == 3
    assert res.error is None and (res.prompt_tokens, res.completion_tokens) == (17, 3)
