"""Detection by distinctive endpoints, --server override, and doctor's discover_servers."""

from __future__ import annotations

import pytest

from precmon.servers.base import ServerError
from precmon.servers.detect import ADAPTERS, detect_kind, discover_servers, make_server
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.fakes.wire_servers import WireBehaviour, WireServer


@pytest.mark.parametrize("kind", ["vllm", "sglang", "ollama", "lmstudio", "tgi"])
def test_detects_each_kind(kind):
    with WireServer(WireBehaviour(kind=kind)) as srv:
        assert detect_kind(srv.url) == kind
        server = make_server(srv.url)
        assert type(server) is ADAPTERS[kind] and server.kind == kind
        server.close()


def test_llamacpp_and_override():
    with TimedServer(Behaviour()) as srv:
        assert detect_kind(srv.url) == "llamacpp"
        assert make_server(srv.url, kind="openai").kind == "openai"
        with pytest.raises(ServerError, match="unknown server kind"):
            make_server(srv.url, kind="nope")


def test_every_spec_kind_is_registered():
    assert set(ADAPTERS) == {"openai", "llamacpp", "vllm", "ollama", "sglang", "lmstudio", "tgi"}


def test_discover_servers_lists_given_urls_and_reasons():
    with (
        WireServer(WireBehaviour(kind="ollama", loaded={"fake-model"})) as a,
        WireServer(WireBehaviour(kind="vllm")) as b,
    ):
        dead = "http://127.0.0.1:9"
        found = {e["url"]: e for e in discover_servers([a.url, b.url + "/", dead], timeout_s=0.5)}
    assert found[a.url] == {"url": a.url, "kind": "ollama", "models": ["fake-model", "other-model"], "healthy": True}
    assert found[b.url]["kind"] == "vllm" and found[b.url]["models"] == ["fake-model"]
    assert found[dead]["healthy"] is False and found[dead]["kind"] is None and "cannot connect" in found[dead]["reason"]
