"""Launch-mode sweeps over the vLLM test bed.

The sweep file writer (fast): valid for precmon's own parser, one launch variant per precision.
A real sweep (two server starts, ~2 min): kill -9 of one vLLM server mid-variant fails that
variant with its cause named, and the sweep goes on to the next, which measures `ok`.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from precmon.sweep.events import Log, Progress
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.sweep.store import runs_from_journal
from precmon.testbed.vllm_env import VllmEnv
from precmon.testbed.vllm_model import TINY, VARIANTS
from precmon.testbed.vllm_sweep import SWEEP, sweep_toml
from tests.integration.test_vllm_testbed import vllm_env, vllm_models  # noqa: F401 - the session's venv and models


def test_sweep_file_parses_with_one_launch_variant_per_precision(tmp_path):
    env = VllmEnv(tmp_path / 'venv "quoted"')  # a path that needs escaping in TOML
    models = {name: tmp_path / "models" / name for name in VARIANTS}
    spec = parse_spec(sweep_toml(env, models), tmp_path / "s.toml")
    assert [v.label for v in spec.variants] == ["bf16", "fp16", "W8A8 int8", "int4 RTN (AWQ)", "bf16 + fp8 KV"]
    assert [v.precision for v in spec.variants] == ["bf16", "fp16", "int8", "int4", "bf16/fp8-kv"]
    for v in spec.variants:
        assert v.launch[:3] == [str(env.python), "-m", "vllm.entrypoints.openai.api_server"]
        assert v.url == f"http://127.0.0.1:{v.launch[v.launch.index('--port') + 1]}"
        assert v.env["VLLM_CPU_KVCACHE_SPACE"] == "1" and v.env["HF_HUB_OFFLINE"] == "1"
        # the adaptive top-K asks the baseline for up to 1,000 tokens a position: vLLM must allow them
        assert v.launch[v.launch.index("--max-logprobs") + 1] == "1000"
    served = [v.launch[v.launch.index("--served-model-name") + 1] for v in spec.variants]
    assert served == ["smollm2-bf16", "smollm2-fp16", "smollm2-w8a8-int8", "smollm2-awq-int4", "smollm2-bf16"]
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


def test_the_tiny_model_is_served_under_its_own_names(tmp_path):
    models = {name: Path("/m") / name for name in VARIANTS}
    spec = parse_spec(sweep_toml(VllmEnv(tmp_path), models, model=TINY), tmp_path / "s.toml")
    assert [v.launch[v.launch.index("--served-model-name") + 1] for v in spec.variants][:2] == [
        "tiny-bf16",
        "tiny-fp16",
    ]


def test_the_readme_vllm_sweep_file_is_valid_with_the_flags_it_names():
    """README.md "vLLM" is what a user copies: it must parse, one launched `vllm serve` per precision."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## vLLM\n", 1)[1].split("\n## ", 1)[0]
    text = section.split("```toml\n", 1)[1].split("```", 1)[0]
    spec = parse_spec(text, Path("README.md"))
    assert [v.precision for v in spec.variants] == ["bf16", "int8", "int4", "bf16/fp8-kv"]
    assert all(v.launch[:2] == ["vllm", "serve"] and v.server == "vllm" for v in spec.variants)
    ports = [v.launch[v.launch.index("--port") + 1] for v in spec.variants]
    assert [v.url for v in spec.variants] == [f"http://127.0.0.1:{p}" for p in ports]
    flags = [" ".join(v.launch) for v in spec.variants]
    assert "--quantization compressed-tensors" in flags[1] and "--quantization awq_marlin" in flags[2]
    assert "--kv-cache-dtype fp8" in flags[3]


# ---- a real vLLM server SIGKILLed mid-variant --------------------------------------------------
# A small plan: the killed variant never gets past its first decode; the next one measures in ~10 s.
# 512 output tokens: the tiny model streams 128 in 0.2-0.6 s on this box, and twice (2026-12-04) its
# first decode ended inside the 0.15 s before the kill, leaving a `partial` variant, not a killed one.
KILL_PLAN = {
    "output_tokens": 512,
    "decode_prompt_tokens": 32,
    "prefill_tokens": [128],
    "ttft_tokens": 256,
    "repeats": 2,
    "warmup": 1,
    "idle_s": 0.5,
    "timeout_s": 120.0,
}


def _group_gone(pgid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s  # orphaned children are reaped by init a moment later
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.integration
@pytest.mark.timeout(1200)
def test_kill_9_of_a_vllm_server_mid_variant_fails_it_and_the_sweep_goes_on(vllm_env, vllm_models, tmp_path):  # noqa: F811
    """Two launched servers (--enforce-eager: ~35-60 s each): bf16 is SIGKILLed while its first
    decode request streams; W8A8 int8 is then started and measured as if nothing had happened."""
    entries = [e for e in SWEEP if e.label in ("bf16", "W8A8 int8")]
    spec = parse_spec(sweep_toml(vllm_env, vllm_models, entries=entries, plan=KILL_PLAN, model=TINY, eager=True))
    launched = tmp_path / "launched"
    groups: list[int] = []  # process group of each server, taken once it is ready
    killed: list[dict] = []
    timers: list[threading.Timer] = []

    def kill_bf16() -> None:
        rec = json.loads((launched / "bf16.json").read_text())
        os.kill(rec["pid"], signal.SIGKILL)  # the API server: the process precmon launched
        killed.append(rec)

    def on_event(ev: object) -> None:
        if isinstance(ev, Log) and "server ready" in ev.text:
            groups.extend(json.loads(p.read_text())["pgid"] for p in launched.iterdir())
        # the first decode request is about to go out: kill its server while it streams 512 tokens
        if isinstance(ev, Progress) and ev.label == "bf16" and ev.text.startswith("decode") and not timers:
            timers.append(threading.Timer(0.15, kill_bf16))
            timers[0].start()

    doc = json.loads(SweepRunner(spec, tmp_path, on_event=on_event).run().read_text())
    for t in timers:
        t.join()
    assert killed, "the bf16 server was never killed"
    bf16, int8 = doc["variants"]
    assert bf16["status"] == "failed", bf16["errors"]
    # errors[0] is what the headless line, the TUI and the report show: the cause, not a connection error
    assert bf16["errors"][0].startswith("the launched server exited during the run (killed by signal 9)")
    assert int8["status"] == "ok", int8["errors"]
    assert int8["precision"] == "int8" and int8["metrics"]["decode_tok_s"] > 0
    # the journal holds every run of both variants, the killed one's warm-up and failed request too
    journal = runs_from_journal(tmp_path / "journal.jsonl")
    assert [r.phase for r in journal["bf16"]] == [r["phase"] for r in bf16["runs"]]
    assert "warmup" in [r.phase for r in journal["bf16"]] and any(not r.ok for r in journal["bf16"])
    assert len(journal["W8A8 int8"]) == len(int8["runs"])
    # nothing is left: both process groups (API server, engine core, workers) are gone
    assert len(groups) == 2 and groups[0] == killed[0]["pgid"]
    assert all(_group_gone(g) for g in groups), groups
    assert list(launched.iterdir()) == []
