"""llama.cpp `llama-server`: health, props, tokenizer, timings and router-mode switching.

llama-server reports its own `timings` in the final stream chunk (prompt_n, prompt_ms,
predicted_n, predicted_ms, predicted_per_second, cache_n); we keep them beside our client-side
numbers. `cache_prompt: false` stops it reusing a previous prompt's KV cache, and `cache_n`
tells us if it did anyway (a context-depth request asks for the reuse instead: `payload`). Both
hold on `/v1/chat/completions` too (`--endpoint chat`): the chat stream's final chunk carries
the same `timings`, and the first delta only a role (`content: null`). In router mode
(`--models-dir`, no `-m`) every request names its model and `/models` shows which are loaded.
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar
from urllib.parse import quote

from precmon.servers.base import ModelInfo, ServerError, StreamRequest, StreamResult
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.wire.fields import (
    MAX_TOKENS,
    as_dict,
    as_int,
    dict_field,
    dicts,
    int_field,
    list_field,
    str_field,
    token_ids,
)

_QUANT_RE = re.compile(
    r"(?<![A-Za-z0-9])(IQ[1-4]_[A-Z]+|Q[2-8]_K(?:_[SML])?|Q[4-8]_[01]|Q[2-8]_K|F16|BF16|F32|MXFP4|NVFP4|TQ[12]_0)"
    r"(?![A-Za-z0-9])",
    re.IGNORECASE,
)


def quant_from_name(name: str) -> str | None:
    """'tiny-Q4_K_M.gguf' → 'Q4_K_M'; None when the name does not say."""
    m = _QUANT_RE.findall(name.replace(".gguf", ""))
    return m[-1].upper() if m else None


#: The slot a context-depth request names (`StreamRequest.reuse_prefix`; slot 0 exists on every server).
DEPTH_SLOT = 0


class LlamaCppServer(OpenAIServer):
    kind: str = "llamacpp"
    health_path: ClassVar[str] = "/health"
    probe_path: ClassVar[str | None] = "/props"

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._router: bool | None = None

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        return (
            status == 200
            and isinstance(body, dict)
            and ("build_info" in body or "default_generation_settings" in body or "role" in body)
        )

    # ---- identity ---------------------------------------------------------------------------

    def _router_models(self) -> list[dict[str, Any]]:
        """Router mode's `GET /models` entries with a string `id`."""
        return [m for m in dicts(list_field(self.get_json("/models"), "data")) if str_field(m, "id")]

    def is_router(self) -> bool:
        if self._router is None:
            try:
                data = dicts(list_field(self.get_json("/models", timeout_s=5.0), "data"))
                self._router = any(isinstance(m.get("status"), dict) for m in data)
            except ServerError:
                self._router = False
        return self._router

    def props(self, model: str | None = None) -> dict[str, Any]:
        """`/props` (optional: without it, context and build are n/a and noted)."""
        path = "/props"
        if model and self.is_router():
            path += f"?model={quote(model, safe='')}&autoload=false"
        return as_dict(self.optional_json(path, "context size, build"))

    def version(self) -> str | None:
        return str_field(self.props(), "build_info", limit=200)

    flags_source: str | None = "/props"

    def server_flags(self, model: str | None) -> dict[str, object]:
        """The `/props` keys that say how llama-server runs: `build_info`, `total_slots`
        (`--parallel`), `model_ftype`, `default_generation_settings.n_ctx` (`--ctx-size` per
        slot) and `endpoint_metrics` (`--metrics`). The test bed's build (0.3.36) tells nothing
        about batch sizes, flash attention or KV cache types; a launched variant's argv does
        (sweep/argv_flags.py)."""
        try:
            props = self.props(model)
        except ServerError:
            return {}
        gen = dict_field(props, "default_generation_settings")
        flags: dict[str, object | None] = {
            "build": str_field(props, "build_info", limit=200),
            "n_ctx": int_field(gen, "n_ctx", min=1),
            "total_slots": int_field(props, "total_slots", min=1),
            "model_ftype": str_field(props, "model_ftype", limit=40),
            "endpoint_metrics": props.get("endpoint_metrics")
            if isinstance(props.get("endpoint_metrics"), bool)
            else None,
        }
        return {k: v for k, v in flags.items() if v is not None}

    def list_models(self) -> list[ModelInfo]:
        if self.is_router():
            out = []
            for m in self._router_models():
                name = str(m["id"])
                out.append(
                    ModelInfo(
                        name=name,
                        quantization=quant_from_name(str_field(m, "path") or name),
                        loaded=str_field(dict_field(m, "status"), "value") == "loaded",
                        source="/models",
                    )
                )
            return out
        return [self._model_from_entry(m) for m in self.model_entries()]

    def _model_from_entry(self, m: dict[str, Any]) -> ModelInfo:
        meta = dict_field(m, "meta")
        name = str(m["id"])
        return ModelInfo(
            name=name,
            size_bytes=int_field(meta, "size"),
            n_params=int_field(meta, "n_params"),
            context_tokens=int_field(meta, "n_ctx", min=1) or int_field(meta, "n_ctx_train", min=1),
            quantization=quant_from_name(name),
            loaded=True,
            source="/v1/models meta",
            vocab_size=int_field(meta, "n_vocab", min=1),
        )

    def model_info(self, model: str | None) -> ModelInfo | None:
        entry: dict[str, Any] | None = None
        for m in self.model_entries():
            if model is None or m.get("id") == model:
                entry = m
                break
        props = self.props(model)
        n_ctx = int_field(dict_field(props, "default_generation_settings"), "n_ctx", min=1)
        model_path = str_field(props, "model_path")
        name = model or str_field(entry, "id") or str_field(props, "model_alias") or model_path
        if name is None:
            return None
        meta = dict_field(entry, "meta")
        quant = quant_from_name(model_path or "") or quant_from_name(name)
        return ModelInfo(
            name=name,
            size_bytes=int_field(meta, "size"),
            n_params=int_field(meta, "n_params"),
            context_tokens=n_ctx or int_field(meta, "n_ctx_train", min=1),
            quantization=quant,
            loaded=bool(entry) if self.is_router() else True,
            source="/props, /v1/models meta",
            model_path=model_path,
            notes=self.notes_text(),
            vocab_size=int_field(meta, "n_vocab", min=1),
        )

    # ---- tokenizer ---------------------------------------------------------------------------
    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        body: dict[str, Any] = {"content": text, "add_special": True}
        if model and self.is_router():
            body["model"] = model
        return token_ids(as_dict(self.post_json("/tokenize", body, timeout_s=60.0)).get("tokens"))

    # ---- switching (router mode) -----------------------------------------------------------
    @staticmethod
    def _state(m: dict[str, Any]) -> str | None:
        return str_field(dict_field(m, "status"), "value")

    def _status(self, model: str) -> dict[str, Any]:
        models = self._router_models()
        for m in models:
            if m.get("id") == model:
                return dict_field(m, "status")
        raise ServerError(
            f"{self.url}: model {model!r} is not served here (GET /models lists {[m['id'] for m in models]})"
        )

    def ensure_loaded(self, model: str | None, timeout_s: float = 300.0) -> None:
        """Load `model` and unload the others, so nothing else shares memory or cores."""
        if not model or not self.is_router():
            return
        deadline = time.monotonic() + timeout_s
        busy = ("loaded", "loading", "sleeping")
        others = [m["id"] for m in self._router_models() if m["id"] != model and self._state(m) in busy]
        for other in others:
            try:
                self.post_json("/models/unload", {"model": other})
            except ServerError as exc:
                # It stopped between the listing and the request (a router ends an idle or
                # sleeping child itself): 400 "model is not running" is what was wanted.
                if "not running" not in str(exc):
                    raise
        while others:  # unloading is asynchronous; a load before it ends hits the model limit
            others = [m["id"] for m in self._router_models() if m["id"] in others and self._state(m) in busy]
            if time.monotonic() > deadline:
                raise ServerError(f"{self.url}: models {others} still loaded after {timeout_s:.0f} s")
            time.sleep(0.1)
        status = self._status(model)
        if str_field(status, "value") not in ("loaded", "loading"):
            try:
                self.http.post_json("/models/load", {"model": model}, timeout_s)
            except ServerError as exc:
                # Another client (a /metrics?model= scrape autoloads) may have started it first.
                if "already" not in str(exc):
                    raise
        while True:
            status = self._status(model)
            if str_field(status, "value") == "loaded":
                break
            if status.get("failed"):
                code = int_field(status, "exit_code", min=-(2**31), max=2**31)
                raise ServerError(f"{self.url}: model {model!r} failed to load (exit code {code})")
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

    def erase_slot(self, id_slot: int) -> int | None:
        """`POST /slots/{id}?action=erase`: empty one slot's prompt cache; the cells it held
        (`n_erased`). Builds up to 0.3.36 at least answer 501 unless started with
        `--slot-save-path` (every /slots action needs it): ServerError then, with that answer."""
        return int_field(self.post_json(f"/slots/{id_slot}?action=erase", {}), "n_erased", max=MAX_TOKENS)

    # ---- streaming ---------------------------------------------------------------------------
    def payload(self, req: StreamRequest) -> dict[str, Any]:
        p = super().payload(req)
        p["cache_prompt"] = req.reuse_prefix
        if req.reuse_prefix:
            # One slot for the cache fill and the measured requests: with several slots (-np) a
            # request whose common prefix is under --slot-prompt-similarity (0.1) of its prompt
            # goes to the least recently used slot, i.e. not the one the fill just used.
            p["id_slot"] = DEPTH_SLOT
        p["timings_per_token"] = False
        return p

    def stream(self, req: StreamRequest) -> StreamResult:
        res = super().stream(req)
        cache_n = as_int(res.server_timings.get("cache_n"), max=MAX_TOKENS)
        if cache_n is not None and (res.cached_tokens is None or cache_n > res.cached_tokens):
            res.cached_tokens = cache_n
        return res
