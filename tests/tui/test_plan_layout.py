"""The sweep's whole plan shows from the start, and the table's labels are whole at 120 columns.

A three-variant sweep showed `0/1 variants` and one column until each variant started; now every
planned variant has a "pending" column from `SweepPlanned` on, each becomes "measuring…"
when it starts, and the ones a stopped sweep never started go when it ends.
"""

from __future__ import annotations

import asyncio
import html
import re
from pathlib import Path

from rich.console import Console

from precmon.core.schema import ResultsDoc, from_json, to_json
from precmon.report.table import build_table
from precmon.sweep.events import VariantStarted
from precmon.sweep.spec import parse_spec
from precmon.tui.app import PrecmonApp
from precmon.tui.config import TuiConfig
from precmon.tui.live import PENDING, RUNNING, LiveResults
from precmon.tui.messages import MeasureEnded, SweepEventArrived, SweepPlanned
from precmon.tui.widgets.sweep_table import SweepTable, render_table
from tests.tui.conftest import no_meter_factory

SPEC = """
[defaults]
url = "http://127.0.0.1:9"

[[variant]]
label = "F16"
precision = "fp16"
model = "tiny-F16"

[[variant]]
label = "Q8_0"
precision = "int8"
model = "tiny-Q8_0"

[[variant]]
label = "Q4_K_M"
precision = "int4"
model = "tiny-Q4_K_M"
"""


def _screen(app: PrecmonApp) -> str:
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


def test_live_results_plan_then_start_then_drop():
    live = LiveResults()
    live.plan([("F16", "fp16", "m1"), ("Q8_0", "int8", "m2"), ("Q4_K_M", "int4", "m3")])
    assert [v["status"] for v in to_json(live.doc)["variants"]] == [PENDING] * 3
    assert not live.has_results and to_json(live.exportable())["variants"] == []
    assert live.apply(VariantStarted("Q8_0", 1, 3, "sequential"))
    assert [(v["label"], v["status"]) for v in to_json(live.doc)["variants"]] == [
        ("F16", PENDING),
        ("Q8_0", RUNNING),
        ("Q4_K_M", PENDING),
    ]
    assert to_json(live.doc)["variants"][1]["precision"] == "int8"  # the plan's, kept when the event has none
    assert live.drop_pending() and [v["label"] for v in to_json(live.doc)["variants"]] == ["Q8_0"]


def test_planned_sweep_shows_every_variant_pending():
    async def scenario():
        app = PrecmonApp(TuiConfig(poll_server=False), meter_factory=no_meter_factory)
        async with app.run_test(size=(120, 40)) as pilot:
            app.post_message(SweepPlanned(parse_spec(SPEC), Path("out")))
            await pilot.pause(0.5)
            table = app.query_one(SweepTable)
            assert table.border_subtitle.startswith("0/3 variants"), table.border_subtitle
            text = _screen(app)
            assert text.count("pending") == 3 and "F16" in text and "Q4_K_M" in text, text
            app.post_message(SweepEventArrived(VariantStarted("F16", 0, 3, "sequential"), "sweep"))
            await pilot.pause(0.5)
            text = _screen(app)
            assert text.count("pending") == 2 and "measuring…" in text, text
            assert table.border_subtitle.startswith("0/3 variants")
            app.post_message(MeasureEnded("sweep", error="stopped"))
            await pilot.pause(0.5)
            text = _screen(app)
            assert "pending" not in text and "✗ failed" in text, text  # the started one failed, the rest went
            app.exit(0)

    asyncio.run(scenario())


def test_metric_labels_whole_in_the_wide_layout(cpu_doc):
    table = build_table(from_json(ResultsDoc, cpu_doc))
    console = Console(width=116, record=True, file=open("/dev/null", "w"))  # noqa: SIM115 - closed below
    console.print(render_table(table, spark_width=8))
    console.file.close()
    text = console.export_text()
    for row in table.rows:
        assert f"{row.label} {row.unit}" in text, (row.label, text)
    assert "…" not in text
