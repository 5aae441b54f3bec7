"""A `--drive` stop line stays on the watch state line while power snapshots keep arriving: the
state line is rebuilt on every snapshot (scopes, whose traffic), and that must not replace "why the
load stopped and when it retries" with DRIVING until a request succeeds again."""

from __future__ import annotations

import asyncio

from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import DriveStopped, PowerSampled
from precmon.tui.power_view import PowerSnapshot
from precmon.tui.widgets.readout import Readout
from tests.tui import scenes
from tests.tui.conftest import frozen_meter_factory


def test_stop_line_survives_power_snapshots():
    async def scenario() -> tuple[str, str]:
        app = PrecmonApp(
            TuiConfig(url="http://127.0.0.1:9", watch=True, poll_server=False, refresh_s=0.2),
            meter_factory=frozen_meter_factory,
        )  # a fast refresh: the snapshots are drawn before the drive loop's own retry (2 s) lands
        app.drive = True  # as --drive, without starting its loop (no server here)
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.3)
            app.post_message(DriveStopped("HTTP 503 from the server", 1, 2.0))
            await pilot.pause(0.2)
            for w in (100.0, 110.0):
                app.post_message(PowerSampled(PowerSnapshot((), w, "gpu")))
                await pilot.pause(0.1)
            await scenes.repainted(pilot)  # watch mode draws the snapshots at its next refresh
            status = str(app.query_one("#watch-status").render())
            title = app.query_one("#ro-watts", Readout).title
            app.exit(0)
        return status, title

    status, title = asyncio.run(scenario())
    # issue 30: the FAILING word, the count and since when, then the reason and the retry
    assert status.lstrip().startswith("FAILING  --drive stopped: 1 failed request since "), status
    assert status.endswith("— HTTP 503 from the server — retrying in 2 s"), status
    assert title == "watts · GPU"  # the titles still follow the snapshots
