"""#4 in a real terminal: `q` `y` (or Ctrl-C twice) during a bench whose server stalls mid-stream
exits within seconds, with exit code 0, no traceback, and the path of the saved runs printed.

precmon runs from this checkout (`python -m precmon.cli`, PYTHONPATH=src) in tmux at 80×24,
against `tests/tui/stalled_server.py` in its own process. Skipped with the reason without tmux.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.conftest import require
from tests.tui.test_tmux import _screen, _tmux, _wait

ROOT = Path(__file__).resolve().parents[2]


def _readline(proc: subprocess.Popen, timeout_s: float) -> str:
    """One line of the fake's stdout, or "" after `timeout_s` (never blocks the test for longer)."""
    box: list[str] = []
    t = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout_s)
    return box[0].strip() if box else ""


@pytest.mark.parametrize("keys", [("q", "y"), ("C-c", "C-c")], ids=["q-y", "ctrl-c-twice"])
def test_quit_during_a_stalled_bench_exits_promptly_in_a_terminal(tmp_path, keys):
    require(shutil.which("tmux") is not None, "tmux is not installed")
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.tui.stalled_server", "--tokens", "3", "--complete-first", "2", "--stall-s", "60"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    sock = f"precmon-quit-{uuid.uuid4().hex[:8]}"
    try:
        url = _readline(fake, 10)
        assert url.startswith("http://127.0.0.1:"), url
        out = tmp_path / "out"
        cmd = (
            f"cd {tmp_path} && PYTHONPATH={ROOT / 'src'} NO_COLOR=1 TERM=xterm-256color "
            f"{sys.executable} -m precmon.cli --url {url} --out {out}; echo EXITED=$?; sleep 30"
        )
        subprocess.run(
            ["tmux", "-L", sock, "new-session", "-d", "-s", "precmon", "-x", "80", "-y", "24", "sh", "-c", cmd],
            check=True,
            timeout=10,
            env={**os.environ, "TMUX": ""},
        )
        screen = _wait(sock, lambda t: "healthy" in t, 20)
        assert "healthy" in screen, screen
        _tmux(sock, "send-keys", "-t", "precmon", "b")
        assert _readline(fake, 30) == "STALLED", _screen(sock)
        _tmux(sock, "send-keys", "-t", "precmon", keys[0])
        screen = _wait(sock, lambda t: "Stop it and quit" in t, 5)
        assert "Stop it and quit" in screen, screen
        t0 = time.monotonic()
        _tmux(sock, "send-keys", "-t", "precmon", keys[1])
        screen = _wait(sock, lambda t: "EXITED=" in t, 10)
        took = time.monotonic() - t0
        assert "EXITED=0" in screen, screen
        assert took < 6, f"quitting took {took:.1f} s"
        assert "Traceback" not in screen, screen
        saved = list(out.glob("bench-*/results.json"))
        assert len(saved) == 1, screen
        assert "results saved:" in screen and saved[0].name[:20] in screen.replace("\n", ""), screen
        assert fake.poll() is None  # the server was still holding the request: precmon walked away
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
        fake.kill()
        fake.wait(5)
