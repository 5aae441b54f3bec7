"""ok / partial / failed: a variant is `ok` only when its whole plan ran and every planned metric
has a value — `--resume` measures anything else again."""

from __future__ import annotations

import threading

from precmon.core.settings import BenchSettings
from precmon.servers.detect import make_server
from tests.fakes.measure import measure
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = BenchSettings(
    output_tokens=16, decode_prompt_tokens=8, prefill_tokens=[64, 600], ttft_tokens=128, repeats=2, warmup=1, idle_s=0
)


def test_a_rejected_request_is_recorded_and_the_plan_goes_on():
    b = Behaviour(itl_s=0.001, reject_prompt_over=500, n_ctx=100000)  # context unknown to us: no clipping
    with TimedServer(b) as srv:
        res = measure(make_server(srv.url), PLAN)
    m = res.metrics
    assert m["prefill_ms_per_token"]["64"] is not None
    assert m["prefill_ms_per_token"]["600"] is None  # the key is there, null (docs/design.md §5)
    assert m["ttft_s"]["128"] is not None  # measured after the rejected size
    assert res.status == "partial"
    assert any("HTTP 400" in e for e in res.errors)


def test_stopping_mid_plan_is_partial_with_nulls_for_what_did_not_run():
    stop = threading.Event()
    with TimedServer(Behaviour(itl_s=0.001)) as srv:

        def on_run(run):
            if run.phase == "decode":
                stop.set()

        res = measure(make_server(srv.url), PLAN, on_run=on_run, stop=stop)
    assert res.status == "partial"
    assert res.metrics["decode_tok_s"] is not None
    assert res.metrics["prefill_ms_per_token"] == {"64": None, "600": None}
    assert res.metrics["ttft_s"] == {"128": None}
    assert any("stopped by user" in e for e in res.errors)


def test_whole_plan_is_ok():
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        res = measure(make_server(srv.url), PLAN)
    assert res.status == "ok", res.errors
