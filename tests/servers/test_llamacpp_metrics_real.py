"""Passive metrics and discovery against a real llama-server (router mode, --metrics)."""

from __future__ import annotations

import pytest

from precmon.servers.base import StreamRequest
from precmon.servers.detect import discover_servers, make_server
from precmon.servers.watch.metrics import MetricsPoller

pytestmark = pytest.mark.integration


def test_router_metrics_per_model_and_discovery(router_server):
    server = make_server(router_server.url)
    server.ensure_loaded("tiny-Q8_0")
    poller = MetricsPoller(router_server.url, model="tiny-Q8_0")
    assert poller.poll() is None
    res = server.stream(StreamRequest(prompt="[abc] hello world " * 8, max_tokens=64, model="tiny-Q8_0"))
    r = poller.poll()
    poller.close()
    assert r is not None and r.kind == "llamacpp"
    assert r.generation_tok_s and r.generation_tok_s > 0
    # tokens ÷ time spent generating them: the server's own decode rate for that request
    assert r.decode_busy_tok_s == pytest.approx(res.server_timings["predicted_per_second"], rel=0.15)
    found = {e["url"]: e for e in discover_servers([router_server.url], timeout_s=2.0)}
    entry = found[router_server.url]
    assert entry["kind"] == "llamacpp" and entry["healthy"] is True
    assert {"tiny-F16", "tiny-Q8_0", "tiny-Q4_K_M"} <= set(entry["models"])
    server.close()
