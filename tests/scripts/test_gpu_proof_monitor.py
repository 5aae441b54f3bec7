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


# A program that burns a known amount of CPU time (by its own clock, time.process_time) once told
# to, then sleeps: what the monitor counts must be that amount. CPU seconds do not depend on how
# busy the machine is, where a share of a core does: a spinning loop got 34% of one on a loaded
# 2-core machine, so "a spinning loop reads > 50%" failed there. The wrapper `script` starts reads
# ~0 s, so a monitor that counted it (runs 1 and 2) fails here still.
BURN_S = 0.5
BURNER = """\
import os, sys, time
from pathlib import Path
d = Path(sys.argv[1])
print("size", os.get_terminal_size(), flush=True)
(d / "ready").touch()
deadline = time.monotonic() + 60
while not (d / "go").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
start = time.process_time()
while time.process_time() - start < float(sys.argv[2]):
    pass
(d / "burned").touch()
time.sleep(60)
"""


def _wait(cond, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < deadline, "the program under test did not get that far"
        time.sleep(0.05)


def test_busy_program_counts_its_own_cpu_and_keeps_its_screen(tmp_path: Path) -> None:
    """The CPU seconds counted are the program's own, measured against what it knows it used."""
    require(shutil.which("script") is not None, "util-linux `script` is not installed")
    g = load_gpu_proof()
    (tmp_path / "burner.py").write_text(BURNER)
    m = g.PtyMonitor(
        "busy", f"{sys.executable} {tmp_path / 'burner.py'} {tmp_path} {BURN_S}", tmp_path / "screen", dict(os.environ)
    )
    _wait((tmp_path / "ready").exists)  # started: its start-up CPU is not what is counted
    m.begin()
    (tmp_path / "go").touch()
    _wait((tmp_path / "burned").exists)
    seen = m.watch.last
    _wait(lambda: m.watch.last is not seen)  # the watch reads once a second: one reading after the burn
    r = m.finish()
    wall_s, cpu_s = m.watch.last
    assert r["alive_at_end"] is True
    assert r["processes"] and "burner.py" in r["processes"][0]  # the program, not `sh -c`
    assert BURN_S * 0.9 <= cpu_s <= BURN_S + 0.2  # psutil reads in clock ticks (10 ms)
    assert r["cpu_percent_of_one_core"] == round(100.0 * cpu_s / wall_s, 2)
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
