"""Memory fit on the real llama-server (docs/design.md §4 "Memory fit"): a launch sweep of one model
with an f16 and a q8_0 KV cache, each started without a log level of its own, so precmon adds the
one at which llama-server logs its KV cache; each variant's `fit` obeys weights + users × context
× KV bytes ≤ usable memory (and one user more would not fit), and q8_0 fits more users at 32K."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from precmon.report.export import render
from precmon.report.load import load_document
from precmon.report.render.terminal import render_terminal
from precmon.report.sections import build_report
from precmon.servers.launch import free_port
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.integration.test_kv_cache_llamacpp import QUICK, kv_variant

pytestmark = pytest.mark.integration


def _argv(llama_build, model, port: int, *kv: str) -> list[str]:
    exe = str(llama_build.tool("llama-server"))
    return [exe, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-c", "1024", "-np", "1", *kv]


def test_launch_sweep_writes_fit_records_q8_0_fits_more_users(llama_build, tiny_models, tmp_path):
    model = tiny_models["Q4_K_M"]
    p1, p2 = free_port(), free_port()
    text = (
        QUICK
        + kv_variant("KV-F16", "f16", _argv(llama_build, model, p1), p1)
        + kv_variant("KV-Q8", "q8_0", _argv(llama_build, model, p2, "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "on"), p2)
    )
    logs: list[str] = []
    path = SweepRunner(parse_spec(text), tmp_path, on_event=lambda ev: logs.append(str(getattr(ev, "text", "")))).run()
    doc = json.loads(path.read_text())
    by = {v["label"]: v for v in doc["variants"]}
    assert any("adding -lv 4" in line for line in logs), logs
    for label, v in by.items():
        assert v["status"] == "ok", v["errors"]
        assert v["launch"][-2:] == ["-lv", "4"]  # what ran is what is recorded
        fit = v["fit"]
        print(f"\n{label} fit: {fit}")
        usable, weights, kv = fit["usable_bytes"], fit["weights_bytes"], fit["kv_bytes_per_token"]
        assert fit["basis"].startswith("/proc/meminfo: MemAvailable") and "before the server started" in fit["basis"]
        assert weights == v["model_info"]["size_bytes"] and kv == v["metrics"]["kv_bytes_per_token"]
        assert 0 < weights < usable and kv > 0
        for ctx, users in fit["users_at"].items():
            assert weights + users * int(ctx) * kv <= usable < weights + (users + 1) * int(ctx) * kv
        for users, ctx in fit["context_for_users"].items():
            assert weights + int(users) * ctx * kv <= usable < weights + int(users) * (ctx + 1) * kv
        # the server's own cache (-c 1024) sits inside the fit
        assert fit["server_capacity_tokens"] == 1024 and fit["check"].startswith("ok:")
    f16, q8 = by["KV-F16"]["fit"], by["KV-Q8"]["fit"]
    assert q8["kv_bytes_per_token"] < f16["kv_bytes_per_token"]
    assert q8["users_at"]["32768"] > f16["users_at"]["32768"] > 0

    loaded = load_document(path)  # the loader checks the record
    for fmt, heading in (("md", "## Memory fit"), ("html", "<h2>Memory fit</h2>")):
        assert heading in render(loaded, fmt), fmt
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(render_terminal(build_report(loaded)))
    assert "Memory fit" in out.getvalue() and "Users @ 32K" in out.getvalue()
    assert json.loads(render(loaded, "json"))["variants"][1]["fit"] == q8
    csv = render(loaded, "csv")
    assert f"KV-Q8,int4,fit_users_at,32768,{q8['users_at']['32768']}," in csv
