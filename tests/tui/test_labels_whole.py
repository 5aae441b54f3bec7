"""At 120×40 no metric label of the sweep table is cut, in every scene the table has: the plan
pending, mid-sweep (with the run chart), and finished with quality rows and warnings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from rich.console import Console
from textual.widgets import Static

from precmon.report.table import build_table
from precmon.sweep.events import VariantStarted
from precmon.sweep.spec import parse_spec
from precmon.tui.app import PrecmonApp
from precmon.tui.messages import SweepEventArrived, SweepPlanned
from precmon.tui.widgets.sweep_table import SweepTable
from tests.tui import scenes
from tests.tui.test_plan_layout import SPEC


async def _plan(pilot) -> None:
    await scenes.server_facts(pilot, "F16")
    pilot.app.post_message(SweepPlanned(parse_spec(SPEC), Path("out")))
    pilot.app.post_message(SweepEventArrived(VariantStarted("F16", 0, 3, "sequential"), "sweep"))
    await scenes.repainted(pilot)


SCENES = {
    "plan-pending": (lambda: scenes.main_app(), _plan),
    "mid-sweep": (scenes.mid_sweep_app, scenes.mid_sweep),
    "finished-quality": (lambda: scenes.main_app(scenes.quality_doc()), scenes.server_facts),
}


@pytest.mark.parametrize("scene", list(SCENES))
def test_no_label_cut_at_120x40(scene):
    make, run_before = SCENES[scene]

    async def shown() -> tuple[str, list[str], bool]:
        app: PrecmonApp = make()
        async with app.run_test(size=(120, 40)) as pilot:
            await run_before(pilot)
            sweep = app.query_one(SweepTable)
            grid = app.query_one("#sweep-grid", Static).content
            width = sweep.content_size.width
            labels = [f"{r.label} {r.unit}" for r in build_table(sweep.doc).rows]
            chart = app.query_one("#chart").has_class("-shown")
            app.exit(0)
        console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed below
        console.print(grid)
        console.file.close()
        return console.export_text(), labels, chart

    text, labels, chart = asyncio.run(shown())
    assert labels
    for label in labels:
        assert label in text, (label, text)
    assert chart == (scene != "finished-quality")  # the run chart only while a variant runs
