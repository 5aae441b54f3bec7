"""The one-line log under the panels ends with "…" when it is cut (the watch-failing screenshot's
red line stopped mid-word: "…no tokens in the answer (its", "…7 failed requests since"): a line
cut without a mark reads as the whole message."""

from __future__ import annotations

import asyncio

import pytest

from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.progress_log import ProgressLog
from tests.tui.conftest import frozen_meter_factory

LONG = (
    "--drive stopped: 7 failed requests since 18:02:11 — no tokens in the answer (its chunks carried no "
    'text, e.g. "choices": [null]) — retrying in 30 s'
)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_a_cut_log_line_ends_with_an_ellipsis(size):
    async def scenario() -> str:
        app = PrecmonApp(
            TuiConfig(url="http://127.0.0.1:8080", watch=True, poll_server=False), meter_factory=frozen_meter_factory
        )
        async with app.run_test(size=size) as pilot:
            app.query_one(ProgressLog).log_line(LONG, error=True)
            await pilot.pause(0.3)
            line = app.query_one("#log-line")
            return "".join(strip.text for strip in line.render_lines(line.region.reset_offset)).rstrip()

    shown = asyncio.run(scenario())
    assert shown.endswith("…") and LONG.startswith(shown[:-1]), shown


def test_a_line_that_fits_is_shown_whole():
    async def scenario() -> str:
        app = PrecmonApp(TuiConfig(url="http://127.0.0.1:8080", poll_server=False), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            app.query_one(ProgressLog).log_line("server is back")
            await pilot.pause(0.3)
            line = app.query_one("#log-line")
            return "".join(strip.text for strip in line.render_lines(line.region.reset_offset)).rstrip()

    assert asyncio.run(scenario()) == "server is back"
