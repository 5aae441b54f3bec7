"""An incremental Server-Sent Events parser that keeps each event's arrival time.

Why our own: timing must be taken when the bytes arrive, not when a line iterator gets round to
them, and real servers split lines across reads, mix CRLF and LF, send `: ping` comments and
multi-line `data:` fields. `feed()` takes raw bytes as they come and returns the events they
completed; it never blocks and never copies more than the unfinished tail.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

#: Longest unfinished line a stream may hold (characters). A real chunk is a few kB even with
#: top-K log-probabilities; a server that sends bytes without a line end would otherwise grow the
#: buffer (and copy it on every read) until the deadline: 100 MB in 5 s was seen.
MAX_LINE_CHARS = 8 * 1024 * 1024


class LineTooLong(ValueError):
    """A stream line grew past MAX_LINE_CHARS without ending: the stream is unusable."""

    def __init__(self, chars: int) -> None:
        super().__init__(f"malformed stream: a line of more than {chars / 2**20:g} MiB without a line end")


@dataclass(frozen=True)
class SSEEvent:
    data: str
    event: str | None = None


class SSEParser:
    """Feed bytes, get completed events (per the WHATWG event-stream rules we need)."""

    def __init__(self) -> None:
        self._buf = ""
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")  # a BOM is skipped
        self._pending_cr = False
        self._data: list[str] = []
        self._event: str | None = None
        self.comments = 0

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        text = self._decoder.decode(chunk)  # incremental: a character split across reads waits
        if self._pending_cr and text:
            self._pending_cr = False
            if text.startswith("\n"):  # second half of a CRLF split across reads
                text = text[1:]
        buf = self._buf + text
        if "\r" in buf:
            # A CR ends a line; if it is the last character, an LF may still follow in the next read.
            self._pending_cr = buf.endswith("\r")
            buf = buf.replace("\r\n", "\n").replace("\r", "\n")
        *lines, self._buf = buf.split("\n")
        if len(self._buf) > MAX_LINE_CHARS:
            self._buf = ""
            raise LineTooLong(MAX_LINE_CHARS)
        out: list[SSEEvent] = []
        data = self._data
        for line in lines:
            if line.startswith("data: "):  # the hot path: one data line per token
                data.append(line[6:])
                continue
            ev = self._line(line)
            if ev is not None:
                out.append(ev)
                data = self._data
        return out

    def flush(self) -> list[SSEEvent]:
        """End of stream: a final event without its blank line still counts."""
        out: list[SSEEvent] = []
        self._buf += self._decoder.decode(b"", final=True)
        if self._buf:
            ev = self._line(self._buf.rstrip("\r"))
            self._buf = ""
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
