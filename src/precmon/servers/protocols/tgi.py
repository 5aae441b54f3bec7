"""Hugging Face Text Generation Inference: `/generate_stream`, identity from `/info`.

Why `/generate_stream` and not TGI's OpenAI routes: `/v1/chat/completions` applies the chat
template (tokens we do not control, and prefill is measured per prompt token), and
`/v1/completions` arrived late and varies in whether streamed usage is sent. `/generate_stream`
exists in every TGI release, takes the raw prompt, sends one SSE event per generated token
(`token.special` marks EOS and friends), and its last event has `details` with
`generated_tokens`, `input_length` (prompt tokens, BOS included) and `finish_reason`
("length", "eos_token", "stop_sequence"). It sends no `[DONE]`; a last event with `details` ends
the stream, and anything else is a truncation.

What TGI cannot do: no `ignore_eos`, so an early EOS gives fewer tokens than asked and the run
is rejected; no prompt cache switch (TGI 3's prefix caching is defeated by the nonce at the
prompt start, and TGI does not report cached tokens: `cached_tokens` stays None).
`--endpoint chat` uses TGI's OpenAI route `/v1/chat/completions` (the model's chat template,
OpenAI chunks, the counts from the final chunk's `usage`), read as the OpenAI adapter reads it.
`/info` gives `model_id`, `model_dtype` ("torch.float16"), `max_input_tokens` (older:
`max_input_length`) and `max_total_tokens`, `version`; not the quantization (`--quantize`).
"""

from __future__ import annotations

from typing import Any, ClassVar

from precmon.servers.adapter import Adapter
from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.protocols.openai import apply_chunk, finish_text, prompt_fields
from precmon.servers.wire.fields import as_dict, count_field, int_field, str_field, token_ids
from precmon.servers.wire.stream import SSEJsonSink

FINISH = {"length": "length", "eos_token": "stop", "stop_sequence": "stop"}


class TGIServer(Adapter):
    kind: str = "tgi"
    health_path: ClassVar[str] = "/health"
    probe_path: ClassVar[str | None] = "/info"
    completions_path = "/generate_stream"
    chat_path = "/v1/chat/completions"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._info: dict[str, Any] | None = None

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        return (
            status == 200
            and isinstance(body, dict)
            and "model_id" in body
            and ("model_dtype" in body or "max_total_tokens" in body)
        )

    def info(self) -> dict[str, Any]:
        if self._info is None:
            self._info = as_dict(self.get_json("/info"))
        return self._info

    def version(self) -> str | None:
        try:
            info = self.info()
        except ServerError as exc:
            self.note(f"/info unavailable ({exc}): version n/a")
            return None
        v, sha = str_field(info, "version", limit=100), str_field(info, "sha", limit=100)
        return f"{v} ({sha[:7]})" if v and sha else v

    def list_models(self) -> list[ModelInfo]:
        info = self.info()
        max_in = int_field(info, "max_input_tokens", min=1) or int_field(info, "max_input_length", min=1)
        total = int_field(info, "max_total_tokens", min=1)
        # A prompt may hold max_input_tokens, and prompt + output max_total_tokens: report the
        # tighter bound so prefill sizes beyond it are skipped rather than refused (HTTP 422).
        ctx = min(max_in + 1, total) if max_in and total else (total or max_in)
        dtype = str_field(info, "model_dtype", limit=64)
        return [
            ModelInfo(
                name=str_field(info, "model_id") or "tgi",
                context_tokens=ctx,
                dtype=dtype.removeprefix("torch.") if dtype else None,
                loaded=True,
                source="/info (no quantization reported)",
            )
        ]

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        return token_ids(self.post_json("/tokenize", {"inputs": text}, timeout_s=60.0))

    def payload(self, req: StreamRequest) -> dict[str, Any]:
        params: dict[str, Any] = {"max_new_tokens": req.max_tokens, "details": True, "return_full_text": False}
        if req.temperature > 0:
            params.update(do_sample=True, temperature=req.temperature)
        else:
            params["do_sample"] = False  # TGI refuses temperature 0
        return {"inputs": req.prompt, "parameters": params}

    def _on_chunk(self, obj: dict[str, Any], now: float, res: StreamResult) -> None:
        tok = obj.get("token")
        if isinstance(tok, dict):
            # Every token event is one generated token, EOS included: its arrival is timed. A
            # special token (EOS) counts for timing but adds no content; its text is not kept.
            text = tok.get("text")
            special = tok.get("special") is True
            res.add_text(now, text if isinstance(text, str) and not special else "", token=True)
        details = obj.get("details")
        if isinstance(details, dict):
            res.completion_tokens = count_field(details, "generated_tokens", where="details")
            prompt = count_field(details, "input_length", where="details")
            if prompt is not None:
                res.prompt_tokens = prompt
            reason = details.get("finish_reason")
            shown = finish_text(reason) if reason is not None else None
            res.finish_reason = (FINISH.get(shown, shown) if shown else None) or "stop"
            res.server_timings["tgi_finish_reason"] = shown

    def chat_payload(self, req: StreamRequest) -> dict[str, Any]:
        """`/v1/chat/completions`: `model` is required there and TGI serves one ("tgi")."""
        p: dict[str, Any] = {
            **prompt_fields(req),
            "model": req.model or "tgi",
            "max_tokens": req.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if req.temperature > 0:
            p["temperature"] = req.temperature
        return p

    def stream(self, req: StreamRequest) -> StreamResult:
        if req.endpoint == "chat":
            return self.http.stream(
                self.chat_path, self.chat_payload(req), req.timeout_s, lambda r: SSEJsonSink(r, apply_chunk)
            )
        res = self.http.stream(
            self.completions_path, self.payload(req), req.timeout_s, lambda r: SSEJsonSink(r, self._on_chunk)
        )
        if res.prompt_tokens is None and res.error is None and res.completion_tokens is not None:
            try:  # older TGI has no input_length: count the prompt after the fact, off the clock
                toks = self.tokenize(req.prompt)
                res.prompt_tokens = len(toks) if toks is not None else None
            except ServerError:
                pass
        return res
