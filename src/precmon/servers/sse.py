"""An incremental Server-Sent Events parser that keeps each event's arrival time.

Why our own: timing must be taken when the bytes arrive, not when a line iterator gets round to
them, and real servers split lines across reads, mix CRLF and LF, send `: ping` comments and
multi-line `data:` fields. `feed()` takes raw bytes as they come and returns the events they
completed; it never blocks and never copies more than the unfinished tail.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SSEEvent:
    data: str
    event: str | None = None


class SSEParser:
    """Feed bytes, get completed events (per the WHATWG event-stream rules we need)."""

    def __init__(self) -> None:
        self._buf = b""
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._pending_cr and chunk:
            self._pending_cr = False
            if chunk.startswith(b"\n"):  # second half of a CRLF split across reads
                chunk = chunk[1:]
        buf = self._buf + chunk
        if b"\r" in buf:
            # A CR ends a line; if it is the last byte, an LF may still follow in the next read.
            self._pending_cr = buf.endswith(b"\r")
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *lines, self._buf = buf.split(b"\n")
        out: list[SSEEvent] = []
        for raw in lines:
            ev = self._line(raw.decode("utf-8", errors="replace"))
            if ev is not None:
                out.append(ev)
        return out

    def flush(self) -> list[SSEEvent]:
        """End of stream: a final event without its blank line still counts."""
        out: list[SSEEvent] = []
        if self._buf:
            ev = self._line(self._buf.decode("utf-8", errors="replace"))
            self._buf = b""
            if ev is not None:
                out.append(ev)
        ev = self._line("")
        if ev is not None:
            out.append(ev)
        return out

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            if not self._data:
                self._event = None
                return None
            ev = SSEEvent("\n".join(self._data), self._event)
            self._data, self._event = [], None
            return ev
        if line.startswith(":"):
            self.comments += 1
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        return None
