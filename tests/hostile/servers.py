"""Hostile local servers: llama.cpp-compatible enough to be measured, then wrong on purpose.

Each `Script` names one fault a real user's server (or a proxy in front of it) throws at precmon:
odd but valid JSON, markup and terminal escapes in error bodies, HTTP 500s, a stream that stalls,
trickles one byte a second or is cut mid-way, a server that echoes the Authorization header, one
that dies after a few requests. They bind 127.0.0.1 on a free port, and every stalling handler
ends when the server is closed (at most `MAX_STALL_S`), so a test can never hang on them.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_STALL_S = 30.0  # a stalled or trickling handler gives up after this long, server or not
MARKUP_BODY = "[/] [bold]boom[/bold] \x1b[31mred\x1b[0m \x1b]0;pwned\x07 \x07 [link=file:///etc]x[/link]"
SECRET = "sk-hostile0123456789SECRETabcdef"  # never to be seen in any output or file


def n_tokens(prompt: str) -> int:
    return len(prompt.split()) + 1  # BOS, as tests/fakes/timed_server.py


@dataclass
class Script:
    """How one hostile server answers; every hook defaults to a well-behaved llama-server."""

    name: str
    models: Callable[[Handler], Any] | None = None  # GET /v1/models body
    props: Callable[[Handler], Any] | None = None  # GET /props body
    completion: Callable[[Handler, dict[str, Any], int], None] | None = None  # POST /v1/completions
    healthy: bool = True


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, *args: Any) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    # ---- helpers the scripts use ------------------------------------------------------------
    def send_json(self, obj: Any, status: int = 200) -> None:
        body = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
        self.wfile.flush()

    def event(self, obj: Any) -> None:
        self.chunk(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n")

    def stall(self, seconds: float = MAX_STALL_S) -> None:
        """Sleep until the server closes (or `seconds` pass)."""
        self.server.closing.wait(min(seconds, MAX_STALL_S))

    # ---- routes -----------------------------------------------------------------------------
    def do_GET(self) -> None:
        s = self.server.script
        if self.path == "/health":
            self.send_json({"status": "ok"} if s.healthy else {"status": "loading"}, 200 if s.healthy else 503)
        elif self.path.startswith("/props"):
            self.send_json(
                s.props(self)
                if s.props
                else {"build_info": "hostile-1", "default_generation_settings": {"n_ctx": 4096}}
            )
        elif self.path == "/v1/models":
            self.send_json(
                s.models(self)
                if s.models
                else {
                    "object": "list",
                    "data": [{"id": "hostile-Q4_K_M", "object": "model", "meta": {"n_ctx_train": 4096}}],
                }
            )
        else:
            self.send_json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        s = self.server.script
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        if self.path == "/tokenize":
            self.send_json({"tokens": list(range(n_tokens(str(body.get("content", "")))))})
            return
        if self.path not in ("/v1/completions", "/v1/chat/completions"):
            self.send_json({"error": "not found"}, 404)
            return
        with self.server.lock:
            self.server.completions += 1
            index = self.server.completions
        (s.completion or good_stream)(self, body, index)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    script: Script
    closing: threading.Event
    lock: threading.Lock
    completions: int


class HostileServer:
    """`with HostileServer(SCRIPTS["stall"]) as srv: srv.url` (a free port on 127.0.0.1)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.script, self._httpd.closing, self._httpd.lock = script, threading.Event(), threading.Lock()
        self._httpd.completions = 0
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def completions(self) -> int:
        return self._httpd.completions

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()


class SilentServer:
    """Accepts connections and never answers a byte (until closed): detection and health must
    still end within their deadline."""

    def __init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._held: list[socket.socket] = []
        self._closing = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        self._sock.settimeout(0.2)
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            self._held.append(conn)

    def __enter__(self) -> SilentServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._closing.set()
        self._thread.join(timeout=2)
        for conn in self._held:
            conn.close()
        self._sock.close()


