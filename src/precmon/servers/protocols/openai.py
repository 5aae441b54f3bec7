"""OpenAI-compatible streaming (`/v1/completions` or `/v1/chat/completions` over SSE), the base of
most adapters.

By default we use the *completions* endpoint with a raw prompt: a chat template adds tokens we do
not control. `StreamRequest.endpoint = "chat"` sends the prompt as one user message to
`chat_path` instead (docs/design.md §3 `--endpoint`): the server applies the model's chat
template, usage.prompt_tokens counts its tokens, and the chunks are deltas (`delta.content`,
reasoning in `delta.reasoning_content` / `delta.reasoning`, counted as generated text; vLLM's
first `{"role": "assistant", "content": ""}` delta carries none). Chunks are timestamped on arrival
(by `HttpClient.stream`); usage and any server timings come from the final chunks
(`stream_options.include_usage`). Every field is read through `precmon.servers.wire.fields`: a
`choices: [null]` is skipped, an impossible usage count makes the run invalid with a reason
naming the field.
"""

from __future__ import annotations

from typing import Any, ClassVar

from precmon.servers.adapter import Adapter
from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.wire.fields import (
    as_float,
    as_int,
    count_field,
    dict_field,
    dicts,
    int_field,
    list_field,
    str_field,
)
from precmon.servers.wire.http import describe_http_error, excerpt
from precmon.servers.wire.stream import SSEJsonSink

__all__ = [
    "REASONING_FIELDS",
    "OpenAIServer",
    "apply_chunk",
    "describe_http_error",
    "finish_text",
    "prompt_fields",
    "timings_of",
]

REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
MAX_SAFE_INT = 2**53


def timings_of(obj: dict[str, Any]) -> dict[str, float | int | str]:
    """A server's `timings` object, keeping only finite numbers and short strings."""
    out: dict[str, float | int | str] = {}
    for k, v in dict_field(obj, "timings").items():
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            n = as_int(v, min=-MAX_SAFE_INT, max=MAX_SAFE_INT)
            if n is not None:
                out[k] = n
        elif isinstance(v, float):
            x = as_float(v)
            if x is not None:
                out[k] = x
        elif isinstance(v, str) and len(v) <= 200:
            out[k] = v
    return out


def prompt_fields(req: StreamRequest) -> dict[str, Any]:
    """`prompt` for completions; for chat, `messages` with the prompt as the one user message (the
    nonce stays at the start of the content, so the template's fixed prefix is all requests share)."""
    if req.endpoint == "chat":
        return {"messages": [{"role": "user", "content": req.prompt}]}
    return {"prompt": req.prompt}


REFUSES_IGNORE_EOS = (
    "the server rejects `ignore_eos` (HTTP {status}): requests go without it, so a run that stops at "
    "end-of-text before max_tokens is rejected (too few tokens)"
)


def rejects_field(exc: ServerError, name: str) -> bool:
    """An HTTP 400/422 whose body names the request field `name` (a strict OpenAI-schema server
    refusing an extension such as `ignore_eos`)."""
    text = str(exc)
    return exc.http_status in (400, 422) and (f"'{name}'" in text or f'"{name}"' in text)


def finish_text(reason: object) -> str:
    """A finish_reason as a short string (a TGI-style list or a number is shown, not trusted)."""
    return excerpt(reason if isinstance(reason, str) else repr(reason), 64)


