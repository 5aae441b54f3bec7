"""Stream sinks: bytes with their arrival time in, `StreamResult` updates out.

The HTTP loop (`precmon.servers.wire.http.HttpClient.stream`) times each read and hands it to a
sink; the sink splits it into events and gives each decoded JSON object to the protocol's chunk
handler. Two framings exist among the servers we speak to: Server-Sent Events (OpenAI and its
relatives, TGI) and newline-delimited JSON (Ollama).

Everything a server sends is untrusted: a line that is not JSON, a JSON value that is not an
object, an impossible token count (`FieldError` from `precmon.servers.wire.fields`) each end up as
`res.error` (the run is then invalid with that reason), never as an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from precmon.servers.base import StreamResult
from precmon.servers.wire.fields import FieldError
from precmon.servers.wire.http import excerpt, parse_json
from precmon.servers.wire.sse import MAX_LINE_CHARS, LineTooLong, SSEParser

# (chunk object, arrival perf_counter seconds, result) -> None; may raise FieldError
ChunkFn = Callable[[dict[str, Any], float, StreamResult], None]
# NDJSON: (line, arrival, result) -> the final object when this line was it
LineFn = Callable[[bytes, float, StreamResult], "dict[str, Any] | None"]

TRUNCATED_SSE = "stream ended without [DONE] or a finish_reason (truncated)"
HEAD_BYTES = 200  # what a sink keeps of a stream's start, to show a body that was no stream at all


def error_text(err: object) -> str:
    """The message of an `error` a server put in a stream (`{"message": ...}` or a string)."""
    if isinstance(err, dict):
        err = err.get("message", err)
    return excerpt(err if isinstance(err, str) else repr(err))


def set_error(res: StreamResult, message: str) -> None:
    """Record the first thing that went wrong in a stream (later ones are consequences)."""
    if res.error is None:
        res.error = message


class SSEJsonSink:
    """SSE events whose data is one JSON object each (`[DONE]` ends the stream)."""

    def __init__(self, res: StreamResult, on_chunk: ChunkFn) -> None:
        self.res, self.on_chunk = res, on_chunk
        self.parser = SSEParser()
        self.done = False
        self.head = b""

    def feed(self, raw: bytes, now_s: float) -> None:
        if len(self.head) < HEAD_BYTES:
            self.head += raw[: HEAD_BYTES - len(self.head)]
        for ev in self.parser.feed(raw):
            self.event(ev.data, now_s)

    def end(self, now_s: float) -> None:
        for ev in self.parser.flush():
            self.event(ev.data, now_s)
        res = self.res
        if not self.done and res.error is None and res.finish_reason is None:
            res.error = TRUNCATED_SSE
            if res.n_chunks == 0 and self.head.lstrip()[:1] in (b"<", b"{", b"["):
                # an HTML error page with HTTP 200 (a proxy), a whole JSON answer (stream: true ignored)
                head = self.head.decode("utf-8", errors="replace")
                res.error = f"not an event stream (a whole body instead of data: lines): {excerpt(head)}"

    def event(self, data: str, now_s: float) -> None:
        """Apply one SSE data payload."""
        res = self.res
        data = data.strip()
        if data == "[DONE]":
            self.done = True
            return
        try:
            obj = parse_json(data)
        except ValueError:
            # Some servers omit the blank line between events: several JSON lines in one.
            parts = [p.removeprefix("data:").strip() for p in data.split("\n") if p.strip()]
            if len(parts) > 1:
                for p in parts:
                    self.event(p, now_s)
                return
            set_error(res, f"malformed stream: not JSON: {excerpt(repr(data[:80]))}")
            return
        if obj.__class__ is not dict:
            set_error(res, f"malformed stream: unexpected {type(obj).__name__}")
            return
        assert isinstance(obj, dict)
        if "error" in obj and not obj.get("choices"):
            set_error(res, f"server error in stream: {error_text(obj['error'])}")
            return
        res.n_chunks += 1
        try:
            self.on_chunk(obj, now_s, res)
        except FieldError as exc:
            set_error(res, f"impossible value from the server: {exc}")


class NDJSONSink:
    """Newline-delimited JSON (Ollama): one object per line; `final` is the `done` one."""

    def __init__(self, res: StreamResult, on_line: LineFn) -> None:
        self.res, self.on_line = res, on_line
        self._buf = b""
        self.final: dict[str, Any] | None = None

    def feed(self, raw: bytes, now_s: float) -> None:
        buf = self._buf + raw
        if b"\n" not in buf:
            if len(buf) > MAX_LINE_CHARS:
                self._buf = b""
                raise LineTooLong(MAX_LINE_CHARS)
            self._buf = buf
            return
        *lines, self._buf = buf.split(b"\n")
        for line in lines:
            self.final = self.on_line(line, now_s, self.res) or self.final

    def end(self, now_s: float) -> None:
        if self._buf.strip():
            self.final = self.on_line(self._buf, now_s, self.res) or self.final
        self._buf = b""


def json_line(line: bytes, res: StreamResult) -> dict[str, Any] | None:
    """One NDJSON line as an object, or None (blank, or broken: then `res.error` says why)."""
    line = line.strip()
    if not line:
        return None
    try:
        obj = parse_json(line)
    except ValueError:
        set_error(res, f"malformed stream: not JSON: {excerpt(repr(line[:80]))}")
        return None
    if not isinstance(obj, dict):
        set_error(res, f"malformed stream: unexpected {type(obj).__name__}")
        return None
    return obj
