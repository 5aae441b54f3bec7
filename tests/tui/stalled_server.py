"""A llama.cpp-like server that stalls: it answers `complete_first` completion requests in full
(the TimedServer's exact timing), then accepts the next ones and streams `tokens` tokens
(0: not even the headers), then nothing, as a hung GPU or a deadlocked server does.

Bounded on purpose: a stalled request is held at most `stall_s`, and `close()` releases every
one at once (the connection closes, so a client blocked on it wakes up). Loopback only.

    python -m tests.tui.stalled_server [--tokens N] [--complete-first N] [--stall-s S]

prints the URL on one line and serves until killed (or `--stall-s` plus a minute has passed).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from typing import Any

from tests.fakes.timed_server import Behaviour, TimedServer, _Handler


class _StallingHandler(_Handler):
    def do_POST(self) -> None:
        stall: StalledServer = self.server.stall
        if self.path not in ("/v1/completions", "/v1/chat/completions") or not stall.take_stall():
            super().do_POST()
            return
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        if stall.tokens:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for _ in range(stall.tokens):
                data = f"data: {json.dumps({'choices': [{'index': 0, 'text': ' tok', 'finish_reason': None}]})}\n\n"
                raw = data.encode()
                self.wfile.write(f"{len(raw):x}\r\n".encode() + raw + b"\r\n")
                self.wfile.flush()
                time.sleep(0.005)
        stall.stalled.set()
        stall.release.wait(stall.stall_s)
        self.close_connection = True


class StalledServer(TimedServer):
    """Context manager like TimedServer: `with StalledServer(tokens=3, complete_first=2) as srv:`."""

    def __init__(
        self, tokens: int = 0, complete_first: int = 0, stall_s: float = 60.0, behaviour: Behaviour | None = None
    ) -> None:
        super().__init__(behaviour or Behaviour(itl_s=0.001, prefill_s_per_token=0.0001))
        self._httpd.RequestHandlerClass = _StallingHandler
        self._httpd.stall = self
        self.tokens, self.complete_first, self.stall_s = tokens, complete_first, stall_s
        self.release = threading.Event()  # set: every stalled request ends (its connection closes)
        self.stalled = threading.Event()  # set once a request is being held
        self._lock = threading.Lock()
        self._completions = 0

    def take_stall(self) -> bool:
        """Count one completion request; True when it is to be stalled."""
        with self._lock:
            self._completions += 1
            return self._completions > self.complete_first

    def __exit__(self, *exc: Any) -> None:
        self.release.set()
        super().__exit__(*exc)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tokens", type=int, default=0)
    p.add_argument("--complete-first", type=int, default=0)
    p.add_argument("--stall-s", type=float, default=120.0)
    args = p.parse_args()
    with StalledServer(args.tokens, args.complete_first, args.stall_s) as srv:
        print(srv.url, flush=True)
        if srv.stalled.wait(args.stall_s):
            print("STALLED", flush=True)  # a request is being held now
        time.sleep(args.stall_s)


if __name__ == "__main__":
    main()
