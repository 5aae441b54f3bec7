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
*are* that request's server-side TTFT, prefill and decode times, and the prefix-cache counters
say how many of its prompt tokens hit the cache. Any other traffic on the server makes the delta
count differ from one, and we then record nothing rather than a mixture.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, ClassVar

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.fields import MAX_TOKENS, as_dict, int_field, str_field, token_ids
from precmon.servers.metrics import MetricsSnapshot, parse_prometheus, snapshot_from_text
from precmon.servers.openai import OpenAIServer

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
        prefix_caching), `block_size`, `gpu_memory_utilization`. dtype and quantization are not
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
        }
        return {ours: _label_value(labels[theirs]) for theirs, ours in names.items() if labels.get(theirs)}

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        return ModelInfo(
            name=str(m["id"]),
            context_tokens=int_field(m, "max_model_len", min=1),
            loaded=True,
            source=UNKNOWN_PRECISION,
            notes=self.notes_text(),
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
        try:
            before = self._scrape() if alone and self.per_request_metrics else None
            res = super().stream(req)
        finally:
            with self._lock:
                self._in_flight -= 1
        if before is not None and res.error is None:
            self._apply_metrics(before, res)
        return res

    def _scrape(self) -> MetricsSnapshot | None:
        if self._metrics_ok is False:
            return None
        try:
            r = self.http.get("/metrics", self.cap(5.0))
        except ServerError as exc:
            self._metrics_ok = False
            self.note(f"/metrics unavailable ({exc}): vLLM's per-request server timings n/a")
            return None
        text = r.body.decode("utf-8", errors="replace")
        self._metrics_ok = r.status == 200 and "vllm:" in text
        if not self._metrics_ok:
            self.note(f"/metrics gave no vllm: metrics (HTTP {r.status}): per-request server timings n/a")
            return None
        return snapshot_from_text(text, self.url + "/metrics", kind="vllm")

    def _apply_metrics(self, before: MetricsSnapshot, res: StreamResult) -> None:
        after = None
        for _ in range(5):  # vLLM records a finished request a moment after its last chunk
            after = self._scrape()
            e2e = after.histogram("vllm:e2e_request_latency_seconds") if after else None
            if after is None or e2e is None:
                return
            d = e2e.minus(before.histogram("vllm:e2e_request_latency_seconds")).count
            if d == 1:
                break
            if d > 1:
                return  # someone else's requests finished too: the deltas are not ours
            time.sleep(0.02)
        else:
            return
        assert after is not None

        def one(name: str) -> float | None:
            h = after.histogram(name)
            if h is None:
                return None
            d = h.minus(before.histogram(name))
            return d.sum if d.count == 1 and math.isfinite(d.sum) and d.sum >= 0 else None

        st = res.server_timings
        for key, name in (
            ("ttft_ms", "vllm:time_to_first_token_seconds"),
            ("prefill_ms", "vllm:request_prefill_time_seconds"),
            ("decode_ms", "vllm:request_decode_time_seconds"),
            ("queue_ms", "vllm:request_queue_time_seconds"),
            ("e2e_ms", "vllm:e2e_request_latency_seconds"),
        ):
            v = one(name)
            if v is not None:
                st[key] = v * 1000.0
        n = res.completion_tokens
        if st.get("decode_ms") and n and n > 1:
            # vLLM's decode time runs from the first token to the last: same basis as precmon's rate
            st["predicted_per_second"] = (n - 1) / (st["decode_ms"] / 1000.0)
        if st.get("prefill_ms") and res.prompt_tokens:
            st["prompt_per_second"] = res.prompt_tokens / (st["prefill_ms"] / 1000.0)
        hits_now = after.value("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
        hits_then = before.value("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
        if hits_now is not None and hits_then is not None and abs(hits_now - hits_then) <= MAX_TOKENS:
            hit = int(round(hits_now - hits_then))
            st["prefix_cache_hit_tokens"] = hit
            if hit > 0 and (res.cached_tokens or 0) < hit:
                res.cached_tokens = hit
        st["source"] = "vllm /metrics deltas (one request)"


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