# ---- completions ----------------------------------------------------------------------------
def good_stream(h: Handler, body: dict[str, Any], index: int, *, odd: bool = False, itl_s: float = 0.002) -> None:
    """A correct llama.cpp stream: one token per chunk every `itl_s`, usage in the last event.
    `odd`: the same tokens in shapes that are valid JSON but not what the spec promises."""
    prompt = str(body.get("prompt") or "")
    max_tokens = int(body.get("max_tokens") or 16)
    prompt_tokens = n_tokens(prompt)
    h.start_stream()
    time.sleep(0.002 * prompt_tokens / 100 + 0.005)
    for i in range(max_tokens):
        if i:
            time.sleep(itl_s)
        if odd and i == 1:
            h.event({"choices": [None]})  # a null choice between real ones
        h.event({"choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
    usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": max_tokens}
    finish: Any = "length"
    if odd:
        usage = {k: str(v) for k, v in usage.items()}  # counts as strings
        finish = ["length"]  # a TGI-style list finish_reason
    h.event({"choices": [{"index": 0, "text": "", "finish_reason": finish}], "usage": usage})
    h.event("[DONE]")
    h.chunk("")


def _error_500(message: str) -> Callable[[Handler, dict[str, Any], int], None]:
    def answer(h: Handler, body: dict[str, Any], index: int) -> None:
        h.send_json({"error": {"message": message, "code": 500}}, 500)

    return answer


def _echo_auth(h: Handler, body: dict[str, Any], index: int) -> None:
    """A proxy's error page that repeats the request headers (and so the key)."""
    headers = "; ".join(f"{k}: {v}" for k, v in h.headers.items())
    h.send_json({"error": {"message": f"upstream refused the request, headers were {headers}", "code": 502}}, 502)


def _stall(h: Handler, body: dict[str, Any], index: int) -> None:
    h.start_stream()
    h.event({"choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
    h.stall()


def _trickle(h: Handler, body: dict[str, Any], index: int) -> None:
    """One byte a second: every read returns something, so only a total deadline ends it."""
    h.start_stream()
    started = time.monotonic()
    while not h.server.closing.is_set() and time.monotonic() - started < MAX_STALL_S:
        try:
            h.chunk(b":")
        except OSError:
            return
        h.server.closing.wait(1.0)


def _close_mid_stream(h: Handler, body: dict[str, Any], index: int) -> None:
    h.start_stream()
    for _ in range(2):
        h.event({"choices": [{"index": 0, "text": " tok", "finish_reason": None}]})
    h.connection.shutdown(socket.SHUT_RDWR)  # no terminating chunk, no [DONE]
    h.close_connection = True


def _dies_after(n_ok: int) -> Callable[[Handler, dict[str, Any], int], None]:
    """The first `n_ok` completions are good, then every one is an HTTP 500 (a crashed worker)."""

    def answer(h: Handler, body: dict[str, Any], index: int) -> None:
        if index <= n_ok:
            good_stream(h, body, index)
        else:
            h.send_json({"error": {"message": f"worker died {MARKUP_BODY}", "code": 500}}, 500)

    return answer


SCRIPTS: dict[str, Script] = {
    s.name: s
    for s in [
        Script("good"),
        Script("slow", completion=lambda h, body, index: good_stream(h, body, index, itl_s=0.05)),
        Script("markup_500", completion=_error_500(MARKUP_BODY)),
        Script("echo_auth", completion=_echo_auth),
        Script("stall", completion=_stall),
        Script("trickle", completion=_trickle),
        Script("close_mid_stream", completion=_close_mid_stream),
        Script("dies_after_decode", completion=_dies_after(2)),  # warm-up 0 + 2 decode runs, then 500
        Script(
            "odd_json",
            models=lambda h: [{"id": "hostile-Q4_K_M", "max_model_len": "4096"}],  # a list, not {"data": ...}
            props=lambda h: {"build_info": ["x"], "default_generation_settings": {"n_ctx": "4096"}},
            completion=lambda h, body, index: good_stream(h, body, index, odd=True),
        ),
        Script("unhealthy", healthy=False),
    ]
}


@dataclass
class Served:
    """Several hostile servers at once, by script name (one sweep variant each)."""

    names: list[str]
    servers: dict[str, HostileServer] = field(default_factory=dict)

    def __enter__(self) -> Served:
        for name in self.names:
            self.servers[name] = HostileServer(SCRIPTS[name]).__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for srv in self.servers.values():
            srv.__exit__(*exc)


def main(argv: list[str]) -> None:
    """`python servers.py SCRIPT --port N [ignored args...]`: serve until killed (a sweep's `launch`;
    the ignored args stand for a real server's flags, such as an `--api-key` to be redacted)."""
    name, port = argv[0], int(argv[argv.index("--port") + 1])
    httpd = _Server(("127.0.0.1", port), Handler)
    httpd.script, httpd.closing, httpd.lock, httpd.completions = SCRIPTS[name], threading.Event(), threading.Lock(), 0
    deadline = threading.Timer(120.0, httpd.shutdown)  # bounded even if nobody stops it
    deadline.daemon = True
    deadline.start()
    httpd.serve_forever()


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
