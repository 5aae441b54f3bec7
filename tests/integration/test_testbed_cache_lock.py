"""Two precmon processes (a demo and a test run) making the same cached model: one writes it, the
other waits on the lock and reuses it; no shared `.partial` name, no temporary left behind.
Needs no llama.cpp build: the model writers are replaced by slow stand-ins."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from precmon.testbed import models
from precmon.testbed.cachefs import atomic_file, unique_partial

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import os, sys, time
sys.path.insert(0, {src!r})
from pathlib import Path
from precmon.testbed import models
from precmon.testbed.cachefs import atomic_file

log = Path({log!r})

def slow_f16(shape, out, build, seed=0):
    def write(tmp):
        with open(log, "a") as f:
            f.write(f"f16 {{os.getpid()}}\\n")
        tmp.write_bytes(b"half")
        time.sleep(1.0)  # the other process arrives while this one writes
        with open(tmp, "ab") as f:
            f.write(b" and the rest")
    return atomic_file(out, write)

def fake_quantize(build, src, dst, qtype):
    assert src.read_bytes() == b"half and the rest"  # never a file half written
    return atomic_file(dst, lambda tmp: (open(log, "a").write(f"{{qtype}} {{os.getpid()}}\\n"), tmp.write_bytes(b"q")))

models.write_f16, models.quantize = slow_f16, fake_quantize
models.make_models("tiny", Path({out!r}), build=object(), quants=("Q8_0",))
"""


def test_two_processes_write_the_same_model_once(tmp_path):
    out, log = tmp_path / "models", tmp_path / "log"
    script = WRITER.format(src=str(ROOT / "src"), log=str(log), out=str(out))
    procs = [subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True) for _ in range(2)]
    errs = [p.communicate(timeout=60)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    lines = log.read_text().splitlines()
    assert [x.split()[0] for x in lines] == ["f16", "Q8_0"], lines  # each file made once
    assert (out / "tiny-F16.gguf").read_bytes() == b"half and the rest"
    assert not [p for p in out.iterdir() if p.name.endswith(".partial")]


def test_threads_get_their_own_temporaries_and_a_failed_write_leaves_none(tmp_path):
    dest = tmp_path / "m.gguf"
    names = {unique_partial(dest) for _ in range(100)}
    assert len(names) == 100

    def boom(tmp: Path) -> None:
        tmp.write_bytes(b"x")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_file(dest, boom)
    assert list(tmp_path.iterdir()) == []

    calls: list[str] = []
    real = models.write_f16

    def counted(shape, out, build, seed=0):
        calls.append(threading.current_thread().name)
        time.sleep(0.3)  # the other threads arrive while this one writes
        return atomic_file(out, lambda tmp: tmp.write_bytes(b"f16"))

    models.write_f16 = counted
    try:
        threads = [
            threading.Thread(target=models.make_models, args=("tiny", tmp_path / "t", object(), ())) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    finally:
        models.write_f16 = real
    assert len(calls) == 1
