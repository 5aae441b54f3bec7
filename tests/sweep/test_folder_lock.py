"""One sweep per results folder (issue 39 #1): a second run on a folder in use killed the first
run's launched server ("killed by signal 9"), and two sweeps on one `--out` both exited 0 with
`results.json` keeping one of them. Now the results store holds a live lock for the length of a
sweep; a second writer is refused with one line naming the running one (pid, since when); a
dead owner's lock is taken over with a note; a leftover server is stopped only when the precmon
that launched it is gone."""

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
from precmon.sweep import folder_lock
from precmon.sweep.launched import record_launch, stop_leftovers
from precmon.sweep.runner import SweepRunner
from precmon.sweep.spec import parse_spec
from tests.sweep.test_launched_leftovers import FAKE_SERVER, ROOT

HOLD = """
import sys, time
sys.path.insert(0, {src!r})
from precmon.sweep import folder_lock
lock = folder_lock.take({folder!r})
print("held", flush=True)
time.sleep(60)
"""


def _holder(folder: Path) -> subprocess.Popen:
    p = subprocess.Popen(
        [sys.executable, "-c", HOLD.format(src=str(ROOT / "src"), folder=str(folder))],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "held"
    return p


def test_a_live_owner_keeps_the_folder_and_is_named(tmp_path):
    p = _holder(tmp_path)
    try:
        with pytest.raises(folder_lock.FolderBusy) as exc:
            folder_lock.take(tmp_path)
        line = str(exc.value)
        assert f"pid {p.pid}, since 20" in line and "one sweep per results folder" in line and "\n" not in line
        assert folder_lock.holder(tmp_path) == line
    finally:
        p.kill()
        p.wait(10)
    lock = folder_lock.take(tmp_path)  # the kernel let go when it died: taken over, with a note
    try:
        assert lock.note is not None and f"pid {p.pid}" in lock.note and "is gone" in lock.note
    finally:
        lock.release()


def test_a_clean_release_leaves_no_owner(tmp_path):
    lock = folder_lock.take(tmp_path)
    assert lock.note is None
    assert json.loads((tmp_path / folder_lock.FILE_NAME).read_text())["pid"] == os.getpid()
    lock.release()
    assert (tmp_path / folder_lock.FILE_NAME).read_text() == ""
    assert folder_lock.holder(tmp_path) is None
    again = folder_lock.take(tmp_path)
    assert again.note is None
    again.release()


def test_a_runner_is_refused_while_another_holds_the_folder(tmp_path):
    spec = parse_spec('[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "http://127.0.0.1:9"\n')
    p = _holder(tmp_path)
    try:
        with pytest.raises(folder_lock.FolderBusy):
            SweepRunner(spec, tmp_path).run()
        assert not (tmp_path / "journal.jsonl").exists() and not (tmp_path / "results.json").exists()
    finally:
        p.kill()
        p.wait(10)


def test_a_server_whose_precmon_lives_is_left_alone(tmp_path):
    server = subprocess.Popen(["sleep", "9145"], start_new_session=True)
    owner = subprocess.Popen(["sleep", "9146"])  # stands for the live precmon that launched it
    try:
        path = record_launch(tmp_path, "A", server.pid, ["sleep", "9145"])
        assert path is not None
        rec = json.loads(path.read_text())
        live = {"pid": owner.pid, "create_time": psutil.Process(owner.pid).create_time(), "since": "then"}
        path.write_text(json.dumps(rec | {"owner": live}))
        notes = stop_leftovers(tmp_path, grace_s=1)
        assert server.poll() is None and path.exists()
        assert notes == [
            f"A: its server (pid {server.pid}) is run by a live precmon (pid {owner.pid}, since then): left alone"
        ]
        owner.kill()
        owner.wait(10)
        stop_leftovers(tmp_path, grace_s=5)  # its precmon is gone now: a leftover, stopped
        server.wait(10)
    finally:
        for p in (server, owner):
            if p.poll() is None:
                p.kill()
                p.wait(10)


def _wait_for(cond, within_s: float = 60.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def test_a_resume_beside_a_running_sweep_is_refused_and_kills_nothing(tmp_path):
    """The issue's repro: the first sweep in tmux, `--resume` typed in a second terminal."""
    port = free_port()
    out, spec, script = tmp_path / "out", tmp_path / "s.toml", tmp_path / "server.py"
    script.write_text(FAKE_SERVER.format(root=str(ROOT), port=port))
    spec.write_text(
        "[defaults]\noutput_tokens = 160\ndecode_prompt_tokens = 8\nprefill_tokens = [32]\nttft_tokens = 32\n"
        "repeats = 2\nwarmup = 0\nidle_s = 0\ncooldown_s = 0\n"
        f'[[variant]]\nlabel = "L"\nprecision = "x"\nurl = "http://127.0.0.1:{port}"\n'
        f'launch = ["{sys.executable}", "{script}"]\nready_timeout_s = 60\n'
    )
    argv = [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--headless", "--out", str(out)]
    first = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    record = out / "launched" / "L.json"
    try:
        assert _wait_for(lambda: record.exists() and (out / "journal.jsonl").exists()), "the server was never recorded"
        server_pid = json.loads(record.read_text())["pid"]
        for extra in (["--resume"], []):
            second = subprocess.run(argv + extra, capture_output=True, text=True, timeout=60)
            assert second.returncode == 2, second.stderr
            assert f"is in use by another precmon (pid {first.pid}, since " in second.stderr
            assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
            assert psutil.pid_exists(server_pid) and first.poll() is None
        _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        (v,) = json.loads((out / "results.json").read_text())["variants"]
        assert v["status"] == "ok" and not any("signal" in e for e in v["errors"]), v["errors"]
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGKILL)
            first.wait(10)


def test_two_benches_on_one_out(tmp_path):
    from tests.fakes.timed_server import Behaviour, TimedServer
    from tests.hostile.run import TINY

    out = tmp_path / "b"
    out.mkdir()
    p = _holder(out)
    try:
        with TimedServer(Behaviour()) as srv:
            ran = subprocess.run(
                [sys.executable, "-m", "precmon.cli", "bench", "--url", srv.url, *TINY, "--out", str(out)],
                capture_output=True,
                text=True,
                timeout=60,
            )
        assert ran.returncode == 2 and f"pid {p.pid}" in ran.stderr and "in use" in ran.stderr, ran.stderr
    finally:
        p.kill()
        p.wait(10)


def test_the_headless_sweep_of_demo_is_refused_in_one_line(tmp_path, capsys):
    """`precmon demo --headless --out DIR` and `sweep` share run_headless: a folder taken between the
    command's check and the sweep's start is exit 2 with one line, never an internal error."""
    from precmon.cli.commands.sweep_cmd import Written, run_headless

    spec = parse_spec('[[variant]]\nlabel = "A"\nprecision = "x"\nurl = "http://127.0.0.1:9"\n')
    p = _holder(tmp_path)
    try:
        where = Written(tmp_path / "results.json")
        assert run_headless(spec, tmp_path, where=where) == 2
        assert where.refused
        assert f"is in use by another precmon (pid {p.pid}" in capsys.readouterr().err
    finally:
        p.kill()
        p.wait(10)
