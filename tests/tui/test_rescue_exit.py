"""A sweep in the TUI whose results folder fails (read-only, disk full) goes on into the rescue
folder, and the session exits 1 saying where (issue 30: it exited 0, so a script took the results
for being in --out). `precmon sweep --headless` already did (tests/sweep/test_store_faults.py)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

import precmon.tui.app as app_module
from precmon.cli.commands.tui_cmd import _run
from precmon.sweep import store as store_mod
from precmon.sweep.store import ResultStore
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import no_meter_factory

CSS = Path(app_module.__file__).parent / "precmon.tcss"  # CSS_PATH is relative to the subclass's file
PLAN = (
    "[defaults]\ncooldown_s = 0\nidle_s = 0\nwarmup = 0\nrepeats = 1\noutput_tokens = 8\n"
    "decode_prompt_tokens = 8\nprefill_tokens = [32]\nttft_tokens = 32\n"
)


class _SweepsThenQuits(PrecmonApp):
    """Sweeps at mount (as `precmon sweep` in a terminal does), quits once the sweep has saved."""

    CSS_PATH = CSS

    def on_mount(self) -> None:  # Textual runs PrecmonApp.on_mount too (a second call would stop the sweep)
        self.set_interval(0.1, self._quit_when_saved)

    def _quit_when_saved(self) -> None:
        if self.measure_worker.saved and not self.measure_worker.busy:
            self.exit(0)


def _read_only(monkeypatch: pytest.MonkeyPatch, out: Path) -> None:
    """Writes into `out` fail with EROFS after the first two journal lines (the folder went
    read-only mid-sweep; as root a chmod would not stop them)."""
    real_append, real_write = ResultStore._append_line, store_mod.write_json_atomic
    calls = {"n": 0}

    def append(self, path, line, check_tail=False):
        calls["n"] += 1
        if Path(path).parent == out and calls["n"] > 2:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_append(self, path, line, check_tail)

    def write(path, doc, make_parents=True):
        if Path(path).parent == out and calls["n"] > 2:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real_write(path, doc, make_parents)

    monkeypatch.setattr(ResultStore, "_append_line", append)
    monkeypatch.setattr(store_mod, "write_json_atomic", write)


def _sweep_in_the_tui(tmp_path: Path) -> int:
    with TimedServer(Behaviour(itl_s=0.001)) as srv:
        spec = tmp_path / "sweep.toml"
        spec.write_text(PLAN + f'[[variant]]\nlabel = "one"\nprecision = "int4"\nurl = "{srv.url}"\n')
        app = _SweepsThenQuits(
            TuiConfig(url=srv.url, sweep_spec=str(spec), out_dir=tmp_path / "out", auto_sweep=True),
            meter_factory=no_meter_factory,
        )
        return _run(app, headless=True)


def test_a_sweep_rescued_from_a_read_only_out_folder_exits_1_and_says_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    _read_only(monkeypatch, tmp_path / "out")
    assert _sweep_in_the_tui(tmp_path) == 1
    (rescue,) = (tmp_path / "cache" / "rescue").iterdir()
    doc = json.loads((rescue / "results.json").read_text())
    assert [v["status"] for v in doc["variants"]] == ["ok"]  # measured in full, just elsewhere
    err = capsys.readouterr().err
    assert f"precmon: {tmp_path / 'out'} failed mid-sweep; the results are in {rescue}" in err
    assert f"results saved: {rescue / 'results.json'}" in err


def test_the_same_sweep_with_a_writable_out_folder_exits_0(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PRECMON_CACHE", str(tmp_path / "cache"))
    assert _sweep_in_the_tui(tmp_path) == 0
    assert json.loads((tmp_path / "out" / "results.json").read_text())["variants"][0]["status"] == "ok"
    assert not (tmp_path / "cache" / "rescue").exists() and "failed mid-sweep" not in capsys.readouterr().err
