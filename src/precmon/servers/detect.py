"""Which server is at a URL, and the adapter for it.

Detection probes distinctive endpoints, cheapest and most specific first; `--server KIND`
skips it. Adapters register themselves in `ADAPTERS` by kind.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from precmon.servers.base import ServerError
from precmon.servers.llamacpp import LlamaCppServer
from precmon.servers.openai import OpenAIServer, describe_http_error

ADAPTERS: dict[str, type[OpenAIServer]] = {
    "openai": OpenAIServer,
    "llamacpp": LlamaCppServer,
}

USUAL_PORTS = {8000: "vllm", 8080: "llamacpp", 11434: "ollama", 30000: "sglang", 1234: "lmstudio", 3000: "tgi"}

# (path, predicate on (status, json-or-None), kind); first match wins.
Probe = tuple[str, Callable[[int, object], bool], str]


def _is_llamacpp(status: int, body: object) -> bool:
    return status == 200 and isinstance(body, dict) and (
        "build_info" in body or "default_generation_settings" in body or "role" in body)


PROBES: list[Probe] = [
    ("/props", _is_llamacpp, "llamacpp"),
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


def make_server(url: str, kind: str = "auto", api_key: str | None = None,
                timeout_s: float = 300.0) -> OpenAIServer:
    """An adapter for the server at `url`; `kind="auto"` detects it."""
    if kind == "auto":
        kind = detect_kind(url)
    try:
        cls = ADAPTERS[kind]
    except KeyError as exc:
        raise ServerError(f"unknown server kind {kind!r} (known: {', '.join(sorted(ADAPTERS))})") from exc
    return cls(url, api_key=api_key, timeout_s=timeout_s)
