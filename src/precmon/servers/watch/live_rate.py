"""Live generated tok/s across all clients, from the source that moves while a request runs.

Watch mode exists to read other clients' traffic, so its tok/s must move while the model talks.
Which counter does depends on the server (checked against each server's source):

- **llama.cpp**: `llamacpp:tokens_predicted_total` in `/metrics` is added when a request *ends*
  (`metrics_on_prediction`, called from the slot's reset), so it reads 0 during a long answer.
  `GET /slots` (on unless `--no-slots`) gives each slot's `next_token[0].n_decoded`, which grows
  per token; at the end the slot resets it to 0. Generated tokens so far are therefore
  `tokens_predicted_total` (finished requests) + the `n_decoded` of slots still processing:
  exact when `/metrics` is on too. Without `/metrics`, a request's tail after the last read is
  missed (at most one poll interval per finished request): the source line says so.
- **vLLM**: `vllm:generation_tokens_total` is incremented from every engine step's
  `IterationStats` (v1 `PrometheusStatLogger.record`): live as it is.
- **SGLang**: `sglang:generation_tokens_total` is incremented per *finished* request
  (`observe_one_finished_request`); `sglang:realtime_tokens_total{mode="decode"}` is counted by
  the scheduler at each decode log interval: that one is live. Older SGLang without it has the
  `sglang:gen_throughput` gauge (the scheduler's last-interval tok/s).
- **TGI, Ollama, LM Studio, a generic OpenAI server**: no counter that moves mid-request; the
  rate says so (`unavailable`) instead of reading 0.

`source_for(kind, ...)` turns a kind's record (`servers/kinds.py`: its `live_rate`, or the reason
there is none) into a `LiveSource` (the `/metrics` counter, `/slots`, or that reason); the TUI's
server worker and the exporter both read the rate through it.

Headless: `SlotsPoller.poll()` and `LiveSource.read()` block for at most one HTTP GET (call them
from a thread); the rest is pure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from precmon.servers.base import ServerError
from precmon.servers.kinds import LIVE_METRICS, LIVE_SLOTS, capabilities
from precmon.servers.watch.metrics import MetricsPoller, MetricsSnapshot
from precmon.servers.wire.http import HttpClient

LLAMACPP_FINISHED = "llamacpp:tokens_predicted_total"
SGLANG_REALTIME = "sglang:realtime_tokens_total"
SGLANG_GAUGE = "sglang:gen_throughput"
VLLM_GENERATED = "vllm:generation_tokens_total"
SLOTS_SOURCE = "llama.cpp /slots"
EXACT_SOURCE = "llama.cpp /slots + /metrics"


@dataclass(frozen=True)
class LiveRate:
    """Generated tokens per second over the last poll interval, all clients, and its source.

    `tok_s` is None when there is no live figure: `unavailable` then says why, for good
    ("no live token source: …"); `error` says a read failed this time (it may work next time).
    """

    tok_s: float | None
    source: str
    interval_s: float | None = None
    generating: int | None = None  # requests generating at the read, where the server says
    unavailable: str | None = None
    error: str | None = None
    taken_s: float | None = None  # time.monotonic() of the read that ends the interval
    caveat: str | None = None  # what this source misses, for the Server panel
    # How far each end of the interval may be off: half of each read's round trip (the server
    # counted somewhere inside it). Measured on a loaded 2-core box, a /slots answer that took
    # 140 ms put a 1 s reading 23% low; `precmon.servers.watch.rate_window` marks such readings.
    timing_s: float = 0.0

    @property
    def live(self) -> bool:
        return self.tok_s is not None


def no_live_source(kind: str | None, why: str | None = None) -> LiveRate:
    """The rate for a server without a live counter: it says why instead of showing 0."""
    reason = why or capabilities(kind).no_live_rate
    return LiveRate(None, "none", unavailable=f"no live token source: {reason}")


def _value_where(snap: MetricsSnapshot, name: str, **labels: str) -> float | None:
    """Sum over the label sets of `name` that carry every label given."""
    series = snap.samples.get(name)
    if not series:
        return None
    hits = [v for k, v in series.items() if all(dict(k).get(a) == b for a, b in labels.items())]
    return sum(hits) if hits else None


def _counter_rate(prev: float | None, cur: float | None, dt_s: float) -> float | None:
    """Per second between two counter values; None without two finite ones (the server's text
    may say NaN or +Inf, which would reach the run chart as an infinite bar)."""
    if prev is None or cur is None or dt_s <= 0 or not (math.isfinite(prev) and math.isfinite(cur)):
        return None
    d = cur - prev
    return (d if d >= 0 else cur) / dt_s  # a counter reset (server restart): count from zero


def from_metrics(prev: MetricsSnapshot, cur: MetricsSnapshot, kind: str | None) -> LiveRate:
    """The live rate a kind's `/metrics` gives between two scrapes (vLLM, SGLang), or why not."""
    dt = cur.taken_s - prev.taken_s
    if kind == "vllm":
        rate = _counter_rate(prev.value(VLLM_GENERATED), cur.value(VLLM_GENERATED), dt)
        running = cur.value("vllm:num_requests_running")
        if rate is not None:
            return LiveRate(rate, "vLLM /metrics, per step", dt, _int(running), taken_s=cur.taken_s)
        return no_live_source(kind, f"no {VLLM_GENERATED} in /metrics")
    if kind == "sglang":
        running = _int(cur.value("sglang:num_running_reqs"))
        a, b = _value_where(prev, SGLANG_REALTIME, mode="decode"), _value_where(cur, SGLANG_REALTIME, mode="decode")
        rate = _counter_rate(a, b, dt)
        if rate is not None:
            caveat = "counted at each decode log interval (default 40 steps)"
            return LiveRate(rate, "SGLang realtime_tokens", dt, running, taken_s=cur.taken_s, caveat=caveat)
        gauge = cur.value(SGLANG_GAUGE)
        if gauge is not None and math.isfinite(gauge) and gauge >= 0:
            caveat = "the scheduler's tok/s over its last log interval"
            return LiveRate(gauge, "SGLang gen_throughput", dt, running, taken_s=cur.taken_s, caveat=caveat)
        return no_live_source(kind, "this SGLang counts generated tokens only when a request ends")
    if kind == "llamacpp":
        return no_live_source(kind, "/slots is off (--no-slots) and /metrics counts tokens only when a request ends")
    return no_live_source(kind)


