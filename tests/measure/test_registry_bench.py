"""Adding a metric touches the registry and the code that measures it, nothing else (issue 18).

A new median-of-runs metric is one `Metric(...)` entry: bench computes it from the runs' field
(`reduce="median"`), the results file carries it, its record checks accept it, and the report,
CSV and help show it (tests/report/test_registry.py covers the report side)."""

from __future__ import annotations

import dataclasses

from precmon.core import registry
from precmon.core.registry import Metric
from precmon.core.schema import ResultsDoc, to_json, variant_from_json
from precmon.measure.bench import Bench, BenchSettings
from precmon.report.export import render
from precmon.servers.detect import make_server
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = BenchSettings(
    output_tokens=16, decode_prompt_tokens=8, prefill_tokens=[64], ttft_tokens=0, repeats=3, warmup=0, idle_s=0
)

# TTFT of the decode requests: a field every decode run already has (`ttft_s`)
DECODE_TTFT = Metric(
    "decode_ttft_s", "TTFT of decode requests", "s", "lower", "speedup", registry.MEDIAN, 4,
    row=35, phase="decode", run_field="ttft_s", reduce="median",
)  # fmt: skip


def test_a_median_metric_added_to_the_registry_is_measured_and_reported(monkeypatch):
    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, DECODE_TTFT))
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        res = Bench(make_server(srv.url), PLAN).run()
    decode_ttfts = sorted(r.ttft_s for r in res.runs if r.phase == "decode" and r.ok)
    assert len(decode_ttfts) == 3
    assert res.metrics["decode_ttft_s"] == round(decode_ttfts[1], 4)  # the median, the registry's digits
    back = variant_from_json(to_json(res), "variants[0]")  # the record checks know it
    assert back.metrics["decode_ttft_s"] == res.metrics["decode_ttft_s"]
    doc = ResultsDoc(variants=[back])
    assert "TTFT of decode requests" in render(doc, "md")
    assert "decode_ttft_s" in render(doc, "csv")


def test_a_sized_median_metric_groups_by_size(monkeypatch):
    sized = dataclasses.replace(
        DECODE_TTFT, key="prefill_ttft_s", label="TTFT ({size} prompt, prefill runs)", shape="sized", phase="prefill",
        always=True,
    )  # fmt: skip
    monkeypatch.setattr(registry, "METRICS", (*registry.METRICS, sized))
    plan = dataclasses.replace(PLAN, prefill_tokens=[64, 200])
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        res = Bench(make_server(srv.url), plan).run()
    assert set(res.metrics["prefill_ttft_s"]) == {"64", "200"}
    assert all(v is not None and v > 0 for v in res.metrics["prefill_ttft_s"].values())
