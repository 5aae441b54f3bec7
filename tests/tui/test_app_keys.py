"""Behaviour of each key and state, driven with Pilot against real local HTTP servers.

The TimedServer is a real server with known timing, so a bench here runs the same code path as
against llama-server, only faster.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from pathlib import Path

from precmon.core.schema import ResultsDoc, from_json, to_json
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.quit_flow import SWEEP_QUIT_WAIT_S
from precmon.tui.screens.confirm_quit import ConfirmQuit
from precmon.tui.screens.help import HelpScreen
from precmon.tui.widgets.progress_log import ProgressLog
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.watch_view import WatchView
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import fast_settings, no_meter_factory, wait_for

SIZE = (120, 40)
ROOT = Path(__file__).resolve().parents[2]


def run(coro):
    return asyncio.run(coro)


def sweep_file(tmp_path, url: str, dead_url: str) -> str:
    path = tmp_path / "sweep.toml"
    path.write_text(f"""
[defaults]
url = "{url}"
output_tokens = 16
decode_prompt_tokens = 16
prefill_tokens = [64]
ttft_tokens = 128
repeats = 2
warmup = 0
idle_s = 0
cooldown_s = 0

[[variant]]
label = "Q4_K_M"
precision = "int4"
model = "fake-Q4_K_M"

