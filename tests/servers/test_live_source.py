"""`live_rate.source_for`, the one map from a server kind to its live source, and `ServerSnapshot`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from precmon.servers.watch.live_rate import LiveRate, live_kind, source_for
from precmon.servers.watch.metrics import MetricsSnapshot, snapshot_from_text
from precmon.servers.watch.snapshot import ServerFacts, read_facts, take_snapshot
from tests.fakes.wire_servers import Scripted, ScriptedServer


@dataclass
class Scrapes:
    """The two fields of a `MetricsPoller` a live source reads, without a server."""

    previous: MetricsSnapshot | None = None
    last: MetricsSnapshot | None = None
    kind: str | None = None


def _scrapes(a: str, b: str) -> Any:
    return Scrapes(snapshot_from_text(a, taken_s=10.0), snapshot_from_text(b, taken_s=12.0))


def test_metrics_names_win_for_vllm_and_sglang_else_the_adapters_kind():
    assert live_kind("openai", "vllm") == "vllm"  # a vLLM watched as --server openai
    assert live_kind("openai", "sglang") == "sglang"
    assert live_kind("llamacpp", "llamacpp") == "llamacpp"
    assert live_kind("tgi", None) == "tgi"
    assert live_kind(None, "llamacpp") == "llamacpp"  # down (no facts): what /metrics looked like
    assert live_kind(None, None) is None


def test_vllm_reads_its_per_step_counter_between_two_scrapes():
    src = source_for("vllm", "http://127.0.0.1:1")
    scrapes = _scrapes("vllm:generation_tokens_total 100\n", "vllm:generation_tokens_total 300\n")
    rate = src.read(scrapes, True, 0)
    assert rate is not None and rate.tok_s == pytest.approx(100.0) and rate.source == "vLLM /metrics, per step"
    failed = src.read(scrapes, False, 1)
    assert failed is not None and failed.tok_s is None and failed.error == "the last /metrics scrape failed"
    assert src.read(Scrapes(last=scrapes.last), True, 2) is None  # one scrape: no rate yet


@pytest.mark.parametrize("kind", ["ollama", "tgi", "lmstudio", "openai"])
def test_kinds_without_a_live_counter_say_why_every_poll(kind):
    rate = source_for(kind, "http://127.0.0.1:1").read(Scrapes(), True, 0)
    assert rate is not None and rate.tok_s is None and rate.source == "none"
    assert rate.unavailable and rate.unavailable.startswith("no live token source: ")


def test_llamacpp_reads_slots_and_asks_an_off_slots_only_every_few_polls():
    busy = [{"id": 0, "id_task": 7, "is_processing": True, "next_token": [{"n_decoded": 12}]}]
    with ScriptedServer({"/slots": Scripted(body=busy)}) as srv:
        src = source_for("llamacpp", srv.url)
        try:
            assert src.read(Scrapes(), False, 0) is None  # the first read: a rate needs two
            rate = src.read(Scrapes(), False, 1)
            assert rate is not None and rate.tok_s == 0.0 and rate.generating == 1
        finally:
            src.close()
    with ScriptedServer({}) as srv:  # llama-server --no-slots: /slots is a 404
        src = source_for("llamacpp", srv.url, retry_every=4)
        try:
            off = src.read(Scrapes(), False, 0)
            assert off is not None and off.unavailable and "HTTP 404" in off.unavailable
            assert [src.read(Scrapes(), False, t) for t in (1, 2, 3)] == [None] * 3
            assert sum(p == "/slots" for _, p, *_ in srv.requests) == 1  # not asked again until tick 4
        finally:
            src.close()


def test_a_snapshot_counts_running_from_the_live_source_else_the_kinds_gauge():
    facts = ServerFacts("vllm", "0.9", "m", "AWQ", ("m",))
    scrapes = _scrapes("vllm:num_requests_running 2\n", "vllm:num_requests_running 3\n")
    snap = take_snapshot("http://h:8000", True, facts, live=LiveRate(50.0, "x", 1.0, 5), scrape=scrapes, fresh=True)
    assert (snap.requests_running, snap.tok_s, snap.live_source, snap.facts) == (5.0, 50.0, "x", facts)
    snap = take_snapshot("http://h:8000", True, facts, live=LiveRate(None, "none"), scrape=scrapes, fresh=True)
    assert snap.requests_running == 3.0 and snap.tok_s is None
    stale = take_snapshot("http://h:8000", True, facts, scrape=scrapes, fresh=False)
    assert stale.requests_running is None and stale.taken_s > 0  # a failed scrape says nothing


def test_read_facts_keeps_what_answered():
    class Adapter:
        kind = "llamacpp"

        def version(self) -> str:
            return "b1"

        def list_models(self) -> list[Any]:
            from precmon.servers.base import ServerError

            raise ServerError("no /v1/models")

    assert read_facts(Adapter(), None) == ServerFacts("llamacpp", "b1")
