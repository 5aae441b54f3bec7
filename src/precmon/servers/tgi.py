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
`/info` gives `model_id`, `model_dtype` ("torch.float16"), `max_input_tokens` (older:
`max_input_length`) and `max_total_tokens`, `version`; not the quantization (`--quantize`).
"""

from __future__ import annotations

from typing import Any

from precmon.servers.base import ModelInfo, StreamRequest, StreamResult
from precmon.servers.openai import OpenAIServer

FINISH = {"length": "length", "eos_token": "stop", "stop_sequence": "stop"}


class TGIServer(OpenAIServer):
    kind = "tgi"
    health_path = "/health"
    completions_path = "/generate_stream"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._info: dict[str, Any] | None = None

    def info(self) -> dict[str, Any]:
        if self._info is None:
            self._info = self._get_json("/info")
        return self._info

    def version(self) -> str | None:
        info = self.info()
        v = info.get("version")
        return f"{v} ({info['sha'][:7]})" if v and info.get("sha") else (str(v) if v else None)

    def list_models(self) -> list[ModelInfo]:
        info = self.info()
        max_in = info.get("max_input_tokens") or info.get("max_input_length")
        total = info.get("max_total_tokens")
        # A prompt may hold max_input_tokens, and prompt + output max_total_tokens: report the
        # tighter bound so prefill sizes beyond it are skipped rather than refused (HTTP 422).
        ctx = min(max_in + 1, total) if max_in and total else (total or max_in)
        dtype = info.get("model_dtype")
        return [
            ModelInfo(
                name=info.get("model_id") or "tgi",
                context_tokens=ctx,
                dtype=str(dtype).removeprefix("torch.") if dtype else None,
                loaded=True,
                source="/info (no quantization reported)",
            )
        ]

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        out = self._post_json("/tokenize", {"inputs": text}, timeout_s=60.0)
        return [t["id"] for t in out] if isinstance(out, list) else None

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
            # Every token event is one generated token, EOS included: its arrival is timed.
            if res.first_text_s is None:
                res.first_text_s = now
            text = tok.get("text") if isinstance(tok.get("text"), str) else ""
            if not tok.get("special"):
                if text and res.first_content_s is None:
                    res.first_content_s = now
                res.text_parts.append(text)
            res.last_text_s = now
            res.text_chunk_times_s.append(now)
        details = obj.get("details")
        if isinstance(details, dict):
            res.completion_tokens = details.get("generated_tokens")
            if details.get("input_length") is not None:
                res.prompt_tokens = details["input_length"]
            reason = details.get("finish_reason")
            res.finish_reason = FINISH.get(reason, reason) or "stop"
            res.server_timings["tgi_finish_reason"] = reason

    def stream(self, req: StreamRequest) -> StreamResult:
        res = super().stream(req)
        if res.prompt_tokens is None and res.error is None and res.completion_tokens is not None:
            try:  # older TGI has no input_length: count the prompt after the fact, off the clock
                toks = self.tokenize(req.prompt)
                res.prompt_tokens = len(toks) if toks is not None else None
            except Exception:
                pass
        return res
