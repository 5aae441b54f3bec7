"""scripts/gpu_proof.py's footprint monitors: a program run in a pseudo-terminal has its own CPU time
counted, its screen kept, and a program that died reads null rather than 0% (runs 1 and 2 on the H200
measured `script`'s shell wrapper and reported 0.0% for nvitop)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from pathlib import Path

from tests.conftest import require

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_proof.py"


def load_gpu_proof():
    spec = importlib.util.spec_from_file_location("gpu_proof", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_busy_program_counts_its_own_cpu_and_keeps_its_screen(tmp_path: Path) -> None:
    require(shutil.which("script") is not None, "util-linux `script` is not installed")
    g = load_gpu_proof()
    busy = (
        f"{sys.executable} -c \"import os, time; print('size', os.get_terminal_size()); "
        f'end = time.time() + 60\nwhile time.time() < end: pass"'
    )
    m = g.PtyMonitor("busy", busy, tmp_path / "screen", dict(os.environ))
    time.sleep(1)
    m.begin()
    time.sleep(3.5)
    r = m.finish()
    assert r["alive_at_end"] is True
    assert r["processes"] and "time.time()" in r["processes"][0]  # the program, not `sh -c`
    assert r["cpu_percent_of_one_core"] > 50  # a spinning loop, whatever the machine's load
    screen = (tmp_path / "screen").read_text(errors="replace")
    assert "columns=120, lines=40" in screen
    assert m.proc.poll() is not None  # killed with its process group


def test_finish_without_begin_still_stops_the_program(tmp_path: Path) -> None:
    require(shutil.which("script") is not None, "util-linux `script` is not installed")
    g = load_gpu_proof()
    m = g.PtyMonitor("idle", "sleep 60", tmp_path / "screen", dict(os.environ))
    time.sleep(0.5)
    r = m.finish()  # e.g. the sweep step failed before counting began
    assert r["cpu_percent_of_one_core"] is None and m.proc.poll() is not None


def test_dead_program_reads_null_not_zero(tmp_path: Path) -> None:
    require(shutil.which("script") is not None, "util-linux `script` is not installed")
    g = load_gpu_proof()
    m = g.PtyMonitor("dead", "false", tmp_path / "screen", dict(os.environ))
    time.sleep(1.5)
    m.begin()
    time.sleep(1.5)
    r = m.finish()
    assert r["alive_at_end"] is False
    assert r["cpu_percent_of_one_core"] is None


def test_precmon_watch_is_listed_only_where_textual_imports(monkeypatch) -> None:
    g = load_gpu_proof()
    watch = dict(g.monitor_commands())["precmon-watch"]
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "textual" else real(name, *a))
    assert g.installed(watch) is False  # the H200 image: no textual, so not started (it would die at import)
    monkeypatch.setattr(importlib.util, "find_spec", real)
    assert g.installed(watch) is True
    assert g.installed("definitely-not-a-program-xyz --flag") is False
    assert g.installed("sh -c true") is True
