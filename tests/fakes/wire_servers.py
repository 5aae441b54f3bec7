"""Local fakes of vLLM, SGLang, Ollama, LM Studio and TGI, each speaking its documented wire format.

They share `timed_server`'s timing model (sleep `prefill_s_per_token` per uncached prompt token,
then one chunk every `itl_s`; a "token" is a word, plus BOS) and its `Behaviour` knobs, and log
the server-side truth per request in `behaviour.log`. OpenAI-style kinds reuse `timed_server`'s
completions stream; Ollama (NDJSON) and TGI (`/generate_stream`) have their own streams here.
Endpoints, field names and units follow each project's docs (see the adapters' docstrings).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.timed_server import Behaviour, TimedServer, _Handler, n_tokens

BUCKETS_S = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass
class Hist:
    buckets: list[float] = field(default_factory=lambda: [0.0] * len(BUCKETS_S))
    sum: float = 0.0
    count: int = 0

    def observe(self, v: float) -> None:
        self.sum += v
        self.count += 1
        for i, le in enumerate(BUCKETS_S):
            if v <= le:
                self.buckets[i] += 1

    def text(self, name: str, labels: str) -> str:
        lines = [f"# TYPE {name} histogram"]
        for le, c in zip(BUCKETS_S, self.buckets, strict=True):
            lines.append(f'{name}_bucket{{{labels},le="{le}"}} {c}')
        lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {self.count}')
        lines += [f"{name}_sum{{{labels}}} {self.sum}", f"{name}_count{{{labels}}} {self.count}"]
        return "\n".join(lines)


@dataclass
class WireBehaviour(Behaviour):
    kind: str = "vllm"
    model: str = "fake-model"
    models: tuple[str, ...] = ("fake-model", "other-model")
    quantization: str | None = "Q4_K_M"
    load_s: float = 0.0  # Ollama / LM Studio: time to load a model that is not loaded
    loaded: set[str] = field(default_factory=set)
    old_ollama_counts: bool = False  # prompt_eval_count = uncached tokens only (pre-0.4 Ollama)
    ollama_ps: bool = True  # False: no /api/ps (older Ollama, proxies speaking Ollama's API)
    tgi_input_length: bool = True
    lmstudio_stats: bool = True
    metrics: bool = True
    prompt_tokens_details: bool = True  # False: vLLM without --enable-prompt-tokens-details
    counters: dict[str, float] = field(default_factory=dict)
    hists: dict[str, Hist] = field(default_factory=dict)
    unloads: list[str] = field(default_factory=list)

    def record(self, truth: dict[str, Any]) -> None:
        """Update Prometheus state the way vLLM/SGLang would for one finished request."""
        c, h = self.counters, self.hists
        for k in ("gen", "prompt", "hits", "queries"):
            c.setdefault(k, 0.0)
        c["gen"] += truth["tokens"]
        c["prompt"] += truth["prompt_tokens"]
        c["hits"] += truth["cached"]
        c["queries"] += truth["prompt_tokens"]
        for k in ("ttft", "itl", "prefill", "decode", "e2e"):
            h.setdefault(k, Hist())
        h["ttft"].observe(truth["t_first"] - truth["t_recv"])
        h["prefill"].observe(truth["t_first"] - truth["t_recv"])
        h["decode"].observe(truth["t_last"] - truth["t_first"])
        h["e2e"].observe(truth["t_end"] - truth["t_recv"])
        if truth["tokens"] > 1:
            gap = (truth["t_last"] - truth["t_first"]) / (truth["tokens"] - 1)
            for _ in range(truth["tokens"] - 1):
                h["itl"].observe(gap)

    def finish(self, final: dict[str, Any], truth: dict[str, Any]) -> None:
        """The last event of a vLLM/SGLang completion: count the request, shape the usage."""
        self.record(truth)
        if not self.prompt_tokens_details:
            (final.get("usage") or {}).pop("prompt_tokens_details", None)

    def metrics_text(self) -> str:
        c, h = self.counters, self.hists
        lab = f'model_name="{self.model}"'
        p = "vllm:" if self.kind == "vllm" else "sglang:"
        out = [
            f"# HELP {p}generation_tokens_total x",
            f"{p}generation_tokens_total{{{lab}}} {c.get('gen', 0.0)}",
            f"{p}prompt_tokens_total{{{lab}}} {c.get('prompt', 0.0)}",
        ]
        if self.kind == "vllm":
            out += [
                f"vllm:num_requests_running{{{lab}}} 0.0",
                f"vllm:num_requests_waiting{{{lab}}} 0.0",
                f"vllm:kv_cache_usage_perc{{{lab}}} 0.25",
                f"vllm:prefix_cache_hits_total{{{lab}}} {c.get('hits', 0.0)}",
                f"vllm:prefix_cache_queries_total{{{lab}}} {c.get('queries', 0.0)}",
            ]
            names = {
                "ttft": "time_to_first_token_seconds",
                "itl": "inter_token_latency_seconds",
                "prefill": "request_prefill_time_seconds",
                "decode": "request_decode_time_seconds",
                "e2e": "e2e_request_latency_seconds",
            }
        else:
            out += [
                f"sglang:num_running_reqs{{{lab}}} 0.0",
                f"sglang:num_queue_reqs{{{lab}}} 0.0",
                f"sglang:token_usage{{{lab}}} 0.25",
                f"sglang:cache_hit_rate{{{lab}}} 0.0",
            ]
            names = {
                "ttft": "time_to_first_token_seconds",
                "itl": "inter_token_latency_seconds",
                "e2e": "e2e_request_latency_seconds",
            }
        for k, n in names.items():
            out.append(h.get(k, Hist()).text(p + n, lab))
        return "\n".join(out) + "\n"


class _WireHandler(_Handler):
    server: Any

    @property
    def b(self) -> WireBehaviour:
        return self.server.behaviour

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _text(self, text: str, status: int = 200) -> None:
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _begin_stream(self, ctype: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _send(self, text: str) -> None:
        data = text.encode()
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    # ---- GET --------------------------------------------------------------------------------
    def do_GET(self) -> None:
        b, path = self.b, self.path.split("?")[0]
        routes = {
            "vllm": {
                "/version": lambda: self._json({"version": "0.9.1"}),
                "/health": lambda: self._text(""),
                "/v1/models": lambda: self._json(
                    {
                        "object": "list",
                        "data": [{"id": b.model, "object": "model", "max_model_len": b.n_ctx, "root": b.model}],
                    }
                ),
            },
            "sglang": {
                "/get_server_info": lambda: self._json(
                    {
                        "model_path": b.model,
                        "tp_size": 1,
                        "dtype": "bfloat16",
                        "quantization": "fp8",
                        "kv_cache_dtype": "auto",
                        "context_length": None,
                        "version": "0.4.6",
                    }
                ),
                "/health": lambda: self._text(""),
                "/v1/models": lambda: self._json(
                    {"object": "list", "data": [{"id": b.model, "object": "model", "max_model_len": b.n_ctx}]}
                ),
            },
            "ollama": {
                "/api/version": lambda: self._json({"version": "0.6.8"}),
                "/": lambda: self._text("Ollama is running"),
                "/api/tags": lambda: self._json(
                    {
                        "models": [
                            {
                                "name": m,
                                "model": m,
                                "size": 4_900_000_000,
                                "details": {
                                    "format": "gguf",
                                    "family": "llama",
                                    "parameter_size": "8.0B",
                                    "quantization_level": b.quantization,
                                },
                            }
                            for m in b.models
                        ]
                    }
                ),
                "/api/ps": lambda: self._json(
                    {
                        "models": [
                            {
                                "name": m,
                                "model": m,
                                "size": 5_000_000_000,
                                "size_vram": 5_000_000_000,
                                "context_length": b.n_ctx,
                                "details": {"quantization_level": b.quantization},
                            }
                            for m in sorted(b.loaded)
                        ]
                    }
                ),
            },
            "lmstudio": {
                "/api/v0/models": lambda: self._json(
                    {
                        "object": "list",
                        "data": [
                            {
                                "id": m,
                                "object": "model",
                                "type": "llm",
                                "arch": "llama",
                                "compatibility_type": "gguf",
                                "quantization": b.quantization,
                                "state": "loaded" if m in b.loaded else "not-loaded",
                                "max_context_length": b.n_ctx,
                            }
                            for m in b.models
                        ],
                    }
                ),
                "/v1/models": lambda: self._json(
                    {"object": "list", "data": [{"id": m, "object": "model"} for m in b.models]}
                ),
            },
            "tgi": {
                "/info": lambda: self._json(
                    {
                        "model_id": b.model,
                        "model_dtype": "torch.float16",
                        "model_device_type": "cuda",
                        "max_input_tokens": b.n_ctx - 1024,
                        "max_total_tokens": b.n_ctx,
                        "version": "2.4.0",
                        "sha": "0123456789abcdef",
                        "router": "text-generation-router",
                    }
                ),
                "/health": lambda: self._text(""),
            },
        }[b.kind]
        if b.kind == "ollama" and not b.ollama_ps:
            routes.pop("/api/ps")
        if path == "/metrics" and b.kind in ("vllm", "sglang") and b.metrics:
            self._text(b.metrics_text())
        elif path in routes:
            routes[path]()
        else:
            self._json({"error": "Not Found"}, 404)

    # ---- POST -------------------------------------------------------------------------------
    def do_POST(self) -> None:
        b, path = self.b, self.path
        if b.kind in ("vllm", "sglang") and path == "/tokenize":
            toks = list(range(n_tokens(self._body().get("prompt", ""))))
            self._json({"tokens": toks, "count": len(toks), "max_model_len": b.n_ctx})
        elif b.kind in ("vllm", "sglang") and path == "/v1/completions":
            b.final_extra = b.finish
            super().do_POST()
        elif b.kind == "lmstudio" and path in ("/api/v0/completions", "/v1/completions"):
            self._lmstudio(path)
        elif b.kind == "ollama" and path == "/api/generate":
            self._ollama(self._body())
        elif b.kind == "ollama" and path == "/api/show":
            self._body()
            details = {"format": "gguf", "parameter_size": "8.0B", "quantization_level": b.quantization}
            info = {
                "general.architecture": "llama",
                "general.parameter_count": 8_030_261_248,
                "llama.context_length": 131072,
            }
            self._json({"details": details, "model_info": info})
        elif b.kind == "tgi" and path == "/generate_stream":
            self._tgi(self._body())
        elif b.kind == "tgi" and path == "/tokenize":
            n = n_tokens(self._body().get("inputs", ""))
            self._json([{"id": i, "text": "w", "start": 0, "stop": 0} for i in range(n)])
        else:
            self._json({"error": "Not Found"}, 404)

    def _lmstudio(self, path: str) -> None:
        b = self.b
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        model = json.loads(raw or b"{}").get("model") or b.model
        if model not in b.loaded:
            time.sleep(b.load_s)  # JIT load, inside the request as in LM Studio
            b.loaded.add(model)

        def stats(final: dict[str, Any], truth: dict[str, Any]) -> None:
            if b.lmstudio_stats and path.startswith("/api/v0"):
                gen_s = truth["t_end"] - truth["t_first"]
                final["stats"] = {
                    "tokens_per_second": truth["tokens"] / max(gen_s, 1e-9),
                    "time_to_first_token": truth["t_first"] - truth["t_recv"],
                    "generation_time": gen_s,
                    "stop_reason": "maxPredictedTokensReached",
                }
                final["model_info"] = {
                    "arch": "llama",
                    "quant": b.quantization,
                    "format": "gguf",
                    "context_length": b.n_ctx,
                }
                final["runtime"] = {"name": "llama.cpp-linux-x86_64", "version": "1.29.0"}

        b.final_extra = stats
        rfile, self.rfile = self.rfile, _Replay(raw)
        self.path = "/v1/completions"
        try:
            super().do_POST()
        finally:
            self.rfile = rfile  # the connection stays usable for keep-alive

    # ---- shared token loop (Ollama, TGI) -----------------------------------------------------
    def _generate(self, prompt: str, max_tokens: int, emit: Any, t0: float) -> dict[str, Any] | None:
        """Sleep the prefill, emit tokens; returns the truth, or None when the stream was cut."""
        b = self.b
        words = prompt.split()
        cached = 0
        if b.prefix_cache:
            for prev in b.seen_prompts:
                k = 0
                while k < min(len(prev), len(words)) and prev[k] == words[k]:
                    k += 1
                cached = max(cached, k)
        b.seen_prompts.append(words)
        prompt_tokens = len(words) + 1
        time.sleep(b.base_latency_s + (prompt_tokens - cached) * b.prefill_s_per_token)
        t_first = time.perf_counter()
        target = max_tokens if b.stop_after is None else min(max_tokens, b.stop_after)
        t_first_sent = t_last_sent = t_first
        for i in range(target):
            if i and b.itl_s:
                time.sleep(b.itl_s)
            emit(i, i == target - 1, target < max_tokens)
            t_last_sent = time.perf_counter()
            if i == 0:
                t_first_sent = t_last_sent
            if b.truncate_after is not None and i + 1 >= b.truncate_after:
                self._send("")
                return None
            if b.malformed_after is not None and i + 1 >= b.malformed_after:
                self._send("data:{not json\n\n" if b.kind == "tgi" else "{not json\n")
        truth = {
            "t_recv": t0,
            "t_first": t_first_sent,
            "t_last": t_last_sent,
            "tokens": target,
            "prompt_tokens": prompt_tokens,
            "cached": cached,
            "t_prefill_end": t_first,
            "t_end": time.perf_counter(),
        }
        b.log.append(truth)
        return truth

    def _ollama(self, body: dict[str, Any]) -> None:
        b = self.b
        t0 = time.perf_counter()
        model = body.get("model")
        b.requests.append(body)
        if model not in b.models:
            self._json({"error": f"model '{model}' not found"}, 404)
            return
        if b.http_status != 200:
            self._json({"error": "boom"}, b.http_status)
            return
        if not body.get("prompt"):
            if body.get("keep_alive") == 0:
                b.loaded.discard(model)
                b.unloads.append(model)
                self._json({"model": model, "response": "", "done": True, "done_reason": "unload"})
            else:
                if model not in b.loaded:
                    time.sleep(b.load_s)
                    b.loaded.add(model)
                self._json({"model": model, "response": "", "done": True, "done_reason": "load"})
            return
        load = 0.0
        if model not in b.loaded:
            time.sleep(b.load_s)
            load = b.load_s
            b.loaded.add(model)
        t_start = time.perf_counter()
        self._begin_stream("application/x-ndjson")
        if b.role_first:
            self._send(json.dumps({"model": model, "response": "", "done": False}) + "\n")
        max_tokens = int((body.get("options") or {}).get("num_predict", 128))

        def emit(i: int, last: bool, early: bool) -> None:
            self._send(
                json.dumps({"model": model, "created_at": "2025-01-01T00:00:00Z", "response": " tok", "done": False})
                + "\n"
            )

        truth = self._generate(body["prompt"], max_tokens, emit, t_start)
        if truth is None:
            return
        n, pn = truth["tokens"], truth["prompt_tokens"]
        final = {
            "model": model,
            "response": "",
            "done": True,
            "done_reason": "length" if n == max_tokens else "stop",
            "total_duration": int((truth["t_end"] - t0) * 1e9),
            "load_duration": int(load * 1e9),
            "prompt_eval_count": pn - truth["cached"] if b.old_ollama_counts else pn,
            "prompt_eval_duration": int((truth["t_prefill_end"] - t_start) * 1e9),
            "eval_count": n,
            "eval_duration": int((truth["t_end"] - truth["t_prefill_end"]) * 1e9),
        }
        if b.old_ollama_counts and truth["cached"] >= pn - 1:
            del final["prompt_eval_count"]
        self._send(json.dumps(final) + "\n")
        self._send("")

    def _tgi(self, body: dict[str, Any]) -> None:
        b = self.b
        t0 = time.perf_counter()
        b.requests.append(body)
        params = body.get("parameters") or {}
        if b.http_status != 200:
            self._json({"error": "Input validation error", "error_type": "validation"}, b.http_status)
            return
        self._begin_stream("text/event-stream")
        max_tokens = int(params.get("max_new_tokens", 20))
        prompt_tokens = n_tokens(body.get("inputs", ""))

        def emit(i: int, last: bool, early: bool) -> None:
            special = last and early  # an early stop ends with the EOS token
            ev: dict[str, Any] = {
                "index": i + 1,
                "token": {"id": 7, "text": "</s>" if special else " tok", "logprob": -0.1, "special": special},
                "generated_text": None,
                "details": None,
            }
            if last:
                ev["generated_text"] = " tok" * (i if special else i + 1)
                ev["details"] = {
                    "finish_reason": "eos_token" if early else "length",
                    "generated_tokens": i + 1,
                    "seed": None,
                }
                if b.tgi_input_length:
                    ev["details"]["input_length"] = prompt_tokens
            self._send(f"data:{json.dumps(ev)}\n\n")

        self._generate(body.get("inputs", ""), max_tokens, emit, t0)
        self._send("")


class _Replay:
    """A body already read, readable again by the base handler."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self, n: int = -1) -> bytes:
        out, self.data = (self.data, b"") if n < 0 else (self.data[:n], self.data[n:])
        return out


