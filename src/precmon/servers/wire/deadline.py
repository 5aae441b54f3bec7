"""Wall-clock deadlines for blocking socket reads: one watchdog thread shuts sockets on time.

httpx's timeouts apply per read. To make `--timeout` a total deadline, `HttpClient` arms an
alarm with the response's socket once the headers are in; at the deadline the watchdog calls
`shutdown()` on it, so a read blocked on a stalled server returns at once (as a closed
connection, which the client reports as the deadline). One thread and a heap serve every
request: arming costs a heap push, not a thread start, so it does not delay the first chunk.
"""

from __future__ import annotations

import heapq
import itertools
import socket
import threading
import time

import httpx


class Alarm:
    """One armed deadline; `fired` tells the request its socket was shut by the watchdog."""

    __slots__ = ("deadline", "sock", "cancelled", "fired")

    def __init__(self, deadline: float, sock: socket.socket) -> None:
        self.deadline = deadline
        self.sock: socket.socket | None = sock
        self.cancelled = self.fired = False

    def cancel(self) -> None:
        self.cancelled = True
        self.sock = None  # the heap may hold a cancelled alarm until its deadline: not its socket


class _Watchdog:
    """Shuts a socket at its deadline (one daemon thread, a heap of deadlines)."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._heap: list[tuple[float, int, Alarm]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, deadline_mono_s: float, sock: socket.socket | None) -> Alarm | None:
        if sock is None:
            return None
        alarm = Alarm(deadline_mono_s, sock)
        with self._cv:
            if len(self._heap) > 1024:  # long deadlines, many finished requests: drop the cancelled
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
            heapq.heappush(self._heap, (deadline_mono_s, next(self._seq), alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="precmon-deadlines", daemon=True)
                self._thread.start()
            self._cv.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cv.wait()
                    continue
                wait_s = self._heap[0][0] - time.monotonic()
                if wait_s > 0:
                    self._cv.wait(wait_s)
                    continue
                alarm = heapq.heappop(self._heap)[2]
                alarm.fired = True
                sock = alarm.sock
            try:
                if sock is not None:
                    sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed: the request ended as the deadline came


WATCHDOG = _Watchdog()


def socket_of(r: httpx.Response) -> socket.socket | None:
    stream = r.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    return sock if isinstance(sock, socket.socket) else None
