"""`precmon` (the TUI command) exits 1 when the app crashes (it exited 0: a label like "F16 [/]" crashed the TUI silently), 0 on a clean quit."""

from __future__ import annotations

from pathlib import Path

import precmon.tui.app as app_module
from precmon.cli.tui_cmd import _run
from precmon.tui.app import PrecmonApp
from tests.tui.conftest import no_meter_factory

CSS = Path(app_module.__file__).parent / "precmon.tcss"  # CSS_PATH is relative to the subclass's file


class _Crashes(PrecmonApp):
    CSS_PATH = CSS

    def on_mount(self) -> None:
        super().on_mount()
        raise RuntimeError("a widget bug")


class _Quits(PrecmonApp):
    CSS_PATH = CSS

    def on_mount(self) -> None:
        super().on_mount()
        self.exit(0)


def test_a_crashing_app_exits_1(tmp_path):
    assert _run(_Crashes(meter_factory=no_meter_factory, out_dir=tmp_path, poll_server=False), headless=True) == 1


def test_a_clean_quit_exits_0(tmp_path):
    assert _run(_Quits(meter_factory=no_meter_factory, out_dir=tmp_path, poll_server=False), headless=True) == 0
