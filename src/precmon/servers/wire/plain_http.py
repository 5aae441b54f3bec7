"""Small GETs over the standard library's `http.client`: the pollers' path (watch mode, every second).

Watch mode polls `/slots` and `/metrics` once a second; through httpx a poll request cost ~1.8 ms
of CPU here, through `http.client` ~0.55 ms (docs/benchmarks.md "TUI CPU beside nvitop"). The
semantics stay `HttpClient`'s (`precmon.servers.wire.http`, which uses this for its pollers): a total
deadline (the same watchdog shuts the socket at it), a bounded body, one retry when a kept-alive
connection turns out stale, and the same one-line, credential-redacted errors. Only for plain
`http://` with no credentials in the URL and no proxy in the environment (`plain_ok`): anything
else keeps httpx, its proxy rules and its TLS.
"""

from __future__ import annotations

import http.client
import os
import socket
import time
import zlib
from urllib.parse import urlsplit

from precmon.servers.wire.deadline import WATCHDOG

PROXY_VARIABLES = ("http_proxy", "all_proxy")  # what httpx would route a plain-HTTP request through
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
CHUNK = 65536


def plain_ok(url: str) -> bool:
    """Whether `url` can take the plain path: http://, no user or password, no proxy configured."""
    parts = urlsplit(url)
    if parts.scheme != "http" or parts.username or parts.password or not parts.hostname:
        return False
    return not any(os.environ.get(v) or os.environ.get(v.upper()) for v in PROXY_VARIABLES)


class PlainError(Exception):
    """Why a plain GET failed, for `HttpClient` to word: `kind` is one of "connect" (refused or
    unreachable), "timeout" (no answer in time), "deadline" (the total deadline cut the answer),
    "closed" (the server closed the connection mid-response), "malformed" (not HTTP as sent),
    "too_large" (a 200 over the body limit) or "other"; `detail` is the exception's text."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


class PlainGetter:
    """One kept-alive connection to one server for GETs (one thread at a time)."""

    def __init__(self, base_url: str, headers: dict[str, str], connect_s: float) -> None:
        parts = urlsplit(base_url)
        self.host, self.port = parts.hostname or "", parts.port or 80
        self.prefix = parts.path.rstrip("/")  # a base URL with a path (a proxy route) keeps it
        self.headers = {"Accept": "*/*", "Accept-Encoding": "identity", "User-Agent": "precmon", **headers}
        self.connect_s = connect_s
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def get(self, path: str, timeout_s: float, ok_limit: int, error_limit: int) -> tuple[int, bytes]:
        """GET `path` whole within `timeout_s`: (status, body cut at the limit for its status).
        Raises PlainError; a 200 over `ok_limit` is "too_large"."""
        deadline = time.monotonic() + timeout_s
        for attempt in (0, 1):
            reused = self._conn is not None and self._conn.sock is not None
            try:
                return self._get_once(path, deadline, ok_limit, error_limit)
            except _Stale as exc:
                self.close()
                if attempt or not reused:  # a fresh connection closed at once: no retry
                    raise PlainError("closed", str(exc)) from exc
            except PlainError:
                self.close()
                raise
        raise AssertionError("unreachable")

    def _connect(self, deadline: float) -> http.client.HTTPConnection:
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port)
        if self._conn.sock is None:
            self._conn.timeout = max(0.001, min(self.connect_s, deadline - time.monotonic()))
            try:
                self._conn.connect()
            except TimeoutError as exc:
                raise PlainError("timeout", _one(exc)) from exc
            except OSError as exc:
                raise PlainError("connect", _one(exc)) from exc
        return self._conn

    def _get_once(self, path: str, deadline: float, ok_limit: int, error_limit: int) -> tuple[int, bytes]:
        conn = self._connect(deadline)
        sock = conn.sock
        assert sock is not None  # connected just above
        sock.settimeout(max(0.001, deadline - time.monotonic()))
        alarm = WATCHDOG.arm(deadline, sock)
        started = False
        try:
            conn.request("GET", self.prefix + path, headers=self.headers)
            r = conn.getresponse()
            started = True
            body = self._body(r, deadline, ok_limit if r.status == 200 else error_limit)
            if alarm is not None and alarm.fired:
                raise PlainError("deadline")
            if r.status != 200 or not r.isclosed():
                self.close()  # an error answer's rest, or a body cut at its limit, is left unread
            return r.status, body
        except PlainError:
            raise
        except Exception as exc:
            if alarm is not None and alarm.fired:  # the watchdog shut the socket: not the server
                raise PlainError("deadline" if started else "timeout", "timed out") from exc
            if isinstance(exc, STALE) and not started:
                raise _Stale(_one(exc)) from exc
            if isinstance(exc, (TimeoutError, socket.timeout)):
                raise PlainError("timeout", _one(exc)) from exc
            if isinstance(exc, (*STALE, http.client.IncompleteRead)):
                raise PlainError("closed", _one(exc)) from exc
            if isinstance(exc, (http.client.HTTPException, zlib.error)):
                raise PlainError("malformed", _one(exc)) from exc
            if isinstance(exc, OSError):
                raise PlainError("other", f"{type(exc).__name__}: {_one(exc)}") from exc
            raise
        finally:
            if alarm is not None:
                alarm.cancel()

    @staticmethod
    def _body(r: http.client.HTTPResponse, deadline: float, limit: int) -> bytes:
        encoding = (r.getheader("Content-Encoding") or "identity").strip().lower()
        inflate = zlib.decompressobj(zlib.MAX_WBITS | 32) if encoding in ("gzip", "deflate") else None
        body = bytearray()
        while True:
            part = r.read1(CHUNK)
            if not part:
                if r.length:  # the connection ended before the Content-Length did
                    raise PlainError("closed", f"{len(body)} bytes read, {r.length} more expected")
                if inflate is not None:
                    body += inflate.flush()
                return bytes(body)
            body += inflate.decompress(part, limit + 1 - len(body)) if inflate is not None else part
            if len(body) > limit:
                if r.status == 200:
                    raise PlainError("too_large")
                return bytes(body[:limit])
            if time.monotonic() > deadline:
                raise PlainError("deadline")


class _Stale(Exception):
    """A kept-alive connection the server had closed, found before any answer: tried once more."""


def _one(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
