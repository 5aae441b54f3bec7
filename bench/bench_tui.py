"""TUI overhead: CPU of `precmon watch` idle-watching, CPU of the main screen during a sweep,
startup time to first paint, and `precmon --help`. Runs the installed console script in tmux
(a real terminal), against the TimedServer fake (a real local HTTP server).

    python bench/bench_tui.py [--seconds 20]

Goals: watch < 3% of one core at 4 Hz; first paint < 1 s; --help < 0.3 s.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.timed_server import Behaviour, TimedServer  # noqa: E402

EXE = shutil.which("precmon") or "precmon"


class Tmux:
    def __init__(self, cmd: str, cols: int = 120, rows: int = 40) -> None:
        self.sock = f"precmon-bench-{uuid.uuid4().hex[:8]}"
        self.t0 = time.perf_counter()
        subprocess.run(
            [
                "tmux",
                "-L",
                self.sock,
                "new-session",
                "-d",
                "-s",
                "b",
                "-x",
                str(cols),
                "-y",
                str(rows),
                "sh",
                "-c",
                f"exec {cmd}",
            ],
            check=True,
        )

    def screen(self) -> str:
        return subprocess.run(
            ["tmux", "-L", self.sock, "capture-pane", "-p", "-t", "b"], capture_output=True, text=True
        ).stdout

    def keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-L", self.sock, "send-keys", "-t", "b", *keys], check=True)

    def pid(self) -> int:
        out = subprocess.run(
            ["tmux", "-L", self.sock, "display", "-p", "-t", "b", "#{pane_pid}"], capture_output=True, text=True
        ).stdout
        return int(out.strip())

    def wait(self, text: str, timeout_s: float = 30.0) -> float:
        while time.perf_counter() - self.t0 < timeout_s:
            if text in self.screen():
                return time.perf_counter() - self.t0
            time.sleep(0.01)
        raise TimeoutError(f"{text!r} never appeared:\n{self.screen()}")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)


def cpu_pct(pid: int, seconds: float) -> float:
    """Share of one core used by the process (and its children) over `seconds`."""
    proc = psutil.Process(pid)

    def total() -> float:
        procs = [proc, *proc.children(recursive=True)]
        return sum(p.cpu_times().user + p.cpu_times().system for p in procs)

    c0, t0 = total(), time.perf_counter()
    time.sleep(seconds)
    return 100.0 * (total() - c0) / (time.perf_counter() - t0)


def bench_help(n: int = 7) -> float:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        subprocess.run([EXE, "--help"], capture_output=True, check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_first_paint(n: int = 3) -> float:
    times = []
    for _ in range(n):
        t = Tmux(EXE)
        try:
            times.append(t.wait("Quit"))
        finally:
            t.close()
    return statistics.median(times)


def bench_watch(url: str, seconds: float) -> float:
    t = Tmux(f"{EXE} watch --url {url}")
    try:
        t.wait("tok/s")
        time.sleep(2.0)  # past start-up
        return cpu_pct(t.pid(), seconds)
    finally:
        t.close()


def bench_sweep(url: str, out: Path) -> tuple[float, float]:
    spec = out / "sweep.toml"
    spec.write_text(
        f'[defaults]\nurl = "{url}"\noutput_tokens = 128\ndecode_prompt_tokens = 64\n'
        f"prefill_tokens = [256, 1024]\nttft_tokens = 1024\nrepeats = 3\nwarmup = 1\n"
        f"idle_s = 0\ncooldown_s = 0\n"
        + "".join(f'\n[[variant]]\nlabel = "V{i}"\nprecision = "int4"\nmodel = "fake-Q4_K_M"\n' for i in range(3))
    )
    t = Tmux(f"{EXE} --url {url} --sweep {spec} --out {out / 'res'}")
    try:
        t.wait("Quit")
        time.sleep(1.0)
        t.keys("s")
        t0 = time.perf_counter()
        proc = psutil.Process(t.pid())
        c0 = sum(x.user + x.system for x in [proc.cpu_times()])
        t.wait("sweep finished", timeout_s=300)
        wall = time.perf_counter() - t0
        c1 = sum(x.user + x.system for x in [proc.cpu_times()])
        return 100.0 * (c1 - c0) / wall, wall
    finally:
        t.close()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=20.0)
    args = p.parse_args()
    if not shutil.which("tmux"):
        print("tmux is needed (a real terminal for the TUI)", file=sys.stderr)
        return 2
    print(f"precmon --help: {bench_help() * 1000:.0f} ms (median of 7)")
    print(f"first paint (tmux, 120x40, power discovery included): {bench_first_paint() * 1000:.0f} ms (median of 3)")
    with TimedServer(Behaviour(itl_s=0.004, prefill_s_per_token=0.0002)) as srv:
        print(
            f"watch, idle (passive, fake server up without /metrics: re-asked every 4 s; 4 Hz repaint): "
            f"{bench_watch(srv.url, args.seconds):.1f}% of one core over {args.seconds:.0f} s"
        )
        with tempfile.TemporaryDirectory() as tmp:
            pct, wall = bench_sweep(srv.url, Path(tmp))
            print(
                f"main screen during a sweep (3 variants vs the fake server, measurement client included): "
                f"{pct:.1f}% of one core over {wall:.1f} s"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
