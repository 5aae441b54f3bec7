"""Servers a sweep launched, recorded in its out folder while they run.

A launched server runs in its own process group (so that stopping it takes its children too),
which also means a `kill -9` of precmon leaves it running, holding the port and the GPU. While a
server runs, `launched/<label>.json` in the out folder names it: pid, process group, start time,
command line, and the precmon that launched it (`owner`: its pid and start time). `--resume` (any
run on that folder) stops each recorded server that still runs before it starts, after checking
that the pid is still that process (same start time and command line), never a stranger that
reused the pid, and only when the precmon that launched it is gone: a live one's server is its
own (the folder lock, sweep/folder_lock.py, keeps a second sweep out before it gets here).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from precmon.measure.results import write_json_atomic
from precmon.sweep.folder_lock import alive, describe, own_record
from precmon.sweep.store import earlier_results
from precmon.untrusted import file_part, redact_argv

FOLDER = "launched"
START_TIME_TOLERANCE_S = 1.0


def _digest(cmdline: list[str]) -> str:
    return hashlib.sha256("\0".join(cmdline).encode("utf-8", "surrogateescape")).hexdigest()


def record_launch(out_dir: Path, label: str, pid: int, argv: list[str]) -> Path | None:
    """Write the record of a server just started; None when the out folder cannot take it."""
    try:
        proc = psutil.Process(pid)
        info: dict[str, Any] = {
            "label": label,
            "pid": pid,
            "pgid": os.getpgid(pid),
            "create_time": proc.create_time(),
            # a digest, not the command line itself: a launch argv may carry an API key
            "cmdline_sha256": _digest(proc.cmdline()),
            "argv": redact_argv(list(argv)),
            "owner": own_record(),
        }
    except (psutil.Error, OSError):
        return None  # already gone: nothing can be left behind
    path = Path(out_dir) / FOLDER / f"{file_part(label)}.json"
    try:
        write_json_atomic(path, info)
    except OSError:
        return None
    return path


def clear_launch(path: Path | None) -> None:
    """The server of this record was stopped: forget it."""
    if path is not None:
        try:
            path.unlink()
        except OSError:
            pass


def _same_process(rec: dict[str, Any]) -> psutil.Process | None:
    """The recorded process if it still runs as itself (pid reuse is checked), else None."""
    try:
        proc = psutil.Process(int(rec["pid"]))
        if abs(proc.create_time() - float(rec["create_time"])) > START_TIME_TOLERANCE_S:
            return None
        if _digest(proc.cmdline()) != rec["cmdline_sha256"] or proc.status() == psutil.STATUS_ZOMBIE:
            return None
        return proc
    except (psutil.Error, KeyError, TypeError, ValueError):
        return None


def _group_members(pgid: int, since: float) -> list[psutil.Process]:
    """Processes of group `pgid` started no earlier than the recorded leader (its children)."""
    out = []
    for p in psutil.process_iter(["create_time"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["create_time"] >= since - START_TIME_TOLERANCE_S:
                out.append(p)
        except (OSError, psutil.Error):
            continue
    return out


def stop_leftovers(out_dir: Path, grace_s: float = 10.0) -> list[str]:
    """Stop every recorded server of `out_dir` that still runs; returns what was done, in words."""
    notes: list[str] = []
    folder = Path(out_dir) / FOLDER
    if not folder.is_dir():
        return notes
    for path in sorted(folder.glob("*.json")):
        try:
            rec = json.loads(path.read_text(encoding="utf-8"))
            pgid, since = int(rec["pgid"]), float(rec["create_time"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            notes.append(f"{path}: unreadable record of a launched server, removed")
            clear_launch(path)
            continue
        if pgid == os.getpgid(0):  # never our own group
            clear_launch(path)
            continue
        owner = rec.get("owner")
        if isinstance(owner, dict) and owner.get("pid") != os.getpid() and alive(owner):
            label = rec.get("label", path.stem)
            whose = f"is run by a live precmon ({describe(owner)})"
            notes.append(f"{label}: its server (pid {rec.get('pid')}) {whose}: left alone")
            continue
        # A live group id is never handed out again as a pid, so the group's members started since
        # the leader are its children even when the leader itself is gone; a pid reused by another
        # program is not the leader (other start time or command line) and is left alone.
        leader = _same_process(rec)
        if leader is None and psutil.pid_exists(pgid):
            members = []  # the group's id is a live pid again: another program's group, not ours
        else:
            members = [m for m in _group_members(pgid, since) if m.pid != rec.get("pid")]
        if leader is not None:
            members.append(leader)
        if members:
            label = rec.get("label", path.stem)
            notes.append(f"{label}: stopping its server left running by an earlier run (pid {rec.get('pid')})")
            _stop_group(pgid, members, grace_s)
        clear_launch(path)
    return notes


def _stop_group(pgid: int, members: list[psutil.Process], grace_s: float) -> None:
    """SIGTERM to the group, SIGKILL to what is left after `grace_s`; waits for them to go."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        _, alive = psutil.wait_procs(members, timeout=grace_s if sig == signal.SIGTERM else 10.0)
        if not alive:
            return
        members = alive


def earlier_sweep(out_dir: Path, say: Callable[[str], None]) -> str | None:
    """What of an earlier sweep `out_dir` holds, in words (`store.earlier_results`), or None. A
    fresh sweep is refused such a folder, so the servers that earlier sweep left running (a
    `kill -9`) are stopped here first, as any sweep on the folder stops them (`say`: what was done):
    a refusal leaves none behind."""
    earlier = earlier_results(out_dir)
    if earlier is not None:
        for note in stop_leftovers(out_dir):
            say(note)
    return earlier
