"""The concurrency curve: a level's window figures, pooled TTFT percentiles over repeats, the
Pareto front, the window's J/token, and the `concurrency-queued:` check against a fake server
that runs fewer streams at once than a level sends."""

from __future__ import annotations

import pytest

from precmon.core.concurrency import MIN_SCRAPES, capacity, pareto_front, stream_count
from precmon.core.schema import Run, RunExtra, run_from_json
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.concurrency.check import queued_warning
from precmon.measure.concurrency.curve import curve, curve_stats, level_figures
from precmon.measure.concurrency.run import add_energy, level_run
from precmon.power.sampler import PowerSampler
from precmon.servers.base import StreamResult
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.measure.test_bench_power import ConstantSource


def _stream(sent: float, first: float, last: float, tokens: int) -> tuple[Run, StreamResult]:
    res = StreamResult(sent_s=sent, first_text_s=first, last_text_s=last, completion_tokens=tokens)
    run = Run("decode", 16, tokens, ttft_s=first - sent, decode_tok_s=(tokens - 1) / (last - first))
    return run, res


def test_level_run_takes_the_window_from_first_request_to_last_token():
    streams = [_stream(10.0, 10.5, 12.5, 41), _stream(10.2, 11.0, 14.0, 31)]
    run = level_run(2, 16, streams, [])
    assert run.ok and run.output_tokens == 72
    assert run.extra.wall_s == 4.0  # 10.0 → 14.0
    assert run.extra.total_tok_s == 18.0  # 72 tokens ÷ 4 s
    assert run.extra.stream_decode_tok_s == [20.0, 10.0]
    assert run.extra.per_user_tok_s == 15.0
    assert (run.extra.per_user_tok_s_min, run.extra.per_user_tok_s_max) == (10.0, 20.0)
    assert run.extra.ttft_p50_s == 0.65  # TTFTs 0.5 and 0.8
    assert run.extra.ttft_p99_s == pytest.approx(0.797)
    run.energy_j = 144.0
    add_energy(run)
    assert run.extra.energy_j_per_token == 2.0  # the window's energy ÷ all 72 tokens


def test_a_failed_stream_makes_the_level_invalid():
    bad = _stream(10.0, 10.5, 12.5, 41)
    bad[0].ok, bad[0].reason = False, "completion_tokens 20 != 40 asked"
    run = level_run(2, 16, [_stream(10.0, 10.5, 12.5, 41), bad], [])
    assert not run.ok and run.reason == "completion_tokens 20 != 40 asked"


def _rep(streams: int, ttfts: list[float], rates: list[float], total: float, jpt: float | None = None) -> Run:
    extra = RunExtra(
        streams=streams, stream_ttft_s=ttfts, stream_decode_tok_s=rates, total_tok_s=total, energy_j_per_token=jpt
    )
    return Run("concurrency", ok=True, extra=extra)


def test_ttft_percentiles_pool_the_streams_of_every_repeat():
    runs = [_rep(4, [0.1, 0.2, 0.3, 0.4], [10, 11, 12, 13], 40.0), _rep(4, [0.5, 0.6, 0.7, 1.0], [9, 9, 9, 9], 30.0)]
    f = level_figures(runs)
    # 8 TTFTs pooled, linear interpolation: p50 at rank 3.5 → 0.45; p99 at rank 6.93 → 0.7 + 0.3 × 0.93
    assert f["ttft_p50_s"] == 0.45
    assert f["ttft_p99_s"] == pytest.approx(0.979)
    assert f["ttft_p99_s"] >= f["ttft_p50_s"]
    assert f["per_user_tok_s"] == 9.5  # median of the 8 streams
    assert f["total_tok_s"] == 35.0  # median of the 2 windows
    assert (f["repeats"], f["streams_measured"]) == (2, 8)
    stats = curve_stats(runs)
    assert stats["concurrency:4:total_tok_s"]["n"] == 2
    assert stats["concurrency:4:total_tok_s"]["median"] == 35.0
    assert "concurrency:4:ttft_p99_s" not in stats  # these runs record no p99 of their own


