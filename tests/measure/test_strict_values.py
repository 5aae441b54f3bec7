"""Results are strict JSON and hold only possible numbers: NaN/Infinity become null with the place
named (never a bare `NaN`, which no JSON parser must accept), and a negative or non-finite prefill
or decode rate derived from a server's numbers makes the run invalid instead of a metric."""

from __future__ import annotations

import json
import math

import pytest

from precmon.core.schema import Host, Run, VariantResult
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.prompts import Prompt
from precmon.measure.results import results_document, write_json_atomic
from precmon.measure.timing import run_from_result
from precmon.servers.base import StreamResult
from precmon.servers.detect import make_server
from precmon.sweep.store import ResultStore
from tests.fakes.timed_server import Behaviour, TimedServer


def _strict_load(text: str):
    def refuse(name: str):
        raise AssertionError(f"bare {name} in JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_written_as_null_with_the_place_named(tmp_path):
    v = VariantResult(label="A", precision="x", model=None)
    v.runs.append(Run(phase="decode", server_timings={"predicted_per_second": math.nan, "prompt_ms": math.inf}))
    v.metrics["power_idle_w"] = -math.inf
    path = tmp_path / "r.json"
    write_json_atomic(path, results_document([v], {}, Host()))
    doc = _strict_load(path.read_text())
    assert doc["variants"][0]["runs"][0]["server_timings"] == {"predicted_per_second": None, "prompt_ms": None}
    assert doc["variants"][0]["metrics"]["power_idle_w"] is None
    assert any("variants[0].runs[0].server_timings.predicted_per_second: nan" in n for n in doc["non_finite"])
    assert len(doc["non_finite"]) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temporary left beside it


def test_journal_lines_are_strict_json_too(tmp_path):
    store = ResultStore(tmp_path, {}, Host())
    store.add_run("A", Run(phase="decode", power_w=math.nan))
    (line,) = (tmp_path / "journal.jsonl").read_text().splitlines()
    rec = _strict_load(line)
    assert rec["run"]["power_w"] is None
    assert rec["non_finite"] == ["run.power_w: nan written as null (JSON has no NaN/Infinity)"]


def _stream(prompt_tokens, completion_tokens=8) -> StreamResult:
    r = StreamResult(sent_s=0.0, http_status=200, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    for i in range(8):
        r.add_text(0.1 + i * 0.01, "w")
    r.finish_s = 0.2
    return r


PROMPT = Prompt(text="a b c", nonce="n", target_tokens=8, expected_tokens=None)


@pytest.mark.parametrize("prompt_tokens", [-5, 2**40, True])
def test_an_impossible_prompt_count_never_becomes_a_prefill(prompt_tokens):
    run = run_from_result("prefill", _stream(prompt_tokens), PROMPT, 8)
    assert not run.ok and "impossible usage.prompt_tokens" in (run.reason or "")
    assert run.prefill_ms_per_token is None and run.decode_tok_s is None and run.prompt_tokens is None


def test_a_negative_completion_count_is_impossible():
    run = run_from_result("decode", _stream(9, completion_tokens=-3), PROMPT, 8)
    assert not run.ok and "impossible usage.completion_tokens -3" in (run.reason or "")
    assert run.decode_tok_s is None


def test_a_negative_derived_value_is_dropped_and_named():
    res = _stream(9)
    res.text_chunk_times_s = [0.3, 0.1]  # a clock that went backwards: a negative gap
    run = run_from_result("decode", res, PROMPT, 8)
    assert not run.ok and "impossible value" in (run.reason or "") and "itl_ms_p50" in (run.reason or "")
    assert run.itl_ms_p50 is None
    assert run.ttft_s is not None  # the possible values stay


@pytest.mark.parametrize("bad", [math.nan, -100.0, math.inf, "fast", 0])
def test_the_servers_own_rates_enter_metrics_only_when_possible(monkeypatch, bad):
    from precmon.measure import request as request_mod

    real = request_mod.measure_once

    def with_bad_timings(*a, **k):
        run, sres = real(*a, **k)
        run.server_timings = {"predicted_per_second": bad, "prompt_per_second": bad}
        return run, sres

    monkeypatch.setattr(request_mod, "measure_once", with_bad_timings)
    plan = BenchSettings(output_tokens=8, decode_prompt_tokens=8, prefill_tokens=[32], ttft_tokens=None, repeats=1)
    plan.warmup, plan.idle_s = 0, 0
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        res = Bench(make_server(srv.url), plan).run()
    assert res.metrics["decode_tok_s"] is not None
    assert res.metrics["server_decode_tok_s"] is None
    assert res.metrics["server_prefill_ms_per_token"] == {"32": None}
