"""What the peer side-by-side benchmarks share: peer venvs in the cache, CPU sampling, a CPU burner.

Peers are never precmon dependencies: each one gets its own venv in the precmon cache
(`~/.cache/precmon/peer-NAME-VERSION`), made once under a lock and reused (a marker file says it
finished). A tool's CPU use is sampled from outside its process at 20 Hz and counted only while
the server is busy serving, so a peer's start-up (imports, tokenizing its corpus) does not count
against it and precmon's between-request probes do not count against precmon: both are charged
for what they cost while the requests they measure run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import psutil  # noqa: E402

from precmon.power.cpu import BUSY_FIELDS  # noqa: E402
from precmon.testbed.cachefs import cache_lock  # noqa: E402
from precmon.testbed.llama_build import cache_root  # noqa: E402

VENV_MARKER = "PRECMON_PEER_VENV_OK"
SAMPLE_EVERY_S = 0.05
SERVER_BUSY_CORES = 0.3  # the server tree above this is serving a request (idle llama-server/vLLM: ~0)


def say(msg: str) -> None:
    print(f"[peers] {msg}", file=sys.stderr, flush=True)


def peer_venv(name: str, requirement: str) -> Path:
    """A venv in the precmon cache with `requirement` installed (pip); made once, then reused."""
    venv = cache_root() / f"peer-{name}"
    if (venv / VENV_MARKER).exists():
        return venv
    with cache_lock(cache_root() / f"peer-{name}.lock"):
        if (venv / VENV_MARKER).exists():
            return venv
        say(f"installing {requirement} into {venv} (about a minute)")
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", requirement], check=True)
        (venv / VENV_MARKER).write_text(requirement + "\n")
    return venv


def tree_cpu_s(pid: int) -> float:
    """user + system CPU seconds of a process and its children (0 once it is gone)."""
    total = 0.0
    try:
        p = psutil.Process(pid)
        procs = [p, *p.children(recursive=True)]
    except psutil.Error:
        return 0.0
    for q in procs:
        try:
            t = q.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


@dataclass
class CpuWhileServing:
    """Samples a tool's and the server's CPU; the tool's cores while the server is busy.

    `tool_pid` is set once the tool is started; samples before that count nothing.
    """

    server_pid: int
    tool_pid: int | None = None
    samples: list[tuple[float, float, float]] = field(default_factory=list)  # (t, tool s, server s)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> CpuWhileServing:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=2)

    def _run(self) -> None:
        last_tool = 0.0
        while not self._stop.is_set():
            pid = self.tool_pid
            if pid is not None:
                tool = tree_cpu_s(pid)
                last_tool = max(last_tool, tool)  # a finished tool reads 0: keep its last figure
                self.samples.append((time.monotonic(), last_tool, tree_cpu_s(self.server_pid)))
            self._stop.wait(SAMPLE_EVERY_S)

    def result(self) -> dict[str, float]:
        return cores_while_busy(self.samples)


def cores_while_busy(samples: list[tuple[float, float, float]]) -> dict[str, float]:
    """Tool cores over the sampling intervals in which the server used > SERVER_BUSY_CORES."""
    busy_s = tool_s = server_s = 0.0
    for (t0, a0, s0), (t1, a1, s1) in zip(samples, samples[1:], strict=False):
        dt = t1 - t0
        if dt <= 0 or (s1 - s0) / dt <= SERVER_BUSY_CORES:
            continue
        busy_s += dt
        tool_s += max(0.0, a1 - a0)
        server_s += max(0.0, s1 - s0)
    return {
        "serving_s": round(busy_s, 3),
        "tool_cores": round(tool_s / busy_s, 4) if busy_s else float("nan"),
        "server_cores": round(server_s / busy_s, 3) if busy_s else float("nan"),
        "tool_cpu_s_total": round(samples[-1][1], 3) if samples else float("nan"),
    }


def start_burners(n: int, seconds: float) -> list[subprocess.Popen[bytes]]:
    """`n` busy loops that end by themselves after `seconds` (the caller kills them sooner).

    The loop is the process we kill: a SIGKILLed `timeout` wrapper would leave its child spinning.
    """
    code = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]


def stop_burners(burners: list[subprocess.Popen[bytes]]) -> None:
    for p in burners:
        p.kill()
        p.wait(timeout=10)


def busy_cores(seconds: float = 3.0) -> float:
    """Busy cores of the whole machine over `seconds` (with no request running: the background)."""
    a = psutil.cpu_times()
    time.sleep(seconds)
    b = psutil.cpu_times()
    return round(sum(getattr(b, f, 0.0) - getattr(a, f, 0.0) for f in BUSY_FIELDS) / seconds, 2)


def host_load() -> str:
    """The 1/5/15-minute load average and core count, for the write-up."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f} / {fifteen:.2f} on {os.cpu_count()} cores"


def median(values: list[float]) -> float:
    vals = sorted(v for v in values if v == v)
    if not vals:
        return float("nan")
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else (vals[mid - 1] + vals[mid]) / 2