def _int(x: float | None) -> int | None:
    """A count from /metrics; None for NaN, ±Inf or a negative (int() of NaN raises)."""
    return int(x) if x is not None and math.isfinite(x) and x >= 0 else None


@dataclass(frozen=True)
class SlotRead:
    """One `/slots` answer: per slot id, (task id, decoded tokens) of the slots processing now."""

    taken_s: float  # the middle of the GET: the server counted somewhere between send and answer
    processing: Mapping[int, tuple[int | None, int]]
    finished_total: float | None = None  # llamacpp:tokens_predicted_total from a /metrics read just before
    rtt_s: float = 0.0  # the GET's round trip: `taken_s` is known to ± half of it


def parse_slots(body: object) -> dict[int, tuple[int | None, int]]:
    """`/slots` JSON → {slot id: (id_task, n_decoded)} for the slots processing a request.

    Shapes seen across llama.cpp versions: `next_token` as a list of one object (current) or an
    object (2024); `is_processing` (current) or `state` != 0 (older). ValueError when the answer
    is not a list of slot objects.
    """
    if not isinstance(body, list):
        raise ValueError("/slots answer is not a list of slots")
    out: dict[int, tuple[int | None, int]] = {}
    for i, slot in enumerate(body):
        if not isinstance(slot, dict):
            raise ValueError(f"/slots entry {i} is not an object")
        busy = slot.get("is_processing")
        if busy is None:
            busy = slot.get("state") not in (None, 0)
        if busy is not True:
            continue
        nt: Any = slot.get("next_token")
        if isinstance(nt, list):
            nt = nt[0] if nt else None
        n = nt.get("n_decoded") if isinstance(nt, dict) else slot.get("n_decoded")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"/slots entry {i}: n_decoded missing or not a count")
        sid = slot.get("id", i)
        task = slot.get("id_task")
        out[sid if isinstance(sid, int) else i] = (task if isinstance(task, int) else None, n)
    return out


