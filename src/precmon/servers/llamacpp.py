"""llama.cpp `llama-server`: health, props, tokenizer, timings and router-mode switching.

llama-server reports its own `timings` in the final stream chunk (prompt_n, prompt_ms,
predicted_n, predicted_ms, predicted_per_second, cache_n); we keep them beside our client-side
numbers. `cache_prompt: false` stops it reusing a previous prompt's KV cache, and `cache_n`
tells us if it did anyway. In router mode (`--models-dir`, no `-m`) every request names its
model and `/models` shows which are loaded.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import quote

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.openai import OpenAIServer

_QUANT_RE = re.compile(
    r"(?<![A-Za-z0-9])(IQ[1-4]_[A-Z]+|Q[2-8]_K(?:_[SML])?|Q[4-8]_[01]|Q[2-8]_K|F16|BF16|F32|MXFP4|TQ[12]_0)"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def quant_from_name(name: str) -> str | None:
    """'tiny-Q4_K_M.gguf' → 'Q4_K_M'; None when the name does not say."""
    m = _QUANT_RE.findall(name.replace(".gguf", ""))
    return m[-1].upper() if m else None


class LlamaCppServer(OpenAIServer):
    kind = "llamacpp"
    health_path = "/health"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._router: bool | None = None

    # ---- identity ---------------------------------------------------------------------------

    def is_router(self) -> bool:
        if self._router is None:
            try:
                data = self._get_json("/models", timeout_s=5.0).get("data") or []
                self._router = any(isinstance(m, dict) and isinstance(m.get("status"), dict) for m in data)
            except ServerError:
                self._router = False
        return self._router

    def props(self, model: str | None = None) -> dict[str, Any]:
        path = "/props"
        if model and self.is_router():
            path += f"?model={quote(model, safe='')}&autoload=false"
        try:
            return self._get_json(path)
        except ServerError:
            return {}

    def version(self) -> str | None:
        bi = self.props().get("build_info")
        return str(bi) if bi else None

    def list_models(self) -> list[ModelInfo]:
        if self.is_router():
            data = self._get_json("/models").get("data") or []
            out = []
            for m in data:
                status = (m.get("status") or {}).get("value")
                out.append(
                    ModelInfo(
                        name=m["id"],
                        quantization=quant_from_name(m.get("path") or m["id"]),
                        loaded=status == "loaded",
                        source="/models",
                    )
                )
            return out
        data = self._get_json("/v1/models").get("data") or []
        return [self._model_from_entry(m) for m in data if isinstance(m, dict) and m.get("id")]

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        meta = m.get("meta") or {}
        return ModelInfo(
            name=m["id"],
            size_bytes=meta.get("size"),
            n_params=meta.get("n_params"),
            context_tokens=meta.get("n_ctx") or meta.get("n_ctx_train"),
            quantization=quant_from_name(m["id"]),
            loaded=True,
            source="/v1/models meta",
        )

    def model_info(self, model: str | None) -> ModelInfo | None:
        entries = self._get_json("/v1/models").get("data") or []
        entry = None
        for m in entries:
            if isinstance(m, dict) and (model is None or m.get("id") == model):
                entry = m
                break
        props = self.props(model)
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        name = model or (entry or {}).get("id") or props.get("model_alias") or props.get("model_path")
        if name is None:
            return None
        meta = (entry or {}).get("meta") or {}
        quant = quant_from_name(props.get("model_path") or "") or quant_from_name(name)
        return ModelInfo(
            name=name,
            size_bytes=meta.get("size"),
            n_params=meta.get("n_params"),
            context_tokens=n_ctx or meta.get("n_ctx_train"),
            quantization=quant,
            loaded=bool(entry) if self.is_router() else True,
            source="/props, /v1/models meta",
        )

    # ---- tokenizer ---------------------------------------------------------------------------
    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        body: dict[str, Any] = {"content": text, "add_special": True}
        if model and self.is_router():
            body["model"] = model
        out = self._post_json("/tokenize", body, timeout_s=60.0)
        toks = out.get("tokens")
        return [t if isinstance(t, int) else t["id"] for t in toks] if isinstance(toks, list) else None

    # ---- switching (router mode) -----------------------------------------------------------
    def _status(self, model: str) -> dict[str, Any]:
        for m in self._get_json("/models").get("data") or []:
            if m.get("id") == model:
                return m.get("status") or {}
        raise ServerError(
            f"{self.url}: model {model!r} is not served here "
            f"(GET /models lists {[m.get('id') for m in self._get_json('/models').get('data') or []]})"
        )

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        """Load `model` and unload the others, so nothing else shares memory or cores."""
        if not model or not self.is_router():
            return
        deadline = time.monotonic() + timeout_s
        busy = ("loaded", "loading", "sleeping")
        others = [
            m["id"]
            for m in self._get_json("/models").get("data") or []
            if m.get("id") != model and (m.get("status") or {}).get("value") in busy
        ]
        for other in others:
            self._post_json("/models/unload", {"model": other})
        while others:  # unloading is asynchronous; a load before it ends hits the model limit
            others = [
                m["id"]
                for m in self._get_json("/models").get("data") or []
                if m.get("id") in others and (m.get("status") or {}).get("value") in busy
            ]
            if time.monotonic() > deadline:
                raise ServerError(f"{self.url}: models {others} still loaded after {timeout_s:.0f} s")
            time.sleep(0.1)
        status = self._status(model)
        if status.get("value") not in ("loaded", "loading"):
            try:
                self._post_json("/models/load", {"model": model}, timeout_s=timeout_s)
            except ServerError as exc:
                # Another client (a /metrics?model= scrape autoloads) may have started it first.
                if "already" not in str(exc):
                    raise
        while True:
            status = self._status(model)
            if status.get("value") == "loaded":
                break
            if status.get("failed"):
                raise ServerError(f"{self.url}: model {model!r} failed to load (exit code {status.get('exit_code')})")
            if time.monotonic() > deadline:
                raise ServerError(f"{self.url}: model {model!r} not loaded after {timeout_s:.0f} s")
            time.sleep(0.2)
        # Wait until the instance answers, so load time never lands in a measurement.
        while time.monotonic() < deadline:
            try:
                self.tokenize("ready", model)
                return
            except ServerError:
                time.sleep(0.2)
        raise ServerError(f"{self.url}: model {model!r} loaded but not answering after {timeout_s:.0f} s")

    # ---- streaming ---------------------------------------------------------------------------
    def payload(self, req: StreamRequest) -> dict[str, Any]:
        p = super().payload(req)
        p["cache_prompt"] = False
        p["timings_per_token"] = False
        return p

    def stream(self, req: StreamRequest) -> StreamResult:
        res = super().stream(req)
        cache_n = res.server_timings.get("cache_n")
        if isinstance(cache_n, int) and (res.cached_tokens is None or cache_n > res.cached_tokens):
            res.cached_tokens = cache_n
        return res
