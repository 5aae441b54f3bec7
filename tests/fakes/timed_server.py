"""A local OpenAI/llama.cpp-compatible server whose timing is known exactly.

It sleeps `prefill_s_per_token` per uncached prompt token before the first text chunk, then
emits `tokens_per_chunk` tokens every `itl_s`. A "token" is a whitespace-separated word, plus a
BOS token, so `/tokenize` and usage agree. It can also misbehave on purpose: pings, role-only
first chunks, a prefix cache that serves repeated prefixes, truncated or malformed streams,
HTTP errors. Tests compare precmon's numbers with the truth these settings define.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Behaviour:
    prefill_s_per_token: float = 0.0005
    base_latency_s: float = 0.01
    itl_s: float = 0.004
    tokens_per_chunk: int = 1
    ping_every: int = 0  # send ": ping" comment every N chunks (0 = never)
    role_first: bool = False  # first chunk carries only a role (chat style)
    usage: bool = True
    timings: bool = True  # llama.cpp-style `timings` in the final chunk
    prefix_cache: bool = False  # serve a repeated word prefix from "cache"
    honour_cache_prompt: bool = True  # cache_prompt:false disables the prefix cache
    stop_after: int | None = None  # stop early (finish_reason "stop") after this many tokens
    truncate_after: int | None = None  # close the stream after this many tokens, no [DONE]
    malformed_after: int | None = None  # send a non-JSON data line after this many tokens
    http_status: int = 200
    null_choices_from: int | None = None  # from this completion request on (1-based): `"choices": [null]`
    reject_prompt_over: int | None = None  # answer 400 to prompts with more tokens (a context limit)
    crlf: bool = False
    n_ctx: int = 4096
    # Run-to-run noise, deterministic: request k (counting every completion request) waits
    # itl_s × itl_jitter[k % len] between chunks; () keeps itl_s for all.
    itl_jitter: tuple[float, ...] = ()
    # Additions for the server-specific fakes (tests/fakes/wire_servers.py); defaults keep the
    # behaviour above unchanged.
    honour_ignore_eos: bool = False  # ignore_eos / min_tokens >= max_tokens override stop_after
    honour_cache_salt: bool = False  # the prefix cache only matches prompts with the same cache_salt
    final_extra: Any = None  # callable(final_event: dict, truth: dict) adding fields to the last event
    chat_template_tokens: int = 0  # /v1/chat/completions: tokens a chat template adds to the prompt count
    # llama-server's `-np`: at most this many completions run at once, the rest wait (a queue);
    # /props says it as `total_slots`. None: every request runs at once, and /props does not say.
    slots: int | None = None
    seen_salts: list[Any] = field(default_factory=list)
    seen_prompts: list[list[str]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    # server-side truth per request: perf_counter times (same clock as the client, same process)
    log: list[dict[str, float]] = field(default_factory=list)


def n_tokens(prompt: str) -> int:
    return len(prompt.split()) + 1  # BOS


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Real servers disable Nagle; without this the first small chunk waits for a delayed ACK
        # (~40 ms) and arrives bundled with the next ones, which would skew every timing test.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _json(self, obj: Any, status: int = 200) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        b = self.server.behaviour
        if self.path == "/health":
            self._json({"status": "ok"})
        elif self.path.startswith("/props"):
            self._json(
                {
                    "build_info": "fake-1",
                    "model_path": "/models/fake-Q4_K_M.gguf",
                    "default_generation_settings": {"n_ctx": b.n_ctx},
                }
                | ({"total_slots": b.slots} if b.slots else {})
            )
        elif self.path == "/v1/models":
            self._json(
                {
                    "object": "list",
                    "data": [
                        {
                            "id": "fake-Q4_K_M",
                            "object": "model",
                            "meta": {"n_ctx_train": b.n_ctx, "size": 1000000, "n_params": 2000000},
                        }
                    ],
                }
            )
        else:
            self._json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        slots = self.server.slots
        if slots is None or self.path == "/tokenize":
            return self._post()
        with slots:  # a request beyond the slots waits here, as in llama-server's queue
            return self._post()

    def _post(self) -> None:
        b = self.server.behaviour
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/tokenize":
            self._json({"tokens": list(range(n_tokens(body.get("content", ""))))})
            return
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self._json({"error": "not found"}, 404)
            return
        b.requests.append(body)
        if b.http_status != 200:
            self._json({"error": {"message": "boom", "code": b.http_status}}, b.http_status)
            return
        prompt = body.get("prompt") or " ".join(m.get("content", "") for m in body.get("messages", []))
        words = prompt.split()
        cached = 0
        salt = body.get("cache_salt")
        if b.prefix_cache and not (b.honour_cache_prompt and body.get("cache_prompt") is False):
            for i, prev in enumerate(b.seen_prompts):
                if b.honour_cache_salt and i < len(b.seen_salts) and b.seen_salts[i] != salt:
                    continue
                k = 0
                while k < min(len(prev), len(words)) and prev[k] == words[k]:
                    k += 1
                cached = max(cached, k)
        b.seen_prompts.append(words)
        b.seen_salts.append(salt)
        prompt_tokens = len(words) + 1 + (b.chat_template_tokens if "messages" in body else 0)
        if b.reject_prompt_over is not None and prompt_tokens > b.reject_prompt_over:
            self._json({"error": {"message": "the request exceeds the available context size", "code": 400}}, 400)
            return
        max_tokens = int(body.get("max_tokens", 16))
        itl_s = b.itl_s * (b.itl_jitter[(len(b.requests) - 1) % len(b.itl_jitter)] if b.itl_jitter else 1.0)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        nl = "\r\n" if b.crlf else "\n"
        chat = self.path.endswith("chat/completions")

        def send(text: str) -> None:
            data = text.encode()
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def event(obj: Any) -> None:
            send(f"data: {json.dumps(obj)}{nl}{nl}")

        t0 = time.perf_counter()
        if b.role_first and chat:
            event({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": None}]})
        time.sleep(b.base_latency_s + (prompt_tokens - cached) * b.prefill_s_per_token)
        t_first = time.perf_counter()
        target = max_tokens if b.stop_after is None else min(max_tokens, b.stop_after)
        if b.honour_ignore_eos and (body.get("ignore_eos") or int(body.get("min_tokens") or 0) >= max_tokens):
            target = max_tokens
        sent = 0
        chunks = 0
        t_first_sent = t_last_sent = t_first
        while sent < target:
            if chunks and itl_s:
                time.sleep(itl_s)
            k = min(b.tokens_per_chunk, target - sent)
            text = " tok" * k
            choice = (
                {"index": 0, "delta": {"content": text}, "finish_reason": None}
                if chat
                else {"index": 0, "text": text, "finish_reason": None}
            )
            failing = b.null_choices_from is not None and len(b.requests) >= b.null_choices_from
            event({"choices": [None if failing else choice], "object": "text_completion"})
            t_last_sent = time.perf_counter()
            if not chunks:
                t_first_sent = t_last_sent
            sent += k
            chunks += 1
            if b.ping_every and chunks % b.ping_every == 0:
                send(f": ping{nl}{nl}")
            if b.truncate_after is not None and sent >= b.truncate_after:
                send("")  # end chunked body abruptly: no [DONE]
                return
            if b.malformed_after is not None and sent >= b.malformed_after:
                send(f"data: {{not json{nl}{nl}")
        t_end = time.perf_counter()
        truth = {
            "t_recv": t0,
            "t_first": t_first_sent,
            "t_last": t_last_sent,
            "tokens": sent,
            "prompt_tokens": prompt_tokens,
            "cached": cached,
        }
        b.log.append(truth)
        final: dict[str, Any] = {
            "choices": [{"index": 0, "text": "", "finish_reason": "length" if sent == max_tokens else "stop"}]
        }
        if b.usage:
            final["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": sent,
                "total_tokens": prompt_tokens + sent,
                "prompt_tokens_details": {"cached_tokens": cached},
            }
        if b.timings:
            final["timings"] = {
                "cache_n": cached,
                "prompt_n": prompt_tokens - cached,
                "prompt_ms": (t_first - t0) * 1000,
                "predicted_n": sent,
                "predicted_ms": (t_end - t_first) * 1000,
                "predicted_per_second": sent / max(t_end - t_first, 1e-9),
                "prompt_per_second": (prompt_tokens - cached) / max(t_first - t0, 1e-9),
            }
        if b.final_extra is not None:
            b.final_extra(final, {**truth, "t_end": t_end})
        event(final)
        send(f"data: [DONE]{nl}{nl}")
        send("")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    behaviour: Behaviour
    slots: threading.Semaphore | None = None


class TimedServer:
    """Context manager: `with TimedServer(Behaviour(...)) as srv: srv.url`."""

    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.behaviour = self.behaviour
        self._httpd.slots = threading.Semaphore(self.behaviour.slots) if self.behaviour.slots else None
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> TimedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
