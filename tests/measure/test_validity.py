"""The validity checks' pure functions against literal figures (docs/design.md §4 "Trust")."""

from __future__ import annotations

from precmon.core.schema import Run
from precmon.measure.trust.validity import client_server_gap, host_busy, run_gaps
from precmon.power.cpu import CpuSnapshot, cpu_usage, server_cpu_s


def test_cpu_usage_subtracts_the_server_tree_and_precmon():
    a = CpuSnapshot(0.0, busy_s=10.0, steal_s=1.0, own_s=2.0, server_s={100: (5.0, 3.0)})
    b = CpuSnapshot(10.0, busy_s=30.0, steal_s=1.5, own_s=2.5, server_s={100: (5.0, 13.0), 101: (7.0, 2.0)})
    u = cpu_usage(a, b, server_found=True)
    # busy 20 s / 10 s; server 10 s + a child born in between with 2 s; precmon 0.5 s
    assert u == {
        "window_s": 10.0,
        "busy_cores": 2.0,
        "server_cores": 1.2,
        "precmon_cores": 0.05,
        "other_cores": 0.75,
        "steal_cores": 0.05,
    }
    # without the server found, its CPU is not subtracted (and not reported)
    assert cpu_usage(a, b, server_found=False)["other_cores"] == 1.95
    assert cpu_usage(a, b, server_found=False)["server_cores"] is None


def test_a_reused_pid_counts_only_the_new_process():
    a = CpuSnapshot(0.0, 0.0, None, 0.0, {100: (5.0, 50.0)})
    b = CpuSnapshot(1.0, 1.0, None, 0.0, {100: (9.0, 0.4)})  # pid 100 died; a new one was born
    assert server_cpu_s(a, b) == 0.4
    assert "steal_cores" not in cpu_usage(a, b, True)  # the kernel reports no steal


def test_host_busy_threshold_and_steal():
    assert host_busy({"other_cores": 0.2, "server_cores": 1.0, "steal_cores": 0.0}) == []
    (w,) = host_busy({"other_cores": 1.84, "server_cores": 1.0})
    assert w == (
        "host-busy: other processes used 1.84 cores on average during the runs besides the server "
        "and precmon (threshold 0.25): the numbers may be low"
    )
    (w,) = host_busy({"other_cores": 0.0, "server_cores": None, "steal_cores": 0.3})
    assert w.startswith("host-busy: the hypervisor took 0.30 cores (CPU steal)")
    (w,) = host_busy({"other_cores": 0.5, "server_cores": None})
    assert "besides precmon (threshold" in w  # a remote server: only precmon is subtracted


def _decode(client_tok_s: float, server_tok_s: float, ttft_s: float = 0.03, prompt_ms: float = 20.0) -> Run:
    st = {"predicted_per_second": server_tok_s, "prompt_ms": prompt_ms}
    return Run(phase="decode", decode_tok_s=client_tok_s, ttft_s=ttft_s, server_timings=st)


def test_run_gaps():
    assert run_gaps(_decode(110.0, 100.0)) == {"decode_gap": 0.1, "ttft_excess_ms": 10.0, "server_prompt_ms": 20.0}
    assert run_gaps(Run(phase="prefill", ttft_s=0.5, server_timings={"prompt_ms": "fast"})) == {}


def test_quiet_runs_have_no_gap():
    figures, warnings = client_server_gap([_decode(101.0, 100.0), _decode(98.0, 100.0), _decode(100.0, 100.0)])
    assert warnings == []
    assert figures["decode_gap_median"] == 0.0 and figures["decode_runs"] == 3
    assert figures["ttft"]["decode"] == {"ttft_excess_ms_median": 10.0, "server_prompt_ms_median": 20.0}


def test_bursts_name_the_server_as_the_one_to_trust():
    runs = [_decode(25_000.0, 250.0, ttft_s=0.25, prompt_ms=25.0) for _ in range(3)]
    runs.append(_decode(1.0, 250.0, ttft_s=9.0, prompt_ms=25.0))  # one odd run: the median decides
    runs.append(Run(phase="warmup", decode_tok_s=1.0, ttft_s=9.0, server_timings={"prompt_ms": 1.0}))  # ignored
    figures, (dec, ttft) = client_server_gap(runs)
    assert figures["decode_gap_median"] == 99.0
    assert dec == (
        "client-server-gap: client decode differs from the server's own timing by +9900% "
        "(median of 4 runs, threshold ±20%): chunks reached precmon in bursts, so the server's figure stands"
    )
    assert ttft.startswith("client-server-gap: client TTFT exceeds the server's prompt time (25.0 ms) by 225.0 ms")
    assert ttft.endswith("so the server's figure stands")


