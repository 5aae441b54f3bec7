"""The "Quality" rows: present only where a variant has quality metrics, labelled with the
baseline, top-1 agreement shown in %, and its definition under the export only then."""

from __future__ import annotations

from precmon.report.render.csv import csv_rows
from precmon.report.sections import build_report
from precmon.report.table import build_table


def variant(label: str, **quality: float | None) -> dict:
    v = {
        "label": label,
        "precision": label.lower(),
        "status": "ok",
        "errors": [],
        "runs": [],
        "metrics": {"decode_tok_s": 100.0},
    }
    if quality:
        v["metrics"] |= quality
        v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20}
    return v


def doc(*variants: dict) -> dict:
    return {"schema": "precmon.results/1", "settings": {}, "host": {}, "variants": list(variants)}


WITH = doc(
    variant("F16", quality_kld_mean=0.0, quality_kld_p99=0.0, quality_top1_agree=1.0, quality_ppl=10.0),
    variant("Q4_K_M", quality_kld_mean=0.0123, quality_kld_p99=0.09, quality_top1_agree=0.875, quality_ppl=10.5),
)


def test_quality_rows_name_the_baseline_and_show_top1_in_percent():
    t = build_table(WITH)
    labels = {r.key: (r.label, r.unit) for r in t.rows}
    assert labels["quality_kld_mean"] == ("KL div vs F16", "nats")
    assert labels["quality_kld_p99"] == ("KL div p99 vs F16", "nats")
    assert labels["quality_top1_agree"] == ("Top-1 agreement", "%")
    assert t.value("quality_top1_agree", "Q4_K_M") == 87.5
    assert t.value("quality_kld_mean", "Q4_K_M") == 0.0123
    ppl = t.row("quality_ppl")
    assert ppl is not None and ppl.cells[1].ratio_text == "+5%"
    kld = t.row("quality_kld_mean")
    assert kld is not None and kld.cells[1].ratio_text == ""  # no ratio against a baseline of 0


def test_no_quality_rows_csv_lines_or_definition_without_quality():
    plain = doc(variant("F16"), variant("Q4_K_M"))
    assert not [r for r in build_table(plain).rows if r.key.startswith("quality")]
    assert not [r for r in csv_rows(plain) if r[2].startswith("quality")]
    assert "Quality" not in dict(build_report(plain).definitions)
    assert "Quality" in dict(build_report(WITH).definitions)


def test_csv_writes_top1_in_the_unit_it_names():
    rows = [r for r in csv_rows(WITH) if r[0] == "Q4_K_M" and r[2].startswith("quality")]
    assert [(r[2], r[4], r[5]) for r in rows] == [
        ("quality_kld_mean", "0.0123", "nats"),
        ("quality_kld_p99", "0.09", "nats"),
        ("quality_top1_agree", "87.5", "%"),
        ("quality_ppl", "10.5", "ppl"),
    ]


def test_a_hostile_baseline_label_is_made_visible_and_cut():
    d = doc(variant("F16", quality_kld_mean=0.0))
    d["variants"][0]["quality"]["baseline"] = "\x1b[31mred" + "x" * 40
    label = build_table(d).row("quality_kld_mean").label
    assert "\x1b" not in label and len(label) <= len("KL div vs ") + 18
