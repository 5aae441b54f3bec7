"""`--out` of the TUI and of `precmon demo` is checked before anything starts (a demo would
otherwise build llama-server for 5 minutes, then fail to write): exit 2, one line naming it."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("command", [["--out", "{bad}"], ["demo", "--headless", "--out", "{bad}"]])
def test_an_out_under_a_file_is_a_usage_error(tmp_path, command):
    (tmp_path / "a_file").write_text("x")
    bad = tmp_path / "a_file" / "sub"
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", *(a.format(bad=bad) for a in command)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert str(bad) in line and f"{tmp_path / 'a_file'} is not a folder" in line
