"""vLLM's per-request truth from /metrics deltas: every branch of when it applies and when it does not.

The fake (tests/fakes/wire_servers.py) updates vLLM's histograms and counters once per finished
request; these tests make it count none, two, or lack a histogram, and check that the run then
carries no figure but says why (`server_timings["source"]`), so a variant can count its runs
with server truth instead of silently having none.
"""

from __future__ import annotations

import pytest

from precmon.servers.base import StreamRequest
from precmon.servers.protocols import vllm
from precmon.servers.protocols.vllm import VLLMServer, finished_between, request_timings
from precmon.servers.watch.metrics import snapshot_from_text
from tests.fakes.wire_servers import Hist, WireBehaviour, WireServer
from tests.servers.truth import truth_decode_tok_s, words_prompt


class NoE2E(WireBehaviour):
    """A vLLM whose /metrics lacks the e2e histogram (the one that counts finished requests)."""

    def metrics_text(self) -> str:
        return "\n".join(ln for ln in super().metrics_text().splitlines() if "e2e_request" not in ln) + "\n"


def _stream(b: WireBehaviour, tokens: int = 8, in_flight: int = 0):
    with WireServer(b) as srv:
        s = VLLMServer(srv.url)
        s._in_flight = in_flight  # other streams of a concurrency run still open
        res = s.stream(StreamRequest(prompt=words_prompt(20), max_tokens=tokens, nonce="n"))
        s.close()
    return res


def test_one_request_gives_ttft_itl_and_cache_figures_on_the_clients_basis():
    b = WireBehaviour(kind="vllm", itl_s=0.003, prefill_s_per_token=0.0005)
    res = _stream(b, tokens=30)
    t, st = b.log[-1], res.server_timings
    assert st["source"] == "vllm /metrics deltas (one request)"
    assert st["ttft_ms"] == pytest.approx((t["t_first"] - t["t_recv"]) * 1000, rel=1e-6)
    assert st["itl_ms_mean"] == pytest.approx((t["t_last"] - t["t_first"]) / 29 * 1000, rel=1e-6)
    assert st["predicted_per_second"] == pytest.approx(truth_decode_tok_s(t), rel=1e-6)
    assert (st["prefix_cache_hit_tokens"], st["prefix_cache_query_tokens"]) == (0, 20)
    assert 0 <= st["metrics_wait_ms"] < 1000 and st["metrics_scrapes"] == 1  # counted before [DONE]


def test_a_request_never_counted_says_so_after_the_bounded_wait(monkeypatch):
    monkeypatch.setattr(vllm, "COUNT_WAIT_S", 0.1)
    b = WireBehaviour(kind="vllm", itl_s=0.0)
    b.record = lambda truth: None  # type: ignore[method-assign]  # delta count 0
    res = _stream(b)
    assert res.server_timings["source"] == "n/a: vLLM had not counted the request 100 ms after its end"
    assert "ttft_ms" not in res.server_timings and "prefix_cache_hit_tokens" not in res.server_timings
    assert res.error is None


def test_two_requests_finishing_meanwhile_are_not_one_requests_truth():
    b = WireBehaviour(kind="vllm", itl_s=0.0)
    real = b.record
    b.record = lambda truth: (real(truth), real(truth))  # type: ignore[method-assign]  # delta count 2
    res = _stream(b)
    assert res.server_timings["source"] == "n/a: 2 requests finished on the server during this one (other traffic)"
    assert "decode_ms" not in res.server_timings


def test_a_missing_e2e_histogram_is_named():
    res = _stream(NoE2E(kind="vllm", itl_s=0.0))
    assert res.server_timings["source"] == "n/a: /metrics has no vllm:e2e_request_latency_seconds histogram"


def test_requests_of_ours_in_flight_are_named():
    res = _stream(WireBehaviour(kind="vllm", itl_s=0.0), in_flight=1)
    assert res.server_timings["source"].startswith("n/a: other requests of precmon's were in flight")


def test_a_cache_hit_only_metrics_see_makes_the_run_a_cache_hit():
    b = WireBehaviour(kind="vllm", itl_s=0.0)
    real = b.record
    b.record = lambda truth: real(truth | {"cached": 16})  # type: ignore[method-assign]
    res = _stream(b)
    assert res.server_timings["prefix_cache_hit_tokens"] == 16 and res.cached_tokens == 16


def _snap(hists: dict[str, Hist], counters: str = "") -> object:
    text = "\n".join(h.text(name, 'engine="0",model_name="m"') for name, h in hists.items()) + "\n" + counters
    return snapshot_from_text(text, kind="vllm")


def test_request_timings_leave_out_what_does_not_have_one_observation():
    before_h = {"vllm:e2e_request_latency_seconds": Hist(), "vllm:time_to_first_token_seconds": Hist()}
    after_e2e, after_ttft, after_itl = Hist(), Hist(), Hist()
    after_e2e.observe(0.5)
    after_ttft.observe(0.02)
    after_ttft.observe(0.03)  # two TTFT observations: not one request's
    for _ in range(4):
        after_itl.observe(0.01)
    after = {
        "vllm:e2e_request_latency_seconds": after_e2e,
        "vllm:time_to_first_token_seconds": after_ttft,
        "vllm:inter_token_latency_seconds": after_itl,
    }
    hits = 'vllm:prefix_cache_hits_total{engine="0",model_name="m"} '
    b, a = _snap(before_h, hits + "5\n"), _snap(after, hits + "3\n")  # a counter that went back
    assert finished_between(b, a) == 1
    out = request_timings(b, a, 5, 10)
    assert out == {"e2e_ms": 500.0, "itl_ms_mean": pytest.approx(10.0)}
    assert finished_between(b, _snap({})) is None
