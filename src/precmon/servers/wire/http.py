"""The HTTP side of every adapter: one connection pool, one streaming loop, total deadlines.

Why one place: the protocol classes (OpenAI, llama.cpp, Ollama, TGI, ...) differ in paths and
JSON shapes, not in how bytes travel. Here, once:

- **Total deadline.** httpx's timeouts apply per read, so a server trickling one byte a second
  never times out. Every request and probe here has a wall-clock deadline of `timeout_s` from
  the moment it is sent: the streaming loop checks it on each arrival, and a watchdog shuts
  the socket at the deadline so a read blocked on a stalled server returns too.
- **Stale keep-alive connections** (llama-server closes idle ones; the pool learns it on reuse)
  are retried once, for plain requests and streams alike, only when no response had begun.
- **Untrusted answers.** Bodies are size-bounded, JSON is parsed without letting deep nesting
  or bad bytes escape as exceptions, and every error line is credential-redacted
  (`precmon.untrusted.redact`), one line and length-bounded, with the decisive part first:
  ``HTTP 500 from http://h/v1/completions: {"error": ...}``.

Stream timestamps are taken with `time.perf_counter()` as each read returns, before any
parsing; the sink (`precmon.servers.wire.stream`) gets the bytes with that time.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from precmon.servers.base import ServerError, StreamResult
from precmon.servers.wire.deadline import WATCHDOG, Alarm, socket_of
from precmon.servers.wire.plain_http import PlainError, PlainGetter, plain_ok
from precmon.servers.wire.sse import LineTooLong
from precmon.untrusted import redact, redact_url, visible

# Streams are read raw (timestamps at byte arrival), so ask for no content encoding: a proxy that
# gzips SSE would otherwise hand the parser compressed bytes.
IDENTITY = {"Accept-Encoding": "identity"}
CONNECT_S = 10.0
MAX_BODY_BYTES = 64 * 1024 * 1024  # a JSON answer (model lists, /props) is kilobytes
ERROR_BODY_BYTES = 4096
EXCERPT_CHARS = 200


class StreamSink(Protocol):
    """What the streaming loop hands the bytes to (see `precmon.servers.wire.stream`)."""

    def feed(self, raw: bytes, now_s: float) -> None:
        """Bytes that arrived at perf_counter() `now_s`; never raises on bad input."""
        ...

    def end(self, now_s: float) -> None:
        """The server ended the body (not called when the deadline or an error cut it)."""
        ...


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """A server's text fit for one error line: credentials redacted, controls visible, bounded."""
    return visible(redact(text.strip()), limit=limit)


def describe_http_error(url: str, exc: BaseException, timeout_s: float | None = None) -> str:
    """One line a user can act on, for any httpx failure (credentials redacted)."""
    url = redact_url(url)
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}: connection refused or host unreachable (is the server running?)"
    if isinstance(exc, httpx.TimeoutException):
        return f"{url}: no answer within {timeout_s or '?'} s ({type(exc).__name__})"
    if isinstance(exc, httpx.RemoteProtocolError):
        message = str(exc)
        if "peer closed" in message or "disconnected" in message:
            return f"{url}: the server closed the connection mid-response ({excerpt(message)})"
        # h11 refused the bytes themselves: an oversized header, a bad chunk, not HTTP at all
        return f"{url}: the server sent a malformed HTTP response ({excerpt(message)})"
    return f"{url}: {type(exc).__name__}: {excerpt(str(exc))}"


def _plain_message(url: str, exc: PlainError, timeout_s: float) -> str:
    """The line `describe_http_error` writes for the same failure through httpx."""
    url = redact_url(url)
    if exc.kind == "connect":
        return f"cannot connect to {url}: connection refused or host unreachable (is the server running?)"
    if exc.kind == "timeout":
        return f"{url}: no answer within {timeout_s:g} s (timed out)"
    if exc.kind == "deadline":
        return deadline_message(url, timeout_s)
    if exc.kind == "too_large":
        return f"{url}: answer larger than {MAX_BODY_BYTES // 2**20} MiB"
    if exc.kind == "closed":
        return f"{url}: the server closed the connection mid-response ({excerpt(exc.detail)})"
    if exc.kind == "malformed":
        return f"{url}: the server sent a malformed HTTP response ({excerpt(exc.detail)})"
    return f"{url}: {excerpt(exc.detail)}"


def deadline_message(url: str, timeout_s: float) -> str:
    return f"{redact_url(url)}: no complete answer within {timeout_s:g} s (--timeout is a total deadline per request)"