class OpenAIServer(Adapter):
    """Any server that speaks the OpenAI completions API with streaming."""

    kind: str = "openai"
    completions_path = "/v1/completions"
    chat_path = "/v1/chat/completions"
    health_path: ClassVar[str] = "/v1/models"
    # vLLM and SGLang: `min_tokens` backs up `ignore_eos`, `cache_salt` defeats the prefix cache.
    sends_min_tokens: ClassVar[bool] = False
    sends_cache_salt: ClassVar[bool] = False

    # ---- identity -------------------------------------------------------------------------
    def model_entries(self) -> list[dict[str, Any]]:
        """`GET /v1/models` `data` entries that have a string `id` (a bare list is accepted too)."""
        body = self.get_json("/v1/models")
        data = body if isinstance(body, list) else list_field(body, "data")
        return [m for m in dicts(data) if str_field(m, "id")]

    def list_models(self) -> list[ModelInfo]:
        return [self._model_from_entry(m) for m in self.model_entries()]

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        ctx = int_field(m, "max_model_len", min=1) or int_field(m, "context_length", min=1)
        return ModelInfo(name=str(m["id"]), context_tokens=ctx, source="/v1/models", notes=self.notes_text())

    # ---- streaming ------------------------------------------------------------------------
    def path_for(self, req: StreamRequest) -> str:
        """The streaming route of `req.endpoint`."""
        return self.chat_path if req.endpoint == "chat" else self.completions_path

    def payload(self, req: StreamRequest) -> dict[str, Any]:
        p: dict[str, Any] = {
            **prompt_fields(req),
            "max_tokens": req.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": req.temperature,
        }
        if req.model:
            p["model"] = req.model
        if req.ignore_eos and not self.refuses_ignore_eos:
            p["ignore_eos"] = True
            if self.sends_min_tokens:
                p["min_tokens"] = req.max_tokens
        if req.nonce and self.sends_cache_salt:
            p["cache_salt"] = req.nonce
        return p

    #: Set once the server refused `ignore_eos` as a field it does not know (HTTP 400/422 naming it:
    #: `transformers serve` validates requests against the OpenAI schema); not sent again.
    refuses_ignore_eos: bool = False

    def stream(self, req: StreamRequest) -> StreamResult:
        """One streamed completion, whole within `req.timeout_s` (see `HttpClient.stream`).

        A server that rejects `ignore_eos` as an unknown field is asked again without it, once,
        and noted: its runs may end at the model's end-of-text before `max_tokens`, and such a run
        is rejected for too few tokens, as on servers that have no such field (TGI, LM Studio)."""
        try:
            res = self._stream(req)
        except ServerError as exc:
            if not (req.ignore_eos and not self.refuses_ignore_eos and rejects_field(exc, "ignore_eos")):
                raise
            self.refuses_ignore_eos = True
            self.note(REFUSES_IGNORE_EOS.format(status=exc.http_status))
            self._refusal = exc.http_status
            res = self._stream(req)
        if self.refuses_ignore_eos and req.ignore_eos:  # on every result: the caller keeps it once
            res.notes.append(REFUSES_IGNORE_EOS.format(status=self._refusal))
        return res

    _refusal: int | None = None

    def _stream(self, req: StreamRequest) -> StreamResult:
        return self.http.stream(
            self.path_for(req), self.payload(req), req.timeout_s, lambda res: SSEJsonSink(res, self._on_chunk)
        )

    def _on_chunk(self, obj: dict[str, Any], now: float, res: StreamResult) -> None:
        apply_chunk(obj, now, res)


def apply_chunk(obj: dict[str, Any], now: float, res: StreamResult) -> None:
    """One OpenAI-shaped chunk (completions `text` or chat `delta`), arrived at `now`.

    A chat delta with only a role (vLLM's `{"role": "assistant", "content": ""}`, llama.cpp's
    `content: null`) or an empty final delta is no text; a usage-only chunk (`choices: []`)
    gives the counts; llama.cpp's final chunk adds `timings`, on both endpoints.
    """
    choices = obj.get("choices")
    if choices.__class__ is list:
        assert isinstance(choices, list)
        for choice in choices:
            if choice.__class__ is not dict:
                continue  # `choices: [null]`: nothing generated in it
            text = choice.get("text")
            if text.__class__ is str:  # the completions hot path: no reasoning fields to look at
                content, reasoning = text, ""
            else:
                content, reasoning = texts_of(choice)
            res.add_text(now, content, reasoning)
            reason = choice.get("finish_reason")
            if reason:
                res.finish_reason = finish_text(reason)
                if res.finish_s is None:
                    res.finish_s = now
    usage = obj.get("usage")
    if isinstance(usage, dict):
        apply_usage(usage, res)
    if "timings" in obj:
        res.server_timings.update(timings_of(obj))


def apply_usage(usage: dict[str, Any], res: StreamResult) -> None:
    """Token counts from `usage`; an impossible one raises FieldError (the run is invalid)."""
    prompt = count_field(usage, "prompt_tokens", where="usage")
    completion = count_field(usage, "completion_tokens", where="usage")
    cached = count_field(
        dict_field(usage, "prompt_tokens_details"), "cached_tokens", where="usage.prompt_tokens_details"
    )
    if prompt is not None:
        res.prompt_tokens = prompt
    if completion is not None:
        res.completion_tokens = completion
    if cached is not None:
        res.cached_tokens = cached


def texts_of(choice: dict[str, Any]) -> tuple[str, str]:
    """(content, reasoning) text of one choice, completions or chat shape."""
    text = choice.get("text")
    if isinstance(text, str):
        return text, ""
    delta = dict_field(choice, "delta")
    content = delta.get("content")
    reasoning = ""
    for f in REASONING_FIELDS:
        value = delta.get(f)
        if isinstance(value, str) and value:
            reasoning = value
            break
    return (content if isinstance(content, str) else ""), reasoning