class WireServer(TimedServer):
    """`with WireServer(WireBehaviour(kind="ollama")) as srv: srv.url`."""

    def __init__(self, behaviour: WireBehaviour | None = None) -> None:
        super().__init__(behaviour or WireBehaviour())
        self._httpd.RequestHandlerClass = _WireHandler
        # A short poll interval: shutdown() waits for it, and tests start many servers.
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)


# ---- a scripted server: any status, any bytes, any pacing (for hostile-server tests) -------------
@dataclass
class Scripted:
    """One route's answer. `body` is JSON-encoded unless it is bytes; `chunks` stream instead."""

    status: int = 200
    body: Any = None
    chunks: list[bytes] | None = None  # a chunked body, one write per item
    gap_s: float = 0.0  # pause before each chunk after the first
    gaps_s: tuple[float, ...] = ()  # per-chunk pauses (before chunk i+1), overriding gap_s
    stall_s: float = 0.0  # pause before answering at all (accept, then say nothing)
    content_type: str = "application/json"


class _ScriptedHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any
    _served = 0  # requests answered on this connection

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        srv = self.server.scripted
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0]
        srv.requests.append((self.command, path, raw, dict(self.headers)))
        self._served += 1
        if srv.drop_reused and self._served == 2:
            self.close_connection = True  # a kept-alive connection closed under the client
            return
        s = srv.routes.get(f"{self.command} {path}") or srv.routes.get(path)
        if s is None:
            s = Scripted(404, {"error": "not found"})
        if s.stall_s and srv.stop.wait(s.stall_s):
            return
        self.send_response(s.status)
        self.send_header("Content-Type", s.content_type)
        if s.chunks is None:
            data = s.body if isinstance(s.body, bytes) else json.dumps(s.body).encode()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i, chunk in enumerate(s.chunks):
            gap = s.gaps_s[i - 1] if 0 < i <= len(s.gaps_s) else s.gap_s
            if i and gap and srv.stop.wait(gap):
                return
            try:
                self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                self.wfile.flush()
            except OSError:
                return  # the client gave up (its deadline)
        self.wfile.write(b"0\r\n\r\n")


class ScriptedServer:
    """`with ScriptedServer({"GET /props": Scripted(body=[1])}) as srv: srv.url`.

    Routes are "METHOD /path" or "/path"; anything else is a 404. `drop_reused` closes every
    connection on its second request without answering (a stale keep-alive connection).
    """

    def __init__(self, routes: dict[str, Scripted], drop_reused: bool = False) -> None:
        self.routes, self.drop_reused = routes, drop_reused
        self.requests: list[tuple[str, str, bytes, dict[str, str]]] = []
        self.stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ScriptedHandler)
        self._httpd.daemon_threads = True
        self._httpd.scripted = self  # type: ignore[attr-defined]
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()


def sse(*events: Any, done: bool = True) -> list[bytes]:
    """SSE chunks: one `data:` event per item (JSON-encoded unless bytes/str), then [DONE]."""
    out = []
    for ev in events:
        data = ev if isinstance(ev, bytes) else (ev if isinstance(ev, str) else json.dumps(ev)).encode()
        out.append(b"data: " + data + b"\n\n")
    if done:
        out.append(b"data: [DONE]\n\n")
    return out
