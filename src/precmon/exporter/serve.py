"""One exporter: the collectors in a registry, served over HTTP and/or written as a textfile.

`precmon exporter` builds it over a sampler of its own; `precmon watch --prometheus` over the
TUI's sampler (`meter_of` returns it once the TUI has opened it). prometheus_client renders the
text (Prometheus or OpenMetrics, as the scraper asks) and escapes every label value, so model
names and labels from files go through as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from precmon.exporter.power import PowerCollector
from precmon.exporter.results import ResultsCollector
from precmon.exporter.servers import ServerWatcher
from precmon.exporter.textfile import write_atomic
from precmon.power.base import EnergyMeter


class _Locked(Collector):
    """A collector whose `collect()` runs one scrape at a time (the results cache is not shared-safe)."""

    def __init__(self, inner: Collector) -> None:
        self.inner, self._lock = inner, threading.Lock()

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            return list(self.inner.collect())


class Exporter:
    """The registry and what feeds it.

    Args:
        meter_of: returns the power sampler to read (or None while there is none).
        servers: (url, kind, model, api_key) of each server to watch.
        results: a folder of results files, or None.
        interval_s: seconds between server polls.
        warn: where warnings about bad results files go (stderr).
    """

    def __init__(
        self,
        meter_of: Callable[[], EnergyMeter | None],
        servers: list[tuple[str, str, str | None, str | None]] | None = None,
        results: Path | str | None = None,
        interval_s: float = 1.0,
        host: str | None = None,
        warn: TextIO | None = None,
    ) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.power = PowerCollector(meter_of, host)
        self.servers = ServerWatcher(servers or [], interval_s, host)
        self.registry.register(self.power)
        self.registry.register(self.servers)
        if results is not None:
            self.registry.register(_Locked(ResultsCollector(results, warn)))
        self._http: Any = None

    def start(self) -> Exporter:
        self.servers.start()
        return self

    def exposition(self) -> bytes:
        """The Prometheus text format of every family, as a scrape of /metrics gets it."""
        return generate_latest(self.registry)

    def serve(self, host: str, port: int) -> int:
        """Serve /metrics on host:port in a daemon thread; returns the bound port (for port 0).

        Raises OSError when the address cannot be bound (in use, not this machine's)."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._http = server
        return int(server.server_port)

    def write_textfile(self, path: Path | str) -> None:
        write_atomic(path, self.exposition())

    def stop(self) -> None:
        self.servers.stop()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None