def http_error(status: int, url: str, body: bytes) -> ServerError:
    """`HTTP 500 from URL: <body excerpt>` as a ServerError carrying the status."""
    text = body.decode("utf-8", errors="replace")
    return ServerError(f"HTTP {status} from {redact_url(url)}: {excerpt(text)}", status)


def parse_json(data: str | bytes) -> object:
    """`json.loads` whose only failure is ValueError (bad bytes, deep nesting).

    NaN/Infinity literals parse (Python servers write them, e.g. in logprobs); the field readers
    in `precmon.servers.wire.fields` reject non-finite numbers where a number matters.
    """
    try:
        return json.loads(data)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


@dataclass(frozen=True)
class Reply:
    """A plain (non-streamed) answer: status and body bytes, both untrusted."""

    status: int
    body: bytes

    def json(self) -> object:
        return parse_json(self.body)


class _Stale(Exception):
    """The pool handed us a kept-alive connection the server had already closed."""


def _is_stale(exc: httpx.HTTPError) -> bool:
    """A kept-alive connection the other side had closed: retried once on a fresh one. llama-server
    closes idle connections cleanly ("without sending a response"); a proxy in between may reset
    them instead (ECONNRESET on the first read or a broken pipe on the write)."""
    if isinstance(exc, httpx.RemoteProtocolError):
        return "without sending a response" in str(exc)
    text = str(exc)
    return isinstance(exc, (httpx.ReadError, httpx.WriteError)) and (
        "Connection reset" in text or "Broken pipe" in text or "[Errno 104]" in text or "[Errno 32]" in text
    )


_SSL_LOCK = threading.Lock()
_SSL: list[ssl.SSLContext] = []


def _ssl_context() -> ssl.SSLContext:
    """One verifying SSL context for all clients: loading the CA bundle costs ~0.1 s each time."""
    with _SSL_LOCK:
        if not _SSL:
            _SSL.append(httpx.create_ssl_context())
        return _SSL[0]


