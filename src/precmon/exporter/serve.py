"""One exporter: the collectors in a registry, served over HTTP and/or written as a textfile.

`precmon exporter` builds it over a sampler of its own; `precmon watch --prometheus` over the
TUI's sampler (`meter_of` returns it once the TUI has opened it). prometheus_client renders the
text (Prometheus or OpenMetrics, as the scraper asks) and escapes every label value, so model
names and labels from files go through as they are.

Two paths: `/power` serves the power families and the node's identity only (what another
machine's `--power-from` reads at each of its window edges: power/remote/), and
`/power?fresh=1` reads every source first, waiting at most 0.25 s (`PowerSampler.read_now`), so the
counters are this moment's, not the last tick's; any other path (`/metrics`) serves everything.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import Metric
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

from precmon.exporter.power import PowerCollector
from precmon.exporter.results import ResultsCollector
from precmon.exporter.servers import ServerWatcher
from precmon.exporter.textfile import write_atomic
from precmon.power.base import EnergyMeter, FreshReads

POWER_PATH = "/power"  # the power families only; `?fresh=1`: the sources read first (power/remote/node.py)


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
        self.meter_of = meter_of
        self.power = PowerCollector(meter_of, host)
        self.servers = ServerWatcher(servers or [], interval_s, host)
        self.registry.register(self.power)
        self.registry.register(self.servers)
        if results is not None:
            self.registry.register(_Locked(ResultsCollector(results, warn)))
        self.power_registry = CollectorRegistry(auto_describe=False)
        self.power_registry.register(self.power)
        self.on_fresh: Callable[[], None] | None = None  # after each fresh read (exporter_cmd: the full rate)
        self._http: Any = None

    def start(self) -> Exporter:
        self.servers.start()
        return self

    def exposition(self) -> bytes:
        """The Prometheus text format of every family, as a scrape of /metrics gets it."""
        return generate_latest(self.registry)

    def read_fresh(self) -> None:
        """Read every source now (waiting at most 0.25 s): a window edge elsewhere."""
        meter = self.meter_of()
        if isinstance(meter, FreshReads):
            meter.read_now()
            if self.on_fresh is not None:
                self.on_fresh()

    def app(self) -> Callable[..., Iterable[bytes]]:
        """The WSGI application: `/power` (fresh on asking) and everything else."""
        everything, power = make_wsgi_app(self.registry), make_wsgi_app(self.power_registry)

        def route(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") != POWER_PATH:
                return everything(environ, start_response)
            if parse_qs(environ.get("QUERY_STRING", "")).get("fresh") == ["1"]:
                self.read_fresh()
            return power(environ, start_response)

        return route

    def serve(self, host: str, port: int) -> int:
        """Serve /metrics and /power on host:port in a daemon thread; returns the bound port (for
        port 0). Raises OSError when the address cannot be bound (in use, not this machine's)."""
        family, addr = _family(host, port)
        server_class = _Server6 if family == socket.AF_INET6 else ThreadingWSGIServer
        server = make_server(addr, port, self.app(), server_class, handler_class=_Quiet)
        threading.Thread(target=server.serve_forever, name="precmon-exporter-http", daemon=True).start()
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


class _Server6(ThreadingWSGIServer):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    """No line on stderr per request (a scrape every second would flood it)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _family(host: str, port: int) -> tuple[socket.AddressFamily, str]:
    """The address family and address to bind `host` with (an IPv6 address needs AF_INET6)."""
    family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    return family, str(sockaddr[0])