def slots_rate(prev: SlotRead, cur: SlotRead) -> LiveRate:
    """Generated tok/s between two `/slots` reads (with `tokens_predicted_total`, exactly)."""
    dt = cur.taken_s - prev.taken_s
    generating = len(cur.processing)
    timing = (prev.rtt_s + cur.rtt_s) / 2
    if dt <= 0:
        return LiveRate(None, SLOTS_SOURCE, dt, generating, error="two /slots reads at the same instant")
    if prev.finished_total is not None and cur.finished_total is not None:
        before = prev.finished_total + sum(n for _, n in prev.processing.values())
        now = cur.finished_total + sum(n for _, n in cur.processing.values())
        tokens = max(0.0, now - before)  # a restart resets both: a dip reads as 0, not negative
        return LiveRate(tokens / dt, EXACT_SOURCE, dt, generating, taken_s=cur.taken_s, timing_s=timing)
    tokens = 0
    for sid, (task, n) in cur.processing.items():
        old = prev.processing.get(sid)
        tokens += n - old[1] if old is not None and old[0] == task and n >= old[1] else n
    caveat = "without --metrics a request's last second is missed"
    return LiveRate(tokens / dt, SLOTS_SOURCE, dt, generating, taken_s=cur.taken_s, caveat=caveat, timing_s=timing)


class SlotsPoller:
    """Reads llama.cpp's `/slots` and hands back the live rate since the previous read.

    Router mode (`model` given) reads `/slots?model=NAME&autoload=false`: a passive watcher must
    never make the router load a model. The first read returns None (a rate needs two).
    """

    def __init__(self, url: str, model: str | None = None, api_key: str | None = None, timeout_s: float = 2.0) -> None:
        self.url, self.model = url.rstrip("/"), model
        self.path = "/slots" + (f"?model={quote(model, safe='')}&autoload=false" if model else "")
        self.timeout_s = timeout_s
        self._client = HttpClient(self.url, api_key=api_key, timeout_s=timeout_s, poller=True)
        self.last: SlotRead | None = None
        self.off: str | None = None  # why /slots is not there (the server said so): stop asking often

    def read(self, finished_total: float | None = None) -> SlotRead:
        """One `/slots` read; ServerError (one line) on failure, `off` set when the endpoint is off.

        Its time is the middle of the GET, not its end: on a starved machine the answer (or the
        thread reading it) can come a tenth of a second after the server counted."""
        sent = time.monotonic()
        reply = self._client.get(self.path, self.timeout_s)
        got = time.monotonic()
        if reply.status in (404, 405, 501):
            self.off = f"/slots answered HTTP {reply.status} (off: llama-server --no-slots, or too old)"
            raise ServerError(self.off, reply.status)
        if reply.status != 200:
            raise ServerError(f"HTTP {reply.status} from {self._client.url}{self.path}", reply.status)
        try:
            processing = parse_slots(reply.json())
        except ValueError as exc:
            raise ServerError(f"{self._client.url}{self.path}: {exc}") from exc
        self.off = None
        return SlotRead((sent + got) / 2, processing, finished_total, got - sent)

    def poll(self, metrics: MetricsSnapshot | None = None) -> LiveRate | None:
        """Read `/slots` (and take `tokens_predicted_total` from `metrics`, a scrape just before)."""
        finished = metrics.value(LLAMACPP_FINISHED) if metrics is not None else None
        cur = self.read(finished)
        prev, self.last = self.last, cur
        if prev is not None and (prev.finished_total is None) != (cur.finished_total is None):
            prev = SlotRead(prev.taken_s, prev.processing, None, prev.rtt_s)  # /metrics came or went: per-slot deltas
            cur = SlotRead(cur.taken_s, cur.processing, None, cur.rtt_s)
        return None if prev is None else slots_rate(prev, cur)

    def close(self) -> None:
        self._client.close()


