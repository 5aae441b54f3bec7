"""A transparent loopback TCP proxy that holds a server's streamed answer and releases it in bursts.

Requests go upstream at once; a streamed answer (`text/event-stream`) is buffered until its
`data: [DONE]` arrives, a plain one until the server has been quiet for `IDLE_FLUSH_S`; then it
is written to the client in two halves `GAP_S` apart. A client timing chunks behind it sees the whole decode
in a few milliseconds while the server's own `timings` say how long it took: what a congested
client or a buffering middlebox does to a stream. Bounded: every socket polls with a timeout,
a held buffer is released after `HOLD_MAX_S`, and `close()` ends every thread.
"""

from __future__ import annotations

import select
import socket
import threading
import time

IDLE_FLUSH_S = 0.1
HOLD_MAX_S = 60.0
GAP_S = 0.02
POLL_S = 0.02


class BurstProxy:
    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(POLL_S)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._start(self._accept)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            for s in (client, upstream):
                s.settimeout(10.0)  # only sends block; receives wait in select, POLL_S at a time
            self._start(self._forward, client, upstream)
            self._start(self._held, upstream, client)

    @staticmethod
    def _recv(src: socket.socket) -> bytes | None:
        """Bytes from `src`, None when none came within POLL_S, b"" at its end (or an error)."""
        try:
            ready, _, _ = select.select([src], [], [], POLL_S)
            return src.recv(65536) if ready else None
        except (OSError, ValueError):
            return b""

    def _forward(self, src: socket.socket, dst: socket.socket) -> None:
        while not self._stop.is_set():
            data = self._recv(src)
            if data is None:
                continue
            if not data:
                break
            dst.sendall(data)
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _held(self, src: socket.socket, dst: socket.socket) -> None:
        buf, first_t, last_t = b"", 0.0, 0.0
        while not self._stop.is_set():
            data = self._recv(src)
            now = time.monotonic()
            if data == b"":
                break
            if data:
                first_t = first_t if buf else now
                buf, last_t = buf + data, now
            streaming = b"text/event-stream" in buf
            done = b"[DONE]" in buf if streaming else now - last_t > IDLE_FLUSH_S
            if buf and (done or now - first_t > HOLD_MAX_S):
                self._release(dst, buf)
                buf = b""
        if buf:
            self._release(dst, buf)
        for s in (src, dst):
            s.close()

    @staticmethod
    def _release(dst: socket.socket, buf: bytes) -> None:
        half = len(buf) // 2
        try:
            dst.sendall(buf[:half])
            time.sleep(GAP_S)
            dst.sendall(buf[half:])
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self._listener.close()
        for t in self._threads:
            t.join(timeout=2)
