"""LM Studio: OpenAI-compatible streaming, model identity and stats from its REST API v0.

`GET /api/v0/models` lists every downloaded model with `quantization` ("Q4_K_M", "4bit"),
`max_context_length`, `compatibility_type` (gguf/mlx) and `state` ("loaded"/"not-loaded").
We stream from `/api/v0/completions` (same SSE format as `/v1/completions`) because its answers
may carry `stats` (tokens_per_second, time_to_first_token, generation_time, stop_reason),
`model_info` and `runtime`; we keep what arrives as server timings. Older LM Studio without the
v0 API gets `/v1/completions`. `--endpoint chat` streams from `/api/v0/chat/completions` (or
`/v1/chat/completions`) the same way.

LM Studio has no `ignore_eos`: an early stop shows as fewer completion tokens than asked and
the run is rejected. No tokenizer endpoint and no cache switch (the nonce is our protection;
`cached_tokens` is read when the usage has it). Models load on first use (JIT):
`ensure_loaded` sends a one-token request and waits until the model's state is "loaded", so the
load never lands in a measurement; unloading others needs `lms unload` (no v0 endpoint).
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.wire.fields import as_float, dict_field, dicts, int_field, list_field, str_field
from precmon.servers.wire.http import excerpt


class LMStudioServer(OpenAIServer):
    kind: str = "lmstudio"
    probe_path: ClassVar[str | None] = "/api/v0/models"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._native: bool | None = None
        self.runtime: dict[str, Any] | None = None

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        data = body.get("data") if isinstance(body, dict) else None
        return (
            status == 200
            and isinstance(data, list)
            and (not data or any(isinstance(m, dict) and ("state" in m or "compatibility_type" in m) for m in data))
        )

    def _v0_models(self) -> list[dict[str, Any]]:
        data = dicts(list_field(self.get_json("/api/v0/models"), "data"))
        return [m for m in data if str_field(m, "id") and m.get("type") != "embeddings"]

    def native(self) -> bool:
        if self._native is None:
            try:
                self._v0_models()
                self._native = True
            except ServerError as exc:
                self.note(f"/api/v0/models unavailable ({exc}): quantization and state n/a, /v1 used")
                self._native = False
            if self._native:
                self.completions_path = "/api/v0/completions"
                self.chat_path = "/api/v0/chat/completions"
        return self._native

    def version(self) -> str | None:
        if self.runtime:
            name, version = str_field(self.runtime, "name", limit=100), str_field(self.runtime, "version", limit=100)
            return f"{name or ''} {version or ''}".strip() or None
        return None  # LM Studio names its runtime only inside v0 responses

    def list_models(self) -> list[ModelInfo]:
        if not self.native():
            return super().list_models()
        return [
            ModelInfo(
                name=str(m["id"]),
                context_tokens=int_field(m, "max_context_length", min=1),
                quantization=str_field(m, "quantization", limit=64),
                loaded=m.get("state") == "loaded",
                source=f"/api/v0/models ({str_field(m, 'compatibility_type', limit=32) or '?'})",
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
            for k, v in list(stats.items())[:32]:
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    x = as_float(v)
                    if x is not None:
                        st[f"lmstudio_{k}"] = v
                elif isinstance(v, str):
                    st[f"lmstudio_{k}"] = excerpt(v, 100)
            tps = as_float(stats.get("tokens_per_second"), min=0.0)
            ttft = as_float(stats.get("time_to_first_token"), min=0.0)
            gen = as_float(stats.get("generation_time"), min=0.0)
            if tps is not None:
                st["predicted_per_second"] = tps
            if ttft is not None:
                st["ttft_ms"] = ttft * 1000.0
            if gen is not None:
                st["predicted_ms"] = gen * 1000.0
        runtime = dict_field(obj, "runtime")
        if runtime:
            self.runtime = runtime
        quant = str_field(dict_field(obj, "model_info"), "quant", limit=64)
        if quant:
            res.server_timings["model_quant"] = quant
