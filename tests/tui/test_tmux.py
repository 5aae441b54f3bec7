"""The installed `precmon` in a real terminal (tmux): it paints, `?` opens help, Esc closes it,
`q` quits. Skipped with the reason when tmux or the console script is absent (failed in CI)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tests.conftest import require


def _tmux(sock: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, timeout=10).stdout


def _screen(sock: str) -> str:
    return _tmux(sock, "capture-pane", "-p", "-t", "precmon")


def _wait(sock: str, cond, timeout_s: float = 15.0) -> str:
    deadline = time.monotonic() + timeout_s
    text = ""
    while time.monotonic() < deadline:
        text = _screen(sock)
        if cond(text):
            return text
        time.sleep(0.2)
    return text


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def test_precmon_in_tmux(tmp_path):
    require(shutil.which("tmux") is not None, "tmux is not installed")
    # the console script of the interpreter running the tests (CI runs .venv/bin/python without
    # .venv/bin on PATH), else one on PATH
    beside = Path(sys.executable).parent / "precmon"
    exe = str(beside) if beside.exists() else shutil.which("precmon")
    require(exe is not None, "the precmon console script is not installed (pip install -e .)")
    from precmon.servers.detect import USUAL_PORTS

    busy = [p for p in USUAL_PORTS if _listening(p)]
    require(not busy, f"something listens on the usual server ports {busy}: precmon would find it")
    sock = f"precmon-test-{uuid.uuid4().hex[:8]}"
    env_cmd = f"cd {tmp_path} && NO_COLOR=1 TERM=xterm-256color {exe}; echo EXITED=$?; sleep 30"
    subprocess.run(
        ["tmux", "-L", sock, "new-session", "-d", "-s", "precmon", "-x", "100", "-y", "30", "sh", "-c", env_cmd],
        check=True,
        timeout=10,
        env={**os.environ, "TMUX": ""},
    )
    try:
        # without --url it looks on the usual local ports first, then says where it looked
        screen = _wait(sock, lambda t: "Power" in t and "Quit" in t and "pass --url" in t)
        assert "Power" in screen and "no server" in screen and "usual local ports" in screen, screen
        _tmux(sock, "send-keys", "-t", "precmon", "?")
        screen = _wait(sock, lambda t: "request sent" in t)
        assert "TTFT" in screen and "request sent" in screen, screen
        _tmux(sock, "send-keys", "-t", "precmon", "Escape")
        screen = _wait(sock, lambda t: "request sent" not in t and "Power" in t)
        assert "request sent" not in screen, screen
        _tmux(sock, "send-keys", "-t", "precmon", "q")
        screen = _wait(sock, lambda t: "EXITED=" in t)
        assert "EXITED=0" in screen, screen
    finally:
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True, timeout=10)
