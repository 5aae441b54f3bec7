"""OpenAI-compatible streaming (`/v1/completions` over SSE), the base of most adapters.

We use the *completions* endpoint with a raw prompt, not chat: a chat template adds tokens we
do not control, and prefill is measured per prompt token. Chunks are timestamped on arrival;
usage and any server timings come from the final chunks (`stream_options.include_usage`).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.sse import SSEParser

REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")
# Streams are read raw (timestamps at byte arrival), so ask for no content encoding: a proxy that
# gzips SSE would otherwise hand the parser compressed bytes.
_IDENTITY = {"Accept-Encoding": "identity"}


def describe_http_error(url: str, exc: Exception, timeout_s: float | None = None) -> str:
    """One line a user can act on, for any httpx failure."""
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}: connection refused or host unreachable (is the server running?)"
    if isinstance(exc, httpx.TimeoutException):
        return f"{url}: no answer within {timeout_s or '?'} s ({type(exc).__name__})"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"{url}: the server closed the connection mid-response ({exc})"
    return f"{url}: {type(exc).__name__}: {exc}"


class _StaleConnection(Exception):
    pass


class OpenAIServer:
    """Any server that speaks the OpenAI completions API with streaming."""

    kind = "openai"
    completions_path = "/v1/completions"
    health_path = "/v1/models"
    # vLLM and SGLang: `min_tokens` backs up `ignore_eos`, `cache_salt` defeats the prefix cache.
    sends_min_tokens = False
    sends_cache_salt = False

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout_s = timeout_s
        # Up to 256 simultaneous streams (the concurrency test), so none waits in httpx's pool.
        self._client = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s, connect=10.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
        )

    # ---- plain requests -------------------------------------------------------------------
    def _request(self, method: str, path: str, timeout_s: float, **kw: Any) -> httpx.Response:
        """One plain request; retried once when a kept-alive connection was closed under us
        (llama-server closes idle connections, and the pool only learns it on reuse)."""
        for attempt in (0, 1):
            try:
                return self._client.request(method, path, timeout=timeout_s, **kw)
            except httpx.RemoteProtocolError as exc:
                if attempt:
                    raise ServerError(describe_http_error(self.url + path, exc, timeout_s)) from exc
            except httpx.HTTPError as exc:
                raise ServerError(describe_http_error(self.url + path, exc, timeout_s)) from exc
        raise AssertionError("unreachable")

    def _get_json(self, path: str, timeout_s: float = 10.0) -> Any:
        r = self._request("GET", path, timeout_s)
        if r.status_code != 200:
            raise ServerError(f"HTTP {r.status_code} from {self.url}{path}: {r.text[:200].strip()}", r.status_code)
        try:
            return r.json()
        except ValueError as exc:
            raise ServerError(f"{self.url}{path}: answer is not JSON") from exc

    def _post_json(self, path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> Any:
        r = self._request("POST", path, timeout_s, json=payload)
        if r.status_code != 200:
            raise ServerError(f"HTTP {r.status_code} from {self.url}{path}: {r.text[:200].strip()}", r.status_code)
        try:
            return r.json()
        except ValueError as exc:
            raise ServerError(f"{self.url}{path}: answer is not JSON") from exc

    def health(self) -> bool:
        """True when `health_path` answers 200 (a stale keep-alive connection is retried once)."""
        try:
            return self._request("GET", self.health_path, 5.0).status_code == 200
        except ServerError:
            return False

    def version(self) -> str | None:
        return None

    def list_models(self) -> list[ModelInfo]:
        data = self._get_json("/v1/models").get("data") or []
        return [self._model_from_entry(m) for m in data if isinstance(m, dict) and m.get("id")]

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        ctx = m.get("max_model_len") or m.get("context_length")
        return ModelInfo(name=m["id"], context_tokens=ctx, source="/v1/models")

    def model_info(self, model: str | None) -> ModelInfo | None:
        models = self.list_models()
        if not models:
            return None
        if model is None:
            return models[0]
        return next((m for m in models if m.name == model), None)

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        return None

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        return None

    def close(self) -> None:
        self._client.close()

    # ---- streaming ------------------------------------------------------------------------
    def payload(self, req: StreamRequest) -> dict[str, Any]:
        p: dict[str, Any] = {
            "prompt": req.prompt,
            "max_tokens": req.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "temperature": req.temperature,
        }
        if req.model:
            p["model"] = req.model
        if req.ignore_eos:
            p["ignore_eos"] = True
            if self.sends_min_tokens:
                p["min_tokens"] = req.max_tokens
        if req.nonce and self.sends_cache_salt:
            p["cache_salt"] = req.nonce
        return p

    def stream(self, req: StreamRequest) -> StreamResult:
        try:
            return self._stream_once(req)
        except _StaleConnection:
            return self._stream_once(req)  # the pool handed us a connection the server had closed

    def _stream_once(self, req: StreamRequest) -> StreamResult:
        payload = self.payload(req)
        parser = SSEParser()
        res = StreamResult(sent_s=time.perf_counter())
        url = self.url + self.completions_path
        try:
            with self._client.stream(
                "POST",
                self.completions_path,
                json=payload,
                headers=_IDENTITY,
                timeout=httpx.Timeout(req.timeout_s, connect=10.0),
            ) as r:
                res.http_status = r.status_code
                if r.status_code != 200:
                    body = r.read().decode(errors="replace")[:300].strip()
                    raise ServerError(f"HTTP {r.status_code} from {url}: {body}", r.status_code)
                done = False
                for raw in r.iter_raw():
                    now = time.perf_counter()
                    for ev in parser.feed(raw):
                        done = self._on_event(ev.data, now, res) or done
                for ev in parser.flush():
                    done = self._on_event(ev.data, time.perf_counter(), res) or done
                res.done_s = time.perf_counter()
                if not done and res.error is None and res.finish_reason is None:
                    res.error = "stream ended without [DONE] or a finish_reason (truncated)"
        except httpx.RemoteProtocolError as exc:
            if res.http_status is None and "without sending a response" in str(exc):
                raise _StaleConnection() from exc
            if res.http_status == 200:
                res.error = describe_http_error(url, exc, req.timeout_s)
                res.done_s = time.perf_counter()
                return res
            raise ServerError(describe_http_error(url, exc, req.timeout_s)) from exc
        except httpx.HTTPError as exc:
            if res.http_status == 200:
                res.error = describe_http_error(url, exc, req.timeout_s)
                res.done_s = time.perf_counter()
                return res
            raise ServerError(describe_http_error(url, exc, req.timeout_s)) from exc
        return res

    def _on_event(self, data: str, now: float, res: StreamResult) -> bool:
        """Apply one SSE data payload; True when it was the end marker."""
        data = data.strip()
        if data == "[DONE]":
            return True
        try:
            obj = json.loads(data)
        except json.JSONDecodeError:
            # Some servers omit the blank line between events: several JSON lines in one.
            parts = [p.removeprefix("data:").strip() for p in data.split("\n") if p.strip()]
            if len(parts) > 1:
                return any([self._on_event(p, now, res) for p in parts])
            res.error = f"malformed stream: not JSON: {data[:80]!r}"
            return False
        if not isinstance(obj, dict):
            res.error = f"malformed stream: unexpected {type(obj).__name__}"
            return False
        if "error" in obj and not obj.get("choices"):
            err = obj["error"]
            res.error = f"server error in stream: {err.get('message') if isinstance(err, dict) else err}"
            return False
        res.n_chunks += 1
        self._on_chunk(obj, now, res)
        return False

    def _on_chunk(self, obj: dict[str, Any], now: float, res: StreamResult) -> None:
        for choice in obj.get("choices") or ():
            text = choice.get("text")
            if text.__class__ is str:  # the completions hot path: no reasoning fields to look at
                content, reasoning = text, ""
            else:
                content, reasoning = self._texts(choice)
            res.add_text(now, content, reasoning)
            if choice.get("finish_reason"):
                res.finish_reason = choice["finish_reason"]
                if res.finish_s is None:
                    res.finish_s = now
        usage = obj.get("usage")
        if isinstance(usage, dict):
            res.prompt_tokens = usage.get("prompt_tokens", res.prompt_tokens)
            res.completion_tokens = usage.get("completion_tokens", res.completion_tokens)
            details = usage.get("prompt_tokens_details") or {}
            if isinstance(details, dict) and details.get("cached_tokens") is not None:
                res.cached_tokens = details["cached_tokens"]
        timings = obj.get("timings")
        if isinstance(timings, dict):
            res.server_timings.update(timings)

    @staticmethod
    def _texts(choice: dict[str, Any]) -> tuple[str, str]:
        """(content, reasoning) text of one choice, completions or chat shape."""
        if isinstance(choice.get("text"), str):
            return choice["text"], ""
        delta = choice.get("delta") or {}
        content = delta.get("content") or ""
        reasoning = ""
        for f in REASONING_FIELDS:
            if isinstance(delta.get(f), str) and delta[f]:
                reasoning = delta[f]
                break
        return (content if isinstance(content, str) else ""), reasoning
