"""SGLang: OpenAI streaming, precision identity from `/get_server_info`, cache salting.

`/get_server_info` returns the server's launch arguments: `dtype` ("auto", "bfloat16", ...),
`quantization` ("fp8", "awq", None), `kv_cache_dtype`, `context_length` (None when taken from
the model config; `/v1/models` `max_model_len` then has it) and `version`. Requests carry
`ignore_eos` + `min_tokens` for a fixed output length and `cache_salt` (the prompt's nonce) so
RadixAttention's prefix cache cannot serve our prompt; `--enable-cache-report` adds
`usage.prompt_tokens_details.cached_tokens`, which we read when present. `/tokenize` exists in
newer releases only; without it prompt sizes are estimated by the measurement layer.
Live figures come from `/metrics` (`--enable-metrics`) through `precmon.servers.metrics`.
"""

from __future__ import annotations

from typing import Any

from precmon.servers.base import ModelInfo, ServerError
from precmon.servers.openai import OpenAIServer


class SGLangServer(OpenAIServer):
    kind = "sglang"
    health_path = "/health"
    sends_min_tokens = True
    sends_cache_salt = True

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._info: dict[str, Any] | None = None
        self._has_tokenize: bool | None = None

    def server_info(self) -> dict[str, Any]:
        if self._info is None:
            info = self._get_json("/get_server_info")
            self._info = info if isinstance(info, dict) else {}
        return self._info

    def version(self) -> str | None:
        v = self.server_info().get("version")
        return str(v) if v else None

    def _identity(self, name: str, ctx_fallback: int | None) -> ModelInfo:
        info = self.server_info()
        dtype = info.get("dtype")
        quant = info.get("quantization")
        kv = info.get("kv_cache_dtype")
        src = "/get_server_info"
        if kv and kv != "auto":
            src += f" (kv_cache_dtype {kv})"
        return ModelInfo(
            name=name,
            context_tokens=info.get("context_length") or ctx_fallback,
            quantization=str(quant) if quant else None,
            dtype=str(dtype) if dtype and dtype != "auto" else None,
            loaded=True,
            source=src,
        )

    def list_models(self) -> list[ModelInfo]:
        try:
            data = self._get_json("/v1/models").get("data") or []
        except ServerError:
            data = []
        if not data:
            path = self.server_info().get("served_model_name") or self.server_info().get("model_path")
            return [self._identity(str(path), None)] if path else []
        return [self._identity(m["id"], m.get("max_model_len")) for m in data if isinstance(m, dict) and m.get("id")]

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        if self._has_tokenize is False:
            return None
        body: dict[str, Any] = {"prompt": text, "add_special_tokens": True}
        if model:
            body["model"] = model
        r = self._request("POST", "/tokenize", 60.0, json=body)
        if r.status_code in (404, 405):
            self._has_tokenize = False
            return None
        if r.status_code != 200:
            raise ServerError(f"HTTP {r.status_code} from {self.url}/tokenize: {r.text[:200].strip()}")
        self._has_tokenize = True
        toks = r.json().get("tokens")
        return list(toks) if isinstance(toks, list) else None
