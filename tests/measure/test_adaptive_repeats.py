"""Adaptive repeats (`target_ci_pct`, `max_repeats`): a phase repeats until its 95% CI is within
the target, or stops at the cap; the result says which (docs/design.md §8)."""

from __future__ import annotations

import json

from precmon.core.schema import Host, to_json
from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.results import results_document
from precmon.report.load import load_document
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer


def plan(**kw) -> BenchSettings:
    base = dict(
        output_tokens=24, decode_prompt_tokens=8, prefill_tokens=[64], ttft_tokens=None, repeats=2, warmup=1, idle_s=0
    )
    return BenchSettings(**(base | kw))


def test_fixed_repeats_by_default():
    with TimedServer(Behaviour(itl_s=0.002)) as srv:
        res = Bench(make_server(srv.url), plan()).run()
    assert len([r for r in res.runs if r.phase == "decode"]) == 2
    assert res.repeats_stopped_by is None and res.repeats_n is None
    assert res.metrics_stats["decode_tok_s"]["n"] == 2


def test_a_steady_server_stops_at_the_target():
    # 24 tokens 5 ms apart: decode runs agree within ~1-2 %, so the CI reaches 20 % of the median by
    # the third or fourth run (t = 4.30 at n = 3 needs cv <= 8 %), far below the cap
    with TimedServer(Behaviour(itl_s=0.005)) as srv:
        res = Bench(make_server(srv.url), plan(target_ci_pct=20.0, max_repeats=10)).run()
    assert res.status == "ok", res.errors
    assert res.repeats_stopped_by == {"decode": "target_ci", "prefill_ms_per_token:64": "target_ci"}
    n = res.repeats_n["decode"]
    assert 2 <= n < 10
    assert len([r for r in res.runs if r.phase == "decode"]) == n == res.metrics_stats["decode_tok_s"]["n"]
    st = res.metrics_stats["decode_tok_s"]
    assert (st["ci95"][1] - st["ci95"][0]) / 2 <= 0.2 * st["median"] + 0.01


def test_a_noisy_server_stops_at_max_repeats_and_is_flagged():
    # every other request 4× slower between chunks: decode cv ~ 60 %, no CI reaches 5 %
    with TimedServer(Behaviour(itl_s=0.002, itl_jitter=(0.5, 2.0))) as srv:
        res = Bench(make_server(srv.url), plan(target_ci_pct=5.0, max_repeats=4)).run()
    assert res.repeats_stopped_by["decode"] == "max_repeats"
    assert res.repeats_n["decode"] == 4
    assert len([r for r in res.runs if r.phase == "decode"]) == 4
    assert res.status == "ok"  # the data is real; the warning says how sure it is
    assert any(w.startswith("noisy: decode_tok_s ") for w in res.warnings), res.warnings


def test_a_quiet_variant_has_an_empty_warnings_list():
    # a steady server whose every phase takes long enough that a shared machine's scheduling
    # delays (a few ms, seen failing CI on a loaded box with a 42 ms prefill) stay under the 10% rule
    steady = Behaviour(itl_s=0.02, prefill_s_per_token=0.002, base_latency_s=0.05)
    with TimedServer(steady) as srv:
        res = Bench(make_server(srv.url), plan(repeats=3)).run()
    warnings = to_json(res)["warnings"]  # the key is there even when nothing is wrong
    assert isinstance(warnings, list) and not any(w.startswith("noisy:") for w in warnings), warnings


def test_the_results_file_carries_stats_and_what_stopped_each_phase(tmp_path):
    with TimedServer(Behaviour(itl_s=0.002, itl_jitter=(0.5, 2.0))) as srv:
        s = plan(target_ci_pct=5.0, max_repeats=3)
        res = Bench(make_server(srv.url), s).run()
    doc = results_document([res], s.to_dict(), host=Host(hostname="test"))
    assert doc.settings["target_ci_pct"] == 5.0 and doc.settings["max_repeats"] == 3
    path = tmp_path / "r.json"
    path.write_text(json.dumps(to_json(doc)), encoding="utf-8")
    back = load_document(path).variants[0]  # the report's validation accepts what bench wrote
    assert back.repeats_stopped_by is not None and back.repeats_n is not None and back.metrics_stats is not None
    assert back.repeats_stopped_by["decode"] == "max_repeats" and back.repeats_n["decode"] == 3
    assert back.metrics_stats["decode_tok_s"]["n"] == 3
    assert back.metrics_stats["decode_tok_s"]["median"] == back.metrics["decode_tok_s"]
    assert any(w.startswith("noisy: decode_tok_s") for w in back.warnings or [])
