"""Which server is at a URL, and the adapter for it.

Detection probes each kind's distinctive endpoint in the registry's order
(`precmon.servers.kinds.DETECTION_ORDER`: most specific first, a generic `{"version": ...}` at
`/version` last); `--server KIND` skips it. A kind that names a `confirm_path` (Ollama: its
model list) is chosen only when that answers too, so a proxy that answers one Ollama endpoint
but not the API a bench uses falls through to the next kind, and finally to plain OpenAI: the
API that works end to end wins.

The whole detection has ONE deadline (`timeout_s`, at most `DETECT_S`): a server that accepts
connections and never answers costs that, not one timeout per probe. `discover_servers` looks at
the usual local ports (and any given URLs) in parallel, for `precmon doctor` and the TUI.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from precmon.servers.adapter import Adapter
from precmon.servers.base import Server, ServerError
from precmon.servers.kinds import DETECTION_ORDER, FALLBACK, KINDS
from precmon.servers.kinds import USUAL_PORTS as _KIND_PORTS
from precmon.servers.wire.http import HttpClient, describe_http_error
from precmon.untrusted import redact_url

ADAPTERS: dict[str, type[Adapter]] = {k.name: k.adapter() for k in KINDS}
USUAL_PORTS: dict[int, str] = dict(_KIND_PORTS)  # a module global: tests point discovery elsewhere
DETECT_S = 15.0  # the most detection waits in all, whatever --timeout says
PROBE_S = 5.0  # the most one probe waits


def _probe(client: HttpClient, path: str, deadline: float) -> tuple[int, object] | None:
    """(status, parsed JSON or None) of GET `path`; None when no answer came (timeout, reset)."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        return None
    try:
        reply = client.get(path, min(PROBE_S, remaining))
    except ServerError as exc:
        if isinstance(exc.__cause__, (httpx.ConnectError, httpx.UnsupportedProtocol)):
            raise  # nothing to wait for: refused, or not an http(s) URL
        return None
    try:
        body: object = reply.json()
    except ValueError:
        body = None
    return reply.status, body


def detect_kind(url: str, timeout_s: float = 5.0, api_key: str | None = None) -> str:
    """Return the server kind at `url`, or raise ServerError if nothing answers within `timeout_s`."""
    url = url.rstrip("/")
    timeout_s = min(timeout_s, DETECT_S)
    client = HttpClient(url, api_key, timeout_s)
    deadline = time.monotonic() + timeout_s  # waiting for the server, not building the client
    reached = False
    try:
        for kind in DETECTION_ORDER:
            cls = ADAPTERS[kind.name]
            if cls.probe_path is None:
                continue
            got = _probe(client, cls.probe_path, deadline)
            if got is None:
                continue
            reached = True
            if not cls.recognises(*got):
                continue
            if cls.confirm_path is not None:
                confirm = _probe(client, cls.confirm_path, deadline)
                if confirm is None or not cls.confirms(*confirm):
                    continue  # looks like this kind, but its API does not work: try the others
            return kind.name
        if not reached and _probe(client, "/v1/models", deadline) is not None:
            reached = True
    finally:
        client.close()
    if not reached:
        raise ServerError(
            f"{redact_url(url)}: no answer within {timeout_s:g} s (detection; --timeout is a total deadline)"
        )
    return FALLBACK


def make_server(url: str, kind: str = "auto", api_key: str | None = None, timeout_s: float = 300.0) -> Server:
    """An adapter for the server at `url`; `kind="auto"` detects it (within `timeout_s`, at most DETECT_S)."""
    if kind == "auto":
        kind = detect_kind(url, timeout_s=timeout_s, api_key=api_key)
    try:
        cls = ADAPTERS[kind]
    except KeyError as exc:
        raise ServerError(f"unknown server kind {kind!r} (known: {', '.join(sorted(ADAPTERS))})") from exc
    return cls(url, api_key=api_key, timeout_s=timeout_s)


def _probe_one(url: str, timeout_s: float, given: bool) -> dict[str, Any] | None:
    shown = redact_url(url)
    try:
        kind = detect_kind(url, timeout_s=timeout_s)
    except ServerError as exc:
        if not given:
            return None
        return {"url": shown, "kind": None, "models": [], "healthy": False, "reason": str(exc)}
    entry: dict[str, Any] = {"url": shown, "kind": kind, "models": [], "healthy": False}
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
        something failed; usual ports with nothing listening are left out. URLs are credential-redacted.
    """
    candidates: dict[str, bool] = {f"http://{host}:{port}": False for port in USUAL_PORTS}
    for u in urls or ():
        candidates[u.rstrip("/")] = True
    with ThreadPoolExecutor(max_workers=min(16, len(candidates))) as pool:
        found = list(pool.map(lambda item: _probe_one(item[0], timeout_s, item[1]), candidates.items()))
    return [e for e in found if e is not None]


__all__ = ["ADAPTERS", "USUAL_PORTS", "describe_http_error", "detect_kind", "discover_servers", "make_server"]
