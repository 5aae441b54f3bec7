"""`precmon` (the TUI command) exits 1 when the app crashes (it exited 0: a label like "F16 [/]" crashed the TUI silently), 0 on a clean quit."""

from __future__ import annotations

from pathlib import Path

import precmon.tui.app as app_module
from precmon.cli.commands.tui_cmd import _run
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
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
    assert (
        _run(_Crashes(TuiConfig(out_dir=tmp_path, poll_server=False), meter_factory=no_meter_factory), headless=True)
        == 1
    )


def test_a_clean_quit_exits_0(tmp_path):
    assert (
        _run(_Quits(TuiConfig(out_dir=tmp_path, poll_server=False), meter_factory=no_meter_factory), headless=True) == 0
    )


def test_tui_cmd_does_not_import_sweep_cmd():
    """The cycle sweep_cmd ↔ tui_cmd is gone: sweep_cmd decides when to fall back to headless."""
    import subprocess
    import sys

    code = "import sys, precmon.cli.commands.tui_cmd; sys.exit('precmon.cli.commands.sweep_cmd' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_sweep_without_a_terminal_runs_headless_and_honours_json(tmp_path):
    import socket
    import subprocess
    import sys

    with socket.socket() as s:  # a port nothing listens on: the one variant fails fast
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    spec = tmp_path / "sweep.toml"
    spec.write_text(
        f'[[variant]]\nlabel = "F16"\nprecision = "fp16"\nurl = "{dead}"\nrepeats = 1\nwarmup = 0\nidle_s = 0\n'
    )
    out, js = tmp_path / "out", tmp_path / "copy.json"
    proc = subprocess.run(
        [sys.executable, "-m", "precmon.cli", "sweep", str(spec), "--out", str(out), "--json", str(js)],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert "no terminal: running the sweep headless" in proc.stderr, proc.stderr
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert js.read_text() == (out / "results.json").read_text()


def test_the_tuis_one_config_comes_from_the_parsed_arguments(tmp_path):
    """`precmon --url … --max-kld …`: the options the app starts with are one frozen TuiConfig."""
    import dataclasses

    import pytest

    from precmon.cli.commands.tui_cmd import tui_config
    from precmon.cli.parser import build_parser
    from precmon.core.settings import report_values
    from precmon.tui.config import TuiConfig

    argv = ["--url", "http://127.0.0.1:8080", "--model", "m", "--server", "llamacpp", "--refresh-s", "2"]
    args = build_parser().parse_args([*argv, "--out", str(tmp_path), "--max-kld", "0.02"])
    config = tui_config(args, "k", report=report_values(vars(args)))
    assert config == TuiConfig(
        url="http://127.0.0.1:8080",
        model="m",
        server_kind="llamacpp",
        api_key="k",
        out_dir=tmp_path,
        refresh_s=2.0,
        report={"max_kld": 0.02},
    )
    assert (config.server.url, config.server.kind, config.server.api_key) == ("http://127.0.0.1:8080", "llamacpp", "k")
    assert not config.discovering  # a URL given: no look on the usual ports
    bare = tui_config(build_parser().parse_args([]), None)
    assert bare.discovering and bare.out_dir is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.url = "http://elsewhere"  # type: ignore[misc]