# ---- which source each kind reads (its record's `live_rate`) -------------------------------------


def live_kind(kind: str | None, metrics_kind: str | None) -> str | None:
    """The kind whose live source to read: what `/metrics` names win for vLLM and SGLang (a vLLM
    watched as `--server openai` still has its per-step counter), else the adapter's kind, else
    what `/metrics` looked like (None: not known yet)."""
    if metrics_kind is not None and capabilities(metrics_kind).live_rate == LIVE_METRICS:
        return metrics_kind
    return kind or metrics_kind


class LiveSource(Protocol):
    """Where one server's live rate comes from; `read` is called once per poll, after the scrape.

    `read(scrape, fresh, tick)`: `scrape` is the server's `/metrics` poller and `fresh` whether
    its last scrape worked this poll; `tick` counts polls (a source that is off is asked again
    only every `retry_every` of them). None: nothing to show yet (a rate needs two reads).
    """

    kind: str
    model: str | None

    def read(self, scrape: MetricsPoller, fresh: bool, tick: int) -> LiveRate | None: ...

    def close(self) -> None: ...


@dataclass
class _CounterSource:
    """vLLM, SGLang: the per-step counter between the last two `/metrics` scrapes."""

    kind: str
    model: str | None = None

    def read(self, scrape: MetricsPoller, fresh: bool, tick: int) -> LiveRate | None:
        if not fresh:
            return LiveRate(None, "/metrics", error="the last /metrics scrape failed")
        if scrape.previous is None or scrape.last is None:
            return None
        return from_metrics(scrape.previous, scrape.last, self.kind)

    def close(self) -> None:
        pass


class _SlotsSource:
    """llama.cpp: `/slots` per-slot decoded counts (exact with `tokens_predicted_total`)."""

    def __init__(
        self, kind: str, url: str, model: str | None, api_key: str | None, timeout_s: float, retry_every: int
    ) -> None:
        self.kind, self.model, self.retry_every = kind, model, retry_every
        self.slots = SlotsPoller(url, model, api_key, timeout_s)

    def read(self, scrape: MetricsPoller, fresh: bool, tick: int) -> LiveRate | None:
        if self.slots.off and tick % self.retry_every:
            return None  # /slots said it is off: asked again every few polls, not every poll
        try:
            return self.slots.poll(scrape.last if fresh else None)
        except ServerError as exc:
            if self.slots.off:
                return no_live_source(self.kind, f"{self.slots.off}; /metrics counts tokens only when a request ends")
            return LiveRate(None, SLOTS_SOURCE, error=_first_line(exc))

    def close(self) -> None:
        self.slots.close()


@dataclass
class _NoSource:
    """TGI, Ollama, LM Studio, a generic OpenAI server: says why there is no live rate."""

    kind: str
    model: str | None = None

    def read(self, scrape: MetricsPoller, fresh: bool, tick: int) -> LiveRate | None:
        return no_live_source(self.kind)

    def close(self) -> None:
        pass


def source_for(
    kind: str,
    url: str,
    model: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 2.0,
    retry_every: int = 4,
) -> LiveSource:
    """The live-rate source of a server of `kind` (see `live_kind`) at `url`.

    Args:
        model: llama.cpp router mode reads `/slots?model=` of the model in use.
        timeout_s: the whole of one `/slots` read.
        retry_every: polls between asks of a `/slots` that said it is off.
    """
    source = capabilities(kind).live_rate
    if source == LIVE_METRICS:
        return _CounterSource(kind, model)
    if source == LIVE_SLOTS:
        return _SlotsSource(kind, url, model, api_key, timeout_s, retry_every)
    return _NoSource(kind, model)


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its type when it has none)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
