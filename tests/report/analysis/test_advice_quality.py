"""Workload advice where quality was measured: bands, a visible loss left out, the measured figure
quoted before the document's typical one (report/quality_bands.py, report/advice.py)."""

from __future__ import annotations

import pytest

from precmon.report.analysis.advice import advise
from precmon.report.analysis.quality import QUALITY_BANDS, QUALITY_DEFINITION
from precmon.report.analysis.quality_bands import band, measured

# cpu_doc decodes: F16 402.1, Q8_0 553.4, Q4_K_M 756.2 tok/s
SCORES = {"F16": (0.0, 1.0), "Q8_0": (0.0021, 0.985), "Q4_K_M": (0.35, 0.71)}


def with_quality(doc, scores=SCORES):
    for v in doc["variants"]:
        if v["label"] in scores:
            kld, top1 = scores[v["label"]]
            v["metrics"].update(quality_kld_mean=kld, quality_top1_agree=top1, quality_kld_p99=kld, quality_ppl=None)
            v["quality"] = {"baseline": "F16", "positions": 512, "top_k": 20}
    return doc


def by_key(doc):
    return {a.key: a for a in advise(doc)}


@pytest.mark.parametrize(
    ("kld", "top1", "expected"),
    [
        (0.0, 1.0, "near-lossless"),
        (0.01, 0.95, "near-lossless"),
        (0.0101, 0.99, "small"),
        (0.005, 0.94, "small"),  # too many argmax changes for near-lossless
        (0.1, 0.5, "small"),
        (0.1001, 1.0, "visible"),
        (0.002, None, "near-lossless"),  # top-1 unknown: judged on KL alone
    ],
)
def test_bands(kld, top1, expected):
    assert band(kld, top1) == expected


def test_measured_reads_metrics_and_the_baseline_label_and_skips_na():
    v = {"metrics": {"quality_kld_mean": 0.02, "quality_top1_agree": 0.9}, "quality": {"baseline": "F\x1b[2J16"}}
    m = measured(v)
    assert m is not None and m.band == "small" and "\x1b" not in m.baseline
    assert m.sentence() == f"Measured vs {m.baseline}: mean KL 0.0200 nats, top-1 agreement 90.0% (small loss)."
    assert measured({"metrics": {"quality_kld_mean": None}}) is None
    assert measured({"metrics": {"quality_kld_mean": True}}) is None
    assert measured({"metrics": {"quality_kld_mean": -1.0}}) is None
    assert measured({}) is None


def test_a_visible_loss_is_left_out_of_the_speed_workloads(cpu_doc):
    a = by_key(with_quality(cpu_doc))
    assert a["chat"].choice == "Q8_0"  # Q4_K_M decodes fastest but moved the distribution visibly
    assert a["chat"].reason.startswith("Q8_0 decodes 553.4 tok/s vs F16 402.1.")
    assert (
        "Left out for a visible measured quality loss (mean KL > 0.1 nats): Q4_K_M (mean KL 0.350" in a["chat"].reason
    )
    assert a["battery"].choice != "Q4_K_M"


def test_the_caveat_quotes_the_measured_figure_then_the_documents(cpu_doc):
    chat = by_key(with_quality(cpu_doc))["chat"]
    assert chat.caveat == (
        "Measured vs F16: mean KL 0.00210 nats, top-1 agreement 98.5% (near-lossless). "
        "The document's typical figure: INT8 typically loses 1-3% quality."
    )


def test_maximum_quality_is_the_fastest_near_lossless_variant(cpu_doc):
    mq = by_key(with_quality(cpu_doc))["max_quality"]
    assert mq.choice == "Q8_0"
    assert mq.reason == (
        "Q8_0 is near-lossless as measured (mean KL 0.00210 nats, top-1 agreement 98.5% vs F16) and decodes "
        "553.4 tok/s, the fastest of the near-lossless Q8_0, F16."
    )


def test_without_quality_the_advice_is_as_before(cpu_doc):
    a = by_key(cpu_doc)
    assert a["chat"].choice == "Q4_K_M" and "Left out" not in a["chat"].reason
    assert a["max_quality"].choice == "F16" and "does not measure quality" in a["max_quality"].reason
    assert "2-5%" in a["chat"].caveat and "Measured" not in a["chat"].caveat


def test_when_every_measured_variant_is_visible_speed_decides_alone(cpu_doc):
    a = by_key(with_quality(cpu_doc, {"Q8_0": (0.5, 0.5), "Q4_K_M": (0.9, 0.3)}))
    assert a["chat"].choice == "Q4_K_M" and "Left out" not in a["chat"].reason
    assert a["chat"].caveat.startswith("Measured vs F16: mean KL 0.900 nats") and "(visible loss)" in a["chat"].caveat
    assert a["max_quality"].choice == "F16"  # highest precision: F16 has no measured quality here
    assert a["max_quality"].reason.endswith("no variant measured near-lossless.")


def test_the_definition_names_the_metrics_and_the_bands():
    for word in ("KL(baseline ‖ variant)", "Top-1 agreement", "Perplexity ×", "teacher forcing", "n/a"):
        assert word in QUALITY_DEFINITION
    assert QUALITY_BANDS in QUALITY_DEFINITION and "0.01 nats" in QUALITY_BANDS


def test_exports_carry_the_whole_definition_with_the_bands(cpu_doc):
    from precmon.report.render.markdown import render_markdown
    from precmon.report.sections import build_report

    report = build_report(with_quality(cpu_doc))
    assert dict(report.definitions)["Quality"] == QUALITY_DEFINITION
    assert "near-lossless: top-1 agreement ≥ 95%" in render_markdown(report)


def test_the_baseline_itself_quotes_no_measured_figure(cpu_doc):
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.05, 0.9), "Q4_K_M": (0.35, 0.71)}
    a = by_key(with_quality(cpu_doc, scores))
    assert a["max_quality"].choice == "F16"
    assert a["max_quality"].reason == "F16 is the quality baseline and decodes 402.1 tok/s."
    assert a["max_quality"].caveat == ""  # 16-bit: no typical cost, and no "0 nats vs itself"
