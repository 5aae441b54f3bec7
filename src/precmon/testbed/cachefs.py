"""Writing into the shared cache (~/.cache/precmon) when several precmon processes use it at once.

A demo and a test run both find a model missing and both write it: with one fixed `.partial`
name they wrote into the same temporary and one renamed it away under the other
(FileNotFoundError). Here every writer has its own temporary name, a lock file beside the target
(`fcntl.flock`) makes the second writer wait, and it then finds the file made and uses it.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def unique_partial(dest: Path) -> Path:
    """A temporary name beside `dest` that no other writer (process or thread) uses."""
    return dest.with_name(f".{dest.name}.{os.getpid()}-{secrets.token_hex(4)}.partial")


@contextmanager
def cache_lock(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `lock_path` (created if missing); blocks until it is free.

    flock locks belong to an open file, so threads of one process exclude each other too; the
    kernel drops the lock when its holder dies, so a killed writer never leaves it stuck.
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def atomic_file(dest: Path, write: Callable[[Path], None]) -> Path:
    """Call `write(tmp)` with a unique temporary, then rename it to `dest`; no temporary stays behind."""
    tmp = unique_partial(dest)
    try:
        write(tmp)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dest
