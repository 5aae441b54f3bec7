"""A file argument that is a device (`/dev/zero`: size 0, no end) is read bounded, so it is one
line, exit 2, not a read until memory runs out (it was: `stat().st_size` said 0, then
`read_bytes()` never ended). Run under a 1 GiB address space so an unbounded read fails fast."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))


def _precmon(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "precmon", *args], capture_output=True, text=True, timeout=60, preexec_fn=_limit
    )


def test_compare_with_a_device_is_one_line(tmp_path: Path):
    proc = _precmon("compare", "/dev/zero", "/dev/zero")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "precmon compare: /dev/zero: larger than 256 MiB: not a results file"


def test_bench_quality_ref_from_a_device_is_one_line():
    proc = _precmon("bench", "--url", "http://127.0.0.1:1", "--quality-ref", "/dev/zero")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "precmon: --quality-ref: /dev/zero: larger than 256 MiB: not a reference"
