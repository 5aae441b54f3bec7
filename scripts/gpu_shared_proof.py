#!/usr/bin/env python3
"""The `gpu-shared:` proof: the same bench alone on the GPU, then with a second GPU process competing.

precmon's validity check (docs/design.md §4 "Trust") lists the GPU's compute processes through
NVML during the runs and flags any that is neither the server (found by its listening port)
nor precmon. This script shows it on a real GPU: it starts llama-server with full offload,
runs `precmon bench` alone, then again while a PyTorch matrix-multiply loop (bounded by its own
clock) shares the GPU, and prints both benches side by side: decode tok/s, the warnings, the
GPU figures behind them. Nothing is simulated: the competitor is a real CUDA process.

Usage (after `scripts/gpu_proof.py --work WORK --steps build+f16 --shape tiny`, which builds
llama.cpp with CUDA into WORK/cache and writes the model into WORK/models):
  python3 scripts/gpu_shared_proof.py --work WORK --out /tmp/pm/out
Needs: an NVIDIA GPU, torch with CUDA for the competitor, the package on PYTHONPATH (src/).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

# The competitor: bf16 matmuls for a fixed time, then it exits by itself (a killed script
# cannot leave it running for long).
COMPETITOR = """
import sys, time, torch
end = time.monotonic() + float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("competitor on", torch.cuda.get_device_name(0), flush=True)
while time.monotonic() < end:
    for _ in range(8):
        b = a @ a
    torch.cuda.synchronize()
"""


def say(msg: str) -> None:
    print(f"[gpu_shared_proof {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama-server exited with {proc.returncode} before it was healthy")
        try:
            if httpx.get(url + "/health", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"llama-server not healthy within {timeout_s:.0f} s")


def bench(url: str, label: str, out: Path) -> dict:
    argv = [sys.executable, "-m", "precmon", "bench", "--url", url, "--label", label, "--precision", "fp16"]
    argv += ["--quick", "--repeats", "5", "--output-tokens", "256", "--idle-s", "3", "--json", str(out)]
    say(" ".join(argv[1:]))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=400)
    (out.with_suffix(".log")).write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not out.exists():
        raise SystemExit(f"bench {label} failed ({proc.returncode}): {proc.stderr[-1500:]}")
    return json.loads(out.read_text())["variants"][0]


def summary_row(v: dict) -> dict:
    gpu = (v.get("validity") or {}).get("gpu") or {}
    return {
        "label": v["label"],
        "status": v["status"],
        "decode_tok_s": v["metrics"].get("decode_tok_s"),
        "power_decode_w": v["metrics"].get("power_decode_w"),
        "warnings": v.get("warnings") or [],
        "gpu_validity": gpu,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", type=Path, default=Path("/tmp/precmon-gpu"), help="gpu_proof.py's --work")
    p.add_argument("--model", type=Path, default=None, help="GGUF (default: WORK/models/tiny-F16.gguf)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--server-bin", type=Path, default=None, help="llama-server (default: the CUDA test-bed build)")
    p.add_argument("--competitor-s", type=float, default=120.0)
    a = p.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PRECMON_CACHE", str(a.work / "cache"))  # where gpu_proof.py builds
    a.model = a.model or a.work / "models" / "tiny-F16.gguf"
    if a.server_bin is None:
        from precmon.testbed.build_choice import choose_build
        from precmon.testbed.llama_build import chosen_build

        a.server_bin = chosen_build(choose_build()).tool("llama-server")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_argv = [str(a.server_bin), "-m", str(a.model), "-ngl", "99", "-c", "4096", "-np", "1"]
    server_argv += ["--host", "127.0.0.1", "--port", str(port), "--metrics", "--cache-ram", "0"]
    say("start " + " ".join(server_argv))
    log = open(a.out / "llama-server.log", "w")
    server = subprocess.Popen(server_argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    competitor = None
    try:
        wait_healthy(url, server, 300)
        alone = bench(url, "F16 alone", a.out / "alone.json")
        say(f"alone: decode {alone['metrics'].get('decode_tok_s')} tok/s, warnings {alone.get('warnings')}")
        competitor = subprocess.Popen(
            [sys.executable, "-c", COMPETITOR, str(a.competitor_s)],
            stdout=open(a.out / "competitor.log", "w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(8)  # CUDA context up and the loop running before the bench starts
        if competitor.poll() is not None:
            raise SystemExit(f"the competitor exited early: {(a.out / 'competitor.log').read_text()[-800:]}")
        shared = bench(url, "F16 shared", a.out / "shared.json")
        say(f"shared: decode {shared['metrics'].get('decode_tok_s')} tok/s, warnings {shared.get('warnings')}")
    finally:
        for proc in (competitor, server):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
    rows = [summary_row(alone), summary_row(shared)]
    (a.out / "summary.json").write_text(json.dumps(rows, indent=2))
    print("\n| bench | decode tok/s | decode W | warnings |\n| --- | ---: | ---: | --- |")
    for r in rows:
        codes = ", ".join(w.split(":")[0] + ":" for w in r["warnings"]) or "none"
        print(f"| {r['label']} | {r['decode_tok_s']} | {r['power_decode_w']} | {codes} |")
    for r in rows:
        for w in r["warnings"]:
            print(f"  {r['label']}: {w}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