def test_a_slow_client_says_the_server_is_the_engines_speed():
    _, (w,) = client_server_gap([_decode(50.0, 100.0)])
    assert "by -50%" in w and "the server's figure is the engine's speed" in w


def test_ttft_check_is_one_sided_with_room_for_http():
    # 40 ms beyond a 20 ms prompt: within the 50 ms allowed
    assert client_server_gap([_decode(100.0, 100.0, ttft_s=0.06)])[1] == []
    # 200 ms beyond a 1000 ms prompt: over 50 ms, but not over 100% of the server's time
    assert client_server_gap([_decode(100.0, 100.0, ttft_s=1.2, prompt_ms=1000.0)])[1] == []
    # the client faster than the server's prompt time is not a held-back chunk
    assert client_server_gap([_decode(100.0, 100.0, ttft_s=0.001, prompt_ms=500.0)])[1] == []


def test_no_server_timings_is_na():
    figures, warnings = client_server_gap([Run(phase="decode", decode_tok_s=100.0, ttft_s=0.1)])
    assert figures == {"reason": "n/a: the server reported no timings of its own"} and warnings == []


def test_one_burst_run_among_quiet_ones_is_named_though_the_median_stands():
    # vLLM CPU, 2026-12-01: one of three fp8-KV decode runs read 55,413 tok/s against vLLM's 293
    runs = [_decode(284.0, 285.0), _decode(55_413.0, 293.0), _decode(283.0, 284.0)]
    figures, (w,) = client_server_gap(runs)
    assert abs(figures["decode_gap_median"]) < 0.01
    assert figures["decode_burst_runs"] == 1 and figures["decode_burst_gap"] == 1.0
    assert w == (
        "client-server-gap: 1 of 3 decode runs reached precmon in a burst (client rate up to 189x "
        "the server's own): the median stands, the spread and its CI are the client's, not the engine's"
    )
    # a client just under twice the server's rate is not called a burst
    assert client_server_gap([_decode(199.0, 100.0), _decode(100.0, 100.0), _decode(100.0, 100.0)])[1] == []


def test_a_depth_decode_run_in_a_burst_is_named_too():
    # vLLM CPU, 2026-12-01: the d1024 decode runs of a --depth 0,1024 bench read 22,397 tok/s
    burst = _decode(22_397.0, 300.0)
    burst.phase = "depth_decode"
    figures, (w,) = client_server_gap([_decode(284.0, 285.0), burst, _decode(283.0, 284.0)])
    assert figures["decode_runs"] == 3 and figures["decode_burst_runs"] == 1
    assert w.startswith("client-server-gap: 1 of 3 decode runs reached precmon in a burst")


def test_every_warning_code_a_step_raises_is_one_of_validity_codes():
    """validity.CODES is the one list of warning codes (design §8): the concurrency step's
    `concurrency-queued:` was missing from it, and the noisy and depth codes lived only in their steps."""
    from precmon.core.warning_codes import FALLBACK_CODE
    from precmon.measure.concurrency.check import CODE as queued
    from precmon.measure.depth.steps import CODES as depth_codes
    from precmon.measure.trust.validity import CODES, NOISY_CODE, noisy_warnings

    for code in (queued, NOISY_CODE, FALLBACK_CODE, *depth_codes):
        assert code in CODES, code
    assert len(CODES) == len(set(CODES)) and all(c.endswith(":") and " " not in c for c in CODES)
    assert noisy_warnings({"decode_tok_s": {"n": 3, "cv": 0.5}})[0].startswith(NOISY_CODE + " ")


def test_chunk_gap_percentiles_are_never_noisy_but_sized_rows_are():
    """The exemption is by row key (core/cells.py `RowKey`), not by cutting a stats key at ":"."""
    from precmon.measure.trust.validity import noisy_warnings

    spread = {"n": 3, "cv": 0.5}
    assert noisy_warnings({"itl_ms_p50": spread, "itl_ms_p99": spread}) == []
    flagged = noisy_warnings({"prefill_ms_per_token:4096": spread, "concurrency:4:total_tok_s": spread})
    assert [w.split()[1] for w in flagged] == ["prefill_ms_per_token:4096", "concurrency:4:total_tok_s"]
