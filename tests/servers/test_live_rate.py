"""The live token rate's pure parts: `/slots` shapes, deltas, and each kind's /metrics source."""

from __future__ import annotations

import pytest

from precmon.servers.watch.live_rate import SlotRead, from_metrics, no_live_source, parse_slots, slots_rate
from precmon.servers.watch.metrics import snapshot_from_text


def _slot(sid: int, task: int | None, n: int, busy: bool = True) -> dict:
    out: dict = {"id": sid, "n_ctx": 2048, "is_processing": busy}
    if task is not None:
        out["id_task"] = task
        out["next_token"] = [{"has_next_token": busy, "n_remain": 100, "n_decoded": n}]
    return out


def test_parse_slots_current_and_older_shapes():
    current = [_slot(0, 7, 42), _slot(1, 3, 0, busy=False), {"id": 2, "is_processing": False}]
    assert parse_slots(current) == {0: (7, 42)}
    older = [{"id": 0, "id_task": 5, "state": 1, "next_token": {"n_decoded": 9}}, {"id": 1, "state": 0}]
    assert parse_slots(older) == {0: (5, 9)}


@pytest.mark.parametrize(
    "body",
    [{"slots": []}, ["x"], [{"id": 0, "is_processing": True, "next_token": [{"n_decoded": "9"}]}]],
    ids=["not-a-list", "not-an-object", "n_decoded-text"],
)
def test_parse_slots_refuses_bad_answers(body):
    with pytest.raises(ValueError):
        parse_slots(body)


def test_slots_rate_per_slot_deltas():
    prev = SlotRead(10.0, {0: (7, 100), 1: (8, 50)})
    # slot 0 went on (+60), slot 1 ended (its tail is not seen), slot 2 started (30 so far)
    cur = SlotRead(11.0, {0: (7, 160), 2: (9, 30)})
    r = slots_rate(prev, cur)
    assert r.tok_s == pytest.approx(90.0) and r.generating == 2 and r.interval_s == pytest.approx(1.0)
    assert r.taken_s == 11.0 and r.source == "llama.cpp /slots" and r.caveat and "without --metrics" in r.caveat
    # a slot that took a new task between reads counts the new task's tokens only
    assert slots_rate(SlotRead(0.0, {0: (1, 500)}), SlotRead(0.5, {0: (2, 20)})).tok_s == pytest.approx(40.0)


def test_slots_rate_with_finished_counter_is_exact():
    # 100 in flight → the request ended at 130 (counter +130) and a new one is at 20: 50 new tokens
    prev = SlotRead(0.0, {0: (1, 100)}, finished_total=1000.0)
    cur = SlotRead(2.0, {0: (2, 20)}, finished_total=1130.0)
    r = slots_rate(prev, cur)
    assert r.tok_s == pytest.approx(25.0) and r.source == "llama.cpp /slots + /metrics" and r.caveat is None
    assert slots_rate(SlotRead(0, {}, 1000.0), SlotRead(1, {}, 0.0)).tok_s == 0.0  # a restart: not negative
    assert slots_rate(prev, SlotRead(0.0, {}, 1000.0)).error  # no interval


def _snap(t: float, body: str):
    return snapshot_from_text(body, taken_s=t)


def test_vllm_generation_counter_is_live():
    a = _snap(0.0, "vllm:generation_tokens_total 100\nvllm:num_requests_running 2\n")
    b = _snap(2.0, "vllm:generation_tokens_total 500\nvllm:num_requests_running 3\n")
    r = from_metrics(a, b, "vllm")
    assert r.tok_s == pytest.approx(200.0) and r.generating == 3 and "per step" in r.source


def test_non_finite_metrics_are_no_rate_not_a_crash():
    """`NaN`/`+Inf` are valid exposition values: int(NaN) raised ValueError out of from_metrics
    (the exporter's and the TUI's server pollers), and an +Inf counter gave tok/s = inf, which
    the run chart's bar_rows cannot draw (round(inf / inf))."""
    a = _snap(0.0, "vllm:generation_tokens_total 100\n")
    b = _snap(1.0, "vllm:generation_tokens_total 200\nvllm:num_requests_running NaN\n")
    r = from_metrics(a, b, "vllm")
    assert r.tok_s == pytest.approx(100.0) and r.generating is None
    assert from_metrics(a, _snap(1.0, "vllm:generation_tokens_total +Inf\n"), "vllm").tok_s is None
    gauge = _snap(1.0, "sglang:gen_throughput NaN\nsglang:num_running_reqs +Inf\n")
    assert from_metrics(gauge, gauge, "sglang").tok_s is None


def test_sglang_reads_the_realtime_decode_counter_not_the_finished_one():
    a = _snap(
        0.0,
        'sglang:generation_tokens_total{model_name="m"} 0\n'
        'sglang:realtime_tokens_total{model_name="m",mode="decode"} 40\n'
        'sglang:realtime_tokens_total{model_name="m",mode="prefill_compute"} 300\n',
    )
    b = _snap(
        1.0,
        'sglang:generation_tokens_total{model_name="m"} 0\n'
        'sglang:realtime_tokens_total{model_name="m",mode="decode"} 140\n'
        'sglang:realtime_tokens_total{model_name="m",mode="prefill_compute"} 900\n',
    )
    assert from_metrics(a, b, "sglang").tok_s == pytest.approx(100.0)
    gauge = _snap(1.0, 'sglang:gen_throughput{model_name="m"} 55.5\nsglang:generation_tokens_total 3\n')
    assert from_metrics(gauge, gauge, "sglang").tok_s == 55.5
    old = _snap(1.0, "sglang:generation_tokens_total 3\n")
    r = from_metrics(old, old, "sglang")
    assert r.tok_s is None and r.unavailable and "only when a request ends" in r.unavailable


@pytest.mark.parametrize("kind", ["ollama", "tgi", "lmstudio", "openai", None])
def test_kinds_without_a_live_source_say_why(kind):
    r = no_live_source(kind)
    assert r.tok_s is None and r.unavailable is not None
    assert r.unavailable.startswith("no live token source: ") and len(r.unavailable) > len("no live token source: ")
