"""After `kill -9` of precmon, the server it launched keeps running (its own process group); the next
run on the same out folder stops it, after checking that the recorded pid is still that process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from precmon.servers.launch import free_port
from precmon.sweep.launched import record_launch, stop_leftovers
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec

ROOT = Path(__file__).resolve().parents[2]


def _group_leader(*argv: str) -> subprocess.Popen:
    return subprocess.Popen(list(argv), start_new_session=True)


def _gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def test_a_recorded_server_and_its_children_are_stopped(tmp_path):
    argv = ["sh", "-c", "sleep 9141 & sleep 9142", "sh", "--api-key", "sk-sekrit-123456"]
    p = _group_leader(*argv)
    try:
        time.sleep(0.3)
        kids = psutil.Process(p.pid).children()
        path = record_launch(tmp_path, "A", p.pid, argv)
        assert path is not None and "sk-sekrit" not in path.read_text()  # the record holds no secret
        notes = stop_leftovers(tmp_path, grace_s=5)
        p.wait(10)
        assert any("A: stopping its server" in n for n in notes)
        assert all(_gone(k.pid) for k in kids)
        assert list((tmp_path / "launched").iterdir()) == []
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)


def test_a_child_left_by_a_dead_leader_is_stopped(tmp_path):
    p = _group_leader("sh", "-c", "sleep 9143 & sleep 0.5; exit 0")
    assert record_launch(tmp_path, "A", p.pid, ["sh"]) is not None
    time.sleep(0.2)
    (kid,) = [k for k in psutil.Process(p.pid).children() if k.cmdline() == ["sleep", "9143"]]
    p.wait(10)  # the leader is gone, its child still holds the GPU
    try:
        stop_leftovers(tmp_path, grace_s=5)
        assert _gone(kid.pid)
    finally:
        if kid.is_running():
            kid.kill()


def test_a_reused_pid_is_left_alone(tmp_path):
    p = _group_leader("sleep", "9144")
    try:
        path = record_launch(tmp_path, "A", p.pid, ["sleep"])
        assert path is not None
        # the record of an older process that had the same pid: another start time
        rec = json.loads(path.read_text())
        path.write_text(json.dumps(rec | {"create_time": rec["create_time"] - 1000}))
        assert stop_leftovers(tmp_path, grace_s=1) == []
        assert p.poll() is None  # still running
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)


FAKE_SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.fakes.timed_server import Behaviour, _Handler, _Server
httpd = _Server(("127.0.0.1", {port}), _Handler)
httpd.behaviour = Behaviour(itl_s=0.05, prefill_s_per_token=0.00001)
httpd.serve_forever()
"""


@pytest.mark.alone
def test_resume_after_kill_9_stops_the_server_left_running(tmp_path):
    port = free_port()
    out = tmp_path / "out"
    spec = tmp_path / "s.toml"
    script = tmp_path / "server.py"
    script.write_text(FAKE_SERVER.format(root=str(ROOT), port=port))
    spec.write_text(
        "[defaults]\noutput_tokens = 40\ndecode_prompt_tokens = 8\nprefill_tokens = [32]\nttft_tokens = 32\n"
        "repeats = 2\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\n"
        f'[[variant]]\nlabel = "L"\nprecision = "x"\nurl = "http://127.0.0.1:{port}"\n'
        f'launch = ["{sys.executable}", "{script}"]\nready_timeout_s = 60\n'
    )
    argv = [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out)]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    record = out / "launched" / "L.json"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (record.exists() and (out / "journal.jsonl").exists()):
        time.sleep(0.1)
    assert record.exists(), "the launched server was never recorded"
    pid = json.loads(record.read_text())["pid"]
    first.send_signal(signal.SIGKILL)
    first.wait(10)
    assert psutil.pid_exists(pid)  # left running: the reported defect's precondition
    try:
        second = subprocess.run(argv + ["--resume"], capture_output=True, text=True, timeout=180)
        assert second.returncode == 0, second.stderr  # no "already answers before it was started"
        assert "left running by an earlier run" in second.stderr
        assert _gone(pid)
        assert not record.exists()  # the second run's own server was stopped and forgotten too
    finally:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_launched_variant_with_a_long_label_starts(tmp_path):
    """Its log file was named after the whole label: a 300-character one could not be opened
    ("File name too long"), so the server never started and the variant failed."""
    label = "y" * 300
    port = free_port()
    spec = parse_spec(
        "[defaults]\noutput_tokens = 4\ndecode_prompt_tokens = 8\nprefill_tokens = [16]\nttft_tokens = 16\n"
        'repeats = 1\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\ntimeout_s = 5\nserver = "llamacpp"\n'
        f'[[variant]]\nlabel = "{label}"\nprecision = "q4"\nurl = "http://127.0.0.1:{port}"\nready_timeout_s = 20\n'
        f"launch = {json.dumps([sys.executable, '-m', 'tests.hostile.servers', 'good', '--port', str(port)])}\n"
    )
    SweepRunner(spec, tmp_path).run()
    (variant,) = json.loads((tmp_path / "results.json").read_text())["variants"]
    assert variant["status"] == "ok", variant["errors"]
