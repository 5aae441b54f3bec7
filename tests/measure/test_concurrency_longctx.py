"""Optional plan phases: N simultaneous streams, and decode with a long context already in place."""

from __future__ import annotations

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.results import results_document
from precmon.report.table import build_table
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer


def test_concurrency_levels_measure_total_and_per_user_rates():
    b = Behaviour(itl_s=0.005, prefill_s_per_token=0.0002)
    with TimedServer(b) as srv:
        s = BenchSettings(
            output_tokens=40,
            decode_prompt_tokens=16,
            prefill_tokens=[64],
            ttft_tokens=None,
            repeats=1,
            warmup=1,
            concurrency=[1, 4],
            idle_s=0,
        )
        res = Bench(make_server(srv.url), s).run()
    assert res.status == "ok", res.errors
    conc = res.metrics["concurrency"]
    one, four = conc["1"], conc["4"]
    # The fake serves streams in parallel at a fixed pace: per-stream speed stays, aggregate scales.
    assert four["per_user_tok_s"] == pytest.approx(one["per_user_tok_s"], rel=0.15)
    assert four["total_tok_s"] == pytest.approx(4 * one["total_tok_s"], rel=0.25)
    runs = [r for r in res.runs if r.phase == "concurrency"]
    assert [r.extra.streams for r in runs] == [1, 4]
    assert runs[1].output_tokens == 4 * 40
    table = build_table(results_document([res], s.to_dict()))
    keys = [row.key for row in table.rows]
    assert "concurrency:4:total_tok_s" in keys


def test_long_context_decode_is_measured_per_context_size():
    b = Behaviour(itl_s=0.003, prefill_s_per_token=0.00002, n_ctx=8192)
    with TimedServer(b) as srv:
        s = BenchSettings(
            output_tokens=32,
            decode_prompt_tokens=16,
            prefill_tokens=[64],
            ttft_tokens=None,
            repeats=1,
            warmup=0,
            long_context_tokens=[1024, 4096],
            idle_s=0,
        )
        res = Bench(make_server(srv.url), s).run()
    assert res.status == "ok", res.errors
    lc = res.metrics["long_context_decode_tok_s"]
    assert set(lc) == {"1024", "4096"}
    assert all(v and v > 0 for v in lc.values())
    assert [r.prompt_tokens for r in res.runs if r.phase == "long_context_decode"] == [1024, 4096]
