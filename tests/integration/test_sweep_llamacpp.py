"""Real sweeps over the synthetic models: router switching, launch mode, failures, Ctrl-C, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from precmon.servers.launch import free_port
from precmon.sweep.events import RunLanded, VariantFinished
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from precmon.sweep.store import runs_from_journal

pytestmark = pytest.mark.integration

SMALL = """\
[defaults]
url = "{url}"
output_tokens = 32
decode_prompt_tokens = 16
prefill_tokens = [128]
ttft_tokens = 256
repeats = 2
warmup = 1
idle_s = 0.2
cooldown_s = 0
"""


def variant(label: str, **kw: object) -> str:
    lines = [f'label = "{label}"', f'precision = "{kw.pop("precision", label.lower())}"']
    for k, v in kw.items():
        lines.append(f"{k} = {json.dumps(v)}")
    return "\n[[variant]]\n" + "\n".join(lines) + "\n"


def test_router_sweep_with_a_failing_variant_goes_on(router_server, tmp_path):
    text = (
        SMALL.format(url=router_server.url)
        + variant("F16", model="tiny-F16")
        + variant("MISSING", model="tiny-NOPE")
        + variant("Q4_K_M", precision="int4", model="tiny-Q4_K_M")
    )
    events = []
    runner = SweepRunner(parse_spec(text), tmp_path, on_event=events.append)
    path = runner.run()
    doc = json.loads(path.read_text())
    by = {v["label"]: v for v in doc["variants"]}
    assert [v["label"] for v in doc["variants"]] == ["F16", "MISSING", "Q4_K_M"]
    assert by["F16"]["status"] == "ok" and by["Q4_K_M"]["status"] == "ok"
    assert by["MISSING"]["status"] == "failed"
    assert any("tiny-NOPE" in e for e in by["MISSING"]["errors"])
    assert by["Q4_K_M"]["metrics"]["decode_tok_s"] > by["F16"]["metrics"]["decode_tok_s"]
    # every run was journaled as it landed, before the variant finished
    journal = runs_from_journal(tmp_path / "journal.jsonl")
    assert len(journal["F16"]) == len(by["F16"]["runs"]) == 1 + 2 + 2 + 2
    landed = [e for e in events if isinstance(e, RunLanded)]
    finished = [e for e in events if isinstance(e, VariantFinished)]
    assert len(landed) == 14 and len(finished) == 3


def launch_argv(llama_build, model: Path, port: int) -> list[str]:
    return [
        str(llama_build.tool("llama-server")),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "-c",
        "1024",
        "-np",
        "1",
    ]


def test_launch_mode_start_measure_stop_and_a_variant_that_cannot_start(llama_build, tiny_models, tmp_path):
    p1, p2 = free_port(), free_port()
    text = (
        SMALL.format(url="http://127.0.0.1:1")
        + variant(
            "Q8_0",
            launch=launch_argv(llama_build, tiny_models["Q8_0"], p1),
            url=f"http://127.0.0.1:{p1}",
            ready_timeout_s=60,
        )
        + variant(
            "BROKEN",
            launch=launch_argv(llama_build, tmp_path / "missing.gguf", p2),
            url=f"http://127.0.0.1:{p2}",
            ready_timeout_s=60,
        )
    )
    runner = SweepRunner(parse_spec(text), tmp_path)
    doc = json.loads(runner.run().read_text())
    q8, broken = doc["variants"]
    assert q8["status"] == "ok", q8["errors"]
    assert q8["strategy"] == "launch"
    assert broken["status"] == "failed"
    assert "exited with code" in broken["errors"][0] and "last log lines" in broken["errors"][0]
    # the launched server was stopped: its port is free again
    import socket

    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", p1)) != 0
    assert (tmp_path / "logs" / "Q8_0.log").exists()


def test_server_killed_mid_sweep_marks_the_cell_failed_and_goes_on(llama_build, tiny_models, tmp_path):
    p1, p2 = free_port(), free_port()
    text = (
        SMALL.format(url="http://127.0.0.1:1").replace("repeats = 2", "repeats = 3")
        + variant("F16", launch=launch_argv(llama_build, tiny_models["F16"], p1), url=f"http://127.0.0.1:{p1}")
        + variant("Q4_K_M", launch=launch_argv(llama_build, tiny_models["Q4_K_M"], p2), url=f"http://127.0.0.1:{p2}")
    )
    spec = parse_spec(text)
    killed = []

    def on_event(ev):
        if isinstance(ev, RunLanded) and ev.label == "F16" and ev.run.phase == "decode" and not killed:
            for proc in psutil.process_iter(["cmdline"]):
                if str(p1) in (proc.info["cmdline"] or []):
                    os.kill(proc.pid, signal.SIGKILL)
                    killed.append(proc.pid)

    doc = json.loads(SweepRunner(spec, tmp_path, on_event=on_event).run().read_text())
    f16, q4 = doc["variants"]
    assert killed
    assert f16["status"] in ("partial", "failed")
    # the cause is named (not only a connection reset), whichever request the kill interrupted
    assert any("exited during the run (killed by signal 9)" in e for e in f16["errors"]), f16["errors"]
    assert f16["metrics"]["decode_tok_s"] is not None  # what was measured before the crash is kept
    assert q4["status"] == "ok"


def test_ctrl_c_keeps_results_and_resume_finishes(router_server, tmp_path):
    text = (
        SMALL.format(url=router_server.url).replace("repeats = 2", "repeats = 3")
        + variant("F16", model="tiny-F16")
        + variant("Q8_0", precision="int8", model="tiny-Q8_0")
        + variant("Q4_K_M", precision="int4", model="tiny-Q4_K_M")
    )
    spec_file = tmp_path / "sweep.toml"
    spec_file.write_text(text)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "precmon.cli", "sweep", str(spec_file), "--headless", "--out", str(out)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # interrupt once the first variant is saved
        if (out / "results.json").exists() and "F16" in (out / "results.json").read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    doc = json.loads((out / "results.json").read_text())
    labels = {v["label"]: v["status"] for v in doc["variants"]}
    assert labels["F16"] == "ok"
    assert len(labels) < 3 or labels.get("Q4_K_M") != "ok"
    done_before = [v["label"] for v in doc["variants"] if v["status"] == "ok"]

    proc = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "already measured, skipped" in proc.stderr
    doc2 = json.loads((out / "results.json").read_text())
    assert [v["label"] for v in doc2["variants"]] == ["F16", "Q8_0", "Q4_K_M"]
    assert all(v["status"] == "ok" for v in doc2["variants"])
    # resumed variants were not re-measured: their runs are the very same
    for v in doc2["variants"]:
        if v["label"] in done_before:
            assert v == next(x for x in doc["variants"] if x["label"] == v["label"])
