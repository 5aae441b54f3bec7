"""Passive server metrics: Prometheus text from `/metrics` turned into live rates for watch mode.

vLLM (`vllm:*`), llama.cpp `--metrics` (`llamacpp:*`; router mode `/metrics?model=NAME`), SGLang
`--enable-metrics` (`sglang:*`) and TGI (`tgi_*`) all expose counters, gauges and histograms. A
single scrape says little; two scrapes say what happened in between: generation tok/s from
counter deltas, TTFT and inter-token latency from histogram *deltas* (mean, and p50/p99
interpolated inside buckets the way Prometheus' `histogram_quantile` does).

Why our own parser rather than `prometheus-client`'s `text_string_to_metric_families`: we need
only name, labels and value of each sample line (about 40 lines of code), the servers' output is
simple, and a runtime dependency for that is not worth its weight. Our parser also never raises
on a line it does not understand (a scrape must not kill the watch screen); it skips it.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from precmon.servers.base import ServerError
from precmon.servers.kinds import KINDS, capabilities
from precmon.servers.wire.http import HttpClient
from precmon.untrusted import redact_url

Labels = tuple[tuple[str, str], ...]

_LINE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\d+)?\s*$")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"')


def _float(s: str) -> float | None:
    try:
        return float(s)  # handles NaN, +Inf, -Inf, 1e3
    except ValueError:
        return None


def parse_prometheus(text: str) -> dict[str, dict[Labels, float]]:
    """Prometheus text exposition → {metric name: {sorted labels: value}}. Bad lines are skipped."""
    out: dict[str, dict[Labels, float]] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        value = _float(m.group(3))
        if value is None:
            continue
        labels: Labels = ()
        if m.group(2):
            pairs = [
                (k, v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\"))
                for k, v in _LABEL.findall(m.group(2))
            ]
            labels = tuple(sorted(pairs))
        out.setdefault(m.group(1), {})[labels] = value
    return out


@dataclass(frozen=True)
class Histogram:
    """A cumulative histogram summed over label sets: (upper bound, cumulative count) pairs."""

    buckets: tuple[tuple[float, float], ...]
    sum: float
    count: float

    def minus(self, prev: Histogram | None) -> Histogram:
        if prev is None:
            return self
        pb = dict(prev.buckets)
        return Histogram(
            tuple((le, c - pb.get(le, 0.0)) for le, c in self.buckets), self.sum - prev.sum, self.count - prev.count
        )

    @property
    def mean(self) -> float | None:
        return self.sum / self.count if self.count > 0 else None

    def quantile(self, q: float) -> float | None:
        """Estimated q-quantile (0..1), linear inside the bucket; None without observations."""
        if self.count <= 0 or not self.buckets:
            return None
        rank = q * self.count
        lower, prev_c = 0.0, 0.0
        for le, c in self.buckets:
            if c >= rank and c > prev_c:
                if math.isinf(le):
                    return lower  # beyond the last finite bound: the best we can say
                return lower + (le - lower) * (rank - prev_c) / (c - prev_c)
            lower, prev_c = (le if not math.isinf(le) else lower), c
        return lower


@dataclass(frozen=True)
class MetricsSnapshot:
    """One scrape: every sample, and when it was taken (time.monotonic seconds)."""

    url: str
    taken_s: float
    samples: dict[str, dict[Labels, float]] = field(default_factory=dict)
    kind: str | None = None

    def value(self, *names: str) -> float | None:
        """Sum over label sets of the first of `names` present (older/newer metric names)."""
        for name in names:
            series = self.samples.get(name)
            if series:
                return sum(series.values())
        return None

    def histogram(self, *names: str) -> Histogram | None:
        for name in names:
            series = self.samples.get(name + "_bucket") or {}
            if not series and name + "_count" not in self.samples:
                continue  # (a summary-like _sum/_count without buckets still gives a mean)
            by_le: dict[float, float] = {}
            for labels, v in series.items():
                le = _float(dict(labels).get("le", ""))
                if le is not None:
                    by_le[le] = by_le.get(le, 0.0) + v
            return Histogram(
                tuple(sorted(by_le.items())), self.value(name + "_sum") or 0.0, self.value(name + "_count") or 0.0
            )
        return None


def guess_kind(samples: dict[str, dict[Labels, float]]) -> str | None:
    """The kind whose metric names' prefix a scrape has (the first in `KINDS` order)."""
    for kind in KINDS:
        prefix = kind.metrics_prefix
        if prefix and any(n.startswith(prefix) for n in samples):
            return kind.name
    return None


def metrics_url(url: str, model: str | None = None) -> str:
    """The scrape URL for a server base URL (or a full /metrics URL); `model` for llama.cpp routers."""
    u = url.rstrip("/")
    if not u.split("?")[0].endswith("/metrics"):
        u += "/metrics"
    if model:
        u += ("&" if "?" in u else "?") + "model=" + quote(model, safe="")
    return u


def snapshot_from_text(
    text: str, url: str = "", taken_s: float | None = None, kind: str | None = None
) -> MetricsSnapshot:
    samples = parse_prometheus(text)
    return MetricsSnapshot(url, time.monotonic() if taken_s is None else taken_s, samples, kind or guess_kind(samples))


def _split(target: str) -> tuple[str, str]:
    """`http://h:8080/metrics?model=x` → (`http://h:8080`, `/metrics?model=x`)."""
    parts = urlsplit(target)
    path = parts.path or "/"
    return f"{parts.scheme}://{parts.netloc}", path + (f"?{parts.query}" if parts.query else "")