[[variant]]
label = "GONE"
precision = "fp8"
url = "{dead_url}"
""")
    return str(path)


def test_bench_key_fills_table_and_server_panel(tmp_path):
    async def scenario():
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            app = PrecmonApp(
                TuiConfig(url=srv.url, settings=fast_settings(), out_dir=tmp_path), meter_factory=no_meter_factory
            )
            async with app.run_test(size=SIZE) as pilot:
                assert await wait_for(pilot, lambda: app.query_one(ServerPanel).view.healthy)
                await pilot.press("b")
                assert await wait_for(pilot, lambda: app.measuring is None, 30)
                await pilot.pause(0.4)
                variant = to_json(app.live.doc)["variants"][0]
                assert variant["label"] == "Q4_K_M" and variant["status"] == "ok"
                assert variant["metrics"]["decode_tok_s"] > 100
                view = app.query_one(ServerPanel).view
                assert view.kind == "llamacpp" and view.last_tok_s is not None and view.tok_s_series
                assert "Decode tok/s" in _screen_text(app) and "Q4_K_M" in _screen_text(app)
                saved = list(tmp_path.glob("bench-*/results.json"))  # a bench is a sweep of one variant
                assert saved and json.loads(saved[0].read_text())["schema"] == "precmon.results/1"
                assert (saved[0].parent / "journal.jsonl").read_text().count('"type": "run"') == len(variant["runs"])

    run(scenario())


def test_sweep_with_a_failed_variant_and_results_on_disk(tmp_path):
    async def scenario():
        with TimedServer(Behaviour(itl_s=0.001, prefill_s_per_token=0.0001)) as srv:
            # bound, never listening: refused, and no other xdist worker's server can take the port
            dead = socket.socket()
            dead.bind(("127.0.0.1", 0))
            dead_url = f"http://127.0.0.1:{dead.getsockname()[1]}"
            app = PrecmonApp(
                TuiConfig(
                    url=srv.url, sweep_spec=sweep_file(tmp_path, srv.url, dead_url), out_dir=tmp_path, poll_server=False
                ),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("s")
                assert await wait_for(pilot, lambda: app.measuring is None, 40)
                await pilot.pause(0.4)
                status = {v["label"]: v["status"] for v in to_json(app.live.doc)["variants"]}
                assert status == {"Q4_K_M": "ok", "GONE": "failed"}
                from precmon.report.table import build_table

                table = build_table(app.query_one("SweepTable").doc)
                assert [c.status for c in table.columns] == ["ok", "failed"]
                assert "✗ failed" in _screen_text(app)
                doc = json.loads((tmp_path / "results.json").read_text())
                assert [v["label"] for v in doc["variants"]] == ["Q4_K_M", "GONE"]
                assert (tmp_path / "journal.jsonl").read_text().count('"type": "run"') >= 4
            dead.close()

    run(scenario())


def test_server_going_away_is_shown(tmp_path):
    # The server runs in its own process, so killing it closes its keep-alive connections too,
    # as a crashed or stopped llama-server would.
    code = (
        f"import sys, time; sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.fakes.timed_server import TimedServer\n"
        "srv = TimedServer().__enter__(); print(srv.url, flush=True); time.sleep(600)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()

        async def scenario():
            app = PrecmonApp(TuiConfig(url=url, out_dir=tmp_path), meter_factory=no_meter_factory)
            async with app.run_test(size=SIZE) as pilot:
                panel = app.query_one(ServerPanel)
                assert await wait_for(pilot, lambda: panel.view.healthy is True)
                proc.kill()
                assert await wait_for(pilot, lambda: panel.view.healthy is False, 15)
                assert "unreachable" in _screen_text(app)
                assert any("server went away" in line for line in app.query_one(ProgressLog).lines)
                await pilot.press("b")  # benching a dead server ends with the reason, not a crash
                assert await wait_for(pilot, lambda: app.measuring is None, 20)
                assert any("bench failed" in line for line in app.query_one(ProgressLog).lines)

        run(scenario())
    finally:
        proc.kill()
        proc.wait()


def test_quit_asks_while_a_sweep_runs_and_keeps_results(tmp_path):
    async def scenario():
        with TimedServer(Behaviour(itl_s=0.08)) as srv:  # slow enough to be mid-sweep for all four key presses
            app = PrecmonApp(
                TuiConfig(
                    url=srv.url, sweep_spec=sweep_file(tmp_path, srv.url, srv.url), out_dir=tmp_path, poll_server=False
                ),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("s")
                assert await wait_for(pilot, lambda: (tmp_path / "journal.jsonl").exists(), 20)
                await pilot.press("q")
                await pilot.pause(0.2)
                assert isinstance(app.screen, ConfirmQuit)
                await pilot.press("n")
                await pilot.pause(0.2)
                assert not isinstance(app.screen, ConfirmQuit) and app.is_running
                await pilot.press("q")
                await pilot.pause(0.2)
                await pilot.press("y")
                await pilot.pause(0.2)
                assert app._stop.is_set()
                # the sweep gets a bounded wait to finish its request in flight and write results.json
                assert await wait_for(pilot, lambda: app.return_code is not None, SWEEP_QUIT_WAIT_S + 2)
            assert app.return_code == 0
            assert '"type": "run"' in (tmp_path / "journal.jsonl").read_text()

    run(scenario())


def test_ctrl_c_asks_during_a_sweep_and_a_second_ctrl_c_quits_keeping_results(tmp_path):
    async def scenario():
        with TimedServer(Behaviour(itl_s=0.08)) as srv:
            app = PrecmonApp(
                TuiConfig(
                    url=srv.url, sweep_spec=sweep_file(tmp_path, srv.url, srv.url), out_dir=tmp_path, poll_server=False
                ),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                await pilot.press("s")
                assert await wait_for(pilot, lambda: (tmp_path / "journal.jsonl").exists(), 20)
                await pilot.press("ctrl+c")
                await pilot.pause(0.2)
                assert isinstance(app.screen, ConfirmQuit) and app.is_running
                await pilot.press("ctrl+c")
                await pilot.pause(0.2)
                assert app._stop.is_set()
                assert await wait_for(pilot, lambda: app.return_code is not None, SWEEP_QUIT_WAIT_S + 2)
            assert app.return_code == 0
            assert '"type": "run"' in (tmp_path / "journal.jsonl").read_text()

    run(scenario())


def test_ctrl_c_without_a_measurement_exits_at_once(tmp_path):
    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("ctrl+c")
            await pilot.pause(0.1)
            assert not app.is_running
        assert app.return_code == 0

    run(scenario())


def test_quit_without_a_measurement_exits_at_once(tmp_path):
    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("q")
            await pilot.pause(0.1)
            assert not app.is_running

    run(scenario())


def test_export_writes_every_format_and_a_screenshot(tmp_path, cpu_doc):
    async def scenario():
        app = PrecmonApp(
            TuiConfig(out_dir=tmp_path / "out"),
            initial_results=from_json(ResultsDoc, cpu_doc),
            meter_factory=no_meter_factory,
        )
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            assert await wait_for(pilot, lambda: (tmp_path / "out" / "screenshot.svg").exists())
            await pilot.pause(0.2)
            names = sorted(p.name for p in (tmp_path / "out").iterdir())
            assert names == ["report.csv", "report.html", "report.json", "report.md", "screenshot.svg"]
            assert json.loads((tmp_path / "out" / "report.json").read_text())["variants"][2]["label"] == "Q4_K_M"
            assert "<svg" in (tmp_path / "out" / "screenshot.svg").read_text()[:500]
            assert any(str(tmp_path / "out") in str(n.message) for n in app._notifications)

    run(scenario())


def test_export_with_nothing_measured_says_so(tmp_path):
    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path / "out"), meter_factory=no_meter_factory)
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("e")
            await pilot.pause(0.2)
            assert any("nothing measured" in str(n.message) for n in app._notifications)
            assert not (tmp_path / "out").exists()

    run(scenario())


def test_help_shows_metric_definitions_and_closes(tmp_path):
    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path), meter_factory=no_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("question_mark")
            await pilot.pause(0.2)
            assert isinstance(app.screen, HelpScreen)
            text = _screen_text(app)
            assert "TTFT" in text and "request sent" in text and "b " in text
            await pilot.press("end")  # the body scrolls by keyboard at 80×24
            await pilot.pause(0.2)
            assert "Medians" in _screen_text(app)
            await pilot.press("escape")
            await pilot.pause(0.1)
            assert not isinstance(app.screen, HelpScreen)

    run(scenario())


def test_watch_toggle_and_drive_shows_measured_numbers(tmp_path):
    async def scenario():
        with TimedServer(Behaviour(itl_s=0.002)) as srv:
            app = PrecmonApp(
                TuiConfig(url=srv.url, watch=True, drive=True, settings=fast_settings(), out_dir=tmp_path),
                meter_factory=no_meter_factory,
            )
            async with app.run_test(size=SIZE) as pilot:
                assert app.screen.has_class("-watch")
                digits = app.query_one("#ro-tok", Readout)
                assert await wait_for(pilot, lambda: digits.value not in ("--", ""), 20)
                assert float(digits.value) > 50
                assert "--drive" in app.query_one("#ro-tok", Readout).source
                assert app.query_one(ServerPanel).view.last_tok_s is not None
                await pilot.press("w")
                await pilot.pause(0.1)
                assert not app.screen.has_class("-watch")
                assert not app.query_one(WatchView).display or not app.query_one(WatchView).is_on_screen

    run(scenario())


def test_no_server_keys_explain_themselves(tmp_path):
    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path), meter_factory=no_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("b")
            await pilot.press("s")
            await pilot.pause(0.2)
            assert "no server — pass --url" in _screen_text(app)
            assert sum("no server" in str(n.message) for n in app._notifications) == 2
            assert app.measuring is None

    run(scenario())


def test_without_url_finds_a_server_on_a_usual_port(tmp_path, monkeypatch):
    from urllib.parse import urlparse

    import precmon.servers.detect as detect

    async def scenario():
        with TimedServer(Behaviour()) as srv:
            monkeypatch.setattr(detect, "USUAL_PORTS", {urlparse(srv.url).port: "llamacpp"})
            app = PrecmonApp(TuiConfig(out_dir=tmp_path, discover=True), meter_factory=no_meter_factory)
            async with app.run_test(size=(80, 24)) as pilot:
                assert await wait_for(pilot, lambda: app.query_one(ServerPanel).view.healthy, 10)
                assert app.url == srv.url and app.query_one(ServerPanel).view.url == srv.url
                await pilot.pause(0.3)
                assert f"found llamacpp at {srv.url}" in app.query_one(ProgressLog).lines[-1]
                assert app.sub_title == srv.url

    run(scenario())


def test_without_url_and_nothing_found_says_where_it_looked(tmp_path, monkeypatch):
    import socket

    import precmon.servers.detect as detect

    with socket.socket() as s:  # a port with nothing listening
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    monkeypatch.setattr(detect, "USUAL_PORTS", {free: "llamacpp"})

    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path, discover=True, watch=True), meter_factory=no_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: "pass --url" in (app.query_one(ServerPanel).view.search or ""))
            assert app.url is None
            assert f"({free}), still looking; pass --url" in app.query_one(ServerPanel).view.search
            await pilot.press("w")  # back to the tables: the panel says where it looked
            await pilot.pause(0.3)
            assert "none on the usual local ports" in _screen_text(app)

    run(scenario())


def test_a_server_started_after_precmon_is_found(tmp_path, monkeypatch):
    """A demo starts precmon watch first and the server second: the look goes on until it answers."""
    import socket
    from urllib.parse import urlparse

    import precmon.servers.detect as detect
    import precmon.tui.workers.server_worker as workers

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    monkeypatch.setattr(detect, "USUAL_PORTS", {free: "llamacpp"})
    monkeypatch.setattr(workers, "DISCOVER_EVERY_S", 0.2)

    async def scenario():
        app = PrecmonApp(TuiConfig(out_dir=tmp_path, discover=True, watch=True), meter_factory=no_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            assert await wait_for(pilot, lambda: "still looking" in (app.query_one(ServerPanel).view.search or ""))
            with TimedServer(Behaviour()) as srv:
                monkeypatch.setattr(detect, "USUAL_PORTS", {urlparse(srv.url).port: "llamacpp"})
                assert await wait_for(pilot, lambda: app.query_one(ServerPanel).view.healthy, 10)
                assert app.url == srv.url

    run(scenario())


def _screen_text(app) -> str:
    """All text on the current screen (via the SVG export, which is what the user sees)."""
    import html
    import re

    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")
