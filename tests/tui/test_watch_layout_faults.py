"""Issue 30's layout faults: the Server panel's live row stays one line at 120 columns (it wrapped:
a row of /metrics rates folded under the tok/s), and watch mode's three readouts are one height
at 80×24 (a title or source that folds onto more rows made one box taller than its neighbours)."""

from __future__ import annotations

import asyncio

from precmon.servers.watch import metrics
from precmon.servers.watch.live_rate import LiveRate
from precmon.servers.watch.rate_window import WindowRate
from precmon.tui import server_view as sv
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.server_panel import ServerPanel
from precmon.tui.widgets.watch_view import WatchView
from tests.tui.conftest import frozen_meter_factory

URL = "http://127.0.0.1:8080"


def _busy_view() -> sv.ServerView:
    live = LiveRate(381.2, "llama.cpp /slots + /metrics", 1.0, 12, taken_s=10.0)
    rates = metrics.LiveRates(
        "llamacpp", 1.0, generation_tok_s=381.2, requests_running=12.0, ttft_p50_s=0.0123, kv_cache_usage_ratio=0.873
    )
    view = sv.ServerView(url=URL, healthy=True, kind="llamacpp", model="tiny", precision="Q4_K_M")
    for x in (120.0, 300.0, 381.2):
        view = sv.live_rate(view, LiveRate(x, live.source, 1.0, 12, taken_s=10.0), WindowRate(x, 5.0))
    return sv.metrics(
        sv.live_rate(view, live, WindowRate(381.2, 5.0)), rates, "HTTP 500 from http://127.0.0.1:8080/metrics: boom"
    )


def test_server_panel_live_row_is_one_line_at_120_columns():
    async def scenario() -> list[str]:
        app = PrecmonApp(TuiConfig(url=URL, poll_server=False), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            panel = app.query_one(ServerPanel)
            panel.view = _busy_view()
            await pilot.pause(0.3)
            lines = [strip.text for strip in panel.render_lines(panel.region.reset_offset)]
            return lines

    lines = asyncio.run(scenario())
    live = [i for i, line in enumerate(lines) if line.startswith("│ live ")]
    assert live, lines
    assert "381.2 tok/s" in lines[live[0]], lines
    # the next line is the scrape error's own line, never the live row's fold
    assert lines[live[0] + 1].startswith("│          last scrape failed"), lines


def test_watch_readouts_are_one_height_at_80x24():
    async def scenario() -> list[int]:
        app = PrecmonApp(TuiConfig(url=URL, watch=True, poll_server=False), meter_factory=frozen_meter_factory)
        async with app.run_test(size=(80, 24)) as pilot:
            view = app.query_one(WatchView)
            view.show_tok_s(381.2, "live: llama.cpp /slots + /metrics, last 5 s (without --metrics a tail is missed)")
            view.show_watts(31.0, "gpu scope, live")
            view.show_j_per_token(None, "n/a")
            await pilot.pause(0.5)
            return [r.outer_size.height for r in app.query(Readout)]

    heights = asyncio.run(scenario())
    assert len(set(heights)) == 1, heights
