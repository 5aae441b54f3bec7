"""The sweep table's bottom border ends with the pick (report/analysis/pick.py) in a few words,
within the document's `settings.max_kld` or the default 0.05; nothing without quality."""

from __future__ import annotations

from precmon.core.schema import ResultsDoc, from_json
from precmon.report.table import build_table
from precmon.tui.widgets.sweep_table import pick_short


def scored(doc, mass=0.97):
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.002, 0.98), "Q4_K_M": (0.03, 0.92)}
    for v in doc["variants"]:
        kld, top1 = scores[v["label"]]
        v["metrics"].update(quality_kld_mean=kld, quality_top1_agree=top1)
        v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20, "baseline_topk_mass": mass}
    return doc


def short(doc) -> str:
    typed = from_json(ResultsDoc, doc)
    return pick_short(typed, build_table(typed))


def test_the_border_names_the_pick_within_the_sweeps_budget(cpu_doc):
    doc = scored(cpu_doc)
    assert short(doc) == "Pick Q4_K_M: fastest decode within KL ≤ 0.05"
    doc["settings"]["max_kld"] = 0.01
    assert short(doc) == "Pick Q8_0: fastest decode within KL ≤ 0.01"


def test_unjudgeable_quality_picks_nothing_and_no_quality_says_nothing(cpu_doc):
    assert short(cpu_doc) == ""
    assert short(scored(cpu_doc, mass=0.026)) == "No pick within KL ≤ 0.05: quality cannot be judged"
