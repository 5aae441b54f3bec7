"""`precmon demo --headless`, whole, as a newcomer runs it: real llama-server, the real model's
ladder F16/Q8_0/Q4_0/NVFP4/MXFP4, quality and answers on each (issue "real ladder", design §4)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # ~3 min on 2 quiet cores

LADDER = ["F16", "Q8_0", "Q4_0", "MXFP4", "NVFP4"]


def _run_demo(args: list[str], timeout_s: float) -> subprocess.CompletedProcess:
    """`precmon demo ARGS` in its own session; on a timeout it gets Ctrl-C (it stops its
    llama-server and saves), then SIGKILL: no router is left behind whatever happens."""
    cmd = [sys.executable, "-m", "precmon", "demo", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout_s)
    except BaseException:
        os.killpg(p.pid, signal.SIGINT)
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
        raise
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def test_the_demo_sweeps_the_real_ladder_with_quality_answers_and_true_labels(real_ladder, llama_build, tmp_path):
    out = tmp_path / "out"
    started = time.monotonic()
    proc = _run_demo(["--headless", "--out", str(out)], timeout_s=840)
    wall_s = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-3000:]
    print(f"\n[demo] wall time {wall_s:.0f} s on {os.cpu_count()} cores")
    doc = json.loads((out / "results.json").read_text())
    by = {v["label"]: v for v in doc["variants"]}
    assert sorted(by) == sorted(LADDER) and doc["variants"][0]["label"] == "F16"  # the baseline first
    assert {label: v["status"] for label, v in by.items()} == dict.fromkeys(LADDER, "ok")
    assert by["NVFP4"]["precision"] == "nvfp4" and "NVFP4" in proc.stdout  # the column is named NVFP4
    for label, v in by.items():
        q = v["quality"]
        assert q["baseline"] == "F16" and q["baseline_topk_mass"] > 0.5, (label, q)
        assert v["metrics"]["quality_kld_mean"] is not None, label
        answer = v["answer"]
        assert answer["text"] and answer["tokens"] <= 48 and "sky" in answer["prompt"], (label, answer)
        w = v["weights"]
        assert w["main_type"] == label and "upcast of the Q4_1 release" in w["name"], (label, w)
        assert v["compute_path"]["backend"] == "CPU", v["compute_path"]
        assert v["compute_path"]["build"]["flavour"] == "cpu", v["compute_path"]  # the router's build record
        fallback = [x for x in v.get("warnings", []) if x.startswith("fallback-kernel:")]
        assert bool(fallback) is (label in ("NVFP4", "MXFP4")), (label, v.get("warnings"))
    assert by["MXFP4"]["weights"]["file_type"] == "Q8_0"  # the header, not the file type, names it
    # the bits go down the ladder, and KL goes up from Q8_0 to the 4-bit rungs
    m = {label: v["metrics"] for label, v in by.items()}
    assert (
        m["F16"]["weights_bits_per_weight"]
        > m["Q8_0"]["weights_bits_per_weight"]
        > m["NVFP4"]["weights_bits_per_weight"]
    )
    assert all(m["Q8_0"]["quality_kld_mean"] < m[q]["quality_kld_mean"] for q in ("Q4_0", "NVFP4", "MXFP4"))
    assert by["Q8_0"]["answer"]["text"].split()[:8] == by["F16"]["answer"]["text"].split()[:8]
    md = subprocess.run(
        [sys.executable, "-m", "precmon", "report", str(out / "results.json"), "--format", "md"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert md.returncode == 0 and "## Answers to" in md.stdout and "## What ran" in md.stdout
    assert "NVFP4 unpacked to int8 dot products" in md.stdout
