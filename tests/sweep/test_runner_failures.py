"""The sweep survives what real servers do: a launch that crashes and leaves a child behind, an
adapter that raises something unexpected."""

from __future__ import annotations

import json

import psutil

from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.fakes.timed_server import Behaviour, TimedServer


def test_crashed_launch_leaves_no_child_behind_and_the_sweep_goes_on(tmp_path):
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
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
label = "CRASH"
precision = "x"
launch = ["sh", "-c", "sleep 9139 & sleep 0.5; exit 3"]
url = "http://127.0.0.1:1"
ready_timeout_s = 30

[[variant]]
label = "OK"
precision = "y"
url = "{srv.url}"
"""
        doc = json.loads(SweepRunner(parse_spec(text), tmp_path).run().read_text())
    crash, ok = doc["variants"]
    assert crash["status"] == "failed" and "exited with code 3" in crash["errors"][0]
    assert ok["status"] == "ok"
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "9139"]]


def test_an_unexpected_exception_fails_one_variant_not_the_sweep(tmp_path, monkeypatch):
    from precmon.servers.protocols.openai import OpenAIServer

    calls = {"n": 0}
    real = OpenAIServer.stream

    def flaky(self, req):
        calls["n"] += 1
        if calls["n"] == 1:
            raise AttributeError("'str' object has no attribute 'get'")
        return real(self, req)

    monkeypatch.setattr(OpenAIServer, "stream", flaky)
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        text = f"""
[defaults]
url = "{srv.url}"
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

[[variant]]
label = "B"
precision = "y"
url = "{srv.url}"
server = "openai"
"""
        doc = json.loads(SweepRunner(parse_spec(text), tmp_path).run().read_text())
    a, b = doc["variants"]
    assert a["status"] == "failed" and "AttributeError" in a["errors"][0]
    assert b["status"] == "ok"


def test_launch_refuses_a_port_another_server_already_holds(tmp_path):
    with TimedServer(Behaviour()) as srv:
        text = f"""
[[variant]]
label = "X"
precision = "x"
launch = ["sleep", "9140"]
url = "{srv.url}"
"""
        doc = json.loads(SweepRunner(parse_spec(text), tmp_path).run().read_text())
    (x,) = doc["variants"]
    assert x["status"] == "failed" and "already answers" in x["errors"][0]
    assert not [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "9140"]]
