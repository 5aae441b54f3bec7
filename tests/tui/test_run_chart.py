"""The run chart through the app's own message path: live-rate readings become its tok/s per
second, the power sampler's readings its W per second; shown from 40 rows while a variant
runs, hidden at 80×24 (the table and panels keep the rows)."""

from __future__ import annotations

import asyncio

import pytest

from precmon.servers.watch.live_rate import LiveRate
from precmon.tui.messages import LiveRateRead, MeasureEnded
from tests.tui import scenes
from tests.tui.conftest import WATTS


@pytest.mark.parametrize(("size", "shown"), [((120, 40), True), ((80, 24), False)])
def test_readings_reach_the_chart_while_a_variant_runs(size, shown):
    async def scenario():
        app = scenes.mid_sweep_app()
        async with app.run_test(size=size) as pilot:
            await scenes.mid_sweep(pilot)
            app.trace.start("Q4_K_M")  # drop the scene's readings: only the messages below
            for i, tok in enumerate([100.0, 250.0, 260.0]):
                app.post_message(LiveRateRead(LiveRate(tok, "vLLM /metrics, per step", 1.0, 2, taken_s=50.5 + i)))
                await pilot.pause(0.05)  # one a second in real life: never folded into one
            await scenes.repainted(pilot)
            chart = app.query_one("#chart")
            result = chart.has_class("-shown"), chart.view, app.trace.view()
            app.exit(0)
        return result

    is_shown, drawn, view = asyncio.run(scenario())
    assert view.tok_s == (100.0, 250.0, 260.0)
    assert view.tok_source == "tok/s each second from vLLM /metrics, per step (the server's token counts, all clients)"
    # the frozen meter has one sample a second: the headline channel's (system scope) per-second means
    assert view.watts == tuple(WATTS["hwmon3:sys_total"][:-1])  # the newest second is still filling
    assert view.watts_source == "W each second, system scope: sys_total"
    assert is_shown is shown
    if shown:
        assert drawn is view  # painted


def test_the_run_chart_goes_when_the_run_ends_not_at_the_next_refresh():
    """A sweep that ends (here: failed) takes its chart with it at once; waiting for the next
    refresh tick left a finished screen drawn with or without it, depending on timing."""

    async def scenario():
        app = scenes.mid_sweep_app()
        async with app.run_test(size=(120, 40)) as pilot:
            await scenes.mid_sweep(pilot)
            chart = app.query_one("#chart")
            shown = chart.has_class("-shown")
            app.post_message(MeasureEnded("sweep", error="the server went away"))
            await pilot.pause(0.1)  # well inside one refresh (1 s)
            result = shown, chart.has_class("-shown"), app.live.running
            app.exit(0)
        return result

    shown, still_shown, running = asyncio.run(scenario())
    assert shown and not running
    assert not still_shown
