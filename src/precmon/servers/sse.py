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
        self._data: list[str] = []
        self._event: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        self._buf += chunk
        out: list[SSEEvent] = []
        while True:
            nl = self._buf.find(b"\n")
            cr = self._buf.find(b"\r")
            if nl < 0 and cr < 0:
                break
            if cr >= 0 and (nl < 0 or cr < nl):
                if cr == len(self._buf) - 1:
                    break  # a lone CR at the end may be the first half of CRLF: wait
                end, skip = cr, 2 if self._buf[cr + 1:cr + 2] == b"\n" else 1
            else:
                end, skip = nl, 1
            line = self._buf[:end].decode("utf-8", errors="replace")
            self._buf = self._buf[end + skip:]
            ev = self._line(line)
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
