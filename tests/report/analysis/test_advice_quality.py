"""Workload advice where quality was measured: bands, a visible loss left out, the measured figure
quoted before the document's typical one (report/quality_bands.py, report/advice.py)."""

from __future__ import annotations

import pytest

from precmon.core.schema import Quality, VariantResult, from_json
from precmon.report.analysis.advice import advise
from precmon.report.analysis.quality import QUALITY_BANDS, QUALITY_DEFINITION
from precmon.report.analysis.quality_bands import Measured, band, measured

# cpu_doc decodes: F16 402.1, Q8_0 553.4, Q4_K_M 756.2 tok/s
SCORES = {"F16": (0.0, 1.0), "Q8_0": (0.0021, 0.985), "Q4_K_M": (0.35, 0.71)}


def with_quality(doc, scores=SCORES):
    for v in doc.variants:
        if v.label in scores:
            kld, top1 = scores[v.label]
            v.metrics.update(quality_kld_mean=kld, quality_top1_agree=top1, quality_kld_p99=kld, quality_ppl=None)
            v.quality = Quality(baseline="F16", positions=512, top_k=20)
    return doc


def _variant(**fields):
    """A variant of `fields` as the report reads one (unchecked: a wrong type is the test's point)."""
    return from_json(VariantResult, {"label": "v", **fields})


def by_key(doc):
    return {a.key: a for a in advise(doc)}


@pytest.mark.parametrize(
    ("kld", "top1", "expected"),
    [
        (0.0, 1.0, "near-lossless"),
        (0.01, 0.95, "near-lossless"),  # both edges belong to the better band
        (0.0101, 0.99, "small"),  # KL just past near-lossless
        (0.005, 0.9499, "small"),  # same top just under 95%: too many argmax changes
        (0.05, 0.90, "small"),
        (0.0501, 0.99, "noticeable"),
        (0.01, 0.8999, "noticeable"),
        (0.15, 0.80, "noticeable"),
        (0.1501, 1.0, "large"),
        (0.001, 0.7999, "large"),  # a low KL does not save a variant that agrees on < 80%
        (0.002, None, "near-lossless"),  # top-1 unknown: judged on KL alone
    ],
)
def test_band_edges(kld, top1, expected):
    assert band(kld, top1) == expected


def _m(**kw):
    base = {"kld_mean_nats": 0.004, "top1_agree": 0.97, "baseline": "F16"}
    return Measured(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "word"),
    [
        ({"topk_mass": 0.5, "top_k": 20}, "near-lossless"),  # 0.5 is enough
        ({"topk_mass": 0.4999, "top_k": 20}, "cannot be judged"),
        ({"positions": 64}, "near-lossless"),
        ({"positions": 63}, "cannot be judged"),
        # the interval reaches one band worse (small): still judged at the centre
        ({"kld_err95_nats": 0.04}, "near-lossless"),
        # … two bands worse (noticeable): too few positions for the error
        ({"kld_err95_nats": 0.0461}, "cannot be judged"),
        ({"top1_err95": 0.0699}, "near-lossless"),  # 0.9001 at worst: small
        ({"top1_err95": 0.0701}, "cannot be judged"),  # 0.8999: noticeable
    ],
)
def test_cannot_be_judged_edges(kw, word):
    assert _m(**kw).band == word


def test_cannot_be_judged_says_why_and_what_to_do():
    m = _m(kld_mean_nats=0.00396, top1_agree=0.002, topk_mass=0.026, top_k=20)
    v = m.verdict()
    assert not v.judged and "top-20 held 2.6% of the probability" in v.why and "adaptive top-K" in v.todo
    assert m.sentence().endswith(f"(cannot be judged: {v.why}; {v.todo}).")
    assert "small" not in m.sentence()
    few = _m(positions=10).verdict()
    assert "only 10 positions" in few.why and "quality_positions" in few.todo


def test_measured_reads_metrics_and_the_baseline_label_and_skips_na():
    v = _variant(metrics={"quality_kld_mean": 0.02, "quality_top1_agree": 0.9}, quality={"baseline": "F\x1b[2J16"})
    m = measured(v)
    assert m is not None and m.band == "small" and "\x1b" not in m.baseline
    assert m.sentence() == f"Measured vs {m.baseline}: mean KL 0.0200 nats, same top 90.0% (small loss)."
    assert measured(_variant(metrics={"quality_kld_mean": None})) is None
    assert measured(_variant(metrics={"quality_kld_mean": True})) is None
    assert measured(_variant(metrics={"quality_kld_mean": -1.0})) is None
    assert measured(_variant()) is None
    info = {"baseline": "F16", "positions": 512, "top_k": 20, "baseline_topk_mass": 0.3}
    full = _variant(metrics={"quality_kld_mean": 0.02, "quality_kld_mean_err95": 0.001}, quality=info)
    m = measured(full)
    assert m is not None and (m.positions, m.top_k, m.topk_mass, m.kld_err95_nats) == (512, 20, 0.3, 0.001)
    assert m.band == "cannot be judged"


