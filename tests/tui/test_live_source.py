"""Watch mode on a server without a live token counter says so instead of showing 0 tok/s.

The fake is llama.cpp-like without `/slots` (as with `llama-server --no-slots`), or the same
server opened as a generic OpenAI one; the real llama-server's live rate is tested in
tests/integration/test_live_rate_llamacpp.py.
"""

from __future__ import annotations

import asyncio

import pytest

from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.readout import Readout
from tests.fakes.timed_server import TimedServer
from tests.tui.conftest import no_meter_factory, wait_for


@pytest.mark.parametrize(
    ("kind", "why"),
    [("auto", "/slots answered HTTP 404"), ("openai", "no counter that moves during a request")],
)
def test_watch_says_there_is_no_live_source(kind, why):
    async def scenario() -> tuple[str, str, str]:
        with TimedServer() as srv:
            app = PrecmonApp(TuiConfig(url=srv.url, server_kind=kind, watch=True), meter_factory=no_meter_factory)
            async with app.run_test(size=(120, 40)) as pilot:

                def state() -> str:
                    return str(app.query_one("#watch-status").render())

                await wait_for(pilot, lambda: "no live token source" in state(), 15)
                text, digits = state(), app.query_one("#ro-tok", Readout).value
                source = app.query_one("#ro-tok", Readout).source
                app.exit(0)
        return text, digits, source

    text, digits, source = asyncio.run(scenario())
    # the state line says it, with the reason; the readout points at it
    assert text.startswith(" NO LIVE SOURCE  no live token source: ") and why in text, text
    assert source == "n/a — no live source (below)", source
    assert digits == "--"  # not a 0 that looks like an idle server
