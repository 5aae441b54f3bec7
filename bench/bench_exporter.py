#!/usr/bin/env python3
"""Exporter CPU: process CPU time ÷ wall time of `precmon exporter` scraped every 15 s, 8 sources.

A fixture sysfs (PRECMON_SYSFS_ROOT) holds 8 hwmon power devices, one channel each; the exporter
runs as its own process with its defaults (sources read every 2 s) plus psutil's host source, as
on a node. This script scrapes /metrics every `--scrape-s` like Prometheus and reads the
exporter's CPU time (user + system, psutil) after a warm-up and at the end. Goal (issue 17):
below 0.5% of one core. Results: docs/benchmarks.md.

    python bench/bench_exporter.py            # 150 s measured, 15 s scrapes (about 2.7 min)
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
WARMUP_S = 10.0


def fixture_sysfs(root: Path, sources: int) -> None:
    for i in range(sources):
        d = root / "sys" / "class" / "hwmon" / f"hwmon{i}"
        d.mkdir(parents=True)
        (d / "name").write_text(f"sensor{i}\n")
        (d / "power1_input").write_text(f"{(10 + i) * 1_000_000}\n")
        (d / "power1_label").write_text(f"rail{i}\n")
    (root / "proc").mkdir()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=150.0, help="measured wall time (default 150)")
    ap.add_argument("--scrape-s", type=float, default=15.0, help="scrape interval (default 15)")
    ap.add_argument("--sources", type=int, default=8, help="fixture power sources (default 8)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        fixture_sysfs(root, a.sources)
        port = free_port()
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PRECMON_SYSFS_ROOT": str(root)}
        env["PRECMON_PROC_ROOT"] = str(root / "proc")
        cmd = [sys.executable, "-m", "precmon", "exporter", "--listen", f"127.0.0.1:{port}"]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            url = f"http://127.0.0.1:{port}/metrics"
            deadline = time.monotonic() + 30
            while True:
                try:
                    body = urllib.request.urlopen(url, timeout=2).read().decode()
                    break
                except OSError:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise SystemExit("the exporter did not start") from None
                    time.sleep(0.2)
            n = body.count("\nprecmon_power_watts{")
            assert n == a.sources, f"expected {a.sources} power series, got {n}"
            time.sleep(WARMUP_S)
            p = psutil.Process(proc.pid)
            c0, t0, scrapes = sum(p.cpu_times()[:2]), time.monotonic(), 0
            while time.monotonic() - t0 < a.seconds:
                urllib.request.urlopen(url, timeout=5).read()
                scrapes += 1
                time.sleep(max(0.0, min(a.scrape_s, a.seconds - (time.monotonic() - t0))))
            c1, t1 = sum(p.cpu_times()[:2]), time.monotonic()
        finally:
            proc.terminate()
            proc.wait(10)
    share = (c1 - c0) / (t1 - t0)
    print(f"exporter CPU: {100 * share:.3f}% of one core ({c1 - c0:.2f} s CPU over {t1 - t0:.0f} s wall)")
    print(f"  {a.sources} sources, {scrapes} scrapes every {a.scrape_s:g} s, sources read every 2 s (default)")
    print(f"  {platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} CPUs")
    print(f"  goal < 0.5%: {'met' if share < 0.005 else 'NOT met'}")
    return 0 if share < 0.005 else 1


if __name__ == "__main__":
    raise SystemExit(main())