def test_a_large_loss_is_left_out_of_the_speed_workloads(cpu_doc):
    a = by_key(with_quality(cpu_doc))
    assert a["chat"].choice == "Q8_0"  # Q4_K_M decodes fastest but moved the distribution a lot
    assert a["chat"].reason.startswith("Q8_0 decodes 553.4 tok/s vs F16 402.1.")
    assert "Left out: Q4_K_M (large loss: mean KL 0.350 nats, same top 71.0%)." in a["chat"].reason
    assert a["battery"].choice != "Q4_K_M"


@pytest.mark.parametrize("q4", [(0.08, 0.85), (0.35, 0.71), "unjudgeable", "unscored"])
def test_noticeable_or_unjudgeable_is_never_picked_while_a_judged_usable_one_exists(cpu_doc, q4):
    scores = dict(SCORES) | {"Q8_0": (0.03, 0.92)}  # small
    if isinstance(q4, tuple):
        scores["Q4_K_M"] = q4
    elif q4 == "unscored":
        del scores["Q4_K_M"]
    doc = with_quality(cpu_doc, scores)
    if q4 == "unjudgeable":
        next(v for v in doc.variants if v.label == "Q4_K_M").quality.baseline_topk_mass = 0.1
    a = by_key(doc)
    for key in ("chat", "battery", "batch", "coding"):
        assert a[key].choice != "Q4_K_M", key
    why = {"unjudgeable": "quality cannot be judged", "unscored": "quality not scored"}.get(str(q4), "loss:")
    assert "Left out: Q4_K_M (" in a["chat"].reason and why in a["chat"].reason


def test_all_unjudgeable_the_baseline_is_chosen_and_the_faster_ones_are_named(cpu_doc):
    """The random-weight H200 case: no variant but the baseline can be judged, so the speed
    workloads take the baseline (its quality holds by definition) and say what they passed over."""
    doc = with_quality(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.0004, 0.7), "Q4_K_M": (0.004, 0.01)})
    for v in doc.variants:
        v.quality.baseline_topk_mass = 0.026  # the random-weight H200 model
    a = by_key(doc)
    for key in ("chat", "document", "coding", "batch", "battery"):
        assert a[key].choice == "F16", key
    assert a["chat"].reason.startswith(
        "F16 decodes 402.1 tok/s. F16 is the quality baseline, the only variant whose quality is known to hold; "
        "passed over: Q8_0, Q4_K_M (quality cannot be judged: the baseline's top-20 held 2.6% of the probability"
    )
    assert a["chat"].reason.endswith("Quality aside: Q4_K_M decodes 756.2 tok/s vs Q8_0 553.4, F16 402.1.")
    assert "chosen on speed alone" not in a["chat"].reason and a["chat"].caveat == ""  # 16-bit, the reference


def test_all_large_the_baseline_is_chosen(cpu_doc):
    a = by_key(with_quality(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.5, 0.5), "Q4_K_M": (0.9, 0.3)}))
    assert a["chat"].choice == "F16" and a["battery"].choice == "F16"
    assert "passed over: Q8_0 (large loss: mean KL 0.500 nats, same top 50.0%); Q4_K_M (large loss: mean KL " in (
        a["chat"].reason
    )
    assert "Quality aside: Q4_K_M decodes 756.2 tok/s" in a["chat"].reason
    assert "Quality aside: Q4_K_M uses 0.0496 J/token" in a["battery"].reason
    assert a["max_quality"].choice == "F16"


def test_one_small_among_large_is_chosen_over_the_faster_large_one(cpu_doc):
    a = by_key(with_quality(cpu_doc, {"F16": (0.0, 1.0), "Q8_0": (0.03, 0.92), "Q4_K_M": (0.9, 0.3)}))
    assert a["chat"].choice == "Q8_0"
    assert "Left out: Q4_K_M (large loss:" in a["chat"].reason
    assert "Quality aside" not in a["chat"].reason and "passed over" not in a["chat"].reason
    assert a["chat"].caveat.startswith("Measured vs F16: mean KL 0.0300 nats, same top 92.0% (small loss).")


