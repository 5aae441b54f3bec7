"""Watch mode during a bench started in the TUI: the live window's figure is unsure (an uneven
pace), the readout says "⚠ unsure: see below", and the state line below (DRIVING: precmon's own
traffic) says why; it dropped the reason and left "see below" pointing at nothing."""

from __future__ import annotations

import asyncio

from precmon.servers.watch.live_rate import LiveRate
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import LiveRateRead
from precmon.tui.widgets.readout import Readout
from tests.tui import scenes
from tests.tui.conftest import frozen_meter_factory


def test_driving_state_line_names_the_unsure_reason():
    async def scenario() -> tuple[str, str]:
        app = PrecmonApp(
            TuiConfig(url="http://127.0.0.1:8080", watch=True, poll_server=False), meter_factory=frozen_meter_factory
        )
        async with app.run_test(size=(120, 40)) as pilot:
            app.measuring = "bench"  # as `b` sets it (no bench runs: the reads below stand in for its traffic)
            for i, tok_s in enumerate([2.0, 45.0, 4.0, 41.0, 3.0]):
                app.post_message(LiveRateRead(LiveRate(tok_s, "llama.cpp /slots", 1.0, 1, taken_s=100.0 + i)))
                await pilot.pause(0.05)
            await scenes.repainted(pilot)
            return str(app.query_one("#watch-status").render()), app.query_one("#ro-tok", Readout).source

    status, source = asyncio.run(scenario())
    assert source.startswith("⚠ unsure") and source.endswith("see below"), source
    assert status.lstrip().startswith("DRIVING"), status
    assert "precmon's own bench" in status and "tok/s unsure — uneven: 2–45 tok/s within 5 s" in status, status
