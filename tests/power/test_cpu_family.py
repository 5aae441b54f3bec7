"""power/cpu.py finds a server's process tree from /proc's children files, as psutil would."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

from precmon.power import cpu


def test_family_finds_children_and_grandchildren_as_psutil_does():
    # a child that starts a grandchild, both sleeping until killed
    code = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and len(psutil.Process(child.pid).children()) < 1:
            time.sleep(0.05)
        ours = sorted(p.pid for p in cpu.family(os.getpid()))
        theirs = sorted([os.getpid(), *(p.pid for p in psutil.Process().children(recursive=True))])
        assert ours == theirs
        assert child.pid in ours and len(ours) >= 3  # this process, the child and its child
    finally:
        for p in psutil.Process(child.pid).children(recursive=True):
            p.kill()
        child.kill()
        child.wait()


def test_a_gone_process_has_no_family():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    assert cpu.family(proc.pid) == []
