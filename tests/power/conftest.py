"""Fixture sysfs/proc trees for the power sources, pointed to by PRECMON_SYSFS_ROOT/PROC_ROOT."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest


class FakeRoot:
    """A directory standing in for `/`: write files by their absolute sysfs path."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def write(self, path: str, content: object) -> Path:
        p = self.root / path.lstrip("/")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"{content}\n")
        return p

    def files(self, base: str, **files: object) -> Path:
        for name, content in files.items():
            self.write(f"{base}/{name}", content)
        return self.root / base.lstrip("/")


@pytest.fixture
def fakeroot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeRoot:
    root = tmp_path / "root"
    (root / "proc").mkdir(parents=True)
    monkeypatch.setenv("PRECMON_SYSFS_ROOT", str(root))
    monkeypatch.setenv("PRECMON_PROC_ROOT", str(root / "proc"))
    return FakeRoot(root)


_WRITER = """
import os, sys, time
path, watts, unit = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
start, max_range = int(sys.argv[4]), int(sys.argv[5])
t0 = time.monotonic()
tmp = path + ".tmp"
while True:
    v = start + int(watts * (time.monotonic() - t0) * unit)
    with open(tmp, "w") as f:
        f.write(f"{v % max_range if max_range else v}\\n")
    os.replace(tmp, path)  # atomic: a reader never sees a half-written number
    time.sleep(0.002)
"""


class CounterWriter:
    """Advances an energy file as a device drawing `watts` would, until stopped.

    A separate process, not a thread: a thread would share the GIL with the sampler under test
    and lag by whole switch intervals, which reads as a wrong wattage.
    """

    def __init__(
        self, path: Path, watts: float, unit_per_j: float = 1e6, start: int = 0, max_range: int | None = None
    ) -> None:
        self.args = [str(path), str(watts), str(unit_per_j), str(start), str(max_range or 0)]
        self.path = path
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> CounterWriter:
        before = self.path.stat().st_mtime_ns
        self._proc = subprocess.Popen([sys.executable, "-c", _WRITER, *self.args])
        deadline = time.monotonic() + 10
        while self.path.stat().st_mtime_ns == before and time.monotonic() < deadline:
            time.sleep(0.005)  # the counter is live once the first write landed
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.kill()
        self._proc.wait()


@pytest.fixture
def counter_writer() -> type[CounterWriter]:
    return CounterWriter