def test_pareto_front_drops_a_level_beaten_on_every_axis():
    levels = {
        "1": {"per_user_tok_s": 20.0, "total_tok_s": 20.0, "energy_j_per_token": 0.5},
        "4": {"per_user_tok_s": 15.0, "total_tok_s": 60.0, "energy_j_per_token": 0.2},
        "8": {"per_user_tok_s": 10.0, "total_tok_s": 55.0, "energy_j_per_token": 0.25},  # beaten by 4
        "16": {"per_user_tok_s": 5.0, "total_tok_s": 58.0, "energy_j_per_token": 0.19},  # least J/token
    }
    assert pareto_front(levels) == {"1", "4", "16"}
    # J/token n/a at one level: the axis is left out, and 16 is beaten by 4 on both speeds
    levels["16"]["energy_j_per_token"] = None
    assert pareto_front(levels) == {"1", "4"}
    # equal figures do not beat each other
    assert pareto_front(
        {"1": {"per_user_tok_s": 5.0, "total_tok_s": 5.0}, "2": {"per_user_tok_s": 5.0, "total_tok_s": 5.0}}
    ) == {"1", "2"}
    levels = curve([_rep(1, [0.1], [20], 19.0), _rep(4, [0.2] * 4, [10] * 4, 15.0)])
    assert (levels["1"]["pareto_front"], levels["4"]["pareto_front"]) == (True, False)


def test_capacity_trusts_total_slots_then_enough_scrapes():
    assert capacity({"total_slots": 2, "max_running": 4, "scrapes": 9}) == (2, "/props total_slots")
    assert capacity({"max_running": 3.0, "scrapes": MIN_SCRAPES})[0] == 3
    assert capacity({"max_running": 1.0, "scrapes": MIN_SCRAPES - 1}) == (None, "the server did not say")
    assert capacity({"reason": "/metrics answered HTTP 404"}) == (None, "/metrics answered HTTP 404")
    queued = Run("concurrency", extra=RunExtra(streams=8, server_parallel={"total_slots": 4}))
    fits = Run("concurrency", extra=RunExtra(streams=4, server_parallel={"total_slots": 4}))
    assert queued_warning([fits]) is None
    assert queued_warning([fits, queued]).startswith("concurrency-queued: level(s) 8 exceed the 4 request(s)")


def test_a_runs_stream_count_is_read_from_older_files_too():
    assert stream_count(Run("concurrency", extra=RunExtra(streams=4))) == 4
    assert stream_count(run_from_json({"phase": "concurrency", "extra": {"concurrency": 2}})) == 2  # older files
    assert stream_count(run_from_json({"phase": "concurrency", "concurrency": 8})) == 8  # older still
    assert stream_count(Run("concurrency")) is None


def _bench(slots: int | None, meter=None):
    b = Behaviour(itl_s=0.004, prefill_s_per_token=0.0002, slots=slots)
    s = BenchSettings(
        output_tokens=30, decode_prompt_tokens=16, prefill_tokens=[64], ttft_tokens=None, repeats=2, warmup=0,
        concurrency=[1, 4], idle_s=0.3 if meter else 0,
    )  # fmt: skip
    with TimedServer(b) as srv:
        return Bench(make_server(srv.url), s, meter=meter).run()


def test_a_level_beyond_the_servers_slots_is_flagged_as_queued():
    res = _bench(slots=1)
    queued = [w for w in res.warnings if w.startswith("concurrency-queued:")]
    assert queued == [
        "concurrency-queued: level(s) 4 exceed the 1 request(s) the server runs at once (/props total_slots): "
        "per-user tok/s and TTFT there measure queueing (llama-server: -np 4; vLLM: --max-num-seqs 4)"
    ]
    conc = res.metrics["concurrency"]
    # what the warning is about: the fourth stream waited for three others before its first token
    assert conc["4"]["ttft_p99_s"] > 2.5 * conc["1"]["ttft_p99_s"]
    assert [r.extra.server_parallel["total_slots"] for r in res.runs if r.phase == "concurrency"] == [1] * 4


def test_levels_within_the_slots_are_not_flagged_and_repeat():
    res = _bench(slots=4)
    assert res.status == "ok", res.errors
    assert not [w for w in res.warnings if w.startswith("concurrency-queued:")]
    runs = [r for r in res.runs if r.phase == "concurrency"]
    assert [(r.extra.streams, r.repeat) for r in runs] == [(1, 0), (4, 0), (1, 1), (4, 1)]  # levels take turns
    assert res.metrics["concurrency"]["4"]["repeats"] == 2
    assert res.metrics_stats["concurrency:4:per_user_tok_s"]["n"] == 2


def test_energy_per_token_is_the_whole_windows_energy_over_all_tokens():
    with PowerSampler([ConstantSource("sys", "system", 100.0)], rate_hz=50) as meter:
        res = _bench(slots=4, meter=meter)
    for r in (r for r in res.runs if r.phase == "concurrency"):
        assert r.energy_j == pytest.approx(100.0 * r.extra.power_windows[0]["seconds"], rel=0.01)
        assert r.extra.energy_j_per_token == pytest.approx(r.energy_j / r.output_tokens, abs=1e-5)
        assert r.output_tokens == 30 * r.extra.streams
    conc = res.metrics["concurrency"]
    assert conc["4"]["energy_j_per_token"] < conc["1"]["energy_j_per_token"]  # the same watts, 4× the tokens
