"""vLLM: OpenAI streaming plus fixed output length, per-request cache salting and /metrics timings.

What vLLM lets us control: `ignore_eos` and `min_tokens` force exactly `max_tokens` tokens;
`cache_salt` (per request, we use the prompt's nonce) keeps its automatic prefix cache from
serving our prompt from a previous request's blocks. What it tells: `/version`, `/v1/models`
`max_model_len` (the context) and `POST /tokenize`. What it does not tell: the weights' dtype or
quantization; `ModelInfo.quantization`/`dtype` stay None and `source` says so, rather than
guessing from the model's name.

Server-side per-request timings: vLLM's HTTP responses carry none, but its Prometheus histograms
do. When `/metrics` is on (the default) and no other request of ours is in flight, we scrape
before and after the request; if exactly one request finished in between, the histogram deltas
*are* that request's server-side TTFT (arrival → first token), prefill, decode, queue and mean
inter-token times, and the prefix-cache counters say how many of its prompt tokens hit the
cache (a hit the usage did not report becomes `cached_tokens`: the run is invalid). Any other
traffic on the server makes the delta count differ from one; we then store no figure rather
than a mixture, and `server_timings["source"]` says why ("n/a: ..."), so a variant can say how
many of its runs had the server's truth (measure/trust/validity.py).
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, ClassVar

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.kinds import VLLM_GAUGES
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.watch.metrics import MetricsSnapshot, parse_prometheus, snapshot_from_text
from precmon.servers.wire.fields import MAX_TOKENS, as_dict, int_field, str_field, token_ids

UNKNOWN_PRECISION = "/v1/models (vLLM reports neither dtype nor quantization: precision unknown)"


class VLLMServer(OpenAIServer):
    kind: str = "vllm"
    health_path: ClassVar[str] = "/health"
    probe_path: ClassVar[str | None] = "/version"
    sends_min_tokens: ClassVar[bool] = True
    sends_cache_salt: ClassVar[bool] = True

    def __init__(
        self, url: str, api_key: str | None = None, timeout_s: float = 300.0, per_request_metrics: bool = True
    ) -> None:
        super().__init__(url, api_key, timeout_s)
        self.per_request_metrics = per_request_metrics
        self._metrics_ok: bool | None = None
        self._metrics_why = "n/a: /metrics unavailable"
        self._in_flight = 0
        self._lock = threading.Lock()

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        # Generic `{"version": ...}`: probed last, since several servers could answer it.
        return status == 200 and isinstance(body, dict) and isinstance(body.get("version"), str)

    # ---- identity ---------------------------------------------------------------------------

    def version(self) -> str | None:
        return str_field(self.optional_json("/version", "version"), "version", limit=200)

    flags_source: str | None = "/metrics vllm:cache_config_info"

    def server_flags(self, model: str | None) -> dict[str, object]:
        """The KV cache's configuration from the labels of `vllm:cache_config_info` (an info
        gauge, value 1): `cache_dtype` (as kv_cache_dtype), `enable_prefix_caching` (as
        prefix_caching), `block_size`, `gpu_memory_utilization`, `num_gpu_blocks` (the KV cache's
        blocks, only as a number: "None"/"NaN" before the engine has sized it). dtype and quantization are not
        there; for a launched variant they come from its argv (sweep/argv_flags.py)."""
        try:
            r = self.http.get("/metrics", self.cap(5.0))
        except ServerError:
            return {}
        if r.status != 200:
            return {}
        series = parse_prometheus(r.body.decode("utf-8", errors="replace")).get("vllm:cache_config_info") or {}
        labels = dict(next(iter(series), ()))
        names = {
            "cache_dtype": "kv_cache_dtype",
            "enable_prefix_caching": "prefix_caching",
            "block_size": "block_size",
            "gpu_memory_utilization": "gpu_memory_utilization",
            "num_gpu_blocks": "num_gpu_blocks",  # × block_size: the KV capacity (sweep/kv_memory.py)
        }
        flags = {ours: _label_value(labels[theirs]) for theirs, ours in names.items() if labels.get(theirs)}
        if not isinstance(flags.get("num_gpu_blocks"), int) or isinstance(flags.get("num_gpu_blocks"), bool):
            flags.pop("num_gpu_blocks", None)  # "None"/"NaN" before the engine sized its cache
        return flags

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        return ModelInfo(
            name=str(m["id"]),
            context_tokens=int_field(m, "max_model_len", min=1),
            loaded=True,
            source=UNKNOWN_PRECISION,
            notes=self.notes_text(),
            model_path=str_field(m, "root", limit=4096),  # the checkpoint vLLM loaded (a path or a hub id)
        )

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        body: dict[str, Any] = {"prompt": text, "add_special_tokens": True}
        if model:
            body["model"] = model
        return token_ids(as_dict(self.post_json("/tokenize", body, timeout_s=60.0)).get("tokens"))

    # ---- streaming ---------------------------------------------------------------------------

    def stream(self, req: StreamRequest) -> StreamResult:
        with self._lock:
            alone = self._in_flight == 0
            self._in_flight += 1
        before: MetricsSnapshot | None = None
        why: str | None = None
        try:
            if self.per_request_metrics:
                if alone:
                    before = self._scrape()
                    why = None if before is not None else self._metrics_why
                else:
                    why = "n/a: other requests of precmon's were in flight (the deltas would mix them)"
            res = super().stream(req)
        finally:
            with self._lock:
                self._in_flight -= 1
        if self.per_request_metrics and res.error is None:
            why = self._apply_metrics(before, res) if before is not None else why
            if why:
                res.server_timings["source"] = why
        return res

    def _scrape(self) -> MetricsSnapshot | None:
        if self._metrics_ok is False:
            return None
        try:
            r = self.http.get("/metrics", self.cap(5.0))
        except ServerError as exc:
            self._metrics_ok = False
            self._metrics_why = f"n/a: /metrics unavailable ({exc})"
            self.note(f"/metrics unavailable ({exc}): vLLM's per-request server timings n/a")
            return None
        text = r.body.decode("utf-8", errors="replace")
        self._metrics_ok = r.status == 200 and "vllm:" in text
        if not self._metrics_ok:
            self._metrics_why = f"n/a: /metrics gave no vllm: metrics (HTTP {r.status})"
            self.note(f"/metrics gave no vllm: metrics (HTTP {r.status}): per-request server timings n/a")
            return None
        return snapshot_from_text(text, self.url + "/metrics", kind="vllm")

    def _apply_metrics(self, before: MetricsSnapshot, res: StreamResult) -> str | None:
        """Scrape until vLLM has counted the request, then store its deltas in `res.server_timings`.

        Returns None when they were stored, else why not ("n/a: ..."). vLLM counts a request
        when its output processor finishes it, a moment after the last chunk: on the 2-core test
        bed the first scrape after `[DONE]` (6-36 ms long) already saw it in 20 of 20 requests,
        quiet or with two CPU burners; COUNT_WAIT_S bounds the wait on a slower machine.
        """
        ended, scrapes = time.monotonic(), 0
        while True:
            after, scrapes = self._scrape(), scrapes + 1
            if after is None:
                return self._metrics_why
            finished = finished_between(before, after)
            if finished is None:
                return f"n/a: /metrics has no {E2E} histogram"
            if finished == 1:
                break
            if finished > 1:
                return f"n/a: {finished:g} requests finished on the server during this one (other traffic)"
            if finished < 0:
                return "n/a: the server's counters went back during the request (a restart)"
            if time.monotonic() - ended >= COUNT_WAIT_S:
                return f"n/a: vLLM had not counted the request {COUNT_WAIT_S * 1000:.0f} ms after its end"
            time.sleep(COUNT_POLL_S)
        st = res.server_timings
        st.update(request_timings(before, after, res.completion_tokens, res.prompt_tokens))
        st["metrics_wait_ms"] = round((time.monotonic() - ended) * 1000.0, 1)  # stream end → the scrape that saw it
        st["metrics_scrapes"] = scrapes
        hit = st.get("prefix_cache_hit_tokens")
        if isinstance(hit, int) and hit > 0 and (res.cached_tokens or 0) < hit:
            res.cached_tokens = hit  # a cache hit the usage did not tell: the run is invalid
        st["source"] = "vllm /metrics deltas (one request)"
        return None


E2E = "vllm:e2e_request_latency_seconds"
#: How long after a stream's end vLLM may take to count it, and how often we look meanwhile.
COUNT_WAIT_S = 1.0
COUNT_POLL_S = 0.02
#: server_timings key → vLLM histogram whose one-request delta is that request's time.
REQUEST_HISTOGRAMS = (
    ("ttft_ms", "vllm:time_to_first_token_seconds"),  # arrival → first token, like the client's TTFT
    ("prefill_ms", "vllm:request_prefill_time_seconds"),
    ("decode_ms", "vllm:request_decode_time_seconds"),
    ("queue_ms", "vllm:request_queue_time_seconds"),
    ("e2e_ms", E2E),
)


def finished_between(before: MetricsSnapshot, after: MetricsSnapshot) -> float | None:
    """Requests vLLM finished between two scrapes (its e2e histogram's count delta); None without it."""
    h = after.histogram(E2E)
    return None if h is None else h.minus(before.histogram(E2E)).count


def request_timings(
    before: MetricsSnapshot, after: MetricsSnapshot, completion_tokens: int | None, prompt_tokens: int | None
) -> dict[str, float | int]:
    """One request's server-side figures from two scrapes with exactly that request between them.

    Times in ms from the histograms' deltas (a histogram missing or with another count is left
    out); `itl_ms_mean` from the inter-token histogram, one observation per token after the
    first; rates on precmon's basis; prefix-cache hit and query tokens from the counters.
    """
    out: dict[str, float | int] = {}
    for key, name in REQUEST_HISTOGRAMS:
        h = after.histogram(name)
        d = h.minus(before.histogram(name)) if h is not None else None
        if d is not None and d.count == 1 and math.isfinite(d.sum) and d.sum >= 0:
            out[key] = d.sum * 1000.0
    itl = after.histogram(*VLLM_GAUGES.itl_hist)
    if itl is not None:
        d = itl.minus(before.histogram(*VLLM_GAUGES.itl_hist))
        if d.count >= 1 and math.isfinite(d.sum) and d.sum >= 0:
            out["itl_ms_mean"] = d.sum / d.count * 1000.0
    n = completion_tokens
    if out.get("decode_ms") and n and n > 1:
        # vLLM's decode time runs from the first token to the last: same basis as precmon's rate
        out["predicted_per_second"] = (n - 1) / (out["decode_ms"] / 1000.0)
    if out.get("prefill_ms") and prompt_tokens:
        out["prompt_per_second"] = prompt_tokens / (out["prefill_ms"] / 1000.0)
    for key, names in (
        ("prefix_cache_hit_tokens", VLLM_GAUGES.prefix_hits),
        ("prefix_cache_query_tokens", VLLM_GAUGES.prefix_queries),
    ):
        now, then = after.value(*names), before.value(*names)
        if now is not None and then is not None and 0 <= now - then <= MAX_TOKENS:
            out[key] = int(round(now - then))
    return out


def _label_value(text: str) -> object:
    """A Prometheus label's text as the value it stands for: True/False, an int, a float, or text."""
    text = text.strip()[:80]
    if text in ("True", "true", "False", "false"):
        return text in ("True", "true")
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return text
    return number if math.isfinite(number) else text
