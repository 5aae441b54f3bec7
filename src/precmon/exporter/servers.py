"""Watched servers: up, live generation tok/s and requests running, polled in one thread.

A scrape must answer at once, and several scrapers (an HA pair of Prometheus, the textfile)
must not multiply the load on the servers, so one daemon thread polls every server each
`interval_s` and the collector reads its last `ServerSnapshot` (`precmon.servers.watch.snapshot`). The
live rate comes from `precmon.servers.watch.live_rate.source_for` (llama.cpp `/slots`, vLLM's and
SGLang's per-step counters); a
kind without a live counter has no `precmon_server_generation_tokens_per_second` sample
rather than a misleading 0.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from precmon.exporter.catalog import family
from precmon.servers.base import ServerError
from precmon.servers.detect import make_server
from precmon.servers.watch import live_rate, metrics
from precmon.servers.watch.snapshot import ServerFacts, ServerSnapshot, take_snapshot
from precmon.untrusted import redact_url, visible

HEALTH_EVERY = 5  # polls between health checks (and between retries of a server that was down)
TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ServerState:
    """One server's labels and figures as the exporter exports them: the URL redacted (credentials
    never reach a label), unknown labels as "", no samples for what is not known."""

    url: str
    up: bool = False
    kind: str = ""
    model: str = ""
    tok_s: float | None = None
    running: float | None = None

    @classmethod
    def of(cls, snap: ServerSnapshot) -> ServerState:
        if not snap.healthy:
            return cls(visible(redact_url(snap.url)), False, snap.kind or "", snap.model or "")
        return cls(
            visible(redact_url(snap.url)), True, snap.kind or "", snap.model or "", snap.tok_s, snap.requests_running
        )


class _Watched:
    """One server's pollers; `poll()` blocks for its HTTP GETs (the watcher's thread only) and
    leaves what it read in `snapshot`."""

    def __init__(self, url: str, kind: str, model: str | None, api_key: str | None) -> None:
        self.url, self.kind, self.model, self.api_key = url, kind, model, api_key
        self.adapter: Any = None
        self.metrics = metrics.MetricsPoller(url, model=model, timeout_s=TIMEOUT_S)
        self.source: live_rate.LiveSource | None = None
        self.snapshot = ServerSnapshot(url, False)
        self.facts = ServerFacts()
        self.tick = 0
        self.metrics_failed = False

    def _health(self) -> bool:
        """Whether the server is up; its kind and model (read once) are kept in `facts`."""
        try:
            if self.adapter is None:
                self.adapter = make_server(self.url, kind=self.kind, api_key=self.api_key, timeout_s=TIMEOUT_S)
            up = bool(self.adapter.health())
        except ServerError:
            self.adapter = None
            return False
        model = self.model or self.facts.model or ""
        if up and not model:
            try:
                info = self.adapter.model_info(None)
            except ServerError:
                info = None  # healthy all the same; the model label stays empty until it answers
            model = visible(info.name) if info is not None else ""  # the server's bytes
        self.facts = ServerFacts(self.adapter.kind, model=model)
        return up

    def poll(self) -> None:
        up = self._health() if self.tick % HEALTH_EVERY == 0 else bool(self.snapshot.healthy)
        self.tick += 1
        if not up:
            self.snapshot = take_snapshot(self.url, False, self.facts)
            return
        fresh = False
        if not self.metrics_failed or self.tick % HEALTH_EVERY == 0:  # no /metrics (Ollama): ask now and then
            try:
                self.metrics.poll()
                fresh = True
            except ServerError:
                pass
            self.metrics_failed = not fresh
        self.snapshot = take_snapshot(
            self.url, True, self.facts, live=self._live(fresh), scrape=self.metrics, fresh=fresh
        )

    def _live(self, fresh: bool) -> live_rate.LiveRate | None:
        kind = live_rate.live_kind(self.facts.kind, self.metrics.kind)
        if kind is None:
            return None
        if self.source is None or self.source.kind != kind:
            if self.source is not None:
                self.source.close()
            self.source = live_rate.source_for(kind, self.url, self.model, self.api_key, TIMEOUT_S, HEALTH_EVERY)
        return self.source.read(self.metrics, fresh, self.tick)

    def close(self) -> None:
        self.metrics.close()
        if self.source is not None:
            self.source.close()


class ServerWatcher(Collector):
    """Polls every server in a daemon thread; `collect()` yields their last state.

    Args:
        servers: (url, kind, model, api_key) of each server to watch; kind "auto" detects it.
        interval_s: seconds between polls.
        host: the `host` label (default: this machine's hostname).
    """

    def __init__(
        self,
        servers: list[tuple[str, str, str | None, str | None]],
        interval_s: float = 1.0,
        host: str | None = None,
    ) -> None:
        self.watched = [_Watched(*s) for s in servers]
        self.interval_s = interval_s
        self.host = host or socket.gethostname()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="precmon-exporter-servers", daemon=True)

    def start(self) -> ServerWatcher:
        if self.watched:
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2 * TIMEOUT_S)

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                for w in self.watched:
                    if self._stop.is_set():
                        break
                    try:
                        w.poll()
                    except Exception:  # noqa: BLE001 - one server's surprise must not stop the others
                        w.snapshot = take_snapshot(w.url, False, w.facts)
                self._stop.wait(self.interval_s)
        finally:
            for w in self.watched:
                w.close()

    def snapshots(self) -> list[ServerSnapshot]:
        return [w.snapshot for w in self.watched]

    def states(self) -> list[ServerState]:
        return [ServerState.of(w.snapshot) for w in self.watched]

    def collect(self) -> Iterator[Metric]:
        up = family("precmon_server_up")
        rate = family("precmon_server_generation_tokens_per_second")
        running = family("precmon_server_requests_running")
        for s in self.states():
            labels = [s.url, s.kind, s.model, self.host]
            up.add_metric(labels, 1.0 if s.up else 0.0)
            if s.tok_s is not None:
                rate.add_metric(labels, s.tok_s)
            if s.running is not None:
                running.add_metric(labels, s.running)
        yield from (f for f in (up, rate, running) if f.samples)
