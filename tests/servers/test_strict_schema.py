"""A server that checks requests against the OpenAI schema (`transformers serve`: FastAPI answers
`422 {"detail": "Unexpected fields in the request: {'ignore_eos'}"}`) is asked again without
`ignore_eos`, once, and the results say so; any other 4xx still fails the request."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from precmon.core.settings import BenchSettings
from precmon.servers.base import ServerError, StreamRequest
from precmon.servers.protocols.openai import OpenAIServer
from tests.fakes.measure import measure


class _Strict(BaseHTTPRequestHandler):
    known = {"prompt", "messages", "model", "max_tokens", "stream", "stream_options", "temperature"}
    seen: list[dict] = []

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, status: int, obj: object) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._json(200, {"object": "list", "data": [{"id": "strict", "object": "model"}]})

    def do_POST(self) -> None:
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append(req)
        if unknown := set(req) - self.known:
            self._json(422, {"detail": f"Unexpected fields in the request: {unknown}"})
            return
        if req.get("temperature", 0) < 0:
            self._json(422, {"detail": "temperature: must be >= 0"})
            return
        n = int(req["max_tokens"])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        words = len(str(req.get("prompt", "")).split())
        for i in range(n):
            chunk = {"choices": [{"index": 0, "text": f" w{i}", "finish_reason": "length" if i == n - 1 else None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.flush()
            time.sleep(0.004)  # a token at a time, as a server decodes: chunks read at once time nothing
        usage = {"prompt_tokens": words + 1, "completion_tokens": n, "total_tokens": words + 1 + n}
        self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())


@pytest.fixture
def strict() -> Iterator[str]:
    _Strict.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Strict)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def test_ignore_eos_is_dropped_once_and_every_result_says_so(strict: str) -> None:
    server = OpenAIServer(strict)
    first = server.stream(StreamRequest(prompt="a b c", max_tokens=5, model="strict"))
    second = server.stream(StreamRequest(prompt="d e f", max_tokens=5, model="strict"))
    assert first.completion_tokens == 5 and second.completion_tokens == 5
    assert ["ignore_eos" in r for r in _Strict.seen] == [True, False, False]  # asked once, then never
    assert first.notes == second.notes and "rejects `ignore_eos` (HTTP 422)" in first.notes[0]


def test_another_rejection_still_fails_the_request(strict: str) -> None:
    server = OpenAIServer(strict)
    with pytest.raises(ServerError, match="422"):
        server.stream(StreamRequest(prompt="a", max_tokens=3, model="strict", temperature=-1.0, ignore_eos=False))
    assert not server.refuses_ignore_eos


def test_a_bench_on_such_a_server_is_ok_and_noted(strict: str) -> None:
    settings = BenchSettings(
        output_tokens=8, decode_prompt_tokens=16, prefill_tokens=[32], ttft_tokens=None, repeats=1, warmup=1, idle_s=0
    )
    res = measure(OpenAIServer(strict), settings, model="strict")
    assert res.status == "ok", res.errors
    assert sum("rejects `ignore_eos`" in n for n in res.notes) == 1
