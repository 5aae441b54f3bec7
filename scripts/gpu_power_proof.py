#!/usr/bin/env python3
"""Proof on a real NVIDIA GPU: do precmon's energy windows agree with NVML's power readings?

Runs the `PowerSampler` on the NVML source at 10-20 Hz, measures an idle window and a load window
(a torch matmul loop, or any command given with --load-cmd), plus a series of short windows under
load, and compares for each window:
  - the energy-window average watts (NVML total-energy counter delta ÷ duration: "counter"),
  - the mean of the instant-power samples (NVML_FI_DEV_POWER_INSTANT),
  - the mean of the nvmlDeviceGetPowerUsage samples (a 1-second average on Ampere and newer).
Writes `gpu_power_proof.json` and `gpu_power_proof.md` into --out (a directory).

Needs only pynvml, psutil and torch (no textual, no rich): `PYTHONPATH=src python3
scripts/gpu_power_proof.py --out docs/results/h200` (where the H200 run's files are). Without an
NVIDIA GPU it stops with "no NVIDIA GPU".
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from precmon.power.nvml import open_nvml
from precmon.power.sampler import PowerSampler


def torch_load(stop: threading.Event, gpu: int, n: int, started: threading.Event) -> None:
    """bf16 matmuls back to back until `stop`; synchronizes each batch so the queue stays short."""
    import torch

    dev = torch.device(f"cuda:{gpu}")
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    c = a @ b
    torch.cuda.synchronize(dev)
    started.set()
    while not stop.is_set():
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize(dev)
    del a, b, c


class Load:
    """A GPU load in the background: torch matmuls, or an external command."""

    def __init__(self, gpu: int, n: int, cmd: str | None) -> None:
        self.stop_evt, self.started = threading.Event(), threading.Event()
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        if cmd:
            self.proc = subprocess.Popen(shlex.split(cmd))
            self.started.set()
            self.desc = f"command: {cmd}"
        else:
            try:
                import torch  # noqa: F401
            except ImportError:
                sys.exit("torch is not installed: give a GPU load with --load-cmd")
            self.thread = threading.Thread(target=torch_load, args=(self.stop_evt, gpu, n, self.started), daemon=True)
            self.thread.start()
            self.desc = f"torch bf16 matmul {n}x{n}, 8 per synchronize, GPU {gpu}"
        if not self.started.wait(120):
            sys.exit("the GPU load did not start within 120 s")

    def stop(self) -> None:
        self.stop_evt.set()
        if self.thread:
            self.thread.join(30)
        if self.proc:
            self.proc.terminate()
            self.proc.wait(30)


def mean(xs: list[float]) -> float | None:
    return statistics.fmean(xs) if xs else None


def pct(x: float | None, ref: float | None) -> float | None:
    return None if x is None or not ref else (x - ref) / ref * 100


def measure(sampler: PowerSampler, cid: str, phase: str, seconds: float) -> dict[str, Any]:
    t0 = time.monotonic()
    sampler.begin(phase)
    time.sleep(seconds)
    wins = {w.channel_id: w for w in sampler.end(phase)}
    t1 = time.monotonic()
    w = wins[cid]
    # samples strictly inside the window; the 1 s average lags, so it is the one expected to differ
    samples = [s for s in sampler.history(cid, t1 - t0 + 5) if t0 <= s.t_s <= t1]
    inst = [s.extra["power_instant_w"] for s in samples if "power_instant_w" in s.extra]
    avg = [s.extra["power_avg_w"] for s in samples if "power_avg_w" in s.extra]
    m_inst, m_avg = mean(inst), mean(avg)
    return {
        "phase": phase,
        "duration_s": w.duration_s,
        "method": w.method,
        "energy_j": w.energy_j,
        "window_avg_w": w.avg_watts,
        "peak_w": w.peak_watts,
        "n_samples": len(samples),
        "instant_mean_w": m_inst,
        "usage_mean_w": m_avg,
        "instant_vs_window_pct": pct(m_inst, w.avg_watts),
        "usage_vs_window_pct": pct(m_avg, w.avg_watts),
    }


def fmt(x: float | None, spec: str = ".1f") -> str:
    return "—" if x is None else format(x, spec)


def markdown(meta: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    out = [
        f"# NVML power proof: {meta['gpu']}",
        "",
        f"{meta['date']}, host {meta['host']}, driver {meta['driver']}, sampler {meta['rate_hz']:g} Hz, "
        f"load: {meta['load']}.",
        "",
        "| window | s | method | energy J | window avg W | instant mean W | Δ % | "
        "PowerUsage mean W | Δ % | peak W | samples |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        out.append(
            f"| {r['phase']} | {r['duration_s']:.2f} | {r['method']} | {r['energy_j']:.1f} | "
            f"{r['window_avg_w']:.1f} | {fmt(r['instant_mean_w'])} | {fmt(r['instant_vs_window_pct'], '+.2f')}"
            f" | {fmt(r['usage_mean_w'])} | {fmt(r['usage_vs_window_pct'], '+.2f')} | "
            f"{fmt(r['peak_w'])} | {r['n_samples']} |"
        )
    out += [
        "",
        "Δ % = (mean of samples − energy-window average) ÷ energy-window average. The window "
        "average comes from the total-energy counter where the GPU has one (method `counter`).",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="directory for gpu_power_proof.{json,md}")
    ap.add_argument("--rate", type=float, default=20.0, help="sampler rate in Hz (default 20)")
    ap.add_argument("--idle-s", type=float, default=8.0)
    ap.add_argument("--load-s", type=float, default=20.0)
    ap.add_argument("--short-s", type=float, default=0.5, help="length of each short window under load")
    ap.add_argument("--short-n", type=int, default=6)
    ap.add_argument("--gpu", type=int, default=0)
    ap.add_argument("--matrix", type=int, default=8192)
    ap.add_argument("--load-cmd", default=None, help="run this command as the GPU load instead of torch")
    args = ap.parse_args(argv)

    src, missing = open_nvml()
    if src is None:
        print("no NVIDIA GPU: " + "; ".join(u.reason for u in missing), file=sys.stderr)
        return 2
    cid = f"nvml:{args.gpu}"
    ch = next((c for c in src.channels() if c.id == cid), None)
    if ch is None:
        print(f"no NVIDIA GPU {args.gpu}: NVML sees {[c.id for c in src.channels()]}", file=sys.stderr)
        return 2
    import pynvml

    meta = {
        "gpu": ch.label,
        "host": platform.node(),
        "driver": str(pynvml.nvmlSystemGetDriverVersion()),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "rate_hz": args.rate,
        "has_energy_counter": ch.has_energy_counter,
        "unsupported_fields": [],
    }
    rows: list[dict[str, Any]] = []
    with PowerSampler([src], rate_hz=args.rate) as sampler:
        time.sleep(2.0)  # NVML's 1 s average needs a second of history before the idle window
        rows.append(measure(sampler, cid, "idle", args.idle_s))
        load = Load(args.gpu, args.matrix, args.load_cmd)
        meta["load"] = load.desc
        try:
            time.sleep(3.0)  # let clocks and power settle under load
            rows.append(measure(sampler, cid, "load", args.load_s))
            for i in range(args.short_n):
                rows.append(measure(sampler, cid, f"load short {i + 1}", args.short_s))
        finally:
            load.stop()
        time.sleep(3.0)
        rows.append(measure(sampler, cid, "idle after", args.idle_s))
        meta["unsupported_fields"] = sorted(src._gpus[args.gpu].guard.unsupported)  # noqa: SLF001
    src.close()

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu_power_proof.json").write_text(json.dumps({"meta": meta, "windows": rows}, indent=2) + "\n")
    md = markdown(meta, rows)
    (args.out / "gpu_power_proof.md").write_text(md)
    print(md)
    print(f"wrote {args.out / 'gpu_power_proof.json'} and {args.out / 'gpu_power_proof.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
