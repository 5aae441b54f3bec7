"""What one poll of a server said, frozen: the shape every reader of a watched server shares.

The TUI's server worker and the exporter both poll servers (health, model facts, `/metrics`, the
live rate from `precmon.servers.watch.live_rate`); before this module each kept its own loose state
(a facts dict, the exporter's label row). A `ServerSnapshot` is that state once: the Server panel
renders its health and facts from the one the worker posts, and the exporter's collector turns
each watched server's latest one into samples. Snapshots are immutable, so a reader on another
thread never sees one half updated (nvitop's `Device.as_snapshot()` idea).

Headless: `read_facts` blocks for the adapter's requests (call it from a thread); the rest is pure.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from precmon.servers.base import ServerError
from precmon.servers.kinds import capabilities
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.metrics import LiveRates, MetricsPoller


@dataclass(frozen=True)
class ServerFacts:
    """What a server says about itself, read once per (healthy) server: the Server panel's rows."""

    kind: str | None = None
    version: str | None = None
    model: str | None = None  # the model measured (the given one, else the server's only/first)
    quantization: str | None = None  # as the server names it (Q4_K_M, AWQ …)
    models: tuple[str, ...] = ()


def read_facts(adapter: Any, model: str | None) -> ServerFacts:
    """Kind, version, models and the measured model's quantization, as far as the server answers:
    a server that is healthy but answers none of these is still shown, with its kind."""
    kind: str | None = adapter.kind
    version: str | None = None
    models: tuple[str, ...] = ()
    name = quantization = None
    try:
        version = adapter.version()
        models = tuple(m.name for m in adapter.list_models())
        info = adapter.model_info(model)
        if info is not None:
            name, quantization = info.name, info.quantization
    except ServerError:
        pass
    return ServerFacts(kind, version, name, quantization, models)


@dataclass(frozen=True)
class ServerSnapshot:
    """One server as the last poll left it. `url` is as given (a reader that shows or labels it
    redacts it); `healthy` None: not probed yet."""

    url: str
    healthy: bool | None = None
    kind: str | None = None
    version: str | None = None
    model: str | None = None
    quantization: str | None = None
    models: tuple[str, ...] = ()
    error: str | None = None  # why the last health check failed (one line where the server allows)
    live: LiveRate | None = None  # generated tok/s now, all clients, with its source, or why none
    rates: LiveRates | None = None  # between the last two /metrics scrapes
    metrics_error: str | None = None  # why the last /metrics scrape failed
    requests_running: float | None = None  # the live source's count, else /metrics' running gauge
    taken_s: float = 0.0  # time.monotonic() of the poll

    @property
    def tok_s(self) -> float | None:
        """The live generated tok/s (None: no live figure; `live` says why)."""
        return self.live.tok_s if self.live is not None else None

    @property
    def live_source(self) -> str | None:
        """Where the live rate comes from ("llama.cpp /slots", "vLLM /metrics, per step", "none" …)."""
        return self.live.source if self.live is not None else None

    @property
    def facts(self) -> ServerFacts:
        return ServerFacts(self.kind, self.version, self.model, self.quantization, self.models)


def take_snapshot(
    url: str,
    healthy: bool | None,
    facts: ServerFacts | None = None,
    *,
    error: str | None = None,
    live: LiveRate | None = None,
    scrape: MetricsPoller | None = None,
    fresh: bool = False,
    rates: LiveRates | None = None,
    metrics_error: str | None = None,
) -> ServerSnapshot:
    """The snapshot of one poll: health and `facts` (from the adapter), the live rate, and the
    `/metrics` poller `scrape` (`fresh`: its last scrape is from this poll).

    Requests running: the live source's count where it gives one, else the running gauge of this
    poll's scrape (per the kind's metric names; none when the scrape failed)."""
    f = facts or ServerFacts()
    running = float(live.generating) if live is not None and live.generating is not None else None
    last = scrape.last if scrape is not None and fresh else None
    if running is None and last is not None:
        running = last.value(*capabilities(f.kind).gauges.running)
    return ServerSnapshot(
        url,
        healthy,
        f.kind,
        f.version,
        f.model,
        f.quantization,
        f.models,
        error,
        live,
        rates,
        metrics_error,
        running,
        time.monotonic(),
    )
