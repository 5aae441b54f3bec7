"""The look at 80×24 and 120×40, with fixed data: the real CPU results document, a frozen
power meter, a server panel filled by hand (no network), no clock, no cursor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from precmon.core.schema import ResultsDoc, from_json
from precmon.sweep.events import VariantStarted
from precmon.sweep.spec import parse_spec
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.messages import SweepEventArrived, SweepPlanned
from tests.tui import scenes
from tests.tui.conftest import DATA, frozen_meter_factory
from tests.tui.test_plan_layout import SPEC

SIZES = [(80, 24), (120, 40)]


def _app(watch: bool = False) -> PrecmonApp:
    doc = json.loads((DATA / "demo-cpu-results.json").read_text())
    return PrecmonApp(
        TuiConfig(url="http://127.0.0.1:8080", poll_server=False, watch=watch),
        initial_results=from_json(ResultsDoc, doc),
        meter_factory=frozen_meter_factory,
    )


async def _settle(pilot) -> None:
    pilot.app.show_server(True, kind="llamacpp", version="b1-fixed", model="tiny-Q4_K_M", precision="Q4_K_M")
    await pilot.pause(pilot.app.pace.paint_s + 0.3)  # a chart repaint (once a refresh) has happened


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_main_screen(snap_compare, size):
    assert snap_compare(_app(), terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_watch_screen(snap_compare, size):
    assert snap_compare(_app(watch=True), terminal_size=size, run_before=_settle)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_screen(snap_compare, size):
    async def open_help(pilot):
        await _settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause(0.3)

    assert snap_compare(_app(), terminal_size=size, run_before=open_help)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_plan_pending_screen(snap_compare, size):
    """A three-variant sweep just started: the first measuring, the other two pending."""

    async def plan(pilot):
        await _settle(pilot)
        pilot.app.post_message(SweepPlanned(parse_spec(SPEC), Path("out")))
        pilot.app.post_message(SweepEventArrived(VariantStarted("F16", 0, 3, "sequential"), "sweep"))
        await pilot.pause(0.6)

    app = PrecmonApp(TuiConfig(url="http://127.0.0.1:8080", poll_server=False), meter_factory=frozen_meter_factory)
    assert snap_compare(app, terminal_size=size, run_before=plan)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_mid_sweep_screen(snap_compare, size):
    """Q4_K_M measuring after two finished variants; from 40 rows the per-second run chart."""
    assert snap_compare(scenes.mid_sweep_app(), terminal_size=size, run_before=scenes.mid_sweep)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_finished_quality_warnings_screen(snap_compare, size):
    """A finished sweep with quality rows, ± CIs and two warned variants."""
    assert snap_compare(scenes.main_app(scenes.quality_doc()), terminal_size=size, run_before=scenes.server_facts)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_watch_passive_screen(snap_compare, size):
    """Watch mode reading another client's traffic: PASSIVE, the live source named, the chart at 40 rows."""
    assert snap_compare(scenes.main_app(watch=True), terminal_size=size, run_before=scenes.watch_passive)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_watch_no_live_source_screen(snap_compare, size):
    """Watch mode on a server without a live token counter: NO LIVE SOURCE and why, tok/s "--"."""
    assert snap_compare(scenes.main_app(watch=True), terminal_size=size, run_before=scenes.watch_no_live_source)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_finished_h200_stopped_server_screen(snap_compare, size):
    """The real 4-variant H200 sweep, finished: the last launched server stopped by the sweep (one
    line, not "healthy" and ten lines of connection errors), all four columns at 120×40, and at
    80×24 the columns that do not fit named in the table's title."""
    assert snap_compare(scenes.h200_app(), terminal_size=size, run_before=scenes.h200_finished)
