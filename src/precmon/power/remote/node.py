"""Another machine as a power source: its exporter read over HTTP, at each window's edges.

`--power-from URL` names another node's exporter. `open_nodes` reads each once to learn what it
is (precmon's exporter or DCGM's), its name and its power channels; the sampler then treats each
node as one more source (power/sampler.py), so its windows come from the same accumulators as
this machine's: at a phase's edges the sampler asks every source for a read now, and a node's
read asks its exporter for counters read at that moment (precmon: `/power?fresh=1`; DCGM serves
what it collected last). The energy of a window is the difference of the node's counters, so the
two machines' clocks need not agree; each sample is timed at the middle of its round trip, and
the round trip is kept (`ROUND_TRIP_S`), so a window knows how far its edges may be off this
machine's (`EnergyWindow.edge_s`).

Between the edges the node is read only every `PERIOD_S` (its watts for the live Power panel):
a read is a round trip, and the network must not make a measurement noisier than it is. Every
read has a short deadline (`DEADLINE_S`); a node that misses it has no reading at that edge, and
its window is left out (the sum then says `node-missing:`, power/fleet.py).
"""

from __future__ import annotations

import socket
import time
import urllib.parse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import replace

import httpx

from precmon.untrusted import redact_url, visible

from ..base import ROUND_TRIP_S, Channel, Node, Sample
from .exposition import DCGM, PRECMON, Exposition, ExpositionError, Reading, parse

KIND = "node"
DEADLINE_S = 0.4  # one read, connect to last byte; within the sampler's boundary wait (0.5 s)
OPEN_DEADLINE_S = 5.0  # the first read, when the sources are opened: a node may be slow to answer once
PERIOD_S = 1.0  # reads between edges: the live watts only
MAX_BODY = 4 * 1024 * 1024  # a DCGM exposition of 8 GPUs is ~100 kB
POWER_PATH = "/power"  # precmon's exporter: its power families only (exporter/serve.py)


class NodeError(Exception):
    """A read of a node failed; str() says why in one line."""


def _origin(url: str) -> str:
    p = urllib.parse.urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


def _metrics_url(url: str) -> str:
    """The URL as given, with `/metrics` where it names no path."""
    p = urllib.parse.urlsplit(url)
    return url if p.path not in ("", "/") else f"{_origin(url)}/metrics"


def url_name(url: str) -> str:
    """A node's name when its exporter gives none: the URL's host:port."""
    return visible(urllib.parse.urlsplit(url).netloc or url, limit=64)


