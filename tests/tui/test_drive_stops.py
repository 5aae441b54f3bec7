"""#14: `watch --drive` never stops silently. A failed request says that the load stopped and why,
the last tok/s and J/token are marked stale (not shown as live), and the load is retried with a
doubling, capped delay, and then every `DRIVE_BACKOFF_MAX_S` until quit: it recovers when the server
does, however many requests failed meanwhile (issue 30's case failed 56 times; a give-up after 20
left "gave up … restart" on screen for good)."""

from __future__ import annotations

import asyncio

import precmon.tui.workers.server_worker as server_worker
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.readout import Readout
from precmon.tui.workers.server_worker import drive_delay_s
from tests.fakes.timed_server import Behaviour, TimedServer
from tests.tui.conftest import fast_settings, no_meter_factory, wait_for


def test_drive_backoff_doubles_and_is_capped():
    assert [drive_delay_s(n) for n in range(1, 8)] == [2.0, 4.0, 8.0, 16.0, 30.0, 30.0, 30.0]


def _status(app: PrecmonApp) -> str:
    return str(app.query_one("#watch-status").render())


def _tok_source(app: PrecmonApp) -> str:
    return app.query_one("#ro-tok", Readout).source


def _drive_app(url: str, tmp_path) -> PrecmonApp:
    return PrecmonApp(
        TuiConfig(url=url, watch=True, drive=True, settings=fast_settings(), out_dir=tmp_path, poll_server=False),
        meter_factory=no_meter_factory,
    )


def test_drive_says_it_stopped_marks_tok_s_stale_and_recovers(tmp_path, monkeypatch):
    monkeypatch.setattr(server_worker, "DRIVE_BACKOFF_S", 0.3)

    async def scenario():
        with TimedServer(Behaviour(itl_s=0.002)) as srv:
            app = _drive_app(srv.url, tmp_path)
            async with app.run_test(size=(120, 40)) as pilot:
                digits = app.query_one("#ro-tok", Readout)
                assert await wait_for(pilot, lambda: digits.value not in ("--", ""), 20)
                assert "driving a steady load" in _status(app)
                srv.behaviour.http_status = 500
                assert await wait_for(pilot, lambda: "--drive stopped" in _status(app), 10)
                assert "HTTP 500" in _status(app) and "retrying in" in _status(app)
                assert "driving a steady load" not in _status(app)
                readout = app.query_one("#ro-tok")  # issue 30: n/a, not the last good figure marked stale
                assert "FAILING" in _status(app) and "1 failed request since" in _status(app)
                assert readout.value == "--" and _tok_source(app).startswith("n/a")
                srv.behaviour.http_status = 200
                assert await wait_for(pilot, lambda: "driving a steady load" in _status(app), 15)
                assert await wait_for(pilot, lambda: readout.value != "--", 5)
                assert _tok_source(app) == "--drive: last measured request"

    asyncio.run(scenario())


def test_drive_never_gives_up_and_recovers_after_many_failures(tmp_path, monkeypatch):
    monkeypatch.setattr(server_worker, "DRIVE_BACKOFF_S", 0.01)
    monkeypatch.setattr(server_worker, "DRIVE_BACKOFF_MAX_S", 0.02)  # the cap reached at once

    async def scenario():
        with TimedServer(Behaviour(itl_s=0.002, http_status=500)) as srv:
            app = _drive_app(srv.url, tmp_path)
            async with app.run_test(size=(80, 24)) as pilot:
                failed = srv.behaviour.requests
                assert await wait_for(pilot, lambda: len(failed) >= 30, 30)  # past the old give-up (20)
                await pilot.pause(0.2)
                status = _status(app)
                assert "FAILING" in status and "failed requests since" in status and "HTTP 500" in status, status
                assert "retrying in" in status and "gave up" not in status, status
                srv.behaviour.http_status = 200  # the server comes back
                assert await wait_for(pilot, lambda: "driving a steady load" in _status(app), 15)
                assert await wait_for(pilot, lambda: app.query_one("#ro-tok", Readout).value != "--", 5)

    asyncio.run(scenario())
