"""A router model that stops between precmon's listing and its unload (llama-server answers 400
"model is not running") is what was wanted, not a failed variant: CI 2026-12-05 failed a router
sweep's F16 on it (`tests/tui/test_server_view_router.py`)."""

from __future__ import annotations

from typing import Any

import pytest

from precmon.servers.base import ServerError
from precmon.servers.protocols.llamacpp import LlamaCppServer

GONE = 'HTTP 400 from http://127.0.0.1:9/models/unload: {"error":{"code":400,"message":"model is not running"}}'


def _router(monkeypatch, unload_error: str) -> tuple[LlamaCppServer, list[str]]:
    srv = LlamaCppServer("http://127.0.0.1:9")
    calls: list[str] = []
    listed = iter(
        [
            [{"id": "a", "status": {"value": "loaded"}}, {"id": "b", "status": {"value": "unloaded"}}],  # before
            [{"id": "a", "status": {"value": "unloaded"}}, {"id": "b", "status": {"value": "unloaded"}}],  # a gone
        ]
    )
    state: dict[str, Any] = {"b": "unloaded"}

    def models() -> list[dict[str, Any]]:
        try:
            return next(listed)
        except StopIteration:
            return [{"id": "a", "status": {"value": "unloaded"}}, {"id": "b", "status": {"value": state["b"]}}]

    def unload(path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        calls.append(f"{path} {payload['model']}")
        raise ServerError(unload_error)

    def load(path: str, payload: dict[str, Any], timeout_s: float = 30.0) -> object:
        calls.append(f"{path} {payload['model']}")
        state["b"] = "loaded"
        return {}

    monkeypatch.setattr(srv, "is_router", lambda: True)
    monkeypatch.setattr(srv, "_router_models", models)
    monkeypatch.setattr(srv, "post_json", unload)
    monkeypatch.setattr(srv.http, "post_json", load)
    monkeypatch.setattr(srv, "tokenize", lambda text, model=None: [1])
    return srv, calls


def test_an_unload_of_a_model_that_already_stopped_is_done(monkeypatch):
    srv, calls = _router(monkeypatch, GONE)
    srv.ensure_loaded("b", timeout_s=5)
    assert calls == ["/models/unload a", "/models/load b"]


def test_any_other_unload_error_still_ends_the_switch(monkeypatch):
    srv, _ = _router(monkeypatch, "HTTP 500 from http://127.0.0.1:9/models/unload: boom")
    with pytest.raises(ServerError, match="boom"):
        srv.ensure_loaded("b", timeout_s=5)
