"""The sweep table's footer ends with the pick line (report/analysis/pick.py), within the document's
`settings.max_kld` or the default 0.05, and says nothing in a document without quality."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import render_table, with_pick


def scored(doc):
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}
    for v in doc["variants"]:
        kld, top1 = scores[v["label"]]
        v["metrics"].update(quality_kld_mean=kld, quality_top1_agree=top1)
        v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20, "baseline_topk_mass": 0.97}
    return doc


def footer(doc) -> str:
    table = build_table(doc)
    grid = render_table(table)
    with_pick(grid, doc, table)
    assert isinstance(grid, Table)
    console = Console(width=300, record=True, color_system=None)
    console.print(grid)
    return console.export_text()


def test_the_footer_names_the_pick_within_the_sweeps_budget(cpu_doc):
    doc = scored(cpu_doc)
    assert "Pick Q4_K_M: fastest decode within KL ≤ 0.05" in footer(doc)
    doc["settings"]["max_kld"] = 0.01
    assert "Pick Q8_0: fastest decode within KL ≤ 0.01" in footer(doc)


def test_no_quality_no_pick_in_the_footer(cpu_doc):
    assert "Pick" not in footer(cpu_doc) and "No pick" not in footer(cpu_doc)
