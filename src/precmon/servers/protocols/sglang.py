"""SGLang: OpenAI streaming, precision identity from `/get_server_info`, cache salting.

`/get_server_info` returns the server's launch arguments: `dtype` ("auto", "bfloat16", ...),
`quantization` ("fp8", "awq", None), `kv_cache_dtype`, `context_length` (None when taken from
the model config; `/v1/models` `max_model_len` then has it) and `version`. Requests carry
`ignore_eos` + `min_tokens` for a fixed output length and `cache_salt` (the prompt's nonce) so
RadixAttention's prefix cache cannot serve our prompt; `--enable-cache-report` adds
`usage.prompt_tokens_details.cached_tokens`, which we read when present. `/tokenize` exists in
newer releases only; without it prompt sizes are estimated by the measurement layer.
Live figures come from `/metrics` (`--enable-metrics`) through `precmon.servers.watch.metrics`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from precmon.servers.base import ModelInfo, ServerError
from precmon.servers.protocols.openai import OpenAIServer
from precmon.servers.wire.fields import as_dict, int_field, str_field, token_ids
from precmon.servers.wire.http import http_error


class SGLangServer(OpenAIServer):
    kind: str = "sglang"
    health_path: ClassVar[str] = "/health"
    probe_path: ClassVar[str | None] = "/get_server_info"
    sends_min_tokens: ClassVar[bool] = True
    sends_cache_salt: ClassVar[bool] = True

    def __init__(self, url: str, api_key: str | None = None, timeout_s: float = 300.0) -> None:
        super().__init__(url, api_key, timeout_s)
        self._info: dict[str, Any] | None = None
        self._has_tokenize: bool | None = None

    @staticmethod
    def recognises(status: int, body: object) -> bool:
        return (
            status == 200
            and isinstance(body, dict)
            and ("model_path" in body and ("tp_size" in body or "dtype" in body or "mem_fraction_static" in body))
        )

    def server_info(self) -> dict[str, Any]:
        """`/get_server_info` (optional: without it, precision and version are n/a and noted)."""
        if self._info is None:
            self._info = as_dict(self.optional_json("/get_server_info", "dtype, quantization, version"))
        return self._info

    def version(self) -> str | None:
        return str_field(self.server_info(), "version", limit=200)

    def _identity(self, name: str, ctx_fallback: int | None) -> ModelInfo:
        info = self.server_info()
        dtype = str_field(info, "dtype", limit=64)
        quant = str_field(info, "quantization", limit=64)
        kv = str_field(info, "kv_cache_dtype", limit=64)
        src = "/get_server_info"
        if kv and kv != "auto":
            src += f" (kv_cache_dtype {kv})"
        return ModelInfo(
            name=name,
            context_tokens=int_field(info, "context_length", min=1) or ctx_fallback,
            quantization=quant,
            dtype=dtype if dtype != "auto" else None,
            loaded=True,
            source=src,
            notes=self.notes_text(),
        )

    def list_models(self) -> list[ModelInfo]:
        try:
            data = self.model_entries()
        except ServerError as exc:
            self.note(f"/v1/models unavailable ({exc}): model list from /get_server_info")
            data = []
        if not data:
            info = self.server_info()
            path = str_field(info, "served_model_name") or str_field(info, "model_path")
            return [self._identity(path, None)] if path else []
        return [self._identity(str(m["id"]), int_field(m, "max_model_len", min=1)) for m in data]

    def tokenize(self, text: str, model: str | None = None) -> list[int] | None:
        if self._has_tokenize is False:
            return None
        body: dict[str, Any] = {"prompt": text, "add_special_tokens": True}
        if model:
            body["model"] = model
        r = self.http.request("POST", "/tokenize", self.cap(60.0), body)
        if r.status in (404, 405):
            self._has_tokenize = False
            return None
        if r.status != 200:
            raise http_error(r.status, self.url + "/tokenize", r.body)
        self._has_tokenize = True
        try:
            return token_ids(as_dict(r.json()).get("tokens"))
        except ValueError:
            return None