def test_without_the_baseline_among_the_results_speed_decides_and_says_so(cpu_doc):
    """A bench scored against a saved reference: the baseline is no column, so no variant is known
    to hold its quality; speed decides and the reason says so."""
    doc = with_quality(cpu_doc, {"Q8_0": (0.0004, 0.7), "Q4_K_M": (0.004, 0.01)})
    for v in doc.variants:
        if v.quality is not None:
            v.quality.baseline_topk_mass = 0.026
    doc.variants = [v for v in doc.variants if v.label != "F16"]
    a = by_key(doc)
    assert a["chat"].choice == "Q4_K_M"
    assert "No variant's quality was judged near-lossless or small (Q8_0, Q4_K_M (quality cannot be judged" in (
        a["chat"].reason
    )
    assert "chosen on speed alone" in a["chat"].reason
    assert "(cannot be judged:" in a["chat"].caveat and "small loss" not in a["chat"].caveat


def test_the_caveat_quotes_the_measured_figure_then_the_documents(cpu_doc):
    chat = by_key(with_quality(cpu_doc))["chat"]
    assert chat.caveat == (
        "Measured vs F16: mean KL 0.00210 nats, same top 98.5% (near-lossless). "
        "The document's typical figure: INT8 typically loses 1-3% quality."
    )


def test_maximum_quality_is_the_fastest_near_lossless_variant(cpu_doc):
    mq = by_key(with_quality(cpu_doc))["max_quality"]
    assert mq.choice == "Q8_0"
    assert mq.reason == (
        "Q8_0 is near-lossless as measured (mean KL 0.00210 nats, same top 98.5% vs F16) and decodes "
        "553.4 tok/s, the fastest of the near-lossless Q8_0, F16."
    )


def test_without_quality_the_advice_is_as_before(cpu_doc):
    a = by_key(cpu_doc)
    assert a["chat"].choice == "Q4_K_M" and "Left out" not in a["chat"].reason
    assert a["max_quality"].choice == "F16" and "does not measure quality" in a["max_quality"].reason
    assert "2-5%" in a["chat"].caveat and "Measured" not in a["chat"].caveat


def test_when_every_measured_variant_is_large_the_baseline_is_chosen(cpu_doc):
    """F16 carries no figures of its own here; the others name it as their baseline, so it is the
    reference, its quality holds by definition, and it is chosen over the faster large losses."""
    a = by_key(with_quality(cpu_doc, {"Q8_0": (0.5, 0.5), "Q4_K_M": (0.9, 0.3)}))
    assert a["chat"].choice == "F16" and "Left out" not in a["chat"].reason
    assert "F16 is the quality baseline, the only variant whose quality is known to hold; passed over: " in (
        a["chat"].reason
    )
    assert "chosen on speed alone" not in a["chat"].reason and a["chat"].caveat == ""
    assert a["max_quality"].choice == "F16" and a["max_quality"].reason.startswith("F16 is the quality baseline")


def test_the_definition_names_the_metrics_and_the_bands():
    for word in ("KL(baseline ‖ variant)", "Top-1 agreement", "same top", "RMS Δp", "teacher forcing", "n/a"):
        assert word in QUALITY_DEFINITION
    assert QUALITY_BANDS in QUALITY_DEFINITION and "0.01 nats" in QUALITY_BANDS and "q4_K_M (0.031" in QUALITY_BANDS


def test_exports_carry_the_whole_definition_with_the_bands(cpu_doc):
    from precmon.report.render.markdown import render_markdown
    from precmon.report.sections import build_report

    report = build_report(with_quality(cpu_doc))
    assert dict(report.definitions)["Quality"] == QUALITY_DEFINITION
    assert "near-lossless: mean KL ≤ 0.01 nats and same top ≥ 95%" in render_markdown(report)


def test_the_baseline_itself_quotes_no_measured_figure(cpu_doc):
    scores = {"F16": (0.0, 1.0), "Q8_0": (0.05, 0.9), "Q4_K_M": (0.35, 0.71)}
    a = by_key(with_quality(cpu_doc, scores))
    assert a["max_quality"].choice == "F16"
    assert a["max_quality"].reason == "F16 is the quality baseline and decodes 402.1 tok/s."
    assert a["max_quality"].caveat == ""  # 16-bit: no typical cost, and no "0 nats vs itself"
