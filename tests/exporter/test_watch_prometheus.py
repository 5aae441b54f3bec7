"""`precmon watch --prometheus HOST:PORT` serves the exporter from the TUI's own sampler."""

from __future__ import annotations

import argparse
import socket
from types import SimpleNamespace

from precmon.cli.commands import tui_cmd
from precmon.cli.parser import build_parser
from precmon.power.sampler import PowerSampler
from tests.exporter.conftest import free_port, get
from tests.exporter.full import FakeGpu


def test_watch_serves_the_tuis_sampler_while_it_runs_and_stops_after(monkeypatch) -> None:
    sampler = PowerSampler(sources=[FakeGpu()], rate_hz=20, extras_hz=20).start()
    app = SimpleNamespace(power_worker=SimpleNamespace(meter=None))  # the TUI opens its sampler later
    port = free_port()
    seen: list[str] = []

    def tui_running(a: object) -> int:
        seen.append(get(f"http://127.0.0.1:{port}/metrics"))
        app.power_worker.meter = sampler
        seen.append(get(f"http://127.0.0.1:{port}/metrics"))
        return 0

    monkeypatch.setattr(tui_cmd, "_run", tui_running)
    args = argparse.Namespace(url=None, model=None, server="auto")
    try:
        assert tui_cmd._watch_exported(app, args, f"127.0.0.1:{port}", None) == 0
    finally:
        sampler.stop()
    assert "precmon_power_watts" not in seen[0]  # no sampler yet: nothing, and no error
    assert 'precmon_power_watts{host="' in seen[1] and "312.5" in seen[1]
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT; a listener still blocks it
        s.bind(("127.0.0.1", port))  # the exporter's server is gone with the TUI


def test_watch_prometheus_bad_address_is_exit_2_before_the_tui(monkeypatch, capsys) -> None:
    monkeypatch.setattr(tui_cmd, "_run", lambda a: 99)
    app = SimpleNamespace(power_worker=SimpleNamespace(meter=None))
    args = argparse.Namespace(url=None, model=None, server="auto")
    assert tui_cmd._watch_exported(app, args, "no-port", None) == 2
    assert "--prometheus: expected HOST:PORT" in capsys.readouterr().err


def test_watch_parser_takes_prometheus() -> None:
    args = build_parser().parse_args(["watch", "--prometheus", "127.0.0.1:9464"])
    assert args.prometheus == "127.0.0.1:9464"
