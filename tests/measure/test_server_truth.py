"""vLLM's server truth in the validity checks, against literal figures (docs/design.md §4 "Trust").

TTFT against the server's own arrival → first token (`ttft_ms`), how many runs had the server's
figures, and the prefix-cache check: from /metrics, from usage, or blind.
"""

from __future__ import annotations

from precmon.core.schema import Run
from precmon.measure.trust.server_truth import prefix_cache, server_timings
from precmon.measure.trust.validity import TTFT_SAME_BASIS_RATIO, client_server_gap, run_gaps

NA_COUNT = "n/a: vLLM had not counted the request 1000 ms after its end"


def _vllm(phase: str = "decode", client_tok_s: float = 200.0, server_tok_s: float = 200.0, ttft_s: float = 0.03,
          ttft_ms: float = 20.0, **st: object) -> Run:  # fmt: skip
    timings = {"predicted_per_second": server_tok_s, "ttft_ms": ttft_ms, "prefix_cache_hit_tokens": 0} | st
    return Run(phase=phase, decode_tok_s=client_tok_s if phase == "decode" else None, ttft_s=ttft_s,
               output_tokens=64, cached_tokens=None, server_timings=timings)  # fmt: skip


def test_ttft_is_compared_with_the_servers_own_ttft_where_it_has_one():
    # a run with both: vLLM's ttft_ms is on the client's basis, prompt_ms would not be
    r = _vllm(ttft_s=0.03, ttft_ms=20.0, prompt_ms=5.0)
    assert run_gaps(r) == {"decode_gap": 0.0, "ttft_excess_ms": 10.0, "server_ttft_ms": 20.0}
    figures, warnings = client_server_gap([r, r])
    assert warnings == []
    assert figures["ttft"]["decode"] == {
        "ttft_excess_ms_median": 10.0,
        "server_ttft_ms_median": 20.0,
        "ttft_excess_ratio_allowed": TTFT_SAME_BASIS_RATIO,
    }


def test_same_basis_ttft_tolerance_is_50_ms_and_half_the_servers_ttft():
    # 60 ms beyond a 200 ms server TTFT: over 50 ms but under 50% of it
    assert client_server_gap([_vllm(phase="ttft", ttft_s=0.26, ttft_ms=200.0)])[1] == []
    # 110 ms beyond 200 ms: over both (against prompt_ms the 100% ratio would have let it pass)
    (w,) = client_server_gap([_vllm(phase="ttft", ttft_s=0.31, ttft_ms=200.0)])[1]
    assert w == (
        "client-server-gap: client TTFT exceeds the server's own TTFT (200.0 ms) by 110.0 ms "
        "(median of 1 ttft runs; allowed 50 ms and 50% for HTTP): the first chunk was held back, "
        "so the server's figure stands"
    )


def test_the_16609_tok_s_case_is_flagged_with_two_runs():
    # docs/testbed-vllm.md: fp16, two decode runs, one reached the client in one burst
    burst = _vllm(client_tok_s=33_013.0, server_tok_s=182.0, ttft_s=0.28, ttft_ms=14.0)
    fine = _vllm(client_tok_s=206.0, server_tok_s=206.8, ttft_s=0.028, ttft_ms=20.0)
    figures, (dec, ttft) = client_server_gap([burst, fine])
    assert dec.startswith("client-server-gap: client decode differs from the server's own timing by +")
    assert dec.endswith("chunks reached precmon in bursts, so the server's figure stands")
    assert ttft.startswith("client-server-gap: client TTFT exceeds the server's own TTFT (17.0 ms)")


def test_no_server_truth_says_why():
    r = Run(phase="decode", decode_tok_s=100.0, ttft_s=0.1, server_timings={"source": NA_COUNT})
    figures, warnings = client_server_gap([r])
    assert figures == {"reason": f"n/a: the server reported no timings of its own ({NA_COUNT})"}
    assert warnings == []


def test_server_timings_counts_the_runs_and_names_why_some_lack_them():
    lacking = Run(phase="prefill", ttft_s=0.1, output_tokens=1, server_timings={"source": NA_COUNT})
    two = Run(phase="decode", decode_tok_s=9.0, output_tokens=64, server_timings={"source": "n/a: 2 requests"})
    warm = Run(phase="warmup", output_tokens=64, server_timings={"source": NA_COUNT})  # not measured
    figures, (note,) = server_timings([_vllm(), _vllm(phase="ttft"), lacking, lacking, two, warm])
    assert figures == {
        "measured_runs": 5,
        "runs_with_server_timings": 2,
        "without": {NA_COUNT: 2, "n/a: 2 requests": 1},
    }
    assert note == (
        "server timings: the server's own figures on 2 of 5 measured runs; without them: "
        "vLLM had not counted the request 1000 ms after its end (2×); 2 requests (1×)"
    )
    assert server_timings([_vllm(), _vllm()]) == ({"measured_runs": 2, "runs_with_server_timings": 2}, [])


def test_prefix_cache_checked_from_metrics_sums_hits_and_queries():
    runs = [_vllm(prefix_cache_query_tokens=110), _vllm(phase="prefill", prefix_cache_query_tokens=512)]
    hit = _vllm(prefix_cache_hit_tokens=384, prefix_cache_query_tokens=512)
    hit.ok, hit.cached_tokens, hit.reason = False, 384, "prompt cache hit: 384 prompt tokens served from cache"
    figures, notes = prefix_cache([*runs, hit, Run(phase="warmup", server_timings={"prefix_cache_hit_tokens": 99})])
    assert notes == []
    assert figures == {
        "measured_runs": 3,
        "checked_from_metrics": 3,
        "checked_from_usage": 0,
        "unchecked": 0,
        "hit_tokens": 384,
        "runs_with_hits": 1,
        "query_tokens": 1134,
        "checked": "checked from /metrics (vllm:prefix_cache_hits_total deltas) on every measured run",
    }


def test_prefix_cache_from_usage_and_blind():
    usage = Run(phase="decode", output_tokens=64, cached_tokens=0)
    figures, notes = prefix_cache([usage, usage])
    assert notes == [] and figures["checked"].startswith("checked from the cached_tokens the server reported")
    blind = Run(phase="decode", output_tokens=64, server_timings={"source": NA_COUNT})
    failed = Run(phase="decode", ok=False, reason="HTTP 500")  # no answer: nothing to check
    figures, (note,) = prefix_cache([blind, blind, failed])
    assert figures["unchecked"] == 2 and figures["checked"].startswith("blind:")
    assert note.startswith("prefix-cache check blind on 2 of 2 measured runs: the server reported no cached_tokens")
    assert "--enable-prompt-tokens-details" in note
    figures, (note,) = prefix_cache([blind, usage, _vllm()])
    assert figures["checked"] == "checked from /metrics on 1, from cached_tokens on 1, unchecked on 1 of 3 runs"
    assert note.startswith("prefix-cache check blind on 1 of 3 measured runs")
