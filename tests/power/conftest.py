"""Fixture sysfs/proc trees for the power sources, pointed to by PRECMON_SYSFS_ROOT/PROC_ROOT."""

from __future__ import annotations

import threading
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


class CounterWriter:
    """Advances an energy file as a device drawing `watts` would, until stopped."""

    def __init__(self, path: Path, watts: float, unit_per_j: float = 1e6, start: int = 0,
                 max_range: int | None = None) -> None:
        self.path, self.watts, self.unit_per_j = path, watts, unit_per_j
        self.start, self.max_range = start, max_range
        self._stop = threading.Event()
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def value(self) -> int:
        v = self.start + int(self.watts * (time.monotonic() - self._t0) * self.unit_per_j)
        return v % self.max_range if self.max_range else v

    def _run(self) -> None:
        while not self._stop.is_set():
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(f"{self.value()}\n")
            tmp.replace(self.path)  # atomic: a reader never sees a half-written number
            self._stop.wait(0.005)

    def __enter__(self) -> CounterWriter:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def counter_writer() -> type[CounterWriter]:
    return CounterWriter
