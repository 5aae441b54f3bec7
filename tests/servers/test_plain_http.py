"""The pollers' plain-HTTP path (`precmon.servers.wire.plain_http`) keeps `HttpClient`'s promises: each
hostile answer below ends the same way through it as through httpx (the same words, the same
deadline), and anything it cannot take (a proxy, credentials in the URL, TLS) stays on httpx."""

from __future__ import annotations

import gzip
import json
import socket
import threading
import time

import pytest

from precmon.servers.base import ServerError
from precmon.servers.wire.http import ERROR_BODY_BYTES, HttpClient
from tests.fakes.wire_servers import Scripted, ScriptedServer

SLACK_S = 1.0  # a loaded 2-core machine
BOTH = pytest.mark.parametrize("poller", [True, False], ids=["plain", "httpx"])


def outcome(client: HttpClient, path: str, timeout_s: float) -> tuple[object, float]:
    t0 = time.monotonic()
    try:
        out: object = client.get(path, timeout_s)
    except ServerError as exc:
        out = exc
    return out, time.monotonic() - t0


def client(url: str, poller: bool) -> HttpClient:
    c = HttpClient(url, timeout_s=5.0, poller=poller)
    assert (c._plain is not None) == poller  # the path under test is the one taken
    return c


@BOTH
def test_an_answer_and_its_keep_alive(poller):
    with ScriptedServer({"GET /slots": Scripted(body=[{"id": 0, "n_decoded": 7}])}) as srv:
        c = client(srv.url, poller)
        replies = [c.get("/slots", 2.0) for _ in range(3)]
        c.close()
    assert all(r.status == 200 and r.json() == [{"id": 0, "n_decoded": 7}] for r in replies)


@BOTH
def test_a_trickling_body_ends_at_the_total_deadline(poller):
    body = b'{"data": [' + b" " * 40 + b"]}"
    routes = {"GET /metrics": Scripted(chunks=[body[i : i + 1] for i in range(len(body))], gap_s=0.1)}
    with ScriptedServer(routes) as srv:
        c = client(srv.url, poller)
        exc, took = outcome(c, "/metrics", 1.0)
        c.close()
    assert isinstance(exc, ServerError) and "no complete answer within 1 s" in str(exc) and "total deadline" in str(exc)
    assert took < 1.0 + SLACK_S


@BOTH
def test_a_stall_before_the_headers_is_no_answer_in_time(poller):
    with ScriptedServer({"GET /slots": Scripted(stall_s=30)}) as srv:
        c = client(srv.url, poller)
        exc, took = outcome(c, "/slots", 0.5)
        c.close()
    assert isinstance(exc, ServerError) and "no answer within 0.5 s" in str(exc) and took < 0.5 + SLACK_S


@BOTH
def test_a_kept_alive_connection_closed_by_the_server_is_retried_once(poller):
    with ScriptedServer({"GET /slots": Scripted(body=[])}, drop_reused=True) as srv:
        c = client(srv.url, poller)
        first, second = c.get("/slots", 2.0), c.get("/slots", 2.0)  # the second meets a closed connection
        c.close()
    assert first.status == second.status == 200


@BOTH
def test_nothing_listening_is_cannot_connect(poller):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the request: nothing listens there
    c = client(f"http://127.0.0.1:{port}", poller)
    exc, _ = outcome(c, "/slots", 2.0)
    c.close()
    assert isinstance(exc, ServerError) and str(exc).startswith(f"cannot connect to http://127.0.0.1:{port}/slots")


@BOTH
def test_an_error_status_keeps_a_bounded_body_and_the_next_request_works(poller):
    routes = {"GET /metrics": Scripted(status=500, body=b"x" * (ERROR_BODY_BYTES * 4)), "GET /slots": Scripted(body=[])}
    with ScriptedServer(routes) as srv:
        c = client(srv.url, poller)
        bad, good = c.get("/metrics", 2.0), c.get("/slots", 2.0)
        c.close()
    assert bad.status == 500 and 0 < len(bad.body) <= ERROR_BODY_BYTES + 65536
    assert good.status == 200


class RawServer:
    """Answers every connection with `reply` (bytes as they are), then closes it."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                conn.sendall(self.reply)

    def close(self) -> None:
        self.sock.close()


@BOTH
def test_bytes_that_are_not_http_are_a_malformed_response(poller):
    srv = RawServer(b"SSH-2.0-OpenSSH_9.6\r\n\r\n")
    try:
        c = client(srv.url, poller)
        exc, _ = outcome(c, "/metrics", 2.0)
        c.close()
    finally:
        srv.close()
    assert isinstance(exc, ServerError)
    assert "malformed HTTP response" in str(exc) or "closed the connection mid-response" in str(exc)


@BOTH
def test_a_body_cut_short_is_closed_mid_response(poller):
    srv = RawServer(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nContent-Type: application/json\r\n\r\n[1, 2")
    try:
        c = client(srv.url, poller)
        exc, _ = outcome(c, "/slots", 2.0)
        c.close()
    finally:
        srv.close()
    assert isinstance(exc, ServerError) and "closed the connection mid-response" in str(exc)


@BOTH
def test_a_gzipped_answer_is_read_as_its_json(poller):
    data = gzip.compress(json.dumps([{"id": 0, "n_decoded": 3}]).encode())
    head = f"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    srv = RawServer(head.encode() + data)
    try:
        c = client(srv.url, poller)
        reply = c.get("/slots", 2.0)
        c.close()
    finally:
        srv.close()
    assert reply.json() == [{"id": 0, "n_decoded": 3}]


def test_a_proxy_credentials_or_tls_keep_httpx(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert HttpClient("http://127.0.0.1:9", poller=True)._plain is not None
    assert HttpClient("https://127.0.0.1:9", poller=True)._plain is None
    assert HttpClient("http://u:pw@127.0.0.1:9", poller=True)._plain is None
    assert HttpClient("http://127.0.0.1:9", poller=False)._plain is None
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    assert HttpClient("http://127.0.0.1:9", poller=True)._plain is None
