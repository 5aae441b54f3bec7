"""Which server is at a URL, and the adapter for it.

Detection probes distinctive endpoints, most specific first (a generic `{"version": ...}` at
`/version` last, since several servers could answer it); `--server KIND` skips it. Adapters are
registered in `ADAPTERS` by kind. `discover_servers` looks at the usual local ports (and any
given URLs) in parallel, for `precmon doctor`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from precmon.servers.base import ServerError
from precmon.servers.llamacpp import LlamaCppServer
from precmon.servers.lmstudio import LMStudioServer
from precmon.servers.ollama import OllamaServer
from precmon.servers.openai import OpenAIServer, describe_http_error
from precmon.servers.sglang import SGLangServer
from precmon.servers.tgi import TGIServer
from precmon.servers.vllm import VLLMServer

ADAPTERS: dict[str, type[OpenAIServer]] = {
    "openai": OpenAIServer,
    "llamacpp": LlamaCppServer,
    "vllm": VLLMServer,
    "ollama": OllamaServer,
    "sglang": SGLangServer,
    "lmstudio": LMStudioServer,
    "tgi": TGIServer,
}

USUAL_PORTS = {8000: "vllm", 8080: "llamacpp", 11434: "ollama", 30000: "sglang", 1234: "lmstudio", 3000: "tgi"}

# (path, predicate on (status, json-or-None), kind); first match wins.
Probe = tuple[str, Callable[[int, object], bool], str]


def _is_llamacpp(status: int, body: object) -> bool:
    return (
        status == 200
        and isinstance(body, dict)
        and ("build_info" in body or "default_generation_settings" in body or "role" in body)
    )


def _is_sglang(status: int, body: object) -> bool:
    return (
        status == 200
        and isinstance(body, dict)
        and ("model_path" in body and ("tp_size" in body or "dtype" in body or "mem_fraction_static" in body))
    )


def _is_ollama(status: int, body: object) -> bool:
    # {"version": "0.5.7"}; vLLM has no /api/version, so this path alone tells
    return status == 200 and isinstance(body, dict) and isinstance(body.get("version"), str)


def _is_lmstudio(status: int, body: object) -> bool:
    data = body.get("data") if isinstance(body, dict) else None
    return (
        status == 200
        and isinstance(data, list)
        and (not data or any(isinstance(m, dict) and ("state" in m or "compatibility_type" in m) for m in data))
    )


def _is_tgi(status: int, body: object) -> bool:
    return (
        status == 200
        and isinstance(body, dict)
        and "model_id" in body
        and ("model_dtype" in body or "max_total_tokens" in body)
    )


def _is_vllm(status: int, body: object) -> bool:
    return status == 200 and isinstance(body, dict) and isinstance(body.get("version"), str)


PROBES: list[Probe] = [
    ("/props", _is_llamacpp, "llamacpp"),
    ("/get_server_info", _is_sglang, "sglang"),
    ("/api/version", _is_ollama, "ollama"),
    ("/api/v0/models", _is_lmstudio, "lmstudio"),
    ("/info", _is_tgi, "tgi"),
    ("/version", _is_vllm, "vllm"),
]


def detect_kind(url: str, timeout_s: float = 5.0) -> str:
    """Return the server kind at `url`, or raise ServerError if nothing answers."""
    url = url.rstrip("/")
    reached = False
    last_exc: Exception | None = None
    with httpx.Client(base_url=url, timeout=timeout_s) as c:
        for path, pred, kind in PROBES:
            try:
                r = c.get(path)
            except httpx.HTTPError as exc:
                last_exc = exc
                if isinstance(exc, httpx.ConnectError):
                    break
                continue
            reached = True
            try:
                body: object = r.json()
            except ValueError:
                body = None
            if pred(r.status_code, body):
                return kind
        if not reached:
            try:
                c.get("/v1/models")
                reached = True
            except httpx.HTTPError as exc:
                last_exc = exc
    if not reached:
        raise ServerError(describe_http_error(url, last_exc or RuntimeError("no answer"), timeout_s))
    return "openai"


def make_server(url: str, kind: str = "auto", api_key: str | None = None, timeout_s: float = 300.0) -> OpenAIServer:
    """An adapter for the server at `url`; `kind="auto"` detects it."""
    if kind == "auto":
        kind = detect_kind(url)
    try:
        cls = ADAPTERS[kind]
    except KeyError as exc:
        raise ServerError(f"unknown server kind {kind!r} (known: {', '.join(sorted(ADAPTERS))})") from exc
    return cls(url, api_key=api_key, timeout_s=timeout_s)


def _probe_one(url: str, timeout_s: float, given: bool) -> dict[str, Any] | None:
    try:
        kind = detect_kind(url, timeout_s=timeout_s)
    except ServerError as exc:
        if not given:
            return None
        return {"url": url, "kind": None, "models": [], "healthy": False, "reason": str(exc)}
    entry: dict[str, Any] = {"url": url, "kind": kind, "models": [], "healthy": False}
    server = ADAPTERS[kind](url, timeout_s=max(timeout_s, 2.0))
    try:
        entry["healthy"] = bool(server.health())
        entry["models"] = [m.name for m in server.list_models()]
    except Exception as exc:  # a half-working server is still worth listing, with why
        entry["reason"] = str(exc) or type(exc).__name__
    finally:
        server.close()
    return entry


def discover_servers(
    urls: Iterable[str] | None = None, host: str = "127.0.0.1", timeout_s: float = 1.0
) -> list[dict[str, Any]]:
    """Servers on the usual local ports plus `urls`, probed in parallel, as doctor entries.

    Args:
        urls: extra base URLs (e.g. `--url`); these are listed even when nothing answers there.
        host: where to look for the usual ports.
        timeout_s: per-request timeout; nothing listening costs a refused connection only.

    Returns:
        `[{"url", "kind", "models": [names], "healthy": bool}]` (docs/design.md §3), plus `"reason"` when
        something failed; usual ports with nothing listening are left out.
    """
    candidates: dict[str, bool] = {f"http://{host}:{port}": False for port in USUAL_PORTS}
    for u in urls or ():
        candidates[u.rstrip("/")] = True
    with ThreadPoolExecutor(max_workers=min(16, len(candidates))) as pool:
        found = list(pool.map(lambda item: _probe_one(item[0], timeout_s, item[1]), candidates.items()))
    return [e for e in found if e is not None]
