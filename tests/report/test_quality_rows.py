"""The "Quality" rows: present only where a variant has quality metrics, labelled with the
baseline, top-1 agreement shown in %, and its definition under the export only then."""

from __future__ import annotations

from report_helpers import typed

from precmon.core.schema import ResultsDoc
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


def doc(*variants: dict) -> ResultsDoc:
    return typed({"schema": "precmon.results/1", "settings": {}, "host": {}, "variants": list(variants)})


WITH = doc(
    variant("F16", quality_kld_mean=0.0, quality_kld_p99=0.0, quality_top1_agree=1.0, quality_ppl=10.0),
    variant("Q4_K_M", quality_kld_mean=0.0123, quality_kld_p99=0.09, quality_top1_agree=0.875, quality_ppl=10.5),
)


def test_quality_rows_name_the_baseline_and_show_top1_in_percent():
    t = build_table(WITH)
    labels = {r.key.stats_key: (r.label, r.unit) for r in t.rows}
    assert labels["quality_kld_mean"] == ("KL div vs F16", "nats")
    assert labels["quality_kld_p99"] == ("KL div p99 vs F16", "nats")
    assert labels["quality_top1_agree"] == ("Same top vs F16", "%")
    assert t.value("quality_top1_agree", "Q4_K_M") == 87.5
    assert t.value("quality_kld_mean", "Q4_K_M") == 0.0123
    ppl = t.row("quality_ppl")
    assert ppl is not None and ppl.cells[1].ratio_text == "+5%"
    kld = t.row("quality_kld_mean")
    assert kld is not None and kld.cells[1].ratio_text == ""  # no ratio against a baseline of 0


def test_no_quality_rows_csv_lines_or_definition_without_quality():
    plain = doc(variant("F16"), variant("Q4_K_M"))
    assert not [r for r in build_table(plain).rows if r.key.metric.startswith("quality")]
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
    d.variants[0].quality.baseline = "\x1b[31mred" + "x" * 40
    label = build_table(d).row("quality_kld_mean").label
    assert "\x1b" not in label and len(label) <= len("KL div vs ") + 18


TRUSTED = doc(
    variant(
        "F16",
        quality_kld_mean=0.0,
        quality_kld_mean_err95=0.0,
        quality_kld_p99=0.0,
        quality_kld_max=0.0,
        quality_top1_agree=1.0,
        quality_top1_agree_err95=0.0,
        quality_ppl=10.0,
        quality_ppl_ratio=1.0,
        quality_ppl_ratio_err95=0.0,
        quality_rms_dp=0.0,
        quality_rms_dp_err95=0.0,
    ),
    variant(
        "Q4_0",
        quality_kld_mean=0.0421,
        quality_kld_mean_err95=0.0033,
        quality_kld_p99=0.31,
        quality_kld_max=0.9,
        quality_top1_agree=0.902,
        quality_top1_agree_err95=0.026,
        quality_ppl=10.6,
        quality_ppl_ratio=1.06,
        quality_ppl_ratio_err95=0.011,
        quality_rms_dp=0.054,
        quality_rms_dp_err95=0.004,
    ),
)


def test_the_trusted_format_one_scale_per_row_and_its_errors():
    """llama-perplexity's figures, each ± its own 95% error; top-1 in % in every column, no ratio."""
    t = build_table(TRUSTED)
    keys = [r.key.stats_key for r in t.rows if r.key.metric.startswith("quality")]
    assert keys == [
        "quality_kld_mean",
        "quality_kld_p99",
        "quality_kld_max",
        "quality_top1_agree",
        "quality_ppl",
        "quality_ppl_ratio",
        "quality_rms_dp",
    ]
    top1 = t.row("quality_top1_agree")
    assert top1 is not None
    assert [c.text for c in top1.cells] == ["100.0", "90.2"]  # one scale: % for the baseline too
    assert [c.ratio_text for c in top1.cells] == ["", ""]  # no "(−10%)" of a %
    assert top1.cells[1].half_width is not None and abs(top1.cells[1].half_width - 2.6) < 1e-9
    assert top1.cells[0].half_width is None  # the baseline's 0 ± 0 says nothing
    kld = t.row("quality_kld_mean")
    assert kld is not None and kld.cells[1].half_width == 0.0033
    rms = t.row("quality_rms_dp")
    assert rms is not None and rms.unit == "%" and abs((rms.cells[1].value or 0) - 5.4) < 1e-9
    assert t.value("quality_ppl_ratio", "Q4_0") == 1.06


def test_markdown_shows_the_errors_and_csv_writes_them_in_the_tables_unit():
    from precmon.report.export import render

    md = render(TRUSTED, "md")
    line = next(x for x in md.splitlines() if x.startswith("| Same top vs F16"))
    assert "90.2 ±2.6" in line and "%)" not in line.split("|", 2)[2]
    rows = {r[2]: r[4] for r in csv_rows(TRUSTED) if r[0] == "Q4_0"}
    assert rows["quality_top1_agree_err95"] == "2.6" and rows["quality_kld_max"] == "0.9"