def scrape(
    url: str,
    model: str | None = None,
    timeout_s: float = 2.0,
    client: HttpClient | None = None,
    kind: str | None = None,
) -> MetricsSnapshot:
    """GET the server's /metrics, whole within `timeout_s`; ServerError (one line) when it is off or missing.

    Args:
        client: a client whose base URL is the server's (the poller keeps one); else a fresh one.
    """
    target = metrics_url(url, model)
    base, path = _split(target)
    own = client is None
    http = HttpClient(base, timeout_s=timeout_s) if client is None else client
    try:
        r = http.get(path, timeout_s)
    finally:
        if own:
            http.close()
    if r.status != 200:
        hint = capabilities(kind).metrics_hint
        raise ServerError(f"HTTP {r.status} from {redact_url(target)}: no Prometheus metrics{hint}", r.status)
    return snapshot_from_text(r.body.decode("utf-8", errors="replace"), redact_url(target), kind=kind)


@dataclass(frozen=True)
class LiveRates:
    """What happened between two scrapes. None where the server does not expose it."""

    kind: str | None
    interval_s: float
    generation_tok_s: float | None = None
    prompt_tok_s: float | None = None
    decode_busy_tok_s: float | None = None  # llama.cpp: tokens ÷ time spent generating them
    requests_finished: float | None = None
    ttft_mean_s: float | None = None
    ttft_p50_s: float | None = None
    ttft_p99_s: float | None = None
    itl_mean_s: float | None = None
    itl_p50_s: float | None = None
    itl_p99_s: float | None = None
    requests_running: float | None = None
    requests_waiting: float | None = None
    kv_cache_usage_ratio: float | None = None  # 0..1
    prefix_cache_hit_ratio: float | None = None  # 0..1, over the interval where counters allow


def _delta(cur: MetricsSnapshot, prev: MetricsSnapshot, names: Iterable[str]) -> float | None:
    for n in names:
        a, b = cur.value(n), prev.value(n)
        if a is not None and b is not None:
            d = a - b
            return d if d >= 0 else a  # a counter reset (server restart): count from zero
    return None


def _hist_delta(cur: MetricsSnapshot, prev: MetricsSnapshot, names: tuple[str, ...]) -> Histogram | None:
    h = cur.histogram(*names)
    if h is None:
        return None
    d = h.minus(prev.histogram(*names))
    return h if d.count < 0 else d  # reset


def rates(prev: MetricsSnapshot, cur: MetricsSnapshot, kind: str | None = None) -> LiveRates:
    """Live rates between two snapshots of the same server."""
    kind = kind or cur.kind or prev.kind
    names = capabilities(kind).gauges
    dt = cur.taken_s - prev.taken_s

    def per_s(x: float | None) -> float | None:
        return x / dt if x is not None and dt > 0 else None

    gen = _delta(cur, prev, names.generation_tokens)
    prompt = _delta(cur, prev, names.prompt_tokens)
    finished = None
    if gen is None and names.generation_tokens_hist_sum:
        h = _hist_delta(cur, prev, names.generation_tokens_hist_sum)
        gen, finished = (h.sum, h.count) if h else (None, None)
    if prompt is None and names.prompt_tokens_hist_sum:
        h = _hist_delta(cur, prev, names.prompt_tokens_hist_sum)
        prompt = h.sum if h else None
    busy = _delta(cur, prev, names.decode_busy_seconds)
    ttft = _hist_delta(cur, prev, names.ttft_hist)
    itl = _hist_delta(cur, prev, names.itl_hist)
    if finished is None and ttft is not None:
        finished = ttft.count
    hits, queries = _delta(cur, prev, names.prefix_hits), _delta(cur, prev, names.prefix_queries)
    hit_ratio = hits / queries if hits is not None and queries else cur.value(*names.prefix_hit_ratio_gauge)
    return LiveRates(
        kind=kind,
        interval_s=dt,
        generation_tok_s=per_s(gen),
        prompt_tok_s=per_s(prompt),
        decode_busy_tok_s=gen / busy if gen is not None and busy else None,
        requests_finished=finished,
        ttft_mean_s=ttft.mean if ttft else None,
        ttft_p50_s=ttft.quantile(0.5) if ttft else None,
        ttft_p99_s=ttft.quantile(0.99) if ttft else None,
        itl_mean_s=itl.mean if itl else None,
        itl_p50_s=itl.quantile(0.5) if itl else None,
        itl_p99_s=itl.quantile(0.99) if itl else None,
        requests_running=cur.value(*names.running),
        requests_waiting=cur.value(*names.waiting),
        kv_cache_usage_ratio=cur.value(*names.kv_usage_ratio),
        prefix_cache_hit_ratio=hit_ratio,
    )


class MetricsPoller:
    """Scrape repeatedly and hand back rates since the previous scrape (watch mode's engine).

    `poll()` blocks for one HTTP GET; call it from a thread worker. The first call returns None
    (a rate needs two scrapes); a failed scrape raises ServerError and keeps the old baseline.
    `previous` and `last` are the two scrapes the latest rates came from (`precmon.servers.
    live_rate.from_metrics` reads the kind's live counter from them).
    """

    def __init__(self, url: str, kind: str | None = None, model: str | None = None, timeout_s: float = 2.0) -> None:
        self.url, self.kind, self.model, self.timeout_s = url, kind, model, timeout_s
        self._client = HttpClient(_split(metrics_url(url, model))[0], timeout_s=timeout_s, poller=True)
        self.last: MetricsSnapshot | None = None
        self.previous: MetricsSnapshot | None = None

    def poll(self) -> LiveRates | None:
        snap = scrape(self.url, self.model, self.timeout_s, self._client, self.kind)
        prev, self.last = self.last, snap
        self.previous = prev
        self.kind = self.kind or snap.kind
        return None if prev is None else rates(prev, snap, self.kind)

    def close(self) -> None:
        self._client.close()
