"""A named pipe (FIFO) given as a file argument is one line, exit 2, at once: `open()` of a FIFO
blocked until a writer came (forever, if none did). The sweep file, a results file for `report` and
`compare`, `--quality-ref` and `--quality-text` all open through `precmon.file_args`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from precmon.file_args import FileArgError, open_file_arg

PIPE = "is a named pipe (FIFO), not a file: precmon reads files whole"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "results.json"
    os.mkfifo(path)
    return path


def _precmon(*args: str) -> subprocess.CompletedProcess[str]:
    # no writer ever opens the FIFO: the old open() waited here until the timeout
    return subprocess.run([sys.executable, "-m", "precmon", *args], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (("report", "{f}"), "precmon report: {f}: " + PIPE),
        (("compare", "{f}", "{f}"), "precmon compare: {f}: " + PIPE),
        (("sweep", "{f}", "--check"), "precmon: {f}: " + PIPE),
    ],
)
def test_a_fifo_as_a_file_argument_is_one_line_at_once(fifo, argv, line):
    proc = _precmon(*(a.format(f=fifo) for a in argv))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == line.format(f=fifo)


def test_bench_quality_files_that_are_fifos_are_refused(fifo):
    proc = _precmon("bench", "--url", "http://127.0.0.1:1", "--quality-ref", str(fifo))
    assert proc.returncode == 2 and PIPE in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    proc = _precmon("bench", "--url", "http://127.0.0.1:1", "--quality", "--quality-text", str(fifo))
    assert proc.returncode == 2 and PIPE in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_open_file_arg_reads_files_and_devices_and_refuses_folders(tmp_path: Path):
    f = tmp_path / "a.json"
    f.write_bytes(b"{}")
    with open_file_arg(f) as fh:
        assert fh.read() == b"{}"
    with open_file_arg("/dev/zero") as fh:  # a device opens; its readers bound the read
        assert fh.read(4) == b"\0\0\0\0"
    with pytest.raises(FileArgError, match="is a folder"):
        open_file_arg(tmp_path)
    with pytest.raises(FileNotFoundError):
        open_file_arg(tmp_path / "missing.json")
