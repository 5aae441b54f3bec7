"""KV-cache precision on the real vLLM CPU test bed: bf16 (`auto`) vs `--kv-cache-dtype fp8` on
the same model, two launched servers (--enforce-eager). The declared type is read back from
vLLM's own `cache_config_info`, and the cache the engine sized from the same 1 GiB
(VLLM_CPU_KVCACHE_SPACE=1) holds about twice the tokens in fp8 (docs/design.md §4 "KV memory").
vLLM's CPU build has an fp8 KV cache only with AVX-512 or AMX: on a CPU without either the same
sweep must fail that variant with vLLM's own reason and measure the other (docs/testbed-vllm.md).
Run under `flock /work/wt/vllm.lock` where several people share the machine."""

from __future__ import annotations

import json

import pytest

from precmon.sweep.kv_memory import VLLM_FROM
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.testbed.cpu_flags import cpu_flags, vllm_fp8_kv_ok
from precmon.testbed.vllm_model import TINY
from precmon.testbed.vllm_sweep import SWEEP, sweep_toml
from tests.integration.test_vllm_testbed import vllm_env, vllm_models  # noqa: F401 - the session's venv and models

PLAN = {  # the least that measures: KV figures come from the server's startup, not from the load
    "output_tokens": 16,
    "decode_prompt_tokens": 16,
    "prefill_tokens": [64],
    "ttft_tokens": 64,
    "repeats": 1,
    "warmup": 1,
    "idle_s": 0.2,
    "timeout_s": 120.0,
}
LABELS = ("bf16", "bf16 + fp8 KV")
DECLARED = {"bf16": "auto", "bf16 + fp8 KV": "fp8"}
FP8_REFUSED = "FP8 KV cache on CPU requires x86 with AVX-512 or AMX"  # vLLM's own words (cpu_attn.py)


def declare_kv(text: str) -> str:
    """The sweep file with each variant's `kv_cache_dtype` declared after its label."""
    for label, kv in DECLARED.items():
        text = text.replace(f"label = {json.dumps(label)}\n", f'label = {json.dumps(label)}\nkv_cache_dtype = "{kv}"\n')
    return text


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_fp8_kv_is_read_back_and_holds_twice_the_tokens(vllm_env, vllm_models, tmp_path):  # noqa: F811
    entries = [e for e in SWEEP if e.label in LABELS]
    text = declare_kv(sweep_toml(vllm_env, vllm_models, entries=entries, plan=PLAN, model=TINY, eager=True))
    spec = parse_spec(text)
    assert [v.kv_cache_dtype for v in spec.variants] == ["auto", "fp8"]
    doc = json.loads(SweepRunner(spec, tmp_path).run().read_text())
    by = {v["label"]: v for v in doc["variants"]}
    if not vllm_fp8_kv_ok(cpu_flags()):
        print(f"\nno AVX-512 or AMX here: the fp8 KV variant failed with {by['bf16 + fp8 KV']['errors']}")
        assert by["bf16"]["status"] == "ok", by["bf16"]["errors"]
        assert by["bf16"]["kv_memory"]["from"] == VLLM_FROM
        assert by["bf16 + fp8 KV"]["status"] == "failed"
        assert any(FP8_REFUSED in e for e in by["bf16 + fp8 KV"]["errors"]), by["bf16 + fp8 KV"]["errors"]
        return
    for label, kv in DECLARED.items():
        v = by[label]
        assert v["status"] == "ok", v["errors"]
        assert v["kv_cache_dtype"] == kv
        back = v["kv_cache_read_back"]
        assert (back["k"], back["v"], back["from"]) == (kv, kv, "server.flags (vllm:cache_config_info)")
        assert not any(w.startswith("kv-cache-mismatch:") for w in v.get("warnings") or [])
        assert v["kv_memory"]["from"] == VLLM_FROM, v["kv_memory"]
    bf16, fp8 = (by[x]["kv_memory"] for x in LABELS)
    print(f"\nvLLM KV memory: bf16 {bf16}\nfp8 {fp8}\nflags {by['bf16 + fp8 KV']['server'].get('flags')}")
    assert 1.9 < fp8["capacity_tokens"] / bf16["capacity_tokens"] < 2.1
    assert 0.45 < fp8["bytes_per_token"] / bf16["bytes_per_token"] < 0.55
    assert fp8["context_tokens"] == bf16["context_tokens"] == 2048  # the test bed's max_model_len
    assert fp8["max_concurrency_at_ctx"] > 1.9 * bf16["max_concurrency_at_ctx"]
    assert by["bf16 + fp8 KV"]["metrics"]["kv_capacity_tokens"] == fp8["capacity_tokens"]
    # a server precmon did not launch has only cache_config_info: its blocks give the same capacity
    for label, mem in zip(LABELS, (bf16, fp8), strict=True):
        flags = by[label]["server"]["flags"]
        assert flags["num_gpu_blocks"] * flags["block_size"] == mem["capacity_tokens"], flags
