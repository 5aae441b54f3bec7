"""Context depth on the real llama-server (tiny Q4_K_M, two slots): depth 0 vs 2048.

Decode at d2048 is slower than at d0; every depth run is valid with the cached count the fill
left (2048, within a few tokens: llama.cpp counts exactly, the next nonce's "[" may match too);
the timing runs' no-cache check still holds beside them (cached 0). A server that does not reuse
the prefix (here: the adapter sends `cache_prompt: false` for the depth requests too) has its
depth runs excluded and the variant flagged `depth-not-cached:`. Two slots (`-np 2`) because
llama-server then picks a slot by prefix similarity or LRU: the requests name slot 0.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from typing import Any

import pytest

from precmon.measure.bench import Bench, BenchSettings
from precmon.measure.depth.steps import NOT_CACHED, SLACK_TOKENS
from precmon.report.export import render
from precmon.report.importers.dispatch import load_any
from precmon.servers.base import StreamRequest
from precmon.servers.protocols.llamacpp import LlamaCppServer

pytestmark = pytest.mark.integration

SETTINGS = BenchSettings(
    output_tokens=32,
    decode_prompt_tokens=16,
    prefill_tokens=[64],
    ttft_tokens=None,
    repeats=2,
    warmup=1,
    idle_s=0.0,
    depth=[0, 2048],
)


class NoReuse(LlamaCppServer):
    """llama-server asked never to reuse a prompt, depth requests included."""

    def payload(self, req: StreamRequest) -> dict[str, Any]:
        return super().payload(req) | {"cache_prompt": False}


@pytest.fixture(scope="module")
def depth_server(llama_server_factory, tiny_models):
    return llama_server_factory(model=tiny_models["Q4_K_M"], ctx_tokens=8192, extra=["-np", "2"])


def test_depth_0_vs_2048_valid_with_the_prefix_cached(depth_server):
    server = LlamaCppServer(depth_server.url)
    res = Bench(server, SETTINGS).run()
    server.close()
    assert res.status == "ok", res.errors
    decode = res.metrics["decode_tok_s_at_depth"]
    print("depth figures:", decode, res.metrics["prefill_ms_per_token_at_depth"], res.metrics["depth_fill_ms"])
    assert decode["2048"] < decode["0"]
    assert res.metrics["depth_fill_ms"]["2048"] > 0
    fills = [r for r in res.runs if r.phase == "depth_fill"]
    assert len(fills) == 1 and fills[0].ok and fills[0].prompt_tokens == 2048
    measured = [r for r in res.runs if r.phase in ("depth_prefill", "depth_decode")]
    assert len(measured) == 2 * 2 * 2 and all(r.ok for r in measured)
    for r in measured:
        if r.depth_tokens == 2048:
            assert 2048 <= r.cached_tokens <= 2048 + SLACK_TOKENS, r.cached_tokens
            assert r.server_timings["cache_n"] == r.cached_tokens
            new = 64 if r.phase == "depth_prefill" else 16
            assert r.prompt_tokens == 2048 + new and r.server_timings["prompt_n"] <= new
        else:
            assert r.cached_tokens == 0
    assert res.validity["depth_cache"]["2048"]["not_cached"] == 0
    # The cache checks only: depth-baseline-mismatch compares two decode medians, which a loaded CI box
    # can move apart by more than its 15% on its own (this server has two slots, no unified KV).
    cache_codes = ("depth-not-cached:", "depth-cache-beyond-prefix:")
    assert not any(w.startswith(cache_codes) for w in res.warnings), res.warnings
    timing = [r for r in res.runs if r.phase in ("decode", "prefill")]
    assert timing and all(r.ok and r.cached_tokens == 0 for r in timing)  # the no-cache check is unchanged


def test_a_prefix_that_was_not_cached_is_flagged(depth_server):
    server = NoReuse(depth_server.url)
    settings = BenchSettings(**(SETTINGS.to_dict() | {"repeats": 1, "depth": [2048], "prefill_tokens": [64]}))
    res = Bench(server, settings).run()
    server.close()
    measured = [r for r in res.runs if r.phase in ("depth_prefill", "depth_decode")]
    assert measured and all(not r.ok and r.reason.startswith(NOT_CACHED) for r in measured)
    assert res.status == "partial"
    assert res.metrics["decode_tok_s_at_depth"] == {"2048": None}
    warnings = [w for w in res.warnings if w.startswith(NOT_CACHED)]
    assert warnings == [
        f"{NOT_CACHED} 2 of 2 runs at d2048 had 0 cached prompt tokens, expected 2048 (-4/+4): "
        "the prefix was not reused; those runs are excluded"
    ]


def test_compare_reads_a_real_llama_bench_depth_json(llama_build, tiny_models, tmp_path):
    """llama-bench -d 0,512 -o json → `compare --format llama-bench` gives its own @ d512 rows back."""
    argv = [str(llama_build.tool("llama-bench")), "-m", str(tiny_models["Q4_K_M"]), "-p", "64", "-n", "16"]
    proc = subprocess.run(
        [*argv, "-d", "0,512", "-r", "2", "-t", "2", "-o", "json"], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-500:]
    tests = json.loads(proc.stdout)
    path = tmp_path / "lb.json"
    path.write_text(proc.stdout, encoding="utf-8")
    (v,) = load_any(path).variants
    tg = next(t for t in tests if t["n_gen"] == 16 and t["n_depth"] == 512)
    assert v.metrics["decode_tok_s_at_depth"]["512"] == statistics.median(tg["samples_ts"])
    table = render(load_any(path), "llama-bench")
    row = next(line for line in table.splitlines() if "tg16 @ d512" in line)
    mean = float(row.rstrip(" |").rsplit("|", 1)[1].split("±")[0])
    assert mean == pytest.approx(tg["avg_ts"], abs=0.006)
    assert "pp64 @ d512" in table
