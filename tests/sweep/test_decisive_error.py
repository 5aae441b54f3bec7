"""A failed variant names its decisive error first: the HTTP 500, not the note "no tokenizer endpoint"
that happened to be recorded before it. The report, the TUI and the headless line all show
`errors[0]`, so the order is the fix."""

from __future__ import annotations

import json

from precmon.core.settings import BenchSettings
from precmon.servers.detect import make_server
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.fakes.measure import measure
from tests.fakes.timed_server import Behaviour, TimedServer

PLAN = BenchSettings(
    output_tokens=8, decode_prompt_tokens=8, prefill_tokens=[32], ttft_tokens=32, repeats=1, warmup=0, idle_s=0
)


def test_the_http_error_comes_before_the_tokenizer_note():
    with TimedServer(Behaviour(http_status=500, n_ctx=40)) as srv:  # a small context: a "skipped" note too
        res = measure(make_server(srv.url, kind="openai"), PLAN)
    assert res.status == "failed"
    assert "HTTP 500" in res.errors[0], res.errors
    assert any("no tokenizer endpoint" in e for e in res.errors[1:])  # the notes are kept, after the cause


def test_a_sweep_writes_the_decisive_error_first(tmp_path):
    with TimedServer(Behaviour(http_status=503)) as srv:
        text = f"""
[defaults]
output_tokens = 8
decode_prompt_tokens = 8
prefill_tokens = [32]
ttft_tokens = 32
repeats = 1
warmup = 0
idle_s = 0

[[variant]]
label = "A"
precision = "x"
url = "{srv.url}"
server = "openai"
"""
        doc = json.loads(SweepRunner(parse_spec(text), tmp_path).run().read_text())
    (v,) = doc["variants"]
    assert v["status"] == "failed" and "HTTP 503" in v["errors"][0], v["errors"]