class HttpClient:
    """A connection pool to one server, with total deadlines and redacted one-line errors.

    `url` is the base URL with any credentials redacted (safe to store and print); the real one
    stays inside the httpx client.
    """

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0, poller: bool = False) -> None:
        """`poller`: its GETs go over `precmon.servers.wire.plain_http` where the URL allows (plain
        HTTP, no proxy): a third of httpx's CPU a request, for what watch mode asks every second."""
        base = url.rstrip("/")
        self.url = redact_url(base)
        self.timeout_s = timeout_s
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._plain = PlainGetter(base, headers, min(CONNECT_S, timeout_s)) if poller and plain_ok(base) else None
        # Up to 256 simultaneous streams (the concurrency test), so none waits in httpx's pool.
        self._client = httpx.Client(
            base_url=base,
            headers=headers,
            verify=_ssl_context(),
            timeout=httpx.Timeout(timeout_s, connect=min(CONNECT_S, timeout_s)),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=32),
        )

    def close(self) -> None:
        self._client.close()
        if self._plain is not None:
            self._plain.close()

    @staticmethod
    def _timeout(remaining_s: float) -> httpx.Timeout:
        remaining_s = max(remaining_s, 0.001)
        return httpx.Timeout(remaining_s, connect=min(CONNECT_S, remaining_s))

    # ---- plain requests -------------------------------------------------------------------
    def request(self, method: str, path: str, timeout_s: float, payload: Any = None) -> Reply:
        """One plain request, whole within `timeout_s` (ServerError on failure or deadline)."""
        url = self.url + path
        if self._plain is not None and method == "GET" and payload is None:
            return self._plain_get(path, timeout_s)
        for attempt in (0, 1):
            try:
                return self._request_once(method, path, timeout_s, payload)
            except _Stale as exc:
                if attempt:
                    raise ServerError(describe_http_error(url, exc.__cause__ or exc, timeout_s)) from exc
        raise AssertionError("unreachable")

    def _request_once(self, method: str, path: str, timeout_s: float, payload: Any) -> Reply:
        url = self.url + path
        deadline = time.monotonic() + timeout_s
        alarm: Alarm | None = None
        started = False
        try:
            kw: dict[str, Any] = {"json": payload} if payload is not None else {}
            with self._client.stream(method, path, timeout=self._timeout(timeout_s), **kw) as r:
                started = True
                alarm = WATCHDOG.arm(deadline, socket_of(r))
                limit = MAX_BODY_BYTES if r.status_code == 200 else ERROR_BODY_BYTES
                body = bytearray()
                for part in r.iter_bytes():
                    body += part
                    if len(body) > limit:
                        if r.status_code == 200:
                            raise ServerError(f"{url}: answer larger than {limit // 2**20} MiB")
                        break
                    if time.monotonic() > deadline:
                        raise ServerError(deadline_message(url, timeout_s))
                return Reply(r.status_code, bytes(body))
        except httpx.HTTPError as exc:
            if not started and _is_stale(exc):
                raise _Stale() from exc
            if alarm is not None and alarm.fired:
                raise ServerError(deadline_message(url, timeout_s)) from exc
            raise ServerError(describe_http_error(url, exc, timeout_s)) from exc
        finally:
            if alarm is not None:
                alarm.cancel()

    def _plain_get(self, path: str, timeout_s: float) -> Reply:
        assert self._plain is not None
        url = self.url + path
        try:
            status, body = self._plain.get(path, timeout_s, MAX_BODY_BYTES, ERROR_BODY_BYTES)
        except PlainError as exc:
            raise ServerError(_plain_message(url, exc, timeout_s)) from exc
        return Reply(status, body)

    def get(self, path: str, timeout_s: float) -> Reply:
        return self.request("GET", path, timeout_s)

    def get_json(self, path: str, timeout_s: float) -> object:
        """GET `path`: its parsed JSON (any shape: untrusted), or ServerError naming the path."""
        return self._json(self.request("GET", path, timeout_s), path)

    def post_json(self, path: str, payload: Any, timeout_s: float) -> object:
        """POST `payload` to `path`: its parsed JSON (any shape), or ServerError naming the path."""
        return self._json(self.request("POST", path, timeout_s, payload), path)

    def _json(self, reply: Reply, path: str) -> object:
        if reply.status != 200:
            raise http_error(reply.status, self.url + path, reply.body)
        try:
            return reply.json()
        except ValueError as exc:
            raise ServerError(f"{self.url}{path}: answer is not JSON ({excerpt(str(exc), 80)})") from exc

    # ---- the streaming loop ---------------------------------------------------------------
    def stream(
        self, path: str, payload: Any, timeout_s: float, start: Callable[[StreamResult], StreamSink]
    ) -> StreamResult:
        """POST `payload` and feed the streamed body to a sink, whole within `timeout_s`.

        Args:
            path: the streaming endpoint.
            payload: the JSON request body.
            timeout_s: total deadline from sending to the last byte. A stream still running at the
                deadline ends there with `res.error` saying so (what arrived is kept).
            start: makes the sink for a fresh `StreamResult` (called again if a stale connection
                forces one retry before any response).

        Returns:
            The result; `error` is set when the stream broke after a 200 (truncated, deadline).
            A failure before a 200 (refused, HTTP error status, no answer) raises ServerError.
        """
        url = self.url + path
        for attempt in (0, 1):
            res = StreamResult(sent_s=time.perf_counter())
            try:
                return self._stream_once(path, payload, timeout_s, res, start(res))
            except _Stale as exc:
                if attempt:
                    raise ServerError(describe_http_error(url, exc.__cause__ or exc, timeout_s)) from exc
        raise AssertionError("unreachable")

    def _stream_once(
        self, path: str, payload: Any, timeout_s: float, res: StreamResult, sink: StreamSink
    ) -> StreamResult:
        url = self.url + path
        deadline_pc = res.sent_s + timeout_s
        alarm: Alarm | None = None
        try:
            with self._client.stream(
                "POST", path, json=payload, headers=IDENTITY, timeout=self._timeout(timeout_s)
            ) as r:
                res.http_status = r.status_code
                if r.status_code != 200:
                    body = b""
                    for part in r.iter_raw():
                        body += part
                        if len(body) >= ERROR_BODY_BYTES or time.perf_counter() > deadline_pc:
                            break
                    raise http_error(r.status_code, url, body)
                alarm = WATCHDOG.arm(time.monotonic() + (deadline_pc - time.perf_counter()), socket_of(r))
                for raw in r.iter_raw():
                    now = time.perf_counter()  # on arrival, before any parsing
                    try:
                        sink.feed(raw, now)
                    except LineTooLong as exc:  # bytes without a line end: nothing more can be read
                        res.error = str(exc)
                        break
                    if now > deadline_pc:
                        res.error = deadline_message(url, timeout_s)
                        break
                else:
                    sink.end(time.perf_counter())
            res.done_s = time.perf_counter()
        except httpx.HTTPError as exc:
            if res.http_status is None and _is_stale(exc):
                raise _Stale() from exc
            if res.http_status != 200:
                raise ServerError(describe_http_error(url, exc, timeout_s)) from exc
            expired = (alarm is not None and alarm.fired) or time.perf_counter() > deadline_pc
            res.error = deadline_message(url, timeout_s) if expired else describe_http_error(url, exc, timeout_s)
            res.done_s = time.perf_counter()
        finally:
            if alarm is not None:
                alarm.cancel()
        return res
