"""precmon bench against a real llama-server on the synthetic models (CPU)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from precmon.core.settings import BenchSettings
from precmon.servers.detect import make_server
from tests.fakes.measure import measure

pytestmark = pytest.mark.integration

SETTINGS = BenchSettings(
    output_tokens=128,
    decode_prompt_tokens=64,
    prefill_tokens=[256, 1024],
    ttft_tokens=512,
    repeats=3,
    warmup=1,
    idle_s=0.5,
)


@pytest.fixture(scope="module")
def results(router_server):
    server = make_server(router_server.url)
    out = {m: measure(server, SETTINGS, model=f"tiny-{m}") for m in ("F16", "Q4_K_M")}
    server.close()
    return out


def test_detects_llamacpp_router(router_server):
    server = make_server(router_server.url)
    assert server.kind == "llamacpp" and server.is_router()
    assert {m.name for m in server.list_models()} >= {"tiny-F16", "tiny-Q8_0", "tiny-Q4_K_M"}


def test_bench_runs_end_to_end_with_valid_runs(results):
    for label, r in results.items():
        assert r.status == "ok", (label, r.errors)
        assert r.precision == label
        measured = [x for x in r.runs if x.phase in ("decode", "prefill", "ttft")]
        assert len(measured) == 3 * 4
        assert all(x.ok for x in measured)


def test_prompts_have_exactly_the_asked_token_count(results):
    for r in results.values():
        for run in r.runs:
            assert run.prompt_tokens == run.target_prompt_tokens  # server usage == target
            assert run.server_timings["prompt_n"] == run.prompt_tokens


def test_no_prompt_cache_hits(results):
    for r in results.values():
        for run in r.runs:
            assert run.cached_tokens == 0
            assert run.server_timings["cache_n"] == 0


def test_decode_within_10_percent_of_server_timings(results):
    for label, r in results.items():
        m = r.metrics
        assert m["decode_tok_s"] == pytest.approx(m["server_decode_tok_s"], rel=0.10), label


def test_q4_k_m_decodes_faster_than_f16(results):
    assert results["Q4_K_M"].metrics["decode_tok_s"] > results["F16"].metrics["decode_tok_s"]


def test_model_size_from_server(results):
    assert results["F16"].metrics["memory_gb"] > 2.5 * results["Q4_K_M"].metrics["memory_gb"]


def test_prompt_beyond_context_is_skipped_and_reported(router_server):
    server = make_server(router_server.url)
    s = BenchSettings(
        output_tokens=16,
        decode_prompt_tokens=16,
        prefill_tokens=[128, 4096],
        ttft_tokens=None,
        repeats=1,
        warmup=0,
        idle_s=0,
    )
    r = measure(server, s, model="tiny-Q8_0")
    assert r.metrics["prefill_ms_per_token"]["4096"] is None
    assert r.metrics["prefill_ms_per_token"]["128"] is not None
    assert any("prefill 4096 skipped: beyond the server's context (2048 tokens)" in e for e in r.errors)


def test_cli_bench_json_and_table(router_server, tmp_path):
    out = tmp_path / "q8.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "precmon.cli",
            "bench",
            "--url",
            router_server.url,
            "--model",
            "tiny-Q8_0",
            "--quick",
            "--json",
            str(out),
            "--no-power",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "precmon.results/1"
    (v,) = doc["variants"]
    assert v["label"] == "tiny-Q8_0" and v["server"]["kind"] == "llamacpp"
    assert v["metrics"]["decode_tok_s"] > 0
    assert v["metrics"]["power_decode_w"] is None
    assert "decode" in proc.stdout.lower()


def test_cli_bench_refused_connection_is_one_line():
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "bench", "--url", "http://127.0.0.1:9", "--quick"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0
    assert "cannot connect to http://127.0.0.1:9" in proc.stderr


def test_switch_while_another_client_autoloads_the_model(router_server):
    """A /metrics?model= scrape (the TUI's watch) autoloads a model; our explicit load must not fail."""
    import httpx

    server = make_server(router_server.url)
    server.ensure_loaded("tiny-F16")
    import threading
    import time

    other = threading.Thread(
        target=httpx.get, args=(f"{router_server.url}/props",), kwargs={"params": {"model": "tiny-Q8_0"}, "timeout": 30}
    )
    other.start()  # the router starts loading tiny-Q8_0 for the other client...
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and server._status("tiny-Q8_0").get("value") != "loading":
        time.sleep(0.01)  # ...and we ask while it is still loading (without the fix: HTTP 400)
    server.ensure_loaded("tiny-Q8_0")
    other.join()
    loaded = {m.name for m in server.list_models() if m.loaded}
    assert loaded == {"tiny-Q8_0"}