class RemoteNode:
    """One other node's exporter as a `PowerSource` (build it with `open_nodes`)."""

    blocking = True  # a read waits on the network: its own sampler thread
    expensive_counter = True  # counters (precmon: a fresh read of the node's sources) at edges only
    period_s = PERIOD_S

    def __init__(self, url: str, client: httpx.Client | None = None) -> None:
        self.url = url
        self.node = Node(url_name(url), redact_url(url))
        self.kind = f"{KIND}:{self.node.name}"
        self._client = client or httpx.Client(timeout=DEADLINE_S, follow_redirects=False)
        self._read_url = _metrics_url(url)
        self._fresh_url: str | None = None
        self._channels: list[Channel] = []
        self._sources: dict[str, str] = {}  # channel id → the exporter's source id
        self._first: Exposition | None = None

    # opening --------------------------------------------------------------------------------
    def probe(self) -> None:
        """The first read: what the exporter is, the name it gives, its channels."""
        try:
            text, _, _ = self._get(self._read_url, OPEN_DEADLINE_S)
            found = parse(text)
        except (NodeError, ExpositionError) as exc:
            self.node = replace(self.node, problem=f"no answer from {self.node.url}: {exc}")
            return
        if found.exporter is None:
            why = "neither precmon's nor DCGM's power families in its exposition"
            self.node = replace(self.node, problem=f"{self.node.url}: {why}")
            return
        self._first = found
        if found.exporter == PRECMON:
            self._read_url = _origin(self.url) + POWER_PATH
            self._fresh_url = self._read_url + "?fresh=1"
        self.node = replace(self.node, name=found.name or self.node.name, exporter=found.exporter)

    def name_as(self, name: str) -> None:
        """Fix the node's name (open_nodes: names must differ) and make its channels."""
        self.node = replace(self.node, name=name)
        self.kind = f"{KIND}:{name}"
        found = self._first
        if found is None:
            return
        made = [(self._channel(r, found), r.source) for r in found.readings.values()]
        self._channels = [c for c, _ in made]
        self._sources = {c.id: source for c, source in made}
        if not self._channels:
            why = "its exporter serves no power source" + (" (DCGM: no GPU)" if found.exporter == DCGM else "")
            self.node = replace(self.node, unmeasured=why)

    def _channel(self, r: Reading, found: Exposition) -> Channel:
        name = self.node.name
        if found.exporter == DCGM:
            label = f"{found.gpus} GPU{'s' if found.gpus != 1 else ''} (DCGM)"
            note = "DCGM: the sum of the node's GPUs"
        else:
            label = r.source
            note = f"precmon exporter, {r.method} energy" if r.method else "precmon exporter, watts only"
        return Channel(
            f"{name}/{r.source}",
            KIND,
            f"{name}: {label}",
            r.scope,
            has_energy_counter=r.energy_j is not None,
            note=note,
            node=name,
        )

    # reading --------------------------------------------------------------------------------
    def channels(self) -> list[Channel]:
        return list(self._channels)

    def read(self, full: bool = True, counters: bool = True) -> list[Sample]:
        """One reading of every channel; `counters`: an edge (precmon: the node reads its
        sources first). Raises NodeError when the node does not answer in time."""
        if not self._channels:
            return []
        url = self._fresh_url if counters and self._fresh_url else self._read_url
        text, t_mid, trip = self._get(url, DEADLINE_S)
        try:
            readings = parse(text).readings
        except ExpositionError as exc:
            raise NodeError(str(exc)) from exc
        extra = {ROUND_TRIP_S: trip}
        out = []
        for ch in self._channels:
            r = readings.get(self._sources[ch.id])
            watts = r.watts if r is not None else None
            energy = r.energy_j if r is not None and counters else None
            out.append(Sample(ch.id, t_mid, watts, energy, extra))
        return out

    def _get(self, url: str, deadline_s: float) -> tuple[str, float, float]:
        """The body of a GET within `deadline_s`: (text, the middle of the round trip, the trip)."""
        t0 = time.monotonic()
        try:
            with self._client.stream("GET", url, timeout=deadline_s) as r:
                if r.status_code != 200:
                    raise NodeError(f"HTTP {r.status_code}")
                body = bytearray()
                for chunk in r.iter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY:
                        raise NodeError(f"an answer over {MAX_BODY // 1024 // 1024} MiB")
                    if time.monotonic() - t0 > deadline_s:
                        raise NodeError(f"no whole answer within {deadline_s:g} s")
        except httpx.HTTPError as exc:
            raise NodeError(visible(f"{type(exc).__name__}: {exc}", limit=160)) from exc
        t1 = time.monotonic()
        return body.decode("utf-8", "replace"), (t0 + t1) / 2, t1 - t0

    def close(self) -> None:
        self._client.close()


def open_nodes(urls: Iterable[str], taken: Sequence[str] = ()) -> list[RemoteNode]:
    """Every node of `--power-from`, each read once, named apart from each other and from `taken`
    (this machine's hostname by default): a name given twice becomes `name (host:port)`."""
    nodes = [RemoteNode(u) for u in dict.fromkeys(urls)]
    for n in nodes:
        n.probe()
    used = set(taken) if taken else {socket.gethostname()}
    given = Counter(n.node.name for n in nodes)
    for n in nodes:
        name = n.node.name
        if name in used or given[name] > 1:
            name = f"{name} ({url_name(n.url)})"
        used.add(name)
        n.name_as(name)
    return nodes
