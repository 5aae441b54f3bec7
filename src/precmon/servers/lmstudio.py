"""LM Studio: OpenAI-compatible streaming, model identity and stats from its REST API v0.

`GET /api/v0/models` lists every downloaded model with `quantization` ("Q4_K_M", "4bit"),
`max_context_length`, `compatibility_type` (gguf/mlx) and `state` ("loaded"/"not-loaded").
We stream from `/api/v0/completions` (same SSE format as `/v1/completions`) because its answers
may carry `stats` (tokens_per_second, time_to_first_token, generation_time, stop_reason),
`model_info` and `runtime`; we keep what arrives as server timings. Older LM Studio without the
v0 API gets `/v1/completions`.

LM Studio has no `ignore_eos`: an early stop shows as fewer completion tokens than asked and
the run is rejected. No tokenizer endpoint and no cache switch (the nonce is our protection;
`cached_tokens` is read when the usage has it). Models load on first use (JIT):
`ensure_loaded` sends a one-token request and waits until the model's state is "loaded", so the
load never lands in a measurement; unloading others needs `lms unload` (no v0 endpoint).
"""

from __future__ import annotations

import time
from typing import Any

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.openai import OpenAIServer


class LMStudioServer(OpenAIServer):
    kind = "lmstudio"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._native: bool | None = None
        self.runtime: dict[str, Any] | None = None

    def _v0_models(self) -> list[dict[str, Any]]:
        data = self._get_json("/api/v0/models").get("data") or []
        return [m for m in data if isinstance(m, dict) and m.get("id") and m.get("type") != "embeddings"]

    def native(self) -> bool:
        if self._native is None:
            try:
                self._v0_models()
                self._native = True
            except ServerError:
                self._native = False
            if self._native:
                self.completions_path = "/api/v0/completions"
        return self._native

    def version(self) -> str | None:
        if self.runtime:
            return f"{self.runtime.get('name')} {self.runtime.get('version')}".strip()
        return None  # LM Studio names its runtime only inside v0 responses

    def list_models(self) -> list[ModelInfo]:
        if not self.native():
            return super().list_models()
        return [
            ModelInfo(
                name=m["id"],
                context_tokens=m.get("max_context_length"),
                quantization=m.get("quantization"),
                loaded=m.get("state") == "loaded",
                source=f"/api/v0/models ({m.get('compatibility_type') or '?'})",
            )
            for m in self._v0_models()
        ]

    def model_info(self, model: str | None) -> ModelInfo | None:
        models = self.list_models()
        if model is None:
            return next((m for m in models if m.loaded), models[0] if models else None)
        return next((m for m in models if m.name == model), None)

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        if not model or not self.native():
            return
        info = self.model_info(model)
        if info is None:
            raise ServerError(
                f"{self.url}: LM Studio has no model {model!r} "
                f"(GET /api/v0/models lists {[m.name for m in self.list_models()]})"
            )
        if info.loaded:
            return
        deadline = time.monotonic() + timeout_s
        res = super().stream(StreamRequest(prompt="ready", max_tokens=1, model=model, timeout_s=timeout_s))
        while not (self.model_info(model) or info).loaded:
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{self.url}: model {model!r} not loaded after {timeout_s:.0f} s "
                    f"({res.error or 'no error reported'})"
                )
            time.sleep(0.2)

    def stream(self, req: StreamRequest) -> StreamResult:
        self.native()
        return super().stream(req)

    def _on_chunk(self, obj: dict[str, Any], now: float, res: StreamResult) -> None:
        super()._on_chunk(obj, now, res)
        stats = obj.get("stats")
        if isinstance(stats, dict) and stats:
            st = res.server_timings
            st.update({f"lmstudio_{k}": v for k, v in stats.items()})
            if isinstance(stats.get("tokens_per_second"), (int, float)):
                st["predicted_per_second"] = stats["tokens_per_second"]
            if isinstance(stats.get("time_to_first_token"), (int, float)):
                st["ttft_ms"] = stats["time_to_first_token"] * 1000.0
            if isinstance(stats.get("generation_time"), (int, float)):
                st["predicted_ms"] = stats["generation_time"] * 1000.0
        if isinstance(obj.get("runtime"), dict):
            self.runtime = obj["runtime"]
        mi = obj.get("model_info")
        if isinstance(mi, dict) and mi.get("quant"):
            res.server_timings["model_quant"] = mi["quant"]
