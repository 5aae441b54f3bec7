"""Depth in a sweep, on the timed fake server (tests/fakes/timed_server.py, a prefix cache by
words): in an interleaved sweep each variant's depth step (its fill and every request reusing it)
runs whole, never split by another variant's requests; a server without a prefix cache has its
depth runs excluded and flagged."""

from __future__ import annotations

import json

from precmon.measure.depth.steps import NOT_CACHED
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.fakes.timed_server import Behaviour, TimedServer

SPEC = """\
[defaults]
url = "{url}"
server = "openai"
output_tokens = 4
decode_prompt_tokens = 8
prefill_tokens = [32]
ttft_tokens = 48
repeats = 2
warmup = 0
idle_s = 0
cooldown_s = 0
depth = [0, 64]
{order}

[[variant]]
label = "A"
precision = "a"
model = "A"

[[variant]]
label = "B"
precision = "b"
model = "B"
"""


def run_sweep(tmp_path, behaviour: Behaviour, order: str) -> tuple[dict, list[dict]]:
    with TimedServer(behaviour) as srv:
        path = SweepRunner(parse_spec(SPEC.format(url=srv.url, order=order)), tmp_path).run()
        requests = list(srv.behaviour.requests)
    return json.loads(path.read_text()), requests


def test_interleaved_depth_steps_run_whole_and_are_valid(tmp_path):
    doc, requests = run_sweep(tmp_path, Behaviour(itl_s=0.001, prefix_cache=True), 'order = "interleaved"')
    assert [v["status"] for v in doc["variants"]] == ["ok", "ok"], [v["errors"] for v in doc["variants"]]
    for v in doc["variants"]:
        depth_runs = [r for r in v["runs"] if r["phase"].startswith("depth_")]
        assert len(depth_runs) == 2 * (2 + 2) + 1 and all(r["ok"] for r in depth_runs)
        assert set(v["metrics"]["decode_tok_s_at_depth"]) == {"0", "64"}
        assert v["metrics"]["prefill_ms_per_token_at_depth"]["64"]["32"] > 0
        assert v["validity"]["depth_cache"]["64"]["not_cached"] == 0
    # one step per depth: the d64 step of A (fill + 2 prefill + 2 decode) is five requests in a row, then B's
    a, b = ({r["extra"]["order_index"] for r in v["runs"] if r.get("depth_tokens") == 64} for v in doc["variants"])
    assert len(a) == len(b) == 1 and b == {min(a) + 1}
    models = [r["model"] for r in requests if "model" in r]
    assert models[-10:] == ["A"] * 5 + ["B"] * 5 and models[-18:-10] == ["A"] * 4 + ["B"] * 4  # d64 after d0


def test_without_a_prefix_cache_depth_runs_are_flagged(tmp_path):
    doc, _ = run_sweep(tmp_path, Behaviour(itl_s=0.001, prefix_cache=False), "")
    v = doc["variants"][0]
    assert v["status"] == "partial"
    bad = [r for r in v["runs"] if r["phase"] in ("depth_prefill", "depth_decode") and r["depth_tokens"] == 64]
    assert bad and all(not r["ok"] and r["reason"].startswith(NOT_CACHED) for r in bad)
    assert any(w.startswith(f"{NOT_CACHED} 4 of 4 runs at d64") for w in v["warnings"])
    d0 = [r for r in v["runs"] if r["phase"] == "depth_decode" and r["depth_tokens"] == 0]
    assert d0 and all(r["ok"] for r in d0)  # depth 0 is the ordinary request
