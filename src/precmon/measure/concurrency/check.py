"""Did the server run a level's streams at once, or queue them? (`concurrency-queued:`)

A server that runs fewer requests at once than a level sends queues the rest: llama-server runs
one request per slot (`-np`/`--parallel`, `/props` `total_slots`; one slot by default in older
builds), vLLM up to `--max-num-seqs` (the `vllm:num_requests_running` gauge). Per-user tok/s and
TTFT at such a level then measure the queue, not a user of a batched server, and the level is
flagged. What the server runs at once is, in this order of trust: `total_slots` (llama.cpp says
it), else the most requests the server's running gauge showed during the window (polled on a
thread; trusted from `MIN_SCRAPES` scrapes inside the window, so a window too short to observe
is not mistaken for a queue). How the recorded figures are read (`capacity`,
`MIN_SCRAPES`) is core/concurrency.py's: the report reads them too.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from precmon.core.concurrency import capacity
from precmon.core.schema import Run
from precmon.servers.base import ServerError
from precmon.servers.watch.metrics import NAMES, MetricsPoller

CODE = "concurrency-queued:"
POLL_S = 0.1  # 10 Hz, as the power sampler: each scrape is a request the server answers


class RunningWatch:
    """Polls `/metrics` for the running and waiting request gauges while a window is open.

    `start()` then `stop()` (which returns the figures for `extra.server_parallel`). A server
    without `/metrics`, or of a kind whose gauges precmon does not know, gives only `total_slots`
    and a `reason`.
    """

    def __init__(self, url: str, kind: str, model: str | None, total_slots: int | None = None) -> None:
        self.names = NAMES.get(kind)
        self.total_slots = total_slots
        self.url, self.kind, self.model = url, kind, (model if kind == "llamacpp" else None)
        self.max_running: float | None = None
        self.max_waiting: float | None = None
        self.scrapes = 0
        self.reason: str | None = None if self.names and self.names.running else f"no running-requests gauge for {kind}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.reason is None:
            self._thread = threading.Thread(target=self._poll, name="precmon-running-watch", daemon=True)
            self._thread.start()

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
        out: dict[str, Any] = {"total_slots": self.total_slots, "max_running": self.max_running}
        out |= {"max_waiting": self.max_waiting, "scrapes": self.scrapes}
        if self.reason:
            out["reason"] = self.reason
        return {k: v for k, v in out.items() if v is not None}

    def _poll(self) -> None:
        assert self.names is not None
        poller = MetricsPoller(self.url, self.kind, self.model, timeout_s=2.0)
        try:
            while not self._stop.is_set():
                try:
                    poller.poll()
                except ServerError as exc:
                    self.reason = f"/metrics unavailable ({exc})"
                    return
                snap = poller.last
                running = snap.value(*self.names.running) if snap else None
                if snap is None or running is None:
                    self.reason = "/metrics has no running-requests gauge"
                    return
                waiting = snap.value(*self.names.waiting)
                self.scrapes += 1
                self.max_running = max(running, self.max_running or 0.0)
                if waiting is not None:
                    self.max_waiting = max(waiting, self.max_waiting or 0.0)
                self._stop.wait(POLL_S)
        finally:
            poller.close()


def queued_warning(runs: Iterable[Run]) -> str | None:
    """One `concurrency-queued:` line naming the levels that exceed what the server ran at once,
    or None when every level ran (or nothing says otherwise)."""
    queued: dict[int, tuple[int, str]] = {}
    for run in runs:
        streams = run.extra.streams
        cap, source = capacity(run.extra.server_parallel)
        if isinstance(streams, int) and cap is not None and streams > cap:
            queued.setdefault(streams, (cap, source))
    if not queued:
        return None
    levels = sorted(queued)
    cap, source = queued[levels[0]]
    return (
        f"{CODE} level(s) {', '.join(map(str, levels))} exceed the {cap} request(s) the server runs at once "
        f"({source}): per-user tok/s and TTFT there measure queueing (llama-server: -np {levels[-1]}; "
        f"vLLM: --max-num-seqs {levels[-1]})"
    )
