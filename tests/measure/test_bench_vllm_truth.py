"""A bench against a vLLM-shaped fake that serves /metrics: vLLM's own truth on every run.

The fake (tests/fakes/wire_servers.py) keeps vLLM's histograms and prefix-cache counters; the
bench must carry the server's TTFT, decode and ITL per run and as medians, prove from /metrics
that no measured run hit the prefix cache, say when that check is blind, make a run with
hits invalid, and flag a stream released in bursts (tests/fakes/burst_proxy.py) as
`client-server-gap:` on decode and TTFT.
"""

from __future__ import annotations

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.servers.protocols.vllm import VLLMServer
from tests.fakes.burst_proxy import BurstProxy
from tests.fakes.wire_servers import WireBehaviour, WireServer

SETTINGS = BenchSettings(
    output_tokens=32, decode_prompt_tokens=16, prefill_tokens=[64], ttft_tokens=64, repeats=2, warmup=1, idle_s=0.0
)
MEASURED = ("decode", "prefill", "ttft")


def _bench(url: str):
    server = VLLMServer(url)
    try:
        return Bench(server, SETTINGS).run()
    finally:
        server.close()


HOST_DEPENDENT = ("host-busy:", "noisy:")  # warnings about this machine, not about the server


def _vllm(**knobs) -> WireBehaviour:
    """A vLLM-shaped fake: no llama.cpp `timings` in its stream, only /metrics."""
    return WireBehaviour(kind="vllm", timings=False, **knobs)


def test_every_run_has_vllms_truth_and_the_cache_is_checked_from_metrics():
    b = _vllm(itl_s=0.003, prefill_s_per_token=0.0002, prompt_tokens_details=False)
    with WireServer(b) as srv:
        r = _bench(srv.url)
    assert r.status == "ok", r.errors
    measured = [x for x in r.runs if x.phase in MEASURED]
    assert len(measured) == 6
    assert all(x.server_timings["source"] == "vllm /metrics deltas (one request)" for x in measured)
    assert all(x.server_timings["prefix_cache_hit_tokens"] == 0 for x in measured)
    m = r.metrics
    ttft_runs = [x for x in measured if x.phase == "ttft"]
    expect = sorted(x.server_timings["ttft_ms"] / 1000 for x in ttft_runs)
    assert m["server_ttft_s"]["64"] == pytest.approx(sum(expect) / 2, abs=1e-4)  # median of two
    assert m["server_itl_ms_mean"] == pytest.approx(3.0, rel=0.5)
    assert m["server_decode_tok_s"] > 0
    v = r.validity
    assert v["server_timings"] == {"measured_runs": 6, "runs_with_server_timings": 6}
    assert v["prefix_cache"]["checked"].startswith("checked from /metrics")
    assert v["prefix_cache"]["hit_tokens"] == 0 and v["prefix_cache"]["query_tokens"] > 0
    assert not [e for e in r.errors if e.startswith(("prefix-cache", "server timings"))]
    assert "server_ttft_ms_median" in v["client_server"]["ttft"]["ttft"]  # TTFT against vLLM's own TTFT
    # no warning about the server's truth; the shared test box may still be busy or noisy (CI saw
    # 0.13 cores of hypervisor steal and a 10% TTFT spread over two runs: correct warnings, not this test's)
    assert not [w for w in r.warnings if not w.startswith(HOST_DEPENDENT)], r.warnings


def test_a_hit_only_metrics_see_makes_that_run_invalid_not_silent():
    b = _vllm(itl_s=0.0, prompt_tokens_details=False)
    real, seen = b.record, []

    def record(truth):
        seen.append(truth)
        real(truth | ({"cached": 48} if len(seen) == 4 else {}))  # the first prefill run

    b.record = record  # type: ignore[method-assign]
    with WireServer(b) as srv:
        r = _bench(srv.url)
    bad = [x for x in r.runs if not x.ok]
    assert [x.phase for x in bad] == ["prefill"] and bad[0].cached_tokens == 48
    assert r.status == "partial"
    assert "prefill run excluded: prompt cache hit: 48 prompt tokens served from cache" in r.errors
    pc = r.validity["prefix_cache"]
    assert (pc["hit_tokens"], pc["runs_with_hits"], pc["measured_runs"]) == (48, 1, 6)


def test_without_metrics_or_cached_tokens_the_bench_says_the_cache_check_is_blind():
    b = _vllm(itl_s=0.0, metrics=False, prompt_tokens_details=False)
    with WireServer(b) as srv:
        r = _bench(srv.url)
    notes = [e for e in r.notes if e.startswith("prefix-cache check blind")]
    assert notes == [
        "prefix-cache check blind on 6 of 6 measured runs: the server reported no cached_tokens and "
        "/metrics gave no per-request counts (vLLM reports cached_tokens only with "
        "--enable-prompt-tokens-details): a run served from its prefix cache would pass as a fast one"
    ]
    assert r.validity["prefix_cache"]["checked"].startswith("blind:")
    assert (
        "server timings: the server's own figures on 0 of 6 measured runs; without them: "
        "/metrics gave no vllm: metrics (HTTP 404) (6×)"
    ) in r.notes
    assert r.validity["client_server"]["reason"].endswith("(n/a: /metrics gave no vllm: metrics (HTTP 404))")


def test_a_bursting_proxy_in_front_of_vllm_is_a_client_server_gap():
    b = _vllm(itl_s=0.004, prefill_s_per_token=0.0001)
    with WireServer(b) as srv:
        proxy = BurstProxy(int(srv.url.rsplit(":", 1)[1]))
        try:
            r = _bench(proxy.url)
        finally:
            proxy.close()
    assert r.status == "ok", r.errors
    v = r.validity
    assert v["server_timings"]["runs_with_server_timings"] == 6  # the deltas still apply behind a proxy
    gaps = [w for w in r.warnings if w.startswith("client-server-gap:")]
    assert len(gaps) == 2, r.warnings
    assert "client decode differs" in gaps[0] and "the server's figure stands" in gaps[0]
    assert "exceeds the server's own TTFT" in gaps[1] and "decode runs" in gaps[1]
    assert r.metrics["decode_tok_s"] > 1.5 * r.metrics["server_decode_tok_s"]  # +20% is the threshold
