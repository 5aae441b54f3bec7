"""The vLLM sweep file writer: valid for precmon's own parser, one launch variant per precision (fast)."""

from __future__ import annotations

from pathlib import Path

from precmon.sweep.spec import parse_spec
from precmon.testbed.vllm_env import VllmEnv
from precmon.testbed.vllm_model import VARIANTS
from precmon.testbed.vllm_sweep import sweep_toml


def test_sweep_file_parses_with_one_launch_variant_per_precision(tmp_path):
    env = VllmEnv(tmp_path / 'venv "quoted"')  # a path that needs escaping in TOML
    models = {name: tmp_path / "models" / name for name in VARIANTS}
    spec = parse_spec(sweep_toml(env, models), tmp_path / "s.toml")
    assert [v.label for v in spec.variants] == ["bf16", "fp16", "W8A8 int8", "AWQ int4", "bf16 + fp8 KV"]
    assert [v.precision for v in spec.variants] == ["bf16", "fp16", "int8", "int4", "bf16/fp8-kv"]
    for v in spec.variants:
        assert v.launch[:3] == [str(env.python), "-m", "vllm.entrypoints.openai.api_server"]
        assert v.url == f"http://127.0.0.1:{v.launch[v.launch.index('--port') + 1]}"
        assert v.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and v.env["HF_HUB_OFFLINE"] == "1"
    assert len({v.url for v in spec.variants}) == 5
    assert spec.settings.output_tokens == 64 and spec.settings.prefill_tokens == [128, 512]
    assert all(v.ready_timeout_s == 600.0 for v in spec.variants)
    fp8 = spec.variants[-1]
    assert fp8.launch[fp8.launch.index("--model") + 1] == str(models["bf16"])
    assert fp8.launch[-2:] == ["--kv-cache-dtype", "fp8"]


def test_eager_adds_enforce_eager_to_every_launch(tmp_path):
    models = {name: Path("/m") / name for name in VARIANTS}
    spec = parse_spec(sweep_toml(VllmEnv(tmp_path), models, eager=True), tmp_path / "s.toml")
    assert all(v.launch[-1] == "--enforce-eager" for v in spec.variants)
