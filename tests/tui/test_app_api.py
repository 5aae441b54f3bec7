"""The app's small public API (what scripts/make_screenshots.py drives), and view state set before
the app runs (`is_mounted` is a method on App, so the old `if self.is_mounted:` was always true
and setting `watching` before `run()` raised ScreenStackError)."""

from __future__ import annotations

import asyncio

import pytest

from precmon.core.schema import Run, to_json
from precmon.sweep.events import Progress, RunLanded, VariantStarted
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.widgets.readout import Readout
from precmon.tui.widgets.server_panel import ServerPanel
from tests.tui.conftest import no_meter_factory


def test_watching_set_before_the_app_runs_applies_on_mount():
    app = PrecmonApp(TuiConfig(poll_server=False), meter_factory=no_meter_factory)
    app.watching = True  # before run(): no screen yet

    async def scenario():
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause(0.2)
            assert app.screen.has_class("-watch") and app.server_worker.watching
            await pilot.press("w")
            await pilot.pause(0.1)
            assert not app.screen.has_class("-watch") and not app.server_worker.watching

    asyncio.run(scenario())


def test_public_api_fills_panels_and_replays_a_sweep():
    run = Run("decode", 16, 16, ttft_s=0.05, decode_tok_s=321.0)

    async def scenario():
        app = PrecmonApp(TuiConfig(url="http://127.0.0.1:9", poll_server=False), meter_factory=no_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            app.show_server(True, kind="llamacpp", model="tiny-Q8_0", precision="Q8_0")
            app.show_request(run)
            app.replay(
                [VariantStarted("Q8_0", 0, 2, "model"), RunLanded("Q8_0", run), Progress("Q8_0", 1, 3, "decode")],
                plan={"Q8_0": ("int8", "tiny-Q8_0")},
            )
            await pilot.pause(0.5)
            view = app.query_one(ServerPanel).view
            assert view.kind == "llamacpp" and view.last_tok_s == 321.0
            [variant] = to_json(app.live.doc)["variants"]
            assert (variant["label"], variant["precision"], len(variant["runs"])) == ("Q8_0", "int8", 1)
            app.watching = True
            app.show_drive([run])
            await pilot.pause(0.3)
            assert app.query_one("#ro-tok", Readout).value == "321.0"
            assert "driving a steady load" in str(app.query_one("#watch-status").render())
            assert app.exit_lines() == []  # nothing saved this session

    asyncio.run(scenario())


@pytest.mark.alone  # the watch-busy scene replays reads on the clock
def test_make_screenshots_drives_the_app_through_its_public_api(tmp_path, cpu_doc):
    """scripts/make_screenshots.py renders mid-sweep and watch scenes without touching app privates."""
    import html
    import importlib.util
    import re
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / "make_screenshots.py"
    spec = importlib.util.spec_from_file_location("make_screenshots", path)
    assert spec is not None and spec.loader is not None
    shots = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shots)
    scenes = (
        ("main-mid-sweep", "measuring…"),
        ("watch", "driving a steady load"),
        ("watch-failing", "FAILING"),  # issue 30: --drive against a server answering "choices": [null]
        ("watch-busy", "UNSURE"),  # issue 30: the reads measured beside 3 CPU burners
    )
    for scene, expect in scenes:
        svg = asyncio.run(shots.shoot(cpu_doc, scene, (120, 40), tmp_path))
        text = html.unescape(re.sub(r"<[^>]+>", "", svg.read_text())).replace("\xa0", " ")
        assert expect in text, scene
        assert "REPLAY of a results file" in text, scene  # never mistaken for a live screen
