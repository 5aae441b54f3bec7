"""The main screen's Server panel shows the live reads' window, the figure watch mode shows, and
marks it when unsure (audit of issue 30): it printed the raw one-second read as fact, so under
load a request running at ~19 tok/s read "3.00 tok/s" there while watch mode said "19 ⚠ uneven".
One `RateWindow` (`ServerRoutes.window`) feeds both screens."""

from __future__ import annotations

import asyncio

import precmon.servers.watch.rate_window as rate_window
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import RateWindow
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import LiveRateRead
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.watch_view import WatchView
from tests.tui import scenes
from tests.tui.conftest import frozen_meter_factory

URL = "http://127.0.0.1:8080"
BURSTY = [2.0, 45.0, 4.0, 41.0, 3.0]  # the loaded box: 0–45 tok/s from one second to the next


def _read(tok_s: float, taken_s: float) -> LiveRateRead:
    return LiveRateRead(LiveRate(tok_s, "llama.cpp /slots", 1.0, 1, taken_s=taken_s))


def _live_row(panel: ServerPanel) -> str:
    lines = [strip.text for strip in panel.render_lines(panel.region.reset_offset)]
    return next(line for line in lines if line.startswith("│ live "))


async def _post(pilot, rates: list[float], start_s: float = 100.0) -> None:
    for i, r in enumerate(rates):
        pilot.app.post_message(_read(r, start_s + i))
        await pilot.pause(0.05)  # one at a time: LiveRateRead collapses a queue of them (`can_replace`)
    await pilot.pause(0.2)


def test_panel_shows_the_window_figure_marked_unsure_and_watch_shows_the_same():
    async def scenario() -> tuple[str, float | None, str, str]:
        app = PrecmonApp(TuiConfig(url=URL, poll_server=False), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            assert app.query_one(WatchView).window is app.server_follow.window  # one source for both screens
            await _post(pilot, BURSTY)
            row = _live_row(app.query_one(ServerPanel))
            await pilot.press("w")
            await _post(pilot, [3.0], start_s=105.0)  # the window: 45, 4, 41, 3, 3 → 19.2
            await scenes.repainted(pilot)
            panel_figure = app.query_one(ServerPanel).view.live_figure.tok_s
            readout = app.query_one("#ro-tok", Readout)
            return row, panel_figure, readout.value, readout.source

    row, panel_figure, value, source = asyncio.run(scenario())
    assert "19.0 tok/s ⚠ uneven pace" in row, row  # (2+45+4+41+3)/5, marked
    assert "3.00 tok/s" not in row, row  # the last one-second read is not the figure
    assert panel_figure is not None and round(panel_figure, 1) == 19.2 and value == "19.2"
    assert source.startswith("⚠ unsure"), source


def test_a_steady_rate_is_shown_plainly():
    async def scenario() -> str:
        app = PrecmonApp(TuiConfig(url=URL, poll_server=False), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            await _post(pilot, [30.0, 31.0, 29.0, 30.0, 30.0])
            return _live_row(app.query_one(ServerPanel))

    row = asyncio.run(scenario())
    assert "30.0 tok/s" in row and "⚠" not in row, row


def test_no_read_for_a_while_marks_the_panel_stale(monkeypatch):
    monkeypatch.setattr(rate_window, "STALE_POLLS", 0.5)  # stale after half a poll without a read

    async def scenario() -> str:
        app = PrecmonApp(TuiConfig(url=URL, poll_server=False, refresh_s=0.2), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            await _post(pilot, [30.0, 31.0, 29.0])
            await pilot.pause(1.0)  # no read: the refresh tick finds the window stale
            return _live_row(app.query_one(ServerPanel))

    row = asyncio.run(scenario())
    assert "⚠ stale: no reading for" in row, row


def test_every_unsure_reason_has_a_few_words():
    w = RateWindow(poll_s=1.0)
    for i, r in enumerate(BURSTY):
        w.add(LiveRate(r, "llama.cpp /slots", 1.0, 1, taken_s=100.0 + i), 100.0 + i)
    got = w.rate(104.0)
    assert got is not None and got.brief == "uneven pace" and got.unsure is not None
    w.clear()
    for i in range(3):
        w.add(LiveRate(2.0, "llama.cpp /slots", 1.0, 1, taken_s=100.0 + i), 100.0 + i)
    few = w.rate(102.0)
    assert few is not None and few.brief == "few tokens"
    steady = RateWindow(poll_s=1.0)
    steady.add(LiveRate(30.0, "llama.cpp /slots", 1.0, 1, taken_s=1.0), 1.0)
    assert steady.rate(1.0).brief is None  # type: ignore[union-attr]
