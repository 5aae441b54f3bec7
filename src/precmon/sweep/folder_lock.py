"""One sweep per results folder: a live lock on `precmon.lock` in the folder.

Two sweeps writing one folder interleave their journals, and `results.json` keeps only the last
writer's variants; a `--resume` typed in a second terminal while the first sweep runs used to stop
the first one's launched server ("killed by signal 9"). So the results store takes this lock before
anything in the folder changes (sweep/runner.py `run`, for bench and sweep alike), and holds it
until the sweep ends.

The lock is `fcntl.flock` on the lock file (the way pip's and uv's caches do it): the kernel lets
go of it when its process ends, however it ends, so a `kill -9` never leaves the folder locked. The
file holds the owner's record (pid, start time, when it took the lock), read back to name the
running sweep in the refusal, and emptied on a clean release; a record left in an unlocked file is
a dead owner's, taken over with a note. The descriptor is not inherited by a launched server (the
default since PEP 446), so a server left running cannot hold the folder either.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

FILE_NAME = "precmon.lock"


class FolderBusy(RuntimeError):
    """The folder is another live precmon's; str() is the one line that names it."""


@dataclass
class FolderLock:
    """A held lock: release it when the sweep ends (`release`)."""

    path: Path
    fd: int
    note: str | None = None  # set when a dead owner's record was taken over, or no lock was possible

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            os.ftruncate(self.fd, 0)  # a clean end leaves no owner behind
        except OSError:
            pass
        os.close(self.fd)  # closing the descriptor lets go of the flock
        self.fd = -1


def own_record() -> dict[str, Any]:
    """This process as a lock (or a launched server's) owner: pid, start time, since when."""
    try:
        create_time: float | None = psutil.Process().create_time()
    except psutil.Error:
        create_time = None
    return {"pid": os.getpid(), "create_time": create_time, "since": dt.datetime.now().isoformat(timespec="seconds")}


def alive(owner: dict[str, Any]) -> bool:
    """Whether the process an owner record names still runs as itself (a reused pid is not it)."""
    try:
        proc = psutil.Process(int(owner["pid"]))
        recorded = owner.get("create_time")
        if isinstance(recorded, (int, float)) and abs(proc.create_time() - recorded) > 1.0:
            return False
        return proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.Error, KeyError, TypeError, ValueError):
        return False


def describe(owner: dict[str, Any] | None) -> str:
    """`pid 1234, since 2026-12-05T10:11:12`, or what is known of it."""
    if not owner:
        return "an unknown process"
    since = owner.get("since")
    return f"pid {owner.get('pid', '?')}" + (f", since {since}" if isinstance(since, str) else "")


def _read(fd: int) -> dict[str, Any] | None:
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 4096)
        rec = json.loads(data.decode("utf-8")) if data.strip() else None
    except (OSError, ValueError, RecursionError):
        return None
    return rec if isinstance(rec, dict) else None


def _lock(folder: Path) -> int:
    """The lock file's descriptor, locked; FolderBusy naming a live owner; OSError (ENOLCK, …)
    where the filesystem cannot lock."""
    fd = os.open(Path(folder) / FILE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        owner = _read(fd)
        os.close(fd)
        raise FolderBusy(
            f"{folder} is in use by another precmon ({describe(owner)}): one sweep per results folder; "
            "wait for it to end, or choose another --out"
        ) from None
    except OSError:
        os.close(fd)
        raise
    return fd


def take(folder: Path) -> FolderLock:
    """Lock `folder` for this process, or raise FolderBusy naming its live owner.

    A filesystem that cannot lock (some network and FUSE mounts) gives a lock without the
    guarantee, and a note that says so.
    """
    path = Path(folder) / FILE_NAME
    try:
        fd = _lock(folder)
    except FolderBusy:
        raise
    except OSError as exc:
        why = exc.strerror or exc
        return FolderLock(path, -1, note=f"{path}: cannot lock ({why}): nothing keeps a second sweep out")
    left = _read(fd)
    note = None
    if left and left.get("pid") != os.getpid():
        note = f"{folder}: took over the lock of a precmon that is gone ({describe(left)})"
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(own_record()) + "\n").encode("utf-8"))
    return FolderLock(path, fd, note=note)


def holder(folder: Path) -> str | None:
    """The one line `take` would refuse with, or None when the folder is free (checked by the
    commands before they open a power meter; `take` stays the guarantee). Writes nothing."""
    if not (Path(folder) / FILE_NAME).exists():
        return None
    try:
        os.close(_lock(folder))  # free: closing lets go again, the record as it was
    except FolderBusy as exc:
        return str(exc)
    except OSError:
        return None
    return None
