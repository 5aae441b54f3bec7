"""Who used the host's CPU during a measurement: everyone, the server's process tree, precmon.

A decode rate measured while other processes take the CPU is low and says nothing about the
precision (on a 2-core box kept busy, F16 read a quarter of its quiet rate). The
operating system counts CPU seconds per machine (`psutil.cpu_times`, summed over cores) and per
process; the difference between the machine's busy seconds and those of the server and of
precmon itself is what *other* processes took. `CpuSnapshot` is one reading of all three;
`cpu_usage(a, b)` turns two of them into average cores. The kernel also reports `steal` on a VM
(time a hypervisor gave to other guests): it is counted separately.

The server is found by its listening port (`server_pids`), so a server precmon did not start is
found too; a server on another host has no process here and only precmon is subtracted.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import psutil

# Linux counts guest time inside user/nice as well: adding it again would count it twice.
BUSY_FIELDS = ("user", "nice", "system", "irq", "softirq")


@dataclass(frozen=True)
class CpuSnapshot:
    """CPU seconds so far: the machine's busy and steal time, precmon's own, and per server pid.

    `server_s` maps pid → (create_time, cpu seconds): a pid reused by a new process between
    two snapshots is told apart by its creation time.
    """

    t_s: float  # time.monotonic()
    busy_s: float
    steal_s: float | None  # None where the kernel does not report steal
    own_s: float
    server_s: dict[int, tuple[float, float]] = field(default_factory=dict)


def _proc_cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return float(t.user + t.system)


def url_port(url: str) -> int | None:
    """The TCP port of a server URL (80/443 by scheme when it names none): where to look for it."""
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None


def server_pids(port: int, exclude: int | None = None) -> tuple[list[int], str | None]:
    """The process listening on TCP `port` and all its descendants, or ([], why not).

    `exclude` (precmon's own pid) is left out: a server inside precmon (a test's fake) is
    precmon's CPU already, and the answer is ([], None).
    """
    try:
        conns = psutil.net_connections(kind="tcp")
    except (psutil.AccessDenied, OSError) as exc:
        return [], f"cannot list listening sockets: {exc}"
    owners = {c.pid for c in conns if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
    if not owners:
        return [], f"no process on this host listens on port {port}"
    pids: set[int] = set()
    for pid in owners:
        try:
            proc = psutil.Process(pid)
            pids.add(pid)
            pids.update(c.pid for c in proc.children(recursive=True))
        except psutil.Error:
            continue
    pids.discard(exclude or -1)
    return sorted(pids), None


def _children(pid: int) -> list[int] | None:
    """The direct children of `pid` from /proc/PID/task/*/children; None where the kernel has none.

    One small read per thread of the server, where psutil's `children()` reads the stat file of
    every process on the machine (3 ms with 110 processes here, more on a desktop): a snapshot is
    taken before and after every measured request.
    """
    task = f"/proc/{pid}/task"
    try:
        tids = os.listdir(task)
    except FileNotFoundError:
        return [] if os.path.isdir("/proc/self/task") else None  # gone, or no /proc at all
    except OSError:
        return None
    kids: list[int] = []
    for tid in tids:
        try:
            with open(f"{task}/{tid}/children", encoding="ascii", errors="replace") as f:
                kids += [int(x) for x in f.read().split()]
        except FileNotFoundError:
            if not os.path.exists(f"/proc/self/task/{os.getpid()}/children"):
                return None  # a kernel without CONFIG_PROC_CHILDREN
        except (OSError, ValueError):
            continue
    return kids


def family(pid: int) -> list[psutil.Process]:
    """`pid` and all its descendants (none where it is gone)."""
    pids: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        if p in pids:
            continue
        kids = _children(p)
        if kids is None:  # no children files here: psutil's way
            try:
                root = psutil.Process(pid)
                return [root, *root.children(recursive=True)]
            except psutil.Error:
                return []
        pids.append(p)
        todo += kids
    procs = []
    for p in pids:
        try:
            procs.append(psutil.Process(p))
        except psutil.Error:
            continue
    return procs


def snapshot(pids: list[int]) -> CpuSnapshot:
    """Read the machine's CPU times, precmon's and those of `pids` (and their newer children)."""
    t = time.monotonic()
    ct = psutil.cpu_times()
    busy = sum(float(getattr(ct, f, 0.0)) for f in BUSY_FIELDS)
    steal = getattr(ct, "steal", None)
    own = _proc_cpu_s(psutil.Process())
    procs: dict[int, tuple[float, float]] = {}
    seen: set[int] = set()
    for pid in pids:
        for p in family(pid):
            if p.pid in seen:
                continue
            seen.add(p.pid)
            try:
                procs[p.pid] = (p.create_time(), _proc_cpu_s(p))
            except psutil.Error:
                continue
    return CpuSnapshot(t, busy, None if steal is None else float(steal), own, procs)


def server_cpu_s(a: CpuSnapshot, b: CpuSnapshot) -> float:
    """CPU seconds the server's processes used between two snapshots.

    A process born in between counts all its time; one gone by `b` loses what it used after
    `a` (it can no longer be read), which shows up as other processes' time.
    """
    total = 0.0
    for pid, (created, cpu_s) in b.server_s.items():
        before = a.server_s.get(pid)
        total += cpu_s - before[1] if before is not None and before[0] == created else cpu_s
    return max(0.0, total)


def cpu_usage(a: CpuSnapshot, b: CpuSnapshot, server_found: bool) -> dict[str, Any]:
    """Average cores between two snapshots: busy, server, precmon, other, steal.

    `other_cores` is busy − server − precmon, never below 0 (counters tick at 10 ms). Without the
    server's processes (`server_found` False) it is busy − precmon.
    """
    wall = b.t_s - a.t_s
    if wall <= 0:
        return {"window_s": 0.0}
    busy = max(0.0, b.busy_s - a.busy_s) / wall
    own = max(0.0, b.own_s - a.own_s) / wall
    server = server_cpu_s(a, b) / wall if server_found else 0.0
    out: dict[str, Any] = {
        "window_s": round(wall, 3),
        "busy_cores": round(busy, 3),
        "server_cores": round(server, 3) if server_found else None,
        "precmon_cores": round(own, 3),
        "other_cores": round(max(0.0, busy - server - own), 3),
    }
    if a.steal_s is not None and b.steal_s is not None:
        out["steal_cores"] = round(max(0.0, b.steal_s - a.steal_s) / wall, 3)
    return out


def cpu_count() -> int:
    return psutil.cpu_count() or 1
