"""A ladder's sweep file run as written, with the real llama-server on the CPU: its servers' slots
are erased between steps (`--slot-save-path`) and their KV cache's size is read from their logs
(`-lv 4`), so none of precmon's own slot or KV notes is raised (docs/design.md §8 "Ladder"); and
the TTFT size beyond the server's context is measured at the largest prompt that fits."""

from __future__ import annotations

import json
import shutil

import pytest

from precmon.cli import main
from precmon.core.settings import BenchSettings
from precmon.measure.depth.slots import NOTE_NOT_ERASED
from precmon.servers.detect import make_server
from precmon.servers.launch import free_port
from precmon.testbed import llama_build as builder
from tests.fakes.measure import measure

pytestmark = pytest.mark.integration


def test_a_ladder_sweep_file_run_as_written_raises_no_slot_or_kv_note(tiny_models, llama_build, tmp_path, capsys):
    builder.build_llama("cpu")  # the cached build: its build record beside the binaries
    wide = tmp_path / "tiny-F16.gguf"
    shutil.copyfile(tiny_models["F16"], wide)
    server, quantize = llama_build.tool("llama-server"), llama_build.tool("llama-quantize")
    ladder = ["ladder", str(wide), "--rungs", "F16", "--port", str(free_port())]
    assert main([*ladder, "--server", str(server), "--quantize", str(quantize)]) == 0
    assert f"llama-server in the sweep file: {server} (--server)" in capsys.readouterr().out
    out = tmp_path / "out"
    code = main(["sweep", str(tmp_path / "ladder.toml"), "--headless", "--quick", "--out", str(out)])
    doc = json.loads((out / "results.json").read_text())
    assert code == 0, [v.get("errors") for v in doc["variants"]]
    for v in doc["variants"]:
        said = v.get("errors", []) + v.get("notes", []) + v.get("warnings", [])
        assert not [line for line in said if NOTE_NOT_ERASED in line or "KV" in line], said
        assert v["validity"]["depth_slots"]["erased"] is True and v["validity"]["depth_slots"]["slots"] > 1
        kv = v["kv_memory"]
        assert "reason" not in kv and kv["bytes_per_token"] > 0 and kv["from"] == "the server's log (llama_kv_cache)"
        assert v["compute_path"]["backend"] == "CPU" and v["compute_path"]["build"]["flavour"] == "cpu"
    assert doc["settings"]["prefill_tokens"] == BenchSettings.quick().prefill_tokens  # --quick's plan


def test_ttft_beyond_the_context_is_measured_at_the_largest_prompt_that_fits(router_server):
    """A 2,048-token server asked for TTFT at 4,096: measured at 2,047 (a prompt and its first
    token fill the context exactly), keyed by that size, and said in one line."""
    s = BenchSettings(
        output_tokens=8, decode_prompt_tokens=16, prefill_tokens=[128], ttft_tokens=4096, repeats=1, warmup=0, idle_s=0
    )
    r = measure(make_server(router_server.url), s, model="tiny-Q8_0")
    assert r.status == "ok", r.errors
    assert set(r.metrics["ttft_s"]) == {"2047"} and r.metrics["ttft_s"]["2047"] > 0
    ttft_runs = [run for run in r.runs if run.phase == "ttft"]
    assert [(run.target_prompt_tokens, run.prompt_tokens, run.ok) for run in ttft_runs] == [(2047, 2047, True)]
    note = "ttft 4096 beyond the server's context (2048 tokens): measured at 2047 tokens, the largest prompt that fits"
    assert note in r.errors
